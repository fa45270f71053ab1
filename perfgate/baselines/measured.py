"""What changed for each bucket since the baseline branch last measured it.

A coalesced push run (``workflows.coalesce_pushes``) may follow pushes that were
superseded unmeasured, so the commit it follows (``github.event.before``) does not say
what its samples must cover. The baseline branch does: each bucket's newest stored run on
the target branch is the code it last measured, and the bucket needs measuring again only
when a file its ``paths:`` select changed since. Whatever cannot be read that way (a
bucket never measured, a stored commit outside HEAD's history) is measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from perfgate.baselines.history import read_history
from perfgate.baselines.seed.plan import is_ancestor
from perfgate.baselines.store import BaselineStore
from perfgate.config import Bucket
from perfgate.util.git import git


def last_measured(
    store: BaselineStore, buckets: Sequence[Bucket], *, target_branch: str, min_samples: int
) -> dict[str, str | None]:
    """Each bucket's newest commit of ``target_branch`` the baseline branch holds a run of
    (None: none)."""
    history = read_history(store, buckets, target_branch=target_branch, min_samples=min_samples)
    newest: dict[str, tuple[int, str] | None] = {b.id: None for b in buckets}
    for series in history.series():
        for run in series.runs:
            seen = newest[series.bucket.id]
            if seen is None or run.commit.position > seen[0]:
                newest[series.bucket.id] = (run.commit.position, run.commit.sha)
    return {bucket_id: None if found is None else found[1] for bucket_id, found in newest.items()}


def changed_since(
    repo: Path, measured_at: Mapping[str, str | None], head: str
) -> dict[str, tuple[str, ...] | None]:
    """Per bucket, the files changed between its last measured commit and ``head``; None
    when it has none to compare with (never measured, or measured outside ``head``'s
    history), so it must be measured."""
    diffs: dict[str, tuple[str, ...] | None] = {}  # one diff per stored commit
    for commit in {c for c in measured_at.values() if c is not None}:
        diffs[commit] = (
            tuple(git("diff", "--name-only", commit, head, cwd=repo).splitlines())
            if is_ancestor(repo, commit, head)
            else None
        )
    return {
        bucket_id: None if commit is None else diffs[commit]
        for bucket_id, commit in measured_at.items()
    }
