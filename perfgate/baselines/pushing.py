"""Writing the baseline branch: build a commit off the newest tip, push, retry until a deadline.

One write path serves every writer (a publisher's samples, acknowledgements, an era roll,
an image manifest), on the remote branch or the local one. A commit is built from a
temporary index holding only the files it touches, so a write never checks out the
samples of other buckets. A push that loses a race to another publisher, or meets a
passing network failure, is rebuilt on the new tip and retried with exponential backoff
and full jitter until the deadline; a push the server refuses (a hook, a protection rule,
missing permission) is reported as such at once, since retrying cannot change the answer
(R9). Samples that cannot land before the deadline are kept by the caller
(``pending-samples.ndjson``, uploaded as the run's artifact).

Nothing else lands with a publisher's samples. Earlier perfgates parked a losing
publisher's samples on the origin under ``refs/perfgate/incoming/<branch>/`` for the next
one to land; anyone with push access can write such a ref (branch protection does not
cover it) and no GitHub API ties a ref to the workflow run that pushed it, so a batch
naming a real run could carry any figure. Batches left there are named, never landed.
"""

from __future__ import annotations

import random
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from perfgate.baselines.reading import fetch_tip
from perfgate.config import BaselinePolicy
from perfgate.errors import GateMalfunction, GitError
from perfgate.util.git import git, null_oid, resolve, time_left, try_git

AUTHOR = {
    "GIT_AUTHOR_NAME": "perfgate",
    "GIT_AUTHOR_EMAIL": "perfgate@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "perfgate",
    "GIT_COMMITTER_EMAIL": "perfgate@users.noreply.github.com",
}

# What edits the branch: given the work tree (holding the touched paths as they are at
# the tip), change files; say whether anything changed.
Editor = Callable[[Path], bool]
# What builds a write's commit on the branch's tip (None: the branch does not exist yet);
# None when there is nothing to write.
Builder = Callable[[str | None], str | None]

# Where earlier perfgates parked batches of samples; read only to say they are not landed.
INCOMING = "refs/perfgate/incoming"


class PushRefused(GateMalfunction):
    """The server refused the push for a reason retrying cannot change (hook, protection)."""


class PushDeadline(GateMalfunction):
    """The branch could not be written before the deadline (lost races, network failures)."""


class PushFailure(StrEnum):
    """Why a push (or the fetch before it) failed, as far as git's output tells."""

    RACE = "race"  # another publisher moved the branch first
    REFUSED = "refused"  # a server hook or protection rule declined it
    TRANSIENT = "transient"  # the network or the server failed for a moment
    DENIED = "denied"  # credentials or permissions


_FAILURES = (
    # A hook's refusal is listed first: git's line also says "remote rejected".
    (PushFailure.REFUSED, re.compile(r"hook declined|protected branch|GH006|GH013")),
    (
        PushFailure.RACE,
        re.compile(
            r"non-fast-forward|fetch first|failed to update ref|cannot lock ref|"
            r"incorrect old value|stale info|but expected"
        ),
    ),
    (
        PushFailure.DENIED,
        re.compile(
            r"Permission .*denied|Authentication failed|could not read Username|"
            r"returned error: 40[13]|403 Forbidden|denied to|Repository not found",
            re.IGNORECASE,
        ),
    ),
    (
        PushFailure.TRANSIENT,
        re.compile(
            r"Could not resolve host|timed out|Connection (refused|reset)|"
            r"remote end hung up|early EOF|RPC failed|returned error: 5\d\d|"
            r"unexpected disconnect|Temporary failure|TLS|SSL|unable to access",
            re.IGNORECASE,
        ),
    ),
)


# git's answers to a local ref update that lost a race: another writer moved, created,
# deleted or is locking the ref. Anything else (a bad name, a bad id) stays as it is.
_REF_RACE = re.compile(
    r"but expected|reference already exists|unable to resolve reference|File exists"
)


def push_error(stderr: str, branch: str, remote: str) -> Exception:
    """A failed push of ``branch`` to ``remote``: Retryable (a race or a transient error),
    PushRefused (no retry can help) or GateMalfunction, each saying what to check."""
    kind = classify(stderr)
    if kind in (PushFailure.RACE, PushFailure.TRANSIENT):
        return Retryable(kind, reason(stderr))
    if kind is PushFailure.REFUSED:
        return PushRefused(
            f"the server refused the push to the baseline branch {branch!r} on {remote!r}: "
            f"{remote_says(stderr)}. Retrying cannot help: check the repository's "
            f"hooks, rulesets and branch protection for {branch!r}"
        )
    return GateMalfunction(
        f"cannot push the baseline branch {branch!r} to {remote!r}: {remote_says(stderr)}"
        + ("; check the token's contents: write permission" if kind else "")
    )


