"""Landing samples on the remote baseline branch when many publishers push at once (R9).

Every publisher first tries to land its samples directly: fetch the tip, build a commit,
push. One that loses the race parks its samples on the origin as a batch: a small commit
holding ``batch.ndjson``, under ``refs/perfgate/incoming/<branch>/<blob id>`` (content
addressed, so parking twice is a no-op). Whoever lands next lands every parked batch it
saw, in one atomic push that also deletes those batch refs; a publisher whose batch is
gone finds its samples on the tip and is done. A merge burst of N publishers costs a few
landings instead of N rounds of races, and samples that cannot land before the deadline
stay parked on the origin, where the next publish picks them up.

A batch is landed twice at worst (a landing whose deletion did not happen), which the
sample-id dedup of the store absorbs: nothing is lost, nothing is duplicated.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baselines.pushing import (
    AUTHOR,
    PushDeadline,
    PushFailure,
    PushRefused,
    Retryable,
    RetryPolicy,
    classify,
    push_error,
    reason,
    remote_says,
)
from perfgate.baselines.reading import resolve, stream_blobs
from perfgate.baselines.samples import Sample
from perfgate.baselines.segments import decode, ids_path
from perfgate.errors import GateMalfunction, GitError
from perfgate.git import git

INCOMING = "refs/perfgate/incoming"
BATCH_FILE = "batch.ndjson"
# Batch commits carry no clock, so the same samples always make the same commit.
_FIXED_DATES = {
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
}


@dataclass(frozen=True, kw_only=True)
class Built:
    """A commit of samples on a base: None when nothing was new; counts for ``mine`` only."""

    commit: str | None
    added: int
    present: int


# Builds the commit that adds ``samples`` to ``base``, counting the first ``mine`` of them.
Builder = Callable[[str | None, Sequence[Sample], int], Built]


@dataclass(frozen=True, kw_only=True)
class Landing:
    """How a publisher's samples reached the branch."""

    commit: str | None
    added: int
    present: int
    # Another publisher's landing carried them (this one had parked them).
    by_other: bool = False
    warnings: tuple[str, ...] = ()


def queue_prefix(branch: str) -> str:
    """Where batches waiting for ``branch`` are parked on the origin."""
    return f"{INCOMING}/{branch}/"


def land(
    repo: Path,
    branch: str,
    remote: str,
    mine: Sequence[Sample],
    retry: RetryPolicy,
    build: Builder,
) -> Landing:
    """Land ``mine`` (and every batch parked for the branch) before the deadline.

    Raises PushRefused when the server declines the branch update, PushDeadline when the
    deadline passes first; either way the message says where the samples wait.
    """
    deadline = time.monotonic() + retry.deadline_s
    parked: str | None = None
    parking_refused = False
    first: Built | None = None
    warnings: list[str] = []
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        try:
            tip, queued = _fetch_queue(repo, branch, remote)
            if parked is not None and parked not in queued:
                if _all_stored(repo, tip, mine):
                    counts = first or Built(commit=None, added=len(mine), present=0)
                    return Landing(
                        commit=tip,
                        added=counts.added,
                        present=counts.present,
                        by_other=True,
                        warnings=tuple(warnings),
                    )
                parked = None  # dropped without being landed: park again if this loses
            carried = _read_batches(repo, queued, warnings)
            built = build(tip, [*mine, *carried], len(mine))
            first = first or built
            if built.commit is None and not queued:
                return Landing(
                    commit=None, added=0, present=built.present, warnings=tuple(warnings)
                )
            _push_landing(repo, remote, branch, built.commit, queued)
            return Landing(
                commit=built.commit, added=built.added, present=built.present,
                warnings=tuple(warnings),
            )  # fmt: skip
        except Retryable as failure:
            if parked is None and not parking_refused:
                try:
                    parked = _park(repo, branch, remote, mine)
                except PushRefused:
                    parking_refused = True  # this server keeps no queue: plain retries
                except Retryable:
                    pass
            # The last attempt happens at the deadline, never after it.
            wait = min(retry.delay(attempt, time.monotonic() - began), deadline - time.monotonic())
            if wait <= 0:
                where = (
                    f"; the samples wait on {remote!r} at {parked}, and the next publish lands them"
                    if parked
                    else ""
                )
                raise PushDeadline(
                    f"gave up landing samples on the baseline branch {branch!r} after "
                    f"{attempt} attempt(s) in {retry.deadline_s:g} s ({failure.kind.value}: "
                    f"{failure.detail}){where}",
                    parked=parked,
                ) from None
            time.sleep(wait)


