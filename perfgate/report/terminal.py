"""The verdict table for a terminal."""

from __future__ import annotations

from perfgate.console import format_figure, render_table
from perfgate.judge.gate import GateReport
from perfgate.judge.verdicts import Verdict
from perfgate.report.summary import change_cell, confirmation_text, paired_text
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
        # A line of its own for each further metric that is not a plain pass (as the summary).
        metrics = {m["name"]: m for m in row_data["metrics"]}
        for metric in judgement.metrics[1:] if judgement else ():
            if metric.verdict is Verdict.PASS:
                continue
            judged = metric.decision
            entry = metrics[metric.name]
            rows.append(
                [
                    f"{row.bucket.id} · {metric.name}",
                    metric.verdict.label + ("" if metric.gates else " (report only)"),
                    format_figure(metric.value),
                    format_figure(judged.baseline if judged else None),
                    (judged.effect_text() if judged else "") or "—",
                    f"{judged.samples} / {judged.window_samples}" if judged else "0",
                    paired_text(entry.get("paired"), entry) or "-",
                    "; ".join(signal.detail for signal in metric.signals),
                ]
            )
    table = render_table(
        ["bucket", "verdict", "figure", "baseline", "change (95 % interval)", "samples",
         "confirmed by", "why"],
        rows,
    )  # fmt: skip
    headline = "\n".join(report.headlines)
    return f"{table}\n\n{headline}\n{report.overall.label}: {report.description}"