def classify(stderr: str) -> PushFailure | None:
    """What kind of failure git's error output describes; None when it says nothing known."""
    for kind, pattern in _FAILURES:
        if pattern.search(stderr):
            return kind
    return None


@dataclass(frozen=True, kw_only=True)
class PushRetryPolicy:
    """How long a push to the baseline branch keeps trying (by default the config's
    ``gate.baseline.publish_deadline_minutes``), and how it spreads its attempts out."""

    deadline_s: float = BaselinePolicy.publish_deadline_minutes * 60.0
    first_delay_s: float = 0.1
    max_delay_s: float = 30.0

    def delay(
        self,
        retry: int,
        attempt_s: float = 0.0,
        draw: Callable[[float, float], float] = random.uniform,
    ) -> float:
        """Seconds to wait before retry number ``retry`` (1, 2, ...): full-jitter backoff.

        Publishers that lost a race spread out over a window that doubles with every
        loss. The window is counted in attempts (``attempt_s``, how long the lost one
        took): a slow remote, or many publishers sharing a machine, spread out as widely
        as a fast one, instead of colliding again on the next tip.
        """
        slot = max(self.first_delay_s, attempt_s)
        return draw(0.0, min(self.max_delay_s, slot * 2 ** (retry - 1)))


def commit_to_branch(
    repo: Path,
    branch: str,
    remote: str | None,
    edit: Editor,
    message: str,
    retry: PushRetryPolicy,
    paths: Sequence[str] | None = None,
) -> str | None:
    """Commit ``edit``'s changes onto the newest tip of ``branch`` and push, until the deadline.

    ``edit`` works in a temporary work tree holding ``paths`` from the tip (all files when
    None). Returns the new commit, or None when nothing changed. Raises as
    :func:`write_branch` does.
    """

    def build(base: str | None) -> str | None:
        return build_commit(repo, base, edit, message, paths)

    return write_branch(repo, branch, remote, build, retry)


def write_branch(
    repo: Path,
    branch: str,
    remote: str | None,
    build: Builder,
    retry: PushRetryPolicy,
    *,
    doing: str = "writing",
    deadline: float | None = None,
) -> str | None:
    """Move ``branch`` to the commit ``build`` makes on its newest tip, until the deadline.

    With ``remote``, each attempt fetches the tip, builds on it and pushes; without one it
    builds on the local branch and moves it if nobody else did. An attempt that lost a
    race for the ref, or met a network failure (a time limit included), is built again on
    the new tip after a full-jitter backoff. ``deadline``: the ``time.monotonic()`` moment
    to give up at (default: the policy's deadline from now); ``doing`` names the write in
    the message that gives up. Returns the new commit, or None when ``build`` had nothing
    to write. Raises PushRefused when the server declines the push, PushDeadline when the
    deadline passes first, GateMalfunction for any other failure (at once).
    """
    deadline = time.monotonic() + retry.deadline_s if deadline is None else deadline
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        try:
            return _attempt(repo, branch, remote, build, deadline)
        except Retryable as failure:
            # The last attempt happens at the deadline, never after it.
            wait = min(retry.delay(attempt, time.monotonic() - began), deadline - time.monotonic())
            if wait <= 0:
                where = "baseline" if remote else "local"
                raise PushDeadline(
                    f"gave up {doing} the {where} branch {branch!r} after {attempt} "
                    f"attempt(s) in {retry.deadline_s:g} s ({failure.kind.value}: "
                    f"{failure.detail})"
                ) from None
            time.sleep(wait)