def land_local(
    repo: Path, branch: str, mine: Sequence[Sample], retry: RetryPolicy, build: Builder
) -> Landing:
    """Land ``mine`` on the local branch: build on its tip, move the ref if nobody else did."""
    deadline = time.monotonic() + retry.deadline_s
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        tip = resolve(repo, f"refs/heads/{branch}")
        built = build(tip, mine, len(mine))
        if built.commit is None:
            return Landing(commit=None, added=0, present=built.present)
        try:
            git("update-ref", f"refs/heads/{branch}", built.commit, tip or "0" * 40, cwd=repo)
            return Landing(commit=built.commit, added=built.added, present=built.present)
        except GitError as exc:
            wait = min(retry.delay(attempt, time.monotonic() - began), deadline - time.monotonic())
            if wait <= 0:
                raise PushDeadline(
                    f"gave up writing the local branch {branch!r} after {attempt} attempt(s): "
                    f"{reason(exc.stderr)}"
                ) from None
            time.sleep(wait)


def _fetch_queue(repo: Path, branch: str, remote: str) -> tuple[str | None, dict[str, str]]:
    """The branch tip on the remote and its parked batches (ref -> commit), fetched."""
    tracking = f"refs/remotes/{remote}/{branch}"
    local_queue = f"refs/perfgate/queued/{remote}/{branch}/"
    specs = [f"+{queue_prefix(branch)}*:{local_queue}*", f"+refs/heads/{branch}:{tracking}"]
    try:
        _fetch(repo, remote, specs)
        tip = resolve(repo, tracking)
    except GitError as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise _failure(exc) from None
        try:
            _fetch(repo, remote, specs[:1])  # no branch yet: the first publish creates it
        except GitError as again:
            raise _failure(again) from None
        tip = None
    listing = git("for-each-ref", "--format=%(refname) %(objectname)", local_queue, cwd=repo)
    queued = {}
    for line in listing.splitlines():
        name, sha = line.split()
        queued[queue_prefix(branch) + name.removeprefix(local_queue)] = sha
    return tip, queued


def _fetch(repo: Path, remote: str, specs: Sequence[str]) -> None:
    git("fetch", "--quiet", "--no-tags", "--prune", remote, *specs,
        cwd=repo)  # fmt: skip


def _failure(exc: GitError) -> Exception:
    """A failed fetch or push as the loop sees it: retry, refusal, or malfunction."""
    kind = classify(exc.stderr)
    if kind in (PushFailure.RACE, PushFailure.TRANSIENT):
        return Retryable(kind, reason(exc.stderr))
    if kind is PushFailure.REFUSED:
        return PushRefused(remote_says(exc.stderr))
    return GateMalfunction(remote_says(exc.stderr))


def _read_batches(repo: Path, queued: Mapping[str, str], warnings: list[str]) -> list[Sample]:
    """Every sample of the parked batches; a line that is not a sample is skipped and named."""
    samples: list[Sample] = []
    specs = [f"{sha}:{BATCH_FILE}" for sha in queued.values()]
    for ref, blob in zip(queued, stream_blobs(repo, specs), strict=True):
        for number, line in enumerate(decode(blob.data or b"").splitlines(), 1):
            try:
                sample = Sample.from_line(line)
            except ValueError as exc:
                warnings.append(f"{ref}:{BATCH_FILE}:{number}: not a sample, skipped ({exc})")
                continue
            samples.append(sample)
    return samples


def _push_landing(
    repo: Path, remote: str, branch: str, commit: str | None, queued: Mapping[str, str]
) -> None:
    """Move the branch to ``commit`` and delete the landed batches, all or nothing."""
    leases = [f"--force-with-lease={ref}:{sha}" for ref, sha in queued.items()]
    updates = [f":{ref}" for ref in queued]
    if commit is not None:
        updates.insert(0, f"{commit}:refs/heads/{branch}")
    try:
        git("push", "--atomic", "--quiet", *leases, remote, *updates, cwd=repo)
    except GitError as exc:
        raise push_error(exc.stderr, branch, remote) from None
    if commit is not None:
        git("update-ref", f"refs/remotes/{remote}/{branch}", commit, cwd=repo)


def _park(repo: Path, branch: str, remote: str, samples: Sequence[Sample]) -> str:
    """Push ``samples`` as a batch for the next landing; its ref on the origin."""
    text = "".join(f"{line}\n" for line in sorted(s.to_line() for s in samples))
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input_text=text).strip()
    tree = git("mktree", cwd=repo, input_text=f"100644 blob {blob}\t{BATCH_FILE}\n").strip()
    message = f"perfgate: {len(samples)} sample(s) waiting for {branch}"
    env = {**AUTHOR, **_FIXED_DATES}
    commit = git("commit-tree", tree, "-m", message, cwd=repo, env=env).strip()
    ref = queue_prefix(branch) + blob
    try:
        git("push", "--quiet", remote, f"{commit}:{ref}", cwd=repo)
    except GitError as exc:
        raise _failure(exc) from None
    return ref


def _all_stored(repo: Path, tip: str | None, samples: Sequence[Sample]) -> bool:
    """True when every sample's id is in its bucket's id list at ``tip``."""
    if tip is None:
        return False
    paths = sorted({ids_path(s.path) for s in samples})
    stored: set[str] = set()
    for blob in stream_blobs(repo, [f"{tip}:{path}" for path in paths]):
        stored.update(decode(blob.data or b"").split())
    return all(s.sample_id in stored for s in samples)
