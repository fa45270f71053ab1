"""summary.md: the job summary and PR comment body, rendered from verdict.json alone."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from perfgate.config import PRIMARY, Mode
from perfgate.console import format_figure
from perfgate.judge.gate import GateReport
from perfgate.judge.goodness import effect_text
from perfgate.judge.verdicts import Verdict
from perfgate.report.verdict import report_json

VERDICT_ICONS = {
    Verdict.PASS: "✅ pass",
    Verdict.IMPROVED: "🚀 improved",
    Verdict.WARN: "⚠️ warn",
    Verdict.INCONCLUSIVE: "🔍 inconclusive",
    Verdict.BLOCK: "🚫 regression",
    Verdict.HARD_FAILURE: "❌ failed",
}


# Untrusted text (bucket ids, reasons, a fork's verdict.json) is made inert in one pass, so
# an escape is never escaped again, with the escapes Markdown itself defines: a backslash
# before punctuation that could start markup, entities for HTML. An underscore inside a
# word is never emphasis, so ``physx_rtx_renderer`` stays as it is. ``@`` gets a zero-width
# space so no mention or team ping survives (GitHub resolves mentions after decoding).
_MARKUP = re.compile(r"[\\`*\[\]|~#!&<>@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "@&#8203;"}
_AUTOLINK = re.compile(r"(?i)(://|\bwww\.)")


def md_text(text: str) -> str:
    """Make untrusted text inert inside a markdown table cell (no markup, links, HTML, mentions)."""
    inert = _MARKUP.sub(
        lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), " ".join(text.split())
    )
    return _AUTOLINK.sub(lambda m: f"{m.group(1)[0]}&#8203;{m.group(1)[1:]}", inert)


def _short(sha: object) -> str:
    return f"`{md_text(sha[:12])}`" if isinstance(sha, str) and sha else "unknown"


def _meaning(*, reported: bool, excused: bool, verdict: Verdict) -> str:
    if not reported:
        return "did not report: no figure, so no verdict can be trusted"
    if excused:
        return "could not run on this CI image (stale image, with evidence)"
    meanings = {
        Verdict.PASS: "within the noise of its baseline",
        Verdict.IMPROVED: "faster than its baseline beyond noise and the minimum change",
        Verdict.WARN: "a small or possible regression, or no baseline yet: read the reasons",
        Verdict.INCONCLUSIVE: "the evidence cannot separate a change from noise: read the reasons",
        Verdict.BLOCK: "slower than its baseline beyond noise and the minimum drop",
        Verdict.HARD_FAILURE: "the benchmark did not produce a usable figure",
    }
    return meanings[verdict]


def row_change(row: Mapping[str, Any], *, interval_too: bool = True) -> str:
    """A verdict.json row's (or metric's) change with its interval ('-6.1 % (-7.9 ... -4.2)')."""
    statistics = _mapping(row.get("statistics"))
    effect = _number(statistics.get("effect_pct"))
    if effect is None:
        effect = _number(_mapping(row.get("baseline")).get("change_pct"))
    bounds = statistics.get("interval_pct")
    interval = None
    if interval_too and isinstance(bounds, list) and len(bounds) == 2:
        lo, hi = (_number(b) for b in bounds)
        interval = (lo, hi) if lo is not None and hi is not None else None
    return effect_text(effect, interval)


# The visible table keeps each bucket's reasons to a glance; verdict.json has them whole.
WHY_CHARS = 300


def _clipped(text: str) -> str:
    return text if len(text) <= WHY_CHARS else text[: WHY_CHARS - 1] + "…"


# A run page, as GitHub writes it: anything else (a fork's verdict.json is untrusted) is no link.
_RUN_URL = re.compile(r"https://[\w.:-]+/[\w.-]+/[\w.-]+/actions/runs/\d+")


def _log_cell(log: Mapping[str, Any], run_url: object) -> str:
    """Where the bucket's whole log is: its artifact on this run's page, or a local path."""
    artifact, path = log.get("artifact"), log.get("path")
    if isinstance(artifact, str) and re.fullmatch(r"[A-Za-z0-9.-][A-Za-z0-9._-]{0,199}", artifact):
        name = f"`{artifact}`"  # only name characters: nothing to escape, in a code span
        if isinstance(run_url, str) and _RUN_URL.fullmatch(run_url):
            return f" — log: [{name}]({run_url}#artifacts)"
        return f" — log: artifact {name}"
    if isinstance(path, str) and path:
        return f" — log: {md_text(path)}"
    return ""


def deciding_change(row: Mapping[str, Any], *, interval_too: bool = True) -> str:
    """The change a verdict.json row's (or metric's) verdict rests on: the paired one when
    pairs decided, else the change against the window ('' when there is none)."""
    paired = _paired(row)
    effect = _number(paired.get("effect_pct"))
    if effect is None:
        return row_change(row, interval_too=interval_too)
    return effect_text(effect, _interval(paired.get("interval_pct")) if interval_too else None)


def _pair_bases(data: Mapping[str, Any]) -> str:
    """' Pairs measured against 019cb48.' when the pairs ran against another commit than
    the merge base the gate named (the bench resolves its own); '' otherwise."""
    named = data.get("base_commit")
    bases = sorted(
        {
            base
            for row in _list(data.get("rows"))
            if isinstance(row, Mapping)
            and isinstance(base := _paired(row).get("base_commit"), str)
            and base != named
        }
    )
    if not bases:
        return ""
    return f" Pairs measured against {', '.join(_short(b) for b in bases)}."


def deciding_figures(row: Mapping[str, Any]) -> tuple[float | None, float | None, str]:
    """(figure, baseline, change) a verdict.json row's verdict rests on, as every table
    prints them: the pairs' head and base and their change when pairs decided; else the
    run's location and the window level it was judged against (the matched mode's, in a
    window of several), and the change between them. The three always agree."""
    paired = _paired(row)
    if _number(paired.get("effect_pct")) is not None:
        return _number(paired.get("head")), _number(paired.get("base")), deciding_change(row)
    test, baseline = _mapping(row.get("statistics")), _mapping(row.get("baseline"))
    figure = _number(test.get("value"))
    return (
        _number(row.get("value")) if figure is None else figure,
        _number(baseline.get("median")),
        row_change(row),
    )


def _paired(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The paired test of a verdict.json row (under its confirmation) or of one metric."""
    return _mapping(row.get("paired")) or _mapping(_mapping(row.get("confirmation")).get("paired"))


