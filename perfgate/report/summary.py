"""summary.md: the job summary and PR comment body, rendered from verdict.json alone."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfgate.config import Mode
from perfgate.console import format_figure
from perfgate.judge.gate import GateReport, Row
from perfgate.judge.oracle import Verdict
from perfgate.report.verdict import report_json

VERDICT_ICONS = {
    Verdict.PASS: "✅ pass",
    Verdict.WARN: "⚠️ warn",
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
        Verdict.WARN: "could not tell, or a possible regression: read the reasons",
        Verdict.BLOCK: "slower than its baseline beyond noise and the minimum drop",
        Verdict.HARD_FAILURE: "the benchmark did not produce a usable figure",
    }
    return meanings[verdict]


def _change_text(change_pct: float | None) -> str:
    return f"{change_pct:+.1f}%" if change_pct is not None else "—"


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
    """A row's change against its baseline median, or a dash."""
    stats = row.judgement.stats if row.judgement else None
    return _change_text(stats.change_pct if stats else None)


def _number(value: object) -> float | None:
    """A figure from verdict.json; anything that is not a number renders as absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


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
    counts = (
        f"✅ {verdicts.count(Verdict.PASS)} passed · ⚠️ {verdicts.count(Verdict.WARN)} "
        f"warning(s) · 🚫 {verdicts.count(Verdict.BLOCK)} regression(s) · "
        f"❌ {failures} failure(s)"
    )
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
        "| Bucket | Result | Figure | Unit | Baseline median | Change | Samples | Why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    technical = []
    for row, verdict, was_reported in zip(rows, verdicts, reported, strict=True):
        stats = _mapping(row.get("baseline"))
        samples = stats.get("samples")
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
            f"{_change_text(_number(stats.get('change_pct')))} | "
            f"{samples if isinstance(samples, int) and not isinstance(samples, bool) else 0} | "
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
                    format_figure(_number(stats.get("mad"))),
                    format_figure(_number(stats.get("noise"))),
                    format_figure(_number(stats.get("warn_line"))),
                    format_figure(_number(stats.get("block_line"))),
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
        "| Bucket | Verdict | Reasons | MAD | Noise | Warn line | Block line | Phase | Attempts "
        "| Hardware | Bisect |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
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
    min_samples, max_samples = data.get("min_samples"), data.get("max_samples")
    window = f"the {max_samples} nearest" if isinstance(max_samples, int) else "the nearest"
    lines += [
        "### How to read this",
        "",
        f"Each figure is compared with the median of {window} trusted baseline samples of the "
        "same experiment on the same hardware"
        + (f" (at least {min_samples} are needed to judge)" if isinstance(min_samples, int) else "")
        + ". Noise is the larger of the median absolute deviation and the bucket's noise floor. "
        "A result past the block line that also dropped by the minimum percentage is a "
        "regression; past the warn line it needs attention. No baseline, too few samples, "
        "a retried run or a bucket that did not report never count as a pass.",
        "",
    ]
    return "\n".join(lines)
