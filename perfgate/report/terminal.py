"""The verdict table for a terminal."""

from __future__ import annotations

from perfgate.console import format_figure, render_table
from perfgate.judge.gate import GateReport
from perfgate.report.summary import change_cell, confirmation_text
from perfgate.report.verdict import report_json


def terminal_table(report: GateReport) -> str:
    """The verdict table for a terminal: figure, baseline, change with its interval, samples."""
    rows = []
    data = report_json(report)["rows"]
    for row, row_data in zip(report.rows, data, strict=True):
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
                confirmation_text(row_data, escape=str) or "-",
                "; ".join(row.details),
            ]
        )
    table = render_table(
        ["bucket", "verdict", "figure", "baseline", "change (95 % interval)", "samples",
         "confirmed by", "why"],
        rows,
    )  # fmt: skip
    headline = "\n".join(report.headlines)
    return f"{table}\n\n{headline}\n{report.overall.label}: {report.description}"
