"""The verdict table for a terminal."""

from __future__ import annotations

from perfgate.console import format_figure, render_table
from perfgate.judge.gate import GateReport
from perfgate.report.summary import change_cell


def terminal_table(report: GateReport) -> str:
    """The verdict table for a terminal: figure, baseline, change with its interval, samples."""
    rows = []
    for row in report.rows:
        judgement = row.judgement
        decision = judgement.decision if judgement else None
        rows.append(
            [
                row.bucket.id,
                row.verdict.label,
                format_figure(judgement.value if judgement and row.result else None),
                format_figure(decision.baseline if decision else None),
                change_cell(row),
                f"{decision.samples} / {decision.window_samples}" if decision else "0",
                "; ".join(row.details),
            ]
        )
    table = render_table(
        ["bucket", "verdict", "figure", "baseline", "change (95 % interval)", "samples", "why"],
        rows,
    )
    headline = "\n".join(report.headlines)
    return f"{table}\n\n{headline}\n{report.overall.label}: {report.description}"
