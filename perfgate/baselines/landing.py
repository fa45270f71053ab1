"""Landing samples on the remote baseline branch when many publishers push at once (R9).

Every publisher fetches the tip, builds its commit on it and pushes; one that loses the
race to another publisher (or meets a passing network failure) builds again on the new
tip after a full-jitter backoff, until the deadline. Samples that cannot land before it
are kept by the caller (``pending-samples.ndjson``, uploaded as the run's artifact).

Nothing else lands with a publisher's samples. Earlier perfgates parked a losing
publisher's samples on the origin under ``refs/perfgate/incoming/<branch>/`` for the next
one to land; anyone with push access can write such a ref (branch protection does not
cover it) and no GitHub API ties a ref to the workflow run that pushed it, so a batch
naming a real run could carry any figure. Batches left there are named, never landed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baselines.pushing import (
    PushDeadline,
    PushFailure,
    PushRefused,
    PushRetryPolicy,
    Retryable,
    classify,
    move_local_branch,
    push_error,
    reason,
    remote_says,
)
from perfgate.baselines.samples import Sample
from perfgate.errors import GateMalfunction, GitError
from perfgate.git import git, resolve, time_left, try_git

# Where earlier perfgates parked batches of samples; read only to say they are not landed.
INCOMING = "refs/perfgate/incoming"


@dataclass(frozen=True, kw_only=True)
class Built:
    """A commit of samples on a base: None when nothing was new."""

    commit: str | None
    added: int
    present: int


# Builds the commit that adds ``samples`` to ``base``.
Builder = Callable[[str | None, Sequence[Sample]], Built]


@dataclass(frozen=True, kw_only=True)
class Landing:
    """How a publisher's samples reached the branch."""

    commit: str | None
    added: int
    present: int
    warnings: tuple[str, ...] = ()


def land(
    repo: Path,
    branch: str,
    remote: str,
    mine: Sequence[Sample],
    retry: PushRetryPolicy,
    build: Builder,
) -> Landing:
    """Land ``mine`` on the remote branch before the deadline.

    Raises PushRefused when the server declines the branch update, PushDeadline when the
    deadline passes first.
    """
    deadline = time.monotonic() + retry.deadline_s
    warnings = _parked_batches(repo, branch, remote, time_left(deadline))
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        try:
            # Each network call is bounded by what is left: a stalled remote costs the
            # deadline, never more.
            tip = _fetch_tip(repo, branch, remote, time_left(deadline))
            built = build(tip, mine)
            if built.commit is not None:
                _push(repo, remote, branch, built.commit, time_left(deadline))
            return Landing(
                commit=built.commit, added=built.added, present=built.present,
                warnings=tuple(warnings),
            )  # fmt: skip
        except Retryable as failure:
            # The last attempt happens at the deadline, never after it.
            wait = min(retry.delay(attempt, time.monotonic() - began), deadline - time.monotonic())
            if wait <= 0:
                raise PushDeadline(
                    f"gave up landing samples on the baseline branch {branch!r} after "
                    f"{attempt} attempt(s) in {retry.deadline_s:g} s ({failure.kind.value}: "
                    f"{failure.detail})"
                ) from None
            time.sleep(wait)


def land_local(
    repo: Path, branch: str, mine: Sequence[Sample], retry: PushRetryPolicy, build: Builder
) -> Landing:
    """Land ``mine`` on the local branch: build on its tip, move the ref if nobody else did."""
    deadline = time.monotonic() + retry.deadline_s
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        tip = resolve(repo, f"refs/heads/{branch}")
        built = build(tip, mine)
        if built.commit is None:
            return Landing(commit=None, added=0, present=built.present)
        try:
            move_local_branch(repo, branch, built.commit, tip)
            return Landing(commit=built.commit, added=built.added, present=built.present)
        except Retryable as failure:
            wait = min(retry.delay(attempt, time.monotonic() - began), deadline - time.monotonic())
            if wait <= 0:
                raise PushDeadline(
                    f"gave up writing the local branch {branch!r} after {attempt} attempt(s): "
                    f"{failure.detail}"
                ) from None
            time.sleep(wait)


def _fetch_tip(repo: Path, branch: str, remote: str, timeout: float) -> str | None:
    """The branch tip on the remote, fetched; None before the first publish creates it."""
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        git("fetch", "--quiet", "--no-tags", "--prune", remote, f"+refs/heads/{branch}:{tracking}",
            cwd=repo, timeout=timeout)  # fmt: skip
    except GitError as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise _failure(exc) from None
        return None
    return resolve(repo, tracking)


def _failure(exc: GitError) -> Exception:
    """A failed fetch as the loop sees it: retry, refusal, or malfunction."""
    kind = classify(exc.stderr)
    if kind in (PushFailure.RACE, PushFailure.TRANSIENT):
        return Retryable(kind, reason(exc.stderr))
    if kind is PushFailure.REFUSED:
        return PushRefused(remote_says(exc.stderr))
    return GateMalfunction(remote_says(exc.stderr))


def _push(repo: Path, remote: str, branch: str, commit: str, timeout: float) -> None:
    """Move the remote branch to ``commit`` (a fast-forward of the tip it was built on)."""
    try:
        git("push", "--quiet", remote, f"{commit}:refs/heads/{branch}", cwd=repo, timeout=timeout)
    except GitError as exc:
        raise push_error(exc.stderr, branch, remote) from None
    git("update-ref", f"refs/remotes/{remote}/{branch}", commit, cwd=repo)


def _parked_batches(repo: Path, branch: str, remote: str, timeout: float) -> list[str]:
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
