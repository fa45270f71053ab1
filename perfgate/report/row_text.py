"""A verdict.json row in words, as every surface prints it: the figures and change its verdict
rests on, how it was confirmed, its admission records, its further metrics worth a line,
and what the run cost its runners."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from perfgate.config import PRIMARY
from perfgate.judge.goodness import effect_text
from perfgate.judge.verdicts import Verdict
from perfgate.report.untrusted import (
    json_count,
    json_list,
    json_mapping,
    json_texts,
    json_verdict,
    md_text,
)
from perfgate.report.verdict import clipped
from perfgate.util.console import format_figure
from perfgate.util.jsonfile import finite_number

# The visible table keeps each bucket's reasons to a glance; verdict.json has them whole.
WHY_CHARS = 300


def row_change(row: Mapping[str, Any], *, interval_too: bool = True) -> str:
    """A verdict.json row's (or metric's) change with its interval ('-6.1 % (-7.9 ... -4.2)')."""
    interval = json_mapping(row.get("statistics")).get("interval_pct")
    return effect_text(_window_effect(row), _interval(interval) if interval_too else None)


def _window_effect(row: Mapping[str, Any]) -> float | None:
    """A row's (or metric's) change against the window, %: its test's, else its baseline's."""
    effect = finite_number(json_mapping(row.get("statistics")).get("effect_pct"))
    if effect is None:
        effect = finite_number(json_mapping(row.get("baseline")).get("change_pct"))
    return effect


def deciding_change(row: Mapping[str, Any], *, interval_too: bool = True) -> str:
    """The change a verdict.json row's (or metric's) verdict rests on: the paired one when
    pairs decided, else the change against the window ('' when there is none)."""
    paired = paired_of(row)
    effect = finite_number(paired.get("effect_pct"))
    if effect is None:
        return row_change(row, interval_too=interval_too)
    return effect_text(effect, _interval(paired.get("interval_pct")) if interval_too else None)


def deciding_figures(row: Mapping[str, Any]) -> tuple[float | None, float | None, str]:
    """(figure, baseline, change) a verdict.json row's verdict rests on, as every table
    prints them: the pairs' head and base and their change when pairs decided; else the
    run's location and the window level it was judged against (the matched mode's, in a
    window of several), and the change between them. The three always agree."""
    paired = paired_of(row)
    if finite_number(paired.get("effect_pct")) is not None:
        return (
            finite_number(paired.get("head")),
            finite_number(paired.get("base")),
            deciding_change(row),
        )
    test, baseline = json_mapping(row.get("statistics")), json_mapping(row.get("baseline"))
    figure = finite_number(test.get("value"))
    return (
        finite_number(row.get("value")) if figure is None else figure,
        finite_number(baseline.get("median")),
        row_change(row),
    )


def paired_of(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The paired test of a verdict.json row (under its confirmation) or of one metric."""
    return json_mapping(row.get("paired")) or json_mapping(
        json_mapping(row.get("confirmation")).get("paired")
    )


def _interval(bounds: object) -> tuple[float, float] | None:
    if isinstance(bounds, list) and len(bounds) == 2:
        lo, hi = (finite_number(b) for b in bounds)
        return (lo, hi) if lo is not None and hi is not None else None
    return None


def paired_text(paired: object, row: Mapping[str, Any]) -> str:
    """'paired A/B, 8 pairs: base 1,000, head 900, -10.0 % (...)' ('' without pairs)."""
    if not isinstance(paired, Mapping):
        return ""
    pairs = json_count(paired.get("pairs"))
    base, head = finite_number(paired.get("base")), finite_number(paired.get("head"))
    change = deciding_change(row)
    text = f"paired A/B, {pairs} pairs: base {format_figure(base)}, head {format_figure(head)}"
    return text + (f", {change}" if change else "")


def confirmation_text(row: Mapping[str, Any]) -> str:
    """How a verdict.json row's verdict was reached, in a few words, its untrusted text made
    inert markdown: 'window only', 'repeats (6 samples)', 'paired A/B, 8 pairs: ...'."""
    confirmation = json_mapping(row.get("confirmation"))
    method = confirmation.get("method")
    samples = json_count(confirmation.get("samples"))
    if method == "paired":
        text = paired_text(confirmation.get("paired"), row)
    elif method == "repeats":
        text = f"repeats ({samples} samples)"
    elif method == "window":
        text = "window only"
    else:
        return ""
    note = confirmation.get("note")
    if isinstance(note, str) and note:
        text += f"; no paired A/B: {md_text(note[:200])}"
    aside = json_count(confirmation.get("set_aside"))
    if aside:
        text += f"; {aside} sample(s) set aside"
    minutes = finite_number(confirmation.get("minutes"))
    if minutes:
        text += f" ({minutes:.1f} runner-min)"
    return text


