"""verdict.json: the machine-readable GateReport (DESIGN.md "Interfaces")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfgate.judge.gate import GateReport, Row
from perfgate.result import Result, log_artifact_name


def report_json(report: GateReport) -> dict[str, Any]:
    """verdict.json: the machine-readable report (DESIGN.md "Interfaces")."""
    return {
        "schema_version": 1,
        "overall_verdict": report.overall.label,
        "status_state": report.status_state,
        "description": report.description,
        "exit_code": report.exit_code,
        "mode": report.mode.value,
        "min_samples": report.min_samples,
        "max_samples": report.max_samples,
        "headlines": list(report.headlines),
        "commit": report.commit,
        "target_branch": report.target_branch,
        "base_commit": report.base_commit,
        "baseline_tip": report.baseline_tip,
        "baseline_source": report.baseline_source,
        "run_url": report.run_url,
        "hardware": list(report.hardware),
        "machines": _capped(report.machines, 100),
        "coverage": {
            "expected": list(report.coverage.expected),
            "reported": list(report.coverage.reported),
            "missing": list(report.coverage.missing),
            "duplicates": list(report.coverage.duplicates),
            "unexpected": list(report.coverage.unexpected),
        },
        "underfilled": list(report.underfilled),
        "notes": _capped(report.notes, 50),
        "rows": [_row_json(row) for row in report.rows],
    }


def _capped(items: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` entries, the last saying how many were left out (verdict.json caps)."""
    if len(items) <= limit:
        return list(items)
    return [*items[: limit - 1], f"… and {len(items) - limit + 1} more"]


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or Infinity (R3): a figure that is not finite is written as null."""
    return value if value is not None and math.isfinite(value) else None


def _row_json(row: Row) -> dict[str, Any]:
    judgement, result = row.judgement, row.result
    stats = judgement.stats if judgement else None
    return {
        "bucket": row.bucket.id,
        "task": row.bucket.task,
        "backend": row.bucket.backend_key,
        "verdict": row.verdict.label,
        "reasons": _capped(row.reasons, 20),
        "details": _capped(row.details, 20),
        "excused": row.excused,
        "bisect": judgement.bisect.value if judgement else None,
        "value": _finite(result.metric.value) if result else None,
        "unit": result.metric.unit if result else None,
        "direction": result.metric.direction.value if result else None,
        "hardware": result.hardware.slug if result else None,
        "phase": result.health.phase.value if result and result.health.phase else None,
        "attempts": result.health.attempts if result else None,
        "log": _log_json(result),
        "baseline": None
        if stats is None
        else {
            "samples": stats.size,
            "median": _finite(stats.median),
            "mad": _finite(stats.mad),
            "noise": _finite(stats.noise),
            "warn_line": _finite(stats.warn_line),
            "block_line": _finite(stats.block_line),
            "change_pct": _finite(stats.change_pct),
        },
    }


def _log_json(result: Result | None) -> dict[str, Any] | None:
    """Where a failed or retried run's whole log is: a CI artifact, or a local file."""
    if result is None or (result.health.healthy and not result.health.retried):
        return None
    in_ci = result.ci.run_id is not None
    return {
        "artifact": log_artifact_name(result.bucket.id) if in_ci else None,
        "path": result.log_path,
    }
