"""The verdict table for a terminal."""

from __future__ import annotations

from perfgate.console import format_figure, render_table
from perfgate.judge.gate import GateReport
from perfgate.report.summary import change_cell


def terminal_table(report: GateReport) -> str:
    """The verdict table for a terminal."""
    rows = []
    for row in report.rows:
        stats = row.judgement.stats if row.judgement else None
        rows.append(
            [
                row.bucket.id,
                row.verdict.label,
                format_figure(row.result.metric.value if row.result else None),
                format_figure(stats.median if stats else None),
                change_cell(row),
                str(stats.size if stats else 0),
                "; ".join(row.details),
            ]
        )
    table = render_table(
        ["bucket", "verdict", "figure", "median", "change", "samples", "why"], rows
    )
    headline = "\n".join(report.headlines)
    return f"{table}\n\n{headline}\n{report.overall.label}: {report.description}"
