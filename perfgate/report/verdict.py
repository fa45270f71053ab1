"""verdict.json: the machine-readable GateReport.

Its fields are an interface: docs/design.md "Interfaces other tools rely on".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.judge.decision import Decision
from perfgate.judge.gate import GateReport, Row
from perfgate.judge.judgement import Confirmation, MetricJudgement
from perfgate.judge.paired import PairedDecision
from perfgate.result import PairedRecord, Result, log_artifact_name

#: Per-sample admission records a row carries (a run has a few; this bounds a hostile one).
MAX_ADMISSION_RECORDS = 100
#: The most verdict.json may hold: post-report (the fork hand-off) refuses a larger one.
MAX_VERDICT_BYTES = 2 * 1024 * 1024
# Room left under it for what wraps the document (indentation is counted already).
_VERDICT_BUDGET = MAX_VERDICT_BYTES - 64 * 1024
# The schema's lengths of fields that carry an artifact's own text.
_UNIT_CHARS, _MACHINE_CHARS = 64, 500
# Free text (details, notes, machines, notes on confirmation and admission) is cut to these
# lengths in turn, until the document fits.
_SHORTER = (2000, 300, 60)
_FREE_TEXT = frozenset({"details", "notes", "machines", "note", "reasons"})


@dataclass(frozen=True, kw_only=True)
class VerdictDocument:
    """verdict.json built once: its data (what every surface renders) and its text."""

    data: dict[str, Any]
    text: str


def report_json(report: GateReport) -> dict[str, Any]:
    """verdict.json's data (see :func:`verdict_document`)."""
    return verdict_document(report).data


def verdict_document(
    report: GateReport, rows: Sequence[dict[str, Any]] | None = None
) -> VerdictDocument:
    """verdict.json: the machine-readable report (an interface other tools rely on), at most
    MAX_VERDICT_BYTES once written: free text is cut until it fits, and a note says so.

    ``rows`` are the report's rows as :func:`row_json` gives them, when the caller has them.
    """
    document = _report_json(report, rows)
    rows_text = _rows_text(document["rows"])
    text = verdict_text(document, rows_text)
    size = len(text.encode("utf-8"))
    if size <= _VERDICT_BUDGET:
        return VerdictDocument(data=document, text=text)
    # Start at the longest cut that, by the free text's lengths, could fit: every pass
    # re-encodes the whole document, which at a thousand buckets is most of the gate.
    lengths = _free_lengths(document)
    if max(lengths, default=0) <= _SHORTER[-1]:
        # No text is long enough to cut: the rows alone are this large (past GitHub's
        # 256-job matrix). Say so rather than claim a cut that changes nothing.
        note = (
            f"verdict.json is {size // 1024} KiB, over post-report's limit of "
            f"{MAX_VERDICT_BYTES // (1024 * 1024)} MiB: its rows alone are that large"
        )
        document["notes"] = _capped([note, *document["notes"]], 50)
        return VerdictDocument(data=document, text=verdict_text(document, rows_text))
    start = next(
        (i for i, limit in enumerate(_SHORTER)
         if size - sum(n - limit for n in lengths if n > limit) <= _VERDICT_BUDGET),
        len(_SHORTER) - 1,
    )  # fmt: skip
    for limit in _SHORTER[start:]:
        shorter: dict[str, Any] = _shortened(document, limit)
        note = (
            f"truncated: every text of this report was cut to {limit} characters to keep "
            f"verdict.json under {MAX_VERDICT_BYTES // (1024 * 1024)} MiB (post-report's "
            "limit); the job's log and the result artifacts have them whole"
        )
        shorter["notes"] = _capped([note, *shorter["notes"]], 50)
        text = verdict_text(shorter)
        if limit == _SHORTER[-1] or len(text.encode("utf-8")) <= _VERDICT_BUDGET:
            return VerdictDocument(data=shorter, text=text)
    raise AssertionError("unreachable")


