"""Render a GateReport: summary.md, verdict.json, a terminal table, GitHub step surfaces."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from pathlib import Path

from perfgate.config import Mode
from perfgate.console import format_figure, render_table
from perfgate.gate import GateReport, Row, report_json
from perfgate.oracle import Verdict

VERDICT_ICONS = {
    Verdict.PASS: "✅ pass",
    Verdict.WARN: "⚠️ warn",
    Verdict.BLOCK: "🚫 regression",
    Verdict.HARD_FAILURE: "❌ failed",
}


def md_text(text: str) -> str:
    """Make untrusted text inert inside a markdown table cell (no markup, links or HTML)."""
    escaped = html.escape(" ".join(text.split()), quote=True)
    for char in "\\`*_[]|#~!":
        escaped = escaped.replace(char, f"&#{ord(char)};")
    return escaped


def _short(sha: str | None) -> str:
    return f"`{sha[:12]}`" if sha else "unknown"


def _meaning(row: Row) -> str:
    if not row.reported:
        return "did not report: no figure, so no verdict can be trusted"
    if row.excused:
        return "could not run on this CI image (stale image, with evidence)"
    meanings = {
        Verdict.PASS: "within the noise of its baseline",
        Verdict.WARN: "could not tell, or a possible regression: read the reasons",
        Verdict.BLOCK: "slower than its baseline beyond noise and the minimum drop",
        Verdict.HARD_FAILURE: "the benchmark did not produce a usable figure",
    }
    return meanings[row.verdict]


def _change(row: Row) -> str:
    stats = row.judgement.stats if row.judgement else None
    return f"{stats.change_pct:+.1f}%" if stats else "—"


def summary_markdown(report: GateReport) -> str:
    """The job summary and PR comment body."""
    counts = (
        f"✅ {report.count(Verdict.PASS)} passed · ⚠️ {report.count(Verdict.WARN)} warning(s) · "
        f"🚫 {report.count(Verdict.BLOCK)} regression(s) · "
        f"❌ {sum(1 for r in report.rows if r.reported and r.verdict is Verdict.HARD_FAILURE)} "
        "failure(s)"
    )
    if report.coverage.missing:
        counts += (
            f" · ❔ {len(report.coverage.missing)} did not report "
            f"({', '.join(md_text(b) for b in report.coverage.missing)})"
        )
    if report.mode is Mode.ADVISORY:
        mode = (
            "**Advisory mode:** the job's exit code does not fail on a regression or a failed "
            "benchmark; the commit status and this report carry the verdict."
        )
    else:
        mode = "**Blocking mode:** a regression exits 1 and a failed benchmark exits 2."
    lines = ["## perfgate results", "", "### Overall result", ""]
    lines += [f"**{headline}**  " for headline in report.headlines]
    lines += ["", counts, "", mode, "", "### Run context", ""]
    target = md_text(report.target_branch or "unknown")
    lines.append(
        f"Commit {_short(report.commit)} judged against `{target}` "
        f"(merge base {_short(report.base_commit)}), "
        f"baseline branch at {_short(report.baseline_tip)}; hardware: "
        f"{', '.join(md_text(h) for h in report.hardware) or 'unknown'}."
    )
    lines += [
        "",
        "### Results",
        "",
        "| Bucket | Result | Figure | Baseline median | Change | Samples | What it means |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        stats = row.judgement.stats if row.judgement else None
        value = row.result.metric.value if row.result else None
        lines.append(
            f"| {md_text(row.bucket.id)} | {VERDICT_ICONS[row.verdict]} | {format_figure(value)} | "
            f"{format_figure(stats.median if stats else None)} | {_change(row)} | "
            f"{stats.size if stats else 0} | {_meaning(row)} |"
        )
    lines += [
        "",
        "<details><summary>Technical details</summary>",
        "",
        "| Bucket | Verdict | Reasons | MAD | Noise | Warn line | Block line | Phase | Attempts "
        "| Hardware | Bisect |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        stats = row.judgement.stats if row.judgement else None
        result = row.result
        lines.append(
            "| "
            + " | ".join(
                [
                    md_text(row.bucket.id),
                    row.verdict.label,
                    md_text("; ".join(row.details)),
                    format_figure(stats.mad if stats else None),
                    format_figure(stats.noise if stats else None),
                    format_figure(stats.warn_line if stats else None),
                    format_figure(stats.block_line if stats else None),
                    md_text(result.health.phase.value) if result and result.health.phase else "—",
                    str(result.health.attempts) if result else "—",
                    md_text(result.hardware.slug) if result else "—",
                    row.judgement.bisect.value if row.judgement else "—",
                ]
            )
            + " |"
        )
    lines += ["", "</details>", ""]
    if report.notes:
        lines += ["### Notes", ""] + [f"- {md_text(note)}" for note in report.notes] + [""]
    lines += [
        "### How to read this",
        "",
        f"Each figure is compared with the median of up to the last baseline samples of the same "
        f"experiment on the same hardware (at least {report.min_samples} are needed to judge). "
        "Noise is the larger of the median absolute deviation and the bucket's noise floor. "
        "A result past the block line that also dropped by the minimum percentage is a "
        "regression; past the warn line it needs attention. No baseline, too few samples, "
        "a retried run or a bucket that did not report never count as a pass.",
        "",
    ]
    return "\n".join(lines)


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
                _change(row),
                str(stats.size if stats else 0),
                "; ".join(row.details),
            ]
        )
    table = render_table(
        ["bucket", "verdict", "figure", "median", "change", "samples", "why"], rows
    )
    headline = "\n".join(report.headlines)
    return f"{table}\n\n{headline}\n{report.overall.label}: {report.description}"


def write_report(report: GateReport, report_dir: Path) -> dict[str, Path]:
    """Write summary.md and verdict.json into ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": report_dir / "summary.md", "verdict": report_dir / "verdict.json"}
    paths["summary"].write_text(summary_markdown(report), encoding="utf-8")
    paths["verdict"].write_text(json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8")
    return paths


def write_github_surfaces(report: GateReport, env: Mapping[str, str] = os.environ) -> None:
    """Append the summary to $GITHUB_STEP_SUMMARY and the verdict to $GITHUB_OUTPUT."""
    summary_file = env.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with Path(summary_file).open("a", encoding="utf-8") as handle:
            handle.write(summary_markdown(report) + "\n")
    output_file = env.get("GITHUB_OUTPUT")
    if output_file:
        outputs = {
            "overall_verdict": report.overall.label,
            "status_state": report.status_state,
            "description": report.description,
            "exit_code": str(report.exit_code),
            "underfilled": json.dumps(list(report.underfilled)),
        }
        with Path(output_file).open("a", encoding="utf-8") as handle:
            for key, value in outputs.items():
                handle.write(f"{key}={' '.join(value.split())}\n")