def admission_text(records: object) -> str:
    """A row's admission records in a few words: '3 admitted' or '2 admitted · 1
    contaminated (#1: GPU throttled: HW slowdown)' (untrusted strings made inert)."""
    entries = [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []
    if not entries:
        return "—"
    order = ("admitted", "contaminated", "flagged", "not_checked")
    counts = {status: 0 for status in order}
    unfit = []
    for record in entries:
        status = record.get("status")
        if status in counts:
            counts[status] += 1
        if status in ("contaminated", "flagged"):
            reasons = "; ".join(json_texts(record.get("reasons")))
            unfit.append(f"#{json_count(record.get('sample_index'))}: {reasons}")
    parts = [f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n]
    text = " · ".join(parts)
    if unfit:
        text += f" ({clipped(', '.join(unfit), WHY_CHARS)})"
    return md_text(text)


#: How the cost line names each kind of runner time, in the order it lists them.
SPEND_WORDS = {
    "setup": "setup",
    "measure": "samples",
    "confirm": "confirming samples",
    "pair": "paired A/B",
    "base_checkout": "merge-base checkout",
    "warmup": "warm-ups",
    "retry": "retries",
    "remeasure": "re-measures",
    "wait": "waits for a fit machine",
}


def cost_text(cost: object, escape: Callable[[str], str] = md_text, strong: str = "**") -> str:
    """What the run cost its runners, in one sentence: the total, then each kind with its
    launches (verdict.json's ``cost``); or that no result recorded it. ``escape`` and
    ``strong`` suit it to Markdown (the default) or a terminal (``str``, "")."""
    if not isinstance(cost, Mapping):
        return "Runner time: not recorded (this report was made before perfgate recorded it)."
    unrecorded = json_texts(cost.get("unrecorded"))
    minutes = finite_number(cost.get("runner_minutes"))
    by_kind = json_mapping(cost.get("by_kind"))
    if minutes is None or not by_kind:
        named = ", ".join(escape(b) for b in unrecorded)
        return (f"Runner time: not recorded by the results of {named}."
                if named else "Runner time: none (no bucket reported a result).")  # fmt: skip
    lines = {kind: json_mapping(by_kind.get(kind)) for kind in SPEND_WORDS if kind in by_kind}
    parts = []
    for kind, line in lines.items():
        spent = finite_number(line.get("minutes"))
        if spent is None:
            continue
        launches = json_count(line.get("launches"))
        # A kind's launches, when there are several kinds to tell apart.
        counted = (
            f", {launches} launch{'es' if launches != 1 else ''}"
            if launches and len(lines) > 1
            else ""
        )
        parts.append(f"{SPEND_WORDS[kind]} {spent:.1f}{counted}")
    launches = json_count(cost.get("launches"))
    plural = "es" if launches != 1 else ""
    text = f"Runner time: {strong}{minutes:.1f} min{strong} in {launches} launch{plural}"
    if parts:
        text += f" ({'; '.join(parts)})"
    if unrecorded:
        text += f"; not recorded by {', '.join(escape(b) for b in unrecorded)}"
    return text + "."


#: Further metrics of one bucket listed at most, the worst first; the rest are counted.
SHOWN_METRICS = 5


def noted_metrics(row: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], str]:
    """A verdict.json row's further metrics worth a line, and what the lines leave out.

    Those that are not PASS, in declaration order; of more than ``SHOWN_METRICS``, the
    worst (most severe verdict, then largest change). A bucket of more metrics than that
    (a selected suite) says how many more there are, by verdict ('298 more: 297 within
    noise, 1 IMPROVED'); '' when nothing is left out of a small bucket.
    """
    further = [
        metric
        for metric in json_list(row.get("metrics"))
        if isinstance(metric, Mapping) and metric.get("name") != PRIMARY
    ]
    noted = [m for m in further if m.get("verdict") != Verdict.PASS.label]
    if len(noted) > SHOWN_METRICS:
        worst = sorted(noted, key=lambda m: (-json_verdict(m.get("verdict")).severity, -_size(m)))
        kept = {id(m) for m in worst[:SHOWN_METRICS]}
        noted = [m for m in noted if id(m) in kept]
    if len(further) <= SHOWN_METRICS:
        return noted, ""
    shown = {id(m) for m in noted}
    rest = Counter(json_verdict(m.get("verdict")) for m in further if id(m) not in shown)
    if not rest:
        return noted, ""
    counts = ", ".join(
        f"{count} {'within noise' if verdict is Verdict.PASS else verdict.label}"
        for verdict, count in sorted(rest.items(), key=lambda item: item[0].severity)
    )
    return noted, f"{sum(rest.values())} more: {counts}"


def _size(metric: Mapping[str, Any]) -> float:
    """How far a metric's figure moved, in % either way (0 when it was not compared)."""
    paired = finite_number(paired_of(metric).get("effect_pct"))
    effect = paired if paired is not None else _window_effect(metric)
    return abs(effect) if effect is not None else 0.0
