"""What changed for each bucket since the baseline branch last measured it.

A coalesced push run (``workflows.coalesce_pushes``) may follow pushes that were
superseded unmeasured, so the commit it follows (``github.event.before``) does not say
what its samples must cover. The baseline branch does: the nearest ancestor of HEAD at
which a push run or a seed stored the bucket's experiment (its launch hash and baseline
epoch as perfgate.yaml now declares them) is the code it last measured, and the bucket
needs measuring again only when a file its ``paths:`` select changed since. A bucket
with no such commit is measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from perfgate.baselines.publish import PUSHED_SOURCE
from perfgate.baselines.reading import ancestry
from perfgate.baselines.samples import Sample, sample_path
from perfgate.baselines.seed.replay import TRUSTED_SOURCE as SEEDED
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import hardware_partitions
from perfgate.config import Bucket
from perfgate.run.launch import bucket_hashes
from perfgate.util.git import git


def last_measured(
    store: BaselineStore, buckets: Sequence[Bucket], *, target_branch: str, head: str
) -> dict[str, str | None]:
    """Each bucket's nearest ancestor of ``head`` holding a stored run of its experiment on
    ``target_branch`` (None: none)."""
    tip = store.refresh()
    if tip is None:
        return {b.id: None for b in buckets}
    distance = ancestry(store.repo, head)
    paths = {b.id: [sample_path(h, b.task, b.backend_key)
                    for h in hardware_partitions(store.repo, tip)] for b in buckets}  # fmt: skip
    stored = store.read([p for each in paths.values() for p in each], tip)
    found: dict[str, str | None] = {}
    for bucket in buckets:
        launch, _ = bucket_hashes(bucket)

        def same_experiment(sample: Sample, bucket: Bucket = bucket, launch: str = launch) -> bool:
            return (
                sample.target_branch == target_branch
                # What measured the branch's own commits on its runners: never an import
                # from another tool (pull requests' samples are never stored).
                and sample.trusted_source in (PUSHED_SOURCE, SEEDED)
                and sample.launch_hash == launch
                and sample.baseline_epoch == bucket.baseline_epoch
                and sample.commit in distance
            )

        commits = {s.commit for p in paths[bucket.id] for s in stored[p] if same_experiment(s)}
        found[bucket.id] = min(commits, key=distance.__getitem__, default=None)
    return found


def changed_since(
    repo: Path, measured_at: Mapping[str, str | None], head: str
) -> dict[str, tuple[str, ...] | None]:
    """Per bucket, the files changed between its last measured commit and ``head`` (a
    rename as its old and new paths); None when it has none (it must be measured)."""
    diffs: dict[str, tuple[str, ...]] = {}  # one diff per stored commit
    for commit in {c for c in measured_at.values() if c is not None}:
        listing = git("diff", "--name-only", "--no-renames", "-z", commit, head, cwd=repo)
        diffs[commit] = tuple(name for name in listing.split("\0") if name)
    return {
        bucket_id: None if commit is None else diffs[commit]
        for bucket_id, commit in measured_at.items()
    }
