"""The verdict table for a terminal: one short line per bucket, the reasons in full below it."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from perfgate.judge.gate import GateReport, Row
from perfgate.judge.judgement import Signal
from perfgate.judge.verdicts import Verdict
from perfgate.report.row_text import (
    SHOWN_METRICS,
    confirmation_text,
    cost_text,
    deciding_figures,
    noted_metrics,
    paired_text,
)
from perfgate.report.untrusted import json_mapping
from perfgate.report.verdict import cost_json, row_json
from perfgate.util.console import format_figure, render_table

HEADERS = ("bucket", "verdict", "figure", "baseline", "change (95 % interval)", "samples",
           "confirmed by", "why")  # fmt: skip
#: Columns a narrow terminal cuts, in this order, each as far as its minimum: the reason
#: codes (to the first, then further), the change's interval, the confirmation's count
#: (never its header). The explanation under the table carries what was cut; bucket ids,
#: figures and verdicts never are.
SHRINKABLE = ((7, 19), (4, 8), (6, 12), (7, 8))
#: A terminal narrower than this gets lines this wide (nothing readable fits in less).
MIN_WIDTH = 60


def terminal_table(
    report: GateReport,
    width: int | None = None,
    rows_json: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The verdict table within ``width`` columns (the terminal's by default): figure,
    baseline, change with its interval, samples, how it was confirmed and the reason codes;
    then the full reasons of every bucket that is not a plain PASS, then the verdict.

    ``rows_json``: the report's rows as :func:`row_json` gives them, when already built.
    """
    width = max(MIN_WIDTH, width or shutil.get_terminal_size(fallback=(100, 24)).columns)
    if rows_json is None:
        rows_json = [row_json(row) for row in report.rows]
    rows: list[list[str]] = []
    explained: dict[str, list[str]] = {}
    for row, row_data in zip(report.rows, rows_json, strict=True):
        judgement = row.judgement
        decision = judgement.decision if judgement else None
        figure, baseline, change = deciding_figures(row_data)
        rows.append(
            [
                row.bucket.id,
                row.verdict.label,
                format_figure(figure),
                format_figure(baseline),
                change or "—",
                f"{decision.samples} / {decision.window_samples}" if decision else "0",
                _method(row_data.get("confirmation")),
                _codes(judgement.signals if judgement else None, row.reasons),
            ]
        )
        _explain(
            explained, row.bucket.id, row.verdict, change or "—", _why(row),
            confirmation_text(row_data),
        )  # fmt: skip
        # A line of its own for each further metric that is not a plain pass (the worst of a
        # suite), and one that counts the rest, as the summary.
        metrics = {m["name"]: m for m in row_data["metrics"]}
        noted, more = noted_metrics(row_data)
        shown = {m["name"] for m in noted}
        for metric in judgement.metrics[1:] if judgement else ():
            if metric.name not in shown:
                continue
            judged = metric.decision
            entry = metrics[metric.name]
            label = f"{row.bucket.id} · {metric.name}"
            rows.append(
                [
                    f"  · {metric.name}",  # under its bucket's line
                    metric.verdict.label + ("" if metric.gates else " (report only)"),
                    format_figure(metric.value),
                    format_figure(judged.baseline if judged else None),
                    (judged.effect_text() if judged else "") or "—",
                    f"{judged.samples} / {judged.window_samples}" if judged else "0",
                    "paired" if entry.get("paired") else "-",
                    _codes(metric.signals, ()),
                ]
            )
            why = "; ".join(signal.detail for signal in metric.signals)
            _explain(
                explained, label, metric.verdict, (judged.effect_text() if judged else "") or "—",
                why, paired_text(entry.get("paired"), entry),
            )  # fmt: skip
        if more:
            count = more.split(":", 1)[0]
            rows.append([f"  · … {count}", "", "", "", "", "", "", ""])
            explained.setdefault(f"{more} (verdict.json lists each)", []).append(
                f"{row.bucket.id} · …"
            )
    header, *cells = fit(rows, HEADERS, width)
    table = render_table(header, cells)
    lines = [table, ""]
    if explained:
        lines.append("why:")
        for text, names in explained.items():
            lines += textwrap.wrap(
                f"{', '.join(names)}: {text}",
                width=width,
                initial_indent="  ",
                subsequent_indent="      ",
                break_on_hyphens=False,
            )
        lines.append("")
    lines += textwrap.wrap(cost_text(cost_json(report), escape=str, strong=""), width=width,
                           subsequent_indent="  ")  # fmt: skip
    for closing in (*report.headlines, f"{report.overall.label}: {report.description}"):
        lines += textwrap.wrap(closing, width=width, subsequent_indent="  ") or [""]
    return "\n".join(lines)


