"""verdict.json: the machine-readable GateReport (DESIGN.md "Interfaces")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfgate.judge.gate import GateReport, Row
from perfgate.judge.stats import Decision
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
        "policy": {
            "name": report.policy.value,
            "false_alarm_rate": report.false_alarm_rate,
            "min_drop_pct": report.min_drop_pct,
            "max_runs": report.max_runs,
        },
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
    decision = judgement.decision if judgement else None
    return {
        "bucket": row.bucket.id,
        "task": row.bucket.task,
        "backend": row.bucket.backend_key,
        "verdict": row.verdict.label,
        "reasons": _capped(row.reasons, 20),
        "details": _capped(row.details, 20),
        "excused": row.excused,
        "bisect": judgement.bisect.value if judgement else None,
        "value": _finite(judgement.value) if judgement and result else None,
        "unit": result.metric.unit if result else None,
        "direction": result.metric.direction.value if result else None,
        "hardware": result.hardware.slug if result else None,
        "phase": result.health.phase.value if result and result.health.phase else None,
        "attempts": result.health.attempts if result else None,
        "log": _log_json(result),
        "baseline": _baseline_json(decision),
        "statistics": _statistics_json(decision),
    }


def _baseline_json(decision: Decision | None) -> dict[str, Any] | None:
    """The window and the lines the run was compared with, in the metric's units."""
    if decision is None:
        return None
    level, noise_pct = decision.baseline, decision.noise_pct
    return {
        "samples": decision.window_samples,
        "runs": decision.window_runs,
        "median": _finite(level),
        "noise": _finite(level * noise_pct / 100.0)
        if level is not None and noise_pct is not None
        else None,
        "warn_line": _finite(decision.warn_line),
        "block_line": _finite(decision.block_line),
        "change_pct": _finite(decision.effect_pct),
    }


def _statistics_json(decision: Decision | None) -> dict[str, Any] | None:
    """The test behind the verdict: samples used, effect and interval, threshold (R5)."""
    if decision is None:
        return None
    interval = decision.interval_pct
    shift = decision.shift
    return {
        "policy": decision.policy,
        "run_samples": decision.samples,
        "value": _finite(decision.value),
        "effect_pct": _finite(decision.effect_pct),
        "interval_pct": None
        if interval is None or not all(math.isfinite(x) for x in interval)
        else list(interval),
        "confidence": decision.confidence,
        "t": _finite(decision.t),
        "t_block": _finite(decision.t_block),
        "df": _finite(decision.df),
        "threshold_pct": _finite(decision.threshold_pct),
        "noise_pct": _finite(decision.noise_pct),
        "run_noise_pct": _finite(decision.run_noise_pct),
        "resolution_pct": _finite(decision.resolution_pct),
        "modes": [
            {"center": _finite(m.center), "count": m.count, "share": _finite(m.share)}
            for m in decision.modes[:10]
        ],
        "shift": None
        if shift is None
        else {
            "kept_runs": shift.kept_runs,
            "change_pct": _finite(shift.change_pct),
            "t": _finite(shift.t),
        },
        "between_modes": decision.between_modes,
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
