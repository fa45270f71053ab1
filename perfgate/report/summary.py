"""summary.md: the job summary and PR comment body, rendered from verdict.json alone."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from perfgate.config import Mode
from perfgate.console import format_figure
from perfgate.judge.gate import GateReport, Row
from perfgate.judge.stats import effect_text
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


def row_change(row: Mapping[str, Any]) -> str:
    """A verdict.json row's change with its interval ('-6.1 % (-7.9 ... -4.2)'), or ''."""
    statistics = _mapping(row.get("statistics"))
    effect = _number(statistics.get("effect_pct"))
    if effect is None:
        effect = _number(_mapping(row.get("baseline")).get("change_pct"))
    bounds = statistics.get("interval_pct")
    interval = None
    if isinstance(bounds, list) and len(bounds) == 2:
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


def change_cell(row: Row) -> str:
    """A row's change against its baseline with its interval, or a dash."""
    decision = row.judgement.decision if row.judgement else None
    return (decision.effect_text() if decision else "") or "—"


def _number(value: object) -> float | None:
    """A figure from verdict.json; anything that is not a finite number renders as absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _texts(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _verdict(label: object) -> Verdict:
    """A verdict label from verdict.json; an unknown one is the most severe."""
    return (
        Verdict[label]
        if isinstance(label, str) and label in Verdict.__members__
        else (Verdict.HARD_FAILURE)
    )


def summary_markdown(report: GateReport) -> str:
    """The job summary and PR comment body."""
    return summary_from_verdict(report_json(report))


def summary_from_verdict(data: Mapping[str, Any]) -> str:
    """The summary rendered from verdict.json alone, every string in it treated as untrusted.

    The fork hand-off re-renders a pull request's verdict.json with this, so it never
    trusts markup that came from the pull request's run.
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
    if data.get("mode") == Mode.BLOCKING.value:
        mode = "**Blocking mode:** a regression exits 1 and a failed benchmark exits 2."
    else:
        mode = (
            "**Advisory mode:** the job's exit code does not fail on a regression or a failed "
            "benchmark; the commit status and this report carry the verdict."
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
        f"{hardware or 'unknown'}."
    )
    machines = _texts(data.get("machines"))
    if machines:
        lines += ["", "Machines: " + "; ".join(md_text(m) for m in machines) + "."]
    lines += [
        "",
        "### Results",
        "",
        "| Bucket | Result | Figure | Unit | Baseline | Change (95 % interval) | Samples | Why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    technical = []
    for row, verdict, was_reported in zip(rows, verdicts, reported, strict=True):
        stats = _mapping(row.get("baseline"))
        test = _mapping(row.get("statistics"))
        bucket = md_text(str(row.get("bucket")))
        meaning = _meaning(
            reported=was_reported, excused=row.get("excused") is True, verdict=verdict
        )
        # The bucket's own reasons, where it has them; the verdict's general meaning otherwise.
        why = _clipped("; ".join(_texts(row.get("details")))) if was_reported else ""
        log = _log_cell(_mapping(row.get("log")), data.get("run_url"))
        lines.append(
            f"| {bucket} | {VERDICT_ICONS[verdict]} | {format_figure(_number(row.get('value')))} | "
            f"{md_text(str(row['unit'])) if row.get('unit') else '—'} | "
            f"{format_figure(_number(stats.get('median')))} | "
            f"{row_change(row) or '—'} | {_samples_cell(stats, test)} | "
            f"{md_text(why) if why else meaning}{log} |"
        )
        attempts = row.get("attempts")
        technical.append(
            "| "
            + " | ".join(
                [
                    bucket,
                    verdict.label,
                    md_text(", ".join(_texts(row.get("reasons")))),
                    _percent(_number(test.get("noise_pct"))),
                    format_figure(_number(stats.get("warn_line"))),
                    format_figure(_number(stats.get("block_line"))),
                    _t_cell(_number(test.get("t")), _number(test.get("t_block"))),
                    _percent(_number(test.get("resolution_pct"))),
                    md_text(str(row["phase"])) if row.get("phase") else "—",
                    str(attempts) if isinstance(attempts, int) else "—",
                    md_text(str(row["hardware"])) if row.get("hardware") else "—",
                    md_text(str(row["bisect"])) if was_reported and row.get("bisect") else "—",
                ]
            )
            + " |"
        )
    lines += [
        "",
        "<details><summary>Technical details</summary>",
        "",
        "| Bucket | Verdict | Reasons | Noise | Warn line | Block line | t (block at) "
        "| Resolves | Phase | Attempts | Hardware | Bisect |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
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
    return "\n".join(lines)


def _samples_cell(baseline: Mapping[str, Any], test: Mapping[str, Any]) -> str:
    """``3 / 40``: the run's samples against the window's (``40`` alone from older reports)."""
    window = baseline.get("samples")
    run = test.get("run_samples")
    window_text = str(window) if isinstance(window, int) and not isinstance(window, bool) else "0"
    if isinstance(run, int) and not isinstance(run, bool):
        return f"{run} / {window_text}"
    return window_text


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
    return [
        f"Each bucket run takes a few samples; they are compared with the bucket's history "
        f"on the target branch ({runs_text} of the same experiment on the same hardware, every "
        "sample of each). The question is: is this run slower than its history by more than "
        f"noise can explain, and by at least {drop_text}? The rule is set so that unchanged "
        f"code is blocked in at most {rate_text} of bucket runs. A run whose first samples "
        "look slower is measured again on the same runner before it may be blocked.",
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
