"""What changed for each bucket since the baseline branch last measured it.

A coalesced push run (``workflows.coalesce_pushes``) may follow pushes that were
superseded unmeasured, so the commit it follows (``github.event.before``) does not say
what its samples must cover. The baseline branch does: the nearest ancestor of HEAD at
which a push run or a seed stored the bucket's experiment as perfgate.yaml now declares
it (its launch hash, each declared metric's benchmark hash, its baseline epoch) is the
code it last measured, and the bucket needs measuring again only when a file its
``paths:`` select changed since. A bucket with no such commit is measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from perfgate.baselines.publish import PUSHED_SOURCE
from perfgate.baselines.reading import ancestry
from perfgate.baselines.samples import sample_path
from perfgate.baselines.seed.replay import TRUSTED_SOURCE as SEEDED
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import hardware_partitions
from perfgate.config import Bucket
from perfgate.identity import stable_hash
from perfgate.run.launch import benchmark_identity, launch_identity
from perfgate.util.git import git_paths


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
        contract = _contract(bucket)
        current: set[str] = set()  # commits with a primary sample of this experiment
        stale: set[str] = set()  # ... and with a declared metric of another contract
        for path in paths[bucket.id]:
            for sample in stored[path]:
                if not (
                    sample.target_branch == target_branch
                    # What measured the branch's own commits on its runners: never an
                    # import from another tool (pull requests' samples are never stored).
                    and sample.trusted_source in (PUSHED_SOURCE, SEEDED)
                    and sample.commit in distance
                    and sample.metric in contract
                ):
                    continue
                same = (sample.launch_hash, sample.benchmark_hash, sample.baseline_epoch)
                if same != contract[sample.metric]:
                    stale.add(sample.commit)
                elif sample.metric == bucket.metric.name:
                    current.add(sample.commit)
        found[bucket.id] = min(current - stale, key=distance.__getitem__, default=None)
    return found


def _contract(bucket: Bucket) -> dict[str, tuple[str, str, int]]:
    """Each metric the bucket declares, by name: the launch and benchmark hashes and the
    baseline epoch of its current experiment. A metric added since is not asked for (a
    run may lack an optional figure); a selection's benchmarks vary from run to run, and
    the primary's contract carries the driver's and the contract's versions they share."""
    launch = stable_hash(launch_identity(bucket))
    return {
        metric.name: (launch, stable_hash(benchmark_identity(bucket, metric)),
                      bucket.baseline_epoch)
        for metric in bucket.all_metrics
        if not metric.select
    }  # fmt: skip


def changed_since(
    repo: Path, measured_at: Mapping[str, str | None], head: str
) -> dict[str, tuple[str, ...] | None]:
    """Per bucket, the files changed between its last measured commit and ``head`` (a
    rename as its old and new paths); None when it has none (it must be measured)."""
    diffs = {  # one diff per stored commit
        commit: git_paths("diff", "--name-only", "--no-renames", "-z", commit, head, cwd=repo)
        for commit in {c for c in measured_at.values() if c is not None}
    }
    return {
        bucket_id: None if commit is None else diffs[commit]
        for bucket_id, commit in measured_at.items()
    }