def _method(confirmation: object) -> str:
    """How the verdict was reached, in a word or two: window, repeats (6), paired (16)."""
    if not isinstance(confirmation, Mapping):
        return "-"
    method = confirmation.get("method")
    if method == "paired":
        pairs = json_mapping(confirmation.get("paired")).get("pairs")
        return f"paired ({pairs})" if isinstance(pairs, int) else "paired"
    if method == "repeats":
        return f"repeats ({confirmation.get('samples')})"
    return str(method or "-")


def _codes(signals: Sequence[Signal] | None, fallback: Sequence[str]) -> str:
    """Reason codes, the ones that set the verdict first: INSUFFICIENT_WINDOW, MULTIMODAL."""
    if not signals:
        return ", ".join(fallback)
    ranked = sorted(signals, key=lambda signal: -signal.verdict.severity)
    return ", ".join(dict.fromkeys(signal.reason.value for signal in ranked))


def _why(row: Row) -> str:
    """A row's reasons (a suite's first few, the rest counted); a failed run also says why
    it was not retried."""
    details = list(row.details)
    if len(details) > SHOWN_METRICS + 1:
        left = len(details) - SHOWN_METRICS - 1
        details[SHOWN_METRICS + 1 :] = [f"{left} more in verdict.json"]
    text = "; ".join(details)
    retry = row.result.health.not_retried if row.result else None
    return f"{text}; {retry}" if retry else text


def _explain(
    explained: dict[str, list[str]],
    name: str,
    verdict: Verdict,
    change: str,
    why: str,
    how: str,
) -> None:
    """Keep ``name``'s explanation (its change with the interval a narrow table cuts, its
    reasons, how it was confirmed) unless it is a plain PASS; identical ones share a line."""
    if verdict is Verdict.PASS and not how.startswith("paired"):
        return
    text = verdict.label + (f" {change}" if change != "—" else "") + f": {why}"
    if how and how != "window only":
        text += f" [confirmed by {how}]"
    explained.setdefault(text, []).append(name)


def fit(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int) -> list[list[str]]:
    """The header and cells cut so each line of the table fits in ``width`` (header first)."""
    full = [list(headers), *(list(row) for row in rows)]
    table = [list(row) for row in full]

    def excess() -> int:
        widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
        return sum(widths) + 2 * (len(widths) - 1) - width

    def cut(column: int, target: int) -> None:
        for row, whole in zip(table, full, strict=True):
            row[column] = _cut(whole[column], target)

    for column, low in SHRINKABLE:
        if (over := excess()) > 0:
            cut(column, max(low, max(len(row[column]) for row in table) - over))
    # A later cut may have freed more than it had to: the earlier columns take it back.
    for column, _ in SHRINKABLE:
        if (spare := -excess()) > 0:
            cut(column, max(len(row[column]) for row in table) + spare)
    return table


def _cut(cell: str, width: int) -> str:
    """``cell`` in ``width`` characters: without its bracketed tail (an interval, a count) or
    its later list items when that is enough, else cut with an ellipsis."""
    if len(cell) <= width:
        return cell
    for shorter in (cell.split(" (", 1)[0], cell.split(", ", 1)[0] + ", …"):
        if len(shorter) <= width:
            return shorter
    return cell[: width - 1].rstrip() + "…"
