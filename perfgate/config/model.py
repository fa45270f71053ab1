"""``Config``: the whole validated perfgate.yaml, its parts from policy, bucket and image."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from perfgate.config.bucket import Bucket
from perfgate.config.image import ImageSpec
from perfgate.config.policy import (
    ActionRef,
    AdmissionPolicy,
    AlertsSpec,
    GatePolicy,
    QualifyPolicy,
    ReportSpec,
)
from perfgate.errors import UsageError

DEFAULT_CONFIG = Path("perfgate.yaml")


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated perfgate.yaml."""

    path: Path
    gate: GatePolicy
    buckets: tuple[Bucket, ...]
    image: ImageSpec | None = None
    qualify: QualifyPolicy = field(default_factory=QualifyPolicy)
    # workflows.perfgate_source: the pip requirement rendered CI jobs install perfgate from.
    perfgate_source: str | None = None
    # What still works but should change (deprecated keys), each naming file and line.
    notices: tuple[str, ...] = ()
    # workflows.action_ref: how workflows reference the composite actions (self or local).
    action_ref: ActionRef = ActionRef.SELF
    # workflows.bench_jobs: runner jobs a run fans out to, at most, per runner pool.
    bench_jobs: int = 1
    # workflows.coalesce_pushes: one push run per branch at a time, the newest pending wins.
    coalesce_pushes: bool = False
    # workflows.benchmark_install: pip arguments for what the project's own benchmark needs,
    # installed after perfgate in every job that runs it (e.g. -e, ".[bench]").
    benchmark_install: tuple[str, ...] = ()
    report: ReportSpec = field(default_factory=ReportSpec)
    admission: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    alerts: AlertsSpec = field(default_factory=AlertsSpec)

    def bucket_ids(self) -> tuple[str, ...]:
        """Every bucket id, in declaration order."""
        return tuple(bucket.id for bucket in self.buckets)

    def find(self, bucket_id: object) -> Bucket | None:
        """The bucket declared as ``bucket_id`` (None when none is)."""
        return next((bucket for bucket in self.buckets if bucket.id == bucket_id), None)

    def runner_pools(self) -> tuple[tuple[str, ...], ...]:
        """The distinct runner label sets of the buckets, in order of first appearance."""
        return tuple(dict.fromkeys(bucket.runner for bucket in self.buckets))

    def select(
        self, ids: Iterable[str] = (), tags: Iterable[str] = (), backends: Iterable[str] = ()
    ) -> tuple[Bucket, ...]:
        """Buckets named by id or carrying a tag (all when neither is given), narrowed to
        ``backends``; an unknown id, tag or backend key is an error, never dropped."""
        ids, tags, backends = list(ids), list(tags), list(backends)
        self._refuse_unknown("bucket", ids, set(self.bucket_ids()))
        self._refuse_unknown("tag", tags, {tag for bucket in self.buckets for tag in bucket.tags})
        # A typo must not narrow the scope into a weaker run that still reads as complete.
        self._refuse_unknown("backend key", backends, {b.backend_key for b in self.buckets})
        chosen = tuple(
            bucket
            for bucket in self.buckets
            if ((not ids and not tags) or bucket.id in ids or any(t in bucket.tags for t in tags))
            and (not backends or bucket.backend_key in backends)
        )
        if not chosen:
            raise UsageError(
                f"no bucket of {self.path} is both selected by --bucket/--tag and of backend "
                f"{', '.join(backends)}; widen the selection or drop --backend"
            )
        return chosen

    def _refuse_unknown(self, what: str, named: list[str], known: set[str]) -> None:
        """A UsageError naming each of ``named`` that is not ``known``, and what is."""
        unknown = [name for name in named if name not in known]
        if unknown:
            raise UsageError(
                f"unknown {what} {', '.join(unknown)} in {self.path}; "
                f"known {what}s: {', '.join(sorted(known))}"
            )