def clipped(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, ending in '…' when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shortened(value: Any, limit: int, free: bool = False) -> Any:
    """``value`` with every string under a free-text key cut to ``limit`` characters."""
    if isinstance(value, str):
        return clipped(value, limit) if free else value
    if isinstance(value, dict):
        return {k: _shortened(v, limit, free or k in _FREE_TEXT) for k, v in value.items()}
    if isinstance(value, list):
        return [_shortened(item, limit, free) for item in value]
    return value


def _free_lengths(document: dict[str, Any]) -> list[int]:
    """The length of every string under a free-text key (what :func:`_shortened` cuts)."""
    lengths: list[int] = []
    # A stack of containers, scalars handled where they are found: a thousand rows hold
    # ~100,000 values, and recursion through generators costs more than the check.
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        container, free = stack.pop()
        items = container.items() if isinstance(container, dict) else ((None, v) for v in container)
        for key, item in items:
            inside = free or key in _FREE_TEXT
            if isinstance(item, str):
                if inside:
                    lengths.append(len(item))
            elif isinstance(item, (dict, list)):
                stack.append((item, inside))
    return lengths


def _report_json(report: GateReport, rows: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "overall_verdict": report.overall.label,
        "status_state": report.status_state,
        "description": report.description,
        "exit_code": report.exit_code,
        "mode": report.mode.value,
        "always_pass": report.always_pass,
        "min_samples": report.min_samples,
        "max_samples": report.max_samples,
        "policy": {
            "name": report.policy.value,
            "false_block_rate": report.false_block_rate,
            "min_drop_pct": report.min_drop_pct,
            "max_runs": report.max_runs,
            "confirm": report.confirm.value,
        },
        "headlines": list(report.headlines),
        "commit": report.commit,
        "target_branch": report.target_branch,
        "base_commit": report.base_commit,
        "baseline_tip": report.baseline_tip,
        "baseline_source": report.baseline_source,
        "run_url": report.run_url,
        "hardware": list(report.hardware),
        "machines": _capped([clipped(m, _MACHINE_CHARS) for m in report.machines], 100),
        "coverage": {
            "expected": list(report.coverage.expected),
            "reported": list(report.coverage.reported),
            "missing": list(report.coverage.missing),
            "duplicates": list(report.coverage.duplicates),
            "unexpected": list(report.coverage.unexpected),
            "not_selected": list(report.coverage.not_selected),
        },
        "underfilled": list(report.underfilled),
        "confirmation_minutes": round(report.confirmation_minutes, 3),
        "cost": cost_json(report),
        "notes": _capped(report.notes, 50),
        "rows": list(rows) if rows is not None else [row_json(row) for row in report.rows],
    }


def verdict_text(verdict: Mapping[str, Any], rows_text: str | None = None) -> str:
    """verdict.json's text: a line per key, each row compact on a line of its own.

    json indents only in pure Python, at a few times the cost of its compact encoder, and a
    gate over a thousand buckets writes megabytes; a row a line still reads and diffs.
    ``rows_text`` is :func:`_rows_text` of the verdict's rows, when already encoded.
    """
    parts = []
    for key, value in verdict.items():
        if key == "rows" and value:
            rows = _rows_text(value) if rows_text is None else rows_text
            parts.append(f'  "rows": [\n{rows}\n  ]')
        else:
            parts.append(
                f"  {json.dumps(key, allow_nan=False)}: {json.dumps(value, allow_nan=False)}"
            )
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _rows_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of verdict.json's text: each compact, on a line of its own."""
    return ",\n".join(f"    {json.dumps(row, allow_nan=False)}" for row in rows)


def _capped(items: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` entries, the last saying how many were left out (verdict.json caps)."""
    if len(items) <= limit:
        return list(items)
    return [*items[: limit - 1], f"… and {len(items) - limit + 1} more"]


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or Infinity (R3): a figure that is not finite is written as null."""
    return value if value is not None and math.isfinite(value) else None


def _finite_interval(interval: tuple[float, float] | None) -> list[float] | None:
    """An interval as a list, or null unless both its ends are finite."""
    if interval is None or not all(math.isfinite(x) for x in interval):
        return None
    return list(interval)


def cost_json(report: GateReport) -> dict[str, Any]:
    """What the run cost its runners (R17): runner minutes in all and by kind, and the
    buckets whose result did not record it."""
    spend = report.spend
    return {
        "runner_minutes": round(spend.seconds / 60.0, 3),
        "launches": spend.launches,
        "by_kind": {
            kind.value: {"launches": line.launches, "minutes": round(line.seconds / 60.0, 3)}
            for kind, line in spend.lines.items()
        },
        "unrecorded": _capped(report.spend_unrecorded, 100),
    }


def _row_minutes(result: Result | None) -> float | None:
    """A bucket run's runner minutes, when its result recorded them."""
    if result is None or result.spend is None:
        return None
    return round(result.spend.seconds / 60.0, 3)


def row_json(row: Row) -> dict[str, Any]:
    """One bucket's row of verdict.json (before the document's size cap)."""
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
        "unit": clipped(result.metric.unit, _UNIT_CHARS) if result else None,
        "direction": result.metric.direction.value if result else None,
        "hardware": result.hardware.slug if result else None,
        "phase": result.health.phase.value if result and result.health.phase else None,
        "attempts": result.health.attempts if result else None,
        "runner_minutes": _row_minutes(result),
        "log": _log_json(result),
        "baseline": _baseline_json(decision),
        "statistics": _statistics_json(decision),
        "metrics": [_metric_json(metric, result) for metric in judgement.metrics]
        if judgement
        else [],
        "confirmation": _confirmation_json(
            judgement.confirmation if judgement else None,
            judgement.paired if judgement else None,
            result.paired if result else None,
        ),
        "admission": _admission_json(result),
    }


def _metric_json(metric: MetricJudgement, result: Result | None) -> dict[str, Any]:
    """One metric of a bucket: its own verdict, figure and test (the row has the worst)."""
    record = result.paired if result else None
    return {
        "name": metric.name,
        "path": metric.path,
        "gates": metric.gates,
        "verdict": metric.verdict.label,
        "reasons": _capped([reason.value for reason in metric.reasons], 20),
        "details": _capped([signal.detail for signal in metric.signals], 20),
        "value": _finite(metric.value),
        "unit": clipped(metric.unit, _UNIT_CHARS),
        "direction": metric.direction.value,
        "baseline": _baseline_json(metric.decision),
        "statistics": _statistics_json(metric.decision),
        "paired": None if metric.paired is None else _paired_json(metric.paired, record),
    }


def _confirmation_json(
    confirmation: Confirmation | None,
    paired: PairedDecision | None,
    record: PairedRecord | None,
) -> dict[str, Any] | None:
    """How the verdict was reached (window, repeats, paired A/B) and what it cost."""
    if confirmation is None:
        return None
    return {
        "method": confirmation.method.value,
        "samples": confirmation.samples,
        "set_aside": confirmation.set_aside,
        "minutes": round(confirmation.minutes, 3),
        "note": confirmation.note[:2000],
        "paired": None if paired is None else _paired_json(paired, record),
    }


def _paired_json(paired: PairedDecision, record: PairedRecord | None) -> dict[str, Any]:
    """The paired test: its verdict, figures, interval, and the comparison behind it."""
    aside = [s for s in record.samples if s.admission and s.admission.set_aside] if record else []
    return {
        "verdict": paired.verdict.label,
        "reason": paired.reason.value,
        "pairs": paired.pairs,
        "base_commit": record.base_commit if record else None,
        "stopped": record.stopped.value if record and record.stopped else None,
        "base": _finite(paired.base),
        "head": _finite(paired.head),
        "effect_pct": _finite(paired.effect_pct),
        "interval_pct": _finite_interval(paired.interval_pct),
        "confidence": paired.confidence,
        "t": _finite(paired.t),
        "t_block": _finite(paired.t_block),
        "df": _finite(paired.df),
        "noise_pct": _finite(paired.noise_pct),
        "set_aside": len(aside),
        "minutes": round(record.wall_s / 60.0, 3) if record else None,
    }


def _admission_json(result: Result | None) -> list[dict[str, Any]]:
    """Admission control's record of each sample of the run, by sample_index."""
    if result is None:
        return []
    return [
        {
            "sample_index": record.sample_index,
            "status": record.status.value,
            "reasons": [reason[:500] for reason in record.reasons[:20]],
            "waited_s": _finite(record.waited_s),
        }
        for record in result.admission[:MAX_ADMISSION_RECORDS]
    ]


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
    shift = decision.shift
    return {
        "policy": decision.policy,
        "run_samples": decision.samples,
        "value": _finite(decision.value),
        "effect_pct": _finite(decision.effect_pct),
        "interval_pct": _finite_interval(decision.interval_pct),
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
        "artifact": (result.ci.log_artifact or log_artifact_name(result.bucket.id))
        if in_ci
        else None,
        "path": result.log_path,
    }