def _interval(bounds: object) -> tuple[float, float] | None:
    if isinstance(bounds, list) and len(bounds) == 2:
        lo, hi = (_number(b) for b in bounds)
        return (lo, hi) if lo is not None and hi is not None else None
    return None


def paired_text(paired: object, row: Mapping[str, Any]) -> str:
    """'paired A/B, 8 pairs: base 1,000, head 900, -10.0 % (...)' ('' without pairs)."""
    if not isinstance(paired, Mapping):
        return ""
    pairs = _count(paired.get("pairs"))
    base, head = _number(paired.get("base")), _number(paired.get("head"))
    change = deciding_change(row)
    text = f"paired A/B, {pairs} pairs: base {format_figure(base)}, head {format_figure(head)}"
    return text + (f", {change}" if change else "")


def confirmation_text(row: Mapping[str, Any], escape: Callable[[str], str] = md_text) -> str:
    """How a verdict.json row's verdict was reached, in a few words, its untrusted text
    passed through ``escape`` (inert markdown by default): 'window only', 'repeats (6
    samples)', 'paired A/B, 8 pairs: ...'."""
    confirmation = _mapping(row.get("confirmation"))
    method = confirmation.get("method")
    samples = _count(confirmation.get("samples"))
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
        text += f"; no paired A/B: {escape(note[:200])}"
    aside = _count(confirmation.get("set_aside"))
    if aside:
        text += f"; {aside} sample(s) set aside"
    minutes = _number(confirmation.get("minutes"))
    if minutes:
        text += f" ({minutes:.1f} runner-min)"
    return text


