"""Seed records: what became of every planned sample, and the summary file that lists them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from perfgate.baselines.samples import WindowIdentity
from perfgate.baselines.seed.plan import PlanEntry, SeedPlan

SUMMARY_SCHEMA_VERSION = 1


class RecordStatus(StrEnum):
    """What happened to one planned sample."""

    RECORDED = "recorded"
    PRESENT = "present"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class SeedRecord:
    """One planned sample in the summary."""

    commit: str
    bucket: str
    hardware: str
    sample_index: int
    status: RecordStatus
    # The target branch the sample is for, and the experiment it measured.
    identity: WindowIdentity
    value: float | None = None
    sample_id: str | None = None
    detail: str | None = None

    @property
    def target_branch(self) -> str:
        """The branch the sample is for."""
        return self.identity.target_branch

    def to_json(self) -> dict[str, Any]:
        """The record as written into the summary file."""
        return {
            "commit": self.commit,
            "target_branch": self.target_branch,
            "bucket": self.bucket,
            "hardware": self.hardware,
            "sample_index": self.sample_index,
            "status": self.status.value,
            "value": self.value,
            "sample_id": self.sample_id,
            **self.identity.as_json(),
            "detail": self.detail,
        }


def summary_json(plan: SeedPlan, records: Sequence[SeedRecord], executed: bool) -> dict[str, Any]:
    """The summary file: every planned sample and what became of it."""
    counts = {status.value: 0 for status in RecordStatus}
    for record in records:
        counts[record.status.value] += 1
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "seed_key": plan.seed_key,
        "hardware": plan.hardware,
        "executed": executed,
        "complete": counts[RecordStatus.RECORDED.value] + counts[RecordStatus.PRESENT.value]
        == sum(len(e.indices) for e in plan.entries),
        "counts": counts,
        "notes": list(plan.notes),
        "records": [r.to_json() for r in records],
    }


def present_records(entry: PlanEntry, hardware: str) -> list[SeedRecord]:
    """Summary records for the samples of ``entry`` that were already stored."""
    return [
        SeedRecord(
            commit=entry.target.commit,
            bucket=entry.bucket.id,
            hardware=hardware,
            sample_index=index,
            status=RecordStatus.PRESENT,
            identity=sample.window_identity,
            value=sample.value,
            sample_id=sample.sample_id,
            detail="already on the baseline branch",
        )
        for index, sample in sorted(entry.present.items())
    ]