class Retryable(Exception):
    """One attempt failed in a way another attempt may not (a lost race, a network blip)."""

    def __init__(self, kind: PushFailure, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _attempt(
    repo: Path, branch: str, remote: str | None, build: Builder, deadline: float
) -> str | None:
    """One fetch, build and push (or local ref move), each network call bounded by the time
    left before ``deadline``; Retryable when another attempt may succeed."""
    if remote is None:
        base = resolve(repo, f"refs/heads/{branch}")
    else:
        try:
            base = fetch_tip(repo, branch, remote, timeout=time_left(deadline))
        except GitError as exc:
            # A fetch is never refused by a hook: a lost race for the remote-tracking ref
            # or a network failure is retried, anything else is the reader's malfunction.
            kind = classify(exc.stderr)
            if kind in (PushFailure.RACE, PushFailure.TRANSIENT):
                raise Retryable(kind, reason(exc.stderr)) from None
            raise
    commit = build(base)
    if commit is None:
        return None
    if remote is None:
        move_local_branch(repo, branch, commit, base)
        return commit
    try:
        git("push", "--quiet", remote, f"{commit}:refs/heads/{branch}", cwd=repo,
            timeout=time_left(deadline))  # fmt: skip
    except GitError as exc:
        raise push_error(exc.stderr, branch, remote) from None
    git("update-ref", f"refs/remotes/{remote}/{branch}", commit, cwd=repo)
    return commit


def move_local_branch(repo: Path, branch: str, commit: str, old: str | None) -> None:
    """Point the local ``branch`` at ``commit`` if it is still at ``old`` (None: absent).

    Raises Retryable when another writer moved the branch first, GateMalfunction when git
    refuses the update for a reason another attempt cannot change.
    """
    try:
        git("update-ref", f"refs/heads/{branch}", commit, old or null_oid(commit), cwd=repo)
    except GitError as exc:
        if _REF_RACE.search(exc.stderr):
            raise Retryable(PushFailure.RACE, reason(exc.stderr)) from None
        raise GateMalfunction(
            f"cannot write the local branch {branch!r}: {reason(exc.stderr)}"
        ) from None


def build_commit(
    repo: Path, base: str | None, edit: Editor, message: str, paths: Sequence[str] | None
) -> str | None:
    """The commit of ``edit``'s changes on ``base``, built off a temporary index."""
    with tempfile.TemporaryDirectory(prefix="perfgate-store-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(tree), **AUTHOR}
        git("read-tree", *([base] if base else ["--empty"]), cwd=repo, env=env)
        if base is not None and paths is None:
            git("checkout-index", "-a", "-f", cwd=repo, env=env)
        elif base is not None and paths:
            present = _listed(repo, base, paths)
            if present:
                git("checkout-index", "-f", "--", *present, cwd=repo, env=env)
        if not edit(tree):
            return None
        if paths is None:
            git("add", "-A", "--", ":/", cwd=repo, env=env)
        else:
            # Only ``paths`` were materialised: the rest of the tree is absent on purpose,
            # so removals are staged path by path (an edit deletes what it no longer needs).
            git("add", "--ignore-removal", "--", ":/", cwd=repo, env=env)
            gone = [path for path in paths if not (tree / path).exists()]
            if gone:
                git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *gone, cwd=repo, env=env)
        new_tree = git("write-tree", cwd=repo, env=env).strip()
        parents = ["-p", base] if base else []
        return git("commit-tree", new_tree, *parents, "-m", message, cwd=repo, env=env).strip()


def _listed(repo: Path, base: str, paths: Sequence[str]) -> list[str]:
    """Those of ``paths`` (files, or directories listed whole) that ``base`` holds."""
    # NUL-separated and unquoted: a name with a space, a tab or a non-ASCII letter is
    # listed as it is, where the plain listing splits or quotes it.
    listing = git("--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", base, "--",
                  *paths, cwd=repo)  # fmt: skip
    return [name for name in listing.split("\0") if name]


def reason(stderr: str) -> str:
    """The line of git's output that says why it failed (not its hints)."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for marker in ("rejected]", "error:", "fatal:"):
        for line in lines:
            if marker in line:
                return line
    return lines[-1] if lines else "no output"


def remote_says(stderr: str) -> str:
    """The server's own words (``remote:`` lines) and git's verdict line, on one line."""
    said = [
        line.strip().removeprefix("remote:").strip()
        for line in stderr.splitlines()
        if line.strip().startswith("remote:") and line.strip() != "remote:"
    ]
    verdict = [line.strip() for line in stderr.splitlines() if "rejected]" in line]
    return "; ".join([*said, *verdict]) or reason(stderr)


def parked_batches(repo: Path, branch: str, remote: str, timeout: float) -> list[str]:
    """A warning naming the batches an earlier perfgate parked for ``branch``, if any."""
    listing = try_git("ls-remote", remote, f"{INCOMING}/{branch}/*", cwd=repo,
                      timeout=timeout) or ""  # fmt: skip
    refs = [line.split()[1] for line in listing.splitlines() if len(line.split()) == 2]
    if not refs:
        return []
    shown = ", ".join(refs[:3]) + (f" and {len(refs) - 3} more" if len(refs) > 3 else "")
    return [
        f"{len(refs)} batch(es) of samples parked on {remote!r} by an earlier perfgate "
        f"({shown}) are not landed: nothing shows which run wrote them, so their figures "
        f"cannot be trusted. Delete them with `git push {remote} --delete REF`"
    ]
