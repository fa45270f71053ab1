"""Which buckets can gate: per bucket, the largest group of stored samples of one fingerprint.

A fingerprint is a window's identity (target branch, launch, benchmark and runtime hashes,
baseline epoch): the samples a window could ever hold together. A bucket is READY when its
largest group reaches the minimum window, WARMING when it has some samples, EMPTY otherwise.
Only groups of the experiment the config describes now count (same launch and
benchmark hashes and epoch): samples of an experiment that changed can never gate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfgate.baselines.reading import ancestry
from perfgate.baselines.samples import Sample, WindowIdentity, sample_path
from perfgate.baselines.seed.plan import branch_tip
from perfgate.baselines.store import BaselineStore
from perfgate.config import PRIMARY, Bucket
from perfgate.errors import UsageError
from perfgate.run.launch import bucket_hashes
from perfgate.util.console import render_table
from perfgate.util.git import git

VERIFY_SCHEMA_VERSION = 1


class Readiness(StrEnum):
    """Whether a bucket's baseline can judge a result."""

    READY = "READY"
    WARMING = "WARMING"
    EMPTY = "EMPTY"


@dataclass(frozen=True, kw_only=True)
class BucketReadiness:
    """One bucket's verdict and the counts behind it."""

    bucket: str
    status: Readiness
    samples: int
    min_samples: int
    fingerprints: int
    other_samples: int
    fingerprint: WindowIdentity | None

    def to_json(self) -> dict[str, Any]:
        """The bucket's entry in the JSON report."""
        return {
            "bucket": self.bucket,
            "status": self.status.value,
            "samples": self.samples,
            "min_samples": self.min_samples,
            "fingerprints": self.fingerprints,
            "other_samples": self.other_samples,
            "fingerprint": self.fingerprint.as_json() if self.fingerprint else None,
        }


def classify(
    bucket: Bucket,
    samples: Iterable[Sample],
    *,
    target_branch: str,
    min_samples: int,
    ancestors: frozenset[str] | None = None,
    newest_runtime: bool = False,
) -> BucketReadiness:
    """READY / WARMING / EMPTY from the largest single-fingerprint group of the current experiment.

    ``ancestors``, when given, keeps only samples whose commit is on the target branch,
    as a window would. ``newest_runtime`` counts only the group of the newest sample's
    runtime: after an image era roll, the image the gate runs now. The primary metric's
    samples are counted: a bucket's other metrics are stored by the same runs.
    """
    launch_hash, benchmark_hash = bucket_hashes(bucket)
    usable = [
        s
        for s in samples
        if s.metric == PRIMARY
        and s.target_branch == target_branch
        and (ancestors is None or s.commit in ancestors)
    ]
    groups = Counter(s.window_identity for s in usable)
    current = {
        fp: n
        for fp, n in groups.items()
        if fp.launch_hash == launch_hash
        and fp.benchmark_hash == benchmark_hash
        and fp.baseline_epoch == bucket.baseline_epoch
    }
    if newest_runtime and current:
        # Timestamps are UTC ISO strings of one format: they sort as they happened.
        newest = max((s for s in usable if s.window_identity in current), key=lambda s: s.timestamp)
        current = {fp: n for fp, n in current.items() if fp.runtime_hash == newest.runtime_hash}
    best = max(current.items(), key=lambda item: (item[1], item[0].runtime_hash), default=None)
    count = best[1] if best else 0
    if count >= min_samples:
        status = Readiness.READY
    elif count > 0:
        status = Readiness.WARMING
    else:
        status = Readiness.EMPTY
    return BucketReadiness(
        bucket=bucket.id,
        status=status,
        samples=count,
        min_samples=min_samples,
        fingerprints=len(groups),
        other_samples=len(usable) - count,
        fingerprint=best[0] if best else None,
    )


def readiness_table(rows: Sequence[BucketReadiness]) -> str:
    """The verification table for a terminal."""
    return render_table(
        ["bucket", "status", "samples", "needed", "fingerprints", "other samples"],
        [
            [
                r.bucket,
                r.status.value,
                str(r.samples),
                str(r.min_samples),
                str(r.fingerprints),
                str(r.other_samples),
            ]
            for r in rows
        ],
    )


def readiness_json(
    rows: Sequence[BucketReadiness],
    *,
    hardware: str,
    target_branch: str,
    baseline_tip: str | None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The machine-readable verification report."""
    counts = Counter(r.status.value for r in rows)
    return {
        "schema_version": VERIFY_SCHEMA_VERSION,
        "hardware": hardware,
        "target_branch": target_branch,
        "baseline_tip": baseline_tip,
        "ready": bool(rows) and all(r.status is Readiness.READY for r in rows),
        "counts": {status.value: counts.get(status.value, 0) for status in Readiness},
        "notes": list(notes),
        "buckets": [r.to_json() for r in rows],
    }


def hardware_partitions(repo: Path, tip: str) -> tuple[str, ...]:
    """The hardware slugs holding samples on the baseline branch at ``tip``."""
    listing = git("ls-tree", "--name-only", tip, "--", "samples/", cwd=repo)
    return tuple(sorted(line.rsplit("/", 1)[-1] for line in listing.split()))


def _rank(row: BucketReadiness) -> tuple[int, int]:
    order = {Readiness.EMPTY: 0, Readiness.WARMING: 1, Readiness.READY: 2}
    return order[row.status], row.samples


def verify_store(
    store: BaselineStore,
    buckets: Sequence[Bucket],
    *,
    hardware: Sequence[str],
    target_branch: str,
    min_samples: int,
    newest_runtime: bool = False,
) -> tuple[list[BucketReadiness], list[str], str | None]:
    """Each bucket's readiness from the baseline branch, the notes, and the tip read.

    With several ``hardware`` slugs (none: every partition on the branch) a bucket gets
    its best partition: how a hosted runner checks buckets of self-hosted pools.
    """
    notes: list[str] = []
    try:
        target_tip: str | None = branch_tip(store.repo, target_branch, store.remote)
    except UsageError:
        target_tip = None
        notes.append(f"{target_branch} is not known here: samples are counted without ancestry")
    ancestors = frozenset(ancestry(store.repo, target_tip)) if target_tip else None
    tip = store.refresh()
    if tip is None:
        notes.append(f"the baseline branch {store.branch} does not exist yet")
    slugs = tuple(hardware) or (hardware_partitions(store.repo, tip) if tip else ())
    paths = {(h, b.id): sample_path(h, b.task, b.backend_key) for h in slugs for b in buckets}
    stored = store.read(paths.values(), tip) if tip and paths else {}
    rows = []
    for bucket in buckets:
        candidates = [
            classify(
                bucket,
                stored.get(paths[h, bucket.id], []),
                target_branch=target_branch,
                min_samples=min_samples,
                ancestors=ancestors,
                newest_runtime=newest_runtime,
            )
            for h in slugs
        ]
        empty = classify(bucket, [], target_branch=target_branch, min_samples=min_samples)
        rows.append(max(candidates, key=_rank, default=empty))
    notes.extend(store.warnings)
    return rows, notes, tip