def _count(value: object) -> int:
    """A count from verdict.json; anything that is not a non-negative integer is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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
            reasons = "; ".join(_texts(record.get("reasons")))
            unfit.append(f"#{_count(record.get('sample_index'))}: {reasons}")
    parts = [f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n]
    text = " · ".join(parts)
    if unfit:
        text += f" ({_clipped(', '.join(unfit))})"
    return md_text(text)


def _number(value: object) -> float | None:
    """A figure from verdict.json; anything that is not a finite number renders as absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _texts(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _verdict(label: object) -> Verdict:
    """A verdict label from verdict.json; an unknown one is the most severe."""
    return (
        Verdict[label]
        if isinstance(label, str) and label in Verdict.__members__
        else (Verdict.HARD_FAILURE)
    )


# A bucket id made of plain names: only such an id (verdict.json is untrusted) gets a link.
_PLAIN_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}/[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def bucket_cell(bucket: object, trend_url: str | None) -> str:
    """The bucket's id, linked to its trend page when the config names the published site."""
    text = md_text(str(bucket))
    if trend_url is None or not isinstance(bucket, str) or not _PLAIN_BUCKET.fullmatch(bucket):
        return text
    return f"[{text}]({trend_url.rstrip('/')}/buckets/{bucket.replace('/', '__')}.html)"


#: GitHub's limit for one step's summary ($GITHUB_STEP_SUMMARY), less room for the rest
#: of the step's own summary.
MAX_SUMMARY_BYTES = 1024 * 1024 - 32 * 1024
TECHNICAL_DETAILS = "<details><summary>Technical details</summary>"


def fit_markdown(markdown: str, limit: int, note: str, size: Callable[[str], int] = len) -> str:
    """``markdown`` whole, or cut at a line so that it and ``note`` fit in ``limit``
    (measured by ``size``), the technical details block closed if the cut fell inside it."""
    if size(markdown) <= limit:
        return markdown
    room = limit - size(note) - size("\n\n</details>\n\n") - 1
    kept: list[str] = []
    used = 0
    for line in markdown.splitlines():
        used += size(line) + 1
        if used > room:
            break
        kept.append(line)
    if kept.count(TECHNICAL_DETAILS) > kept.count("</details>"):
        kept += ["", "</details>"]
    return "\n".join([*kept, "", note])


def summary_markdown(report: GateReport) -> str:
    """The job summary and PR comment body, within GitHub's step-summary limit."""
    return fit_markdown(
        summary_from_verdict(report_json(report), trend_url=report.trend_url),
        MAX_SUMMARY_BYTES,
        "_Truncated: this summary was cut to stay under GitHub's 1 MiB step-summary limit; "
        "verdict.json in the report artifact has every bucket._",
        size=lambda text: len(text.encode("utf-8")),
    )


def summary_from_verdict(data: Mapping[str, Any], trend_url: str | None = None) -> str:
    """The summary rendered from verdict.json alone, every string in it treated as untrusted.

    The fork hand-off re-renders a pull request's verdict.json with this, so it never
    trusts markup that came from the pull request's run. ``trend_url`` (the config's
    ``report.url``, trusted) links each bucket to its page on the published trend site.
    """
    coverage = _mapping(data.get("coverage"))
    missing = _texts(coverage.get("missing"))
    rows = [row for row in data.get("rows") or [] if isinstance(row, Mapping)]
    verdicts = [_verdict(row.get("verdict")) for row in rows]
    reported = [str(row.get("bucket")) not in missing for row in rows]
    failures = sum(
        1 for v, r in zip(verdicts, reported, strict=True) if r and v is Verdict.HARD_FAILURE
    )
    tallies = [
        f"✅ {verdicts.count(Verdict.PASS)} passed",
        f"🚀 {verdicts.count(Verdict.IMPROVED)} improved" if Verdict.IMPROVED in verdicts else "",
        f"⚠️ {verdicts.count(Verdict.WARN)} warning(s)",
        f"🔍 {verdicts.count(Verdict.INCONCLUSIVE)} inconclusive"
        if Verdict.INCONCLUSIVE in verdicts
        else "",
        f"🚫 {verdicts.count(Verdict.BLOCK)} regression(s)",
        f"❌ {failures} failure(s)",
    ]
    counts = " · ".join(t for t in tallies if t)
    if missing:
        counts += f" · ❔ {len(missing)} did not report ({', '.join(md_text(b) for b in missing)})"
    skipped = _texts(coverage.get("not_selected"))
    if skipped:
        named = ", ".join(md_text(b) for b in skipped)
        counts += f" · ⏭️ {len(skipped)} not selected for this run ({named})"
    if data.get("always_pass") is True:
        mode = (
            "**Always green (`gate.always_pass`):** the job exits 0 whatever the verdict; the "
            "commit status and this report carry it."
        )
    elif data.get("mode") == Mode.BLOCKING.value:
        mode = (
            "**Required check:** a regression exits 1 and a failed benchmark exits 2, and "
            "branch protection requires this check."
        )
    else:
        mode = (
            "**Advisory rollout:** a regression exits 1 and a failed benchmark exits 2, but "
            "this check is not yet required in branch protection, so it stops no merge."
        )
    lines = ["## perfgate results", "", "### Overall result", ""]
    lines += [f"**{md_text(headline)}**  " for headline in _texts(data.get("headlines"))]
    lines += ["", counts, "", mode, "", "### Run context", ""]
    target = md_text(str(data.get("target_branch") or "unknown"))
    hardware = ", ".join(md_text(h) for h in _texts(data.get("hardware")))
    source = data.get("baseline_source")
    baseline = (
        "no baseline branch"
        if not isinstance(source, str)
        else f"baseline {md_text(source)} at {_short(data.get('baseline_tip'))}"
        if data.get("baseline_tip")
        else f"baseline {md_text(source)}, which does not exist yet"
    )
    lines.append(
        f"Commit {_short(data.get('commit'))} judged against `{target}` "
        f"(merge base {_short(data.get('base_commit'))}), {baseline}; hardware: "
        f"{hardware or 'unknown'}.{_pair_bases(data)}"
    )
    machines = _texts(data.get("machines"))
    if machines:
        lines += ["", "Machines: " + "; ".join(md_text(m) for m in machines) + "."]
    lines += ["", cost_text(data.get("cost"))]
    lines += [
        "",
        "### Results",
        "",
        "| Bucket | Result | Figure | Unit | Baseline | Change (95 % interval) | Samples "
        "| Confirmed by | Why |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    technical = []
    for row, verdict, was_reported in zip(rows, verdicts, reported, strict=True):
        bucket = md_text(str(row.get("bucket")))
        meaning = _meaning(
            reported=was_reported, excused=row.get("excused") is True, verdict=verdict
        )
        # The bucket's own reasons, where it has them; the verdict's general meaning otherwise.
        why = _clipped("; ".join(_texts(row.get("details")))) if was_reported else ""
        log = _log_cell(_mapping(row.get("log")), data.get("run_url"))
        linked = bucket_cell(row.get("bucket"), trend_url)
        lines.append(
            _result_line(
                linked,
                verdict,
                row,
                confirmation_text(row),
                f"{md_text(why) if why else meaning}{log}",
            )
        )
        attempts = row.get("attempts")
        technical.append(
            _technical_line(
                bucket,
                verdict,
                row,
                [
                    md_text(str(row["phase"])) if row.get("phase") else "—",
                    str(attempts) if isinstance(attempts, int) else "—",
                    _minutes_cell(row.get("runner_minutes")),
                    md_text(str(row["hardware"])) if row.get("hardware") else "—",
                    md_text(str(row["bisect"])) if was_reported and row.get("bisect") else "—",
                    admission_text(row.get("admission")),
                ],
            )
        )
        # A line of its own for each further metric that is not a plain pass (the worst of
        # a suite), and one that counts the rest.
        noted, more = noted_metrics(row)
        for metric in noted:
            name = f"{bucket} · {md_text(str(metric.get('name')))}"
            judged = _verdict(metric.get("verdict"))
            gates = "" if metric.get("gates") is not False else "(report only) "
            why = _clipped("; ".join(_texts(metric.get("details"))))
            how = paired_text(metric.get("paired"), metric)
            lines.append(_result_line(name, judged, metric, how, f"{gates}{md_text(why)}"))
            technical.append(_technical_line(name, judged, metric, ["—"] * 6))
        if more:
            lines.append(f"| {bucket} · … | | | | | | | | {md_text(more)} (verdict.json lists "
                         "each) |")  # fmt: skip
    lines += [
        "",
        TECHNICAL_DETAILS,
        "",
        "| Bucket | Verdict | Reasons | Noise | Warn line | Block line | t (block at) "
        "| Resolves | Phase | Attempts | Runner min | Hardware | Bisect | Admission (per sample) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *technical,
        "",
        "</details>",
        "",
    ]
    notes = _texts(data.get("notes"))
    if notes:
        lines += ["### Notes", ""] + [f"- {md_text(note)}" for note in notes] + [""]
    if not any(_mapping(row.get("baseline")).get("samples") for row in rows):
        return "\n".join(lines)  # nothing was compared with a baseline: nothing to explain
    lines += ["### How to read this", "", *_how_to_read(data), ""]
    if any(len(_list(row.get("metrics"))) > 1 for row in rows):
        lines += [
            "A bucket may gate several metrics of one run (say steady-state FPS and startup "
            "time). Each is judged against its own history, with its own minimum change, and "
            "has a line of its own (`bucket · metric`) when it is not a pass; the bucket takes "
            "the worst verdict of those that gate. A metric marked *report only* never "
            "changes its bucket's verdict.",
            "",
        ]
    return "\n".join(lines)


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
    unrecorded = _texts(cost.get("unrecorded"))
    minutes = _number(cost.get("runner_minutes"))
    by_kind = _mapping(cost.get("by_kind"))
    if minutes is None or not by_kind:
        named = ", ".join(escape(b) for b in unrecorded)
        return (f"Runner time: not recorded by the results of {named}."
                if named else "Runner time: none (no bucket reported a result).")  # fmt: skip
    lines = {kind: _mapping(by_kind.get(kind)) for kind in SPEND_WORDS if kind in by_kind}
    parts = []
    for kind, line in lines.items():
        spent = _number(line.get("minutes"))
        if spent is None:
            continue
        launches = _count(line.get("launches"))
        # A kind's launches, when there are several kinds to tell apart.
        counted = (
            f", {launches} launch{'es' if launches != 1 else ''}"
            if launches and len(lines) > 1
            else ""
        )
        parts.append(f"{SPEND_WORDS[kind]} {spent:.1f}{counted}")
    launches = _count(cost.get("launches"))
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
        for metric in _list(row.get("metrics"))
        if isinstance(metric, Mapping) and metric.get("name") != PRIMARY
    ]
    noted = [m for m in further if m.get("verdict") != Verdict.PASS.label]
    if len(noted) > SHOWN_METRICS:
        worst = sorted(noted, key=lambda m: (-_verdict(m.get("verdict")).severity, -_size(m)))
        kept = {id(m) for m in worst[:SHOWN_METRICS]}
        noted = [m for m in noted if id(m) in kept]
    if len(further) <= SHOWN_METRICS:
        return noted, ""
    shown = {id(m) for m in noted}
    rest = Counter(_verdict(m.get("verdict")) for m in further if id(m) not in shown)
    if not rest:
        return noted, ""
    counts = ", ".join(
        f"{count} {'within noise' if verdict is Verdict.PASS else verdict.label}"
        for verdict, count in sorted(rest.items(), key=lambda item: item[0].severity)
    )
    return noted, f"{sum(rest.values())} more: {counts}"


def _size(metric: Mapping[str, Any]) -> float:
    """How far a metric's figure moved, in % either way (0 when it was not compared)."""
    paired = _number(_paired(metric).get("effect_pct"))
    effect = paired if paired is not None else _number(
        _mapping(metric.get("statistics")).get("effect_pct")
    )  # fmt: skip
    if effect is None:
        effect = _number(_mapping(metric.get("baseline")).get("change_pct"))
    return abs(effect) if effect is not None else 0.0


def _result_line(name: str, verdict: Verdict, row: Mapping[str, Any], how: str, why: str) -> str:
    """One line of the results table: a bucket (its primary metric), or one further metric."""
    stats = _mapping(row.get("baseline"))
    test = _mapping(row.get("statistics"))
    figure, baseline, change = deciding_figures(row)
    return (
        f"| {name} | {VERDICT_ICONS[verdict]} | {format_figure(figure)} | "
        f"{md_text(str(row['unit'])) if row.get('unit') else '—'} | "
        f"{format_figure(baseline)} | "
        f"{change or '—'} | {_samples_cell(stats, test)} | {how or '—'} | {why} |"
    )


def _technical_line(name: str, verdict: Verdict, row: Mapping[str, Any], run: list[str]) -> str:
    """One line of the technical details: the test's figures, then ``run`` (phase ... bisect)."""
    stats = _mapping(row.get("baseline"))
    test = _mapping(row.get("statistics"))
    cells = [
        name,
        verdict.label,
        md_text(", ".join(_texts(row.get("reasons")))),
        _percent(_number(test.get("noise_pct"))),
        format_figure(_number(stats.get("warn_line"))),
        format_figure(_number(stats.get("block_line"))),
        _t_cell(_number(test.get("t")), _number(test.get("t_block"))),
        _percent(_number(test.get("resolution_pct"))),
        *run,
    ]
    return "| " + " | ".join(cells) + " |"


def _samples_cell(baseline: Mapping[str, Any], test: Mapping[str, Any]) -> str:
    """``3 / 40``: the run's samples against the window's (``40`` alone from older reports)."""
    window = baseline.get("samples")
    run = test.get("run_samples")
    window_text = str(window) if isinstance(window, int) and not isinstance(window, bool) else "0"
    if isinstance(run, int) and not isinstance(run, bool):
        return f"{run} / {window_text}"
    return window_text


def _minutes_cell(value: object) -> str:
    """A bucket run's runner minutes, or a dash when its result did not record them."""
    minutes = _number(value)
    return "—" if minutes is None else f"{minutes:.1f}"


def _percent(value: float | None) -> str:
    return f"{value:.1f} %" if value is not None else "—"


def _t_cell(t: float | None, t_block: float | None) -> str:
    """``-5.09 (-4.25)``: the run's t and the t a BLOCK needed at its last look."""
    if t is None:
        return "—"
    return f"{t:+.2f}" + (f" ({-t_block:+.2f})" if t_block is not None else "")


def _how_to_read(data: Mapping[str, Any]) -> list[str]:
    """The rule in plain words: the calibrated one, or the seed's under ``policy: reference``."""
    policy = _mapping(data.get("policy"))
    min_samples, max_samples = data.get("min_samples"), data.get("max_samples")
    if policy.get("name") == "reference" or not policy:
        window = f"the {max_samples} nearest" if isinstance(max_samples, int) else "the nearest"
        return [
            f"Each figure is compared with the median of {window} trusted baseline samples of "
            "the same experiment on the same hardware"
            + (
                f" (at least {min_samples} are needed to judge)"
                if isinstance(min_samples, int)
                else ""
            )
            + ". Noise is the larger of the median absolute deviation and the bucket's noise "
            "floor. A result past the block line that also dropped by the minimum percentage "
            "is a regression; past the warn line it needs attention. No baseline, too few "
            "samples, a retried run or a bucket that did not report never count as a pass."
        ]
    rate = _number(policy.get("false_alarm_rate"))
    drop = _number(policy.get("min_drop_pct"))
    runs = policy.get("max_runs")
    rate_text = f"{rate * 100:g} %" if rate is not None else "a set rate"
    drop_text = f"{drop:g} %" if drop is not None else "the minimum drop"
    runs_text = f"the last {runs} runs" if isinstance(runs, int) else "its recent runs"
    if policy.get("confirm") == "paired":
        confirm = (
            "When the history cannot clear a run (it looks slower, or a drop of "
            f"{drop_text} is still within its noise), the merge base and the change are "
            "measured alternately on the same runner, and only that paired comparison can "
            "block: the runner's own speed and its state that day cancel out of each pair."
        )
    else:
        confirm = "A run whose first samples look slower is measured again on the same runner "
        confirm += "before it may be blocked."
    return [
        f"Each bucket run takes a few samples; they are compared with the bucket's history "
        f"on the target branch ({runs_text} of the same experiment on the same hardware, every "
        "sample of each). The question is: is this run slower than its history by more than "
        f"noise can explain, and by at least {drop_text}? The rule is set so that unchanged "
        f"code is blocked in at most {rate_text} of bucket runs. {confirm} Samples taken "
        "while the machine was unfit (a throttled, hot or shared GPU) are set aside: they "
        "never count towards a block.",
        "",
        "- ✅ **pass**: within the noise of its history, or any drop is provably under "
        f"{drop_text}.",
        f"- 🚀 **improved**: faster by at least {drop_text}, beyond noise (counts as a pass).",
        "- ⚠️ **warn**: a real but small slowdown (under the minimum), a possible one the "
        "samples could not settle, no baseline yet or too few baseline samples, or a pass "
        "that needed a retry.",
        "- 🔍 **inconclusive**: the evidence cannot separate a change from noise (a noisy "
        "runner, a run between the history's modes, a history that just moved to a new level, "
        "or too few samples to confirm). Never a block, never a pass.",
        f"- 🚫 **regression**: a confirmed slowdown of at least {drop_text}: at least 3 samples "
        "and both a robust t-test and a rank test past the line set by the false-alarm rate.",
        "",
        "The change is shown with its 95 % interval. The history starts after the last level "
        "shift, so a regression that landed on the target branch is not blamed on the commits "
        "after it; a history with several modes is judged mode by mode. *Resolves* is the "
        "smallest drop the bucket could block with its full sample budget.",
    ]
