"""summary.md: the job summary and PR comment body, rendered from verdict.json alone (one
row in words: ``report.row_text``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from perfgate.config import Mode
from perfgate.judge.gate import GateReport
from perfgate.judge.verdicts import Verdict
from perfgate.report.row_text import (
    WHY_CHARS,
    admission_text,
    confirmation_text,
    cost_text,
    deciding_figures,
    noted_metrics,
    paired_of,
    paired_text,
)
from perfgate.report.untrusted import (
    json_list,
    json_mapping,
    json_texts,
    json_verdict,
    md_text,
)
from perfgate.report.verdict import clipped, report_json
from perfgate.util.console import format_figure
from perfgate.util.jsonfile import finite_number

VERDICT_ICONS = {
    Verdict.PASS: "✅ pass",
    Verdict.IMPROVED: "🚀 improved",
    Verdict.WARN: "⚠️ warn",
    Verdict.INCONCLUSIVE: "🔍 inconclusive",
    Verdict.BLOCK: "🚫 regression",
    Verdict.HARD_FAILURE: "❌ failed",
}


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


def _pair_bases(data: Mapping[str, Any]) -> str:
    """' Pairs measured against 019cb48.' when the pairs ran against another commit than
    the merge base the gate named (the bench resolves its own); '' otherwise."""
    named = data.get("base_commit")
    bases = sorted(
        {
            base
            for row in json_list(data.get("rows"))
            if isinstance(row, Mapping)
            and isinstance(base := paired_of(row).get("base_commit"), str)
            and base != named
        }
    )
    if not bases:
        return ""
    return f" Pairs measured against {', '.join(_short(b) for b in bases)}."


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
    """The job summary of ``report``, within GitHub's step-summary limit."""
    return fitted_summary(report_json(report), trend_url=report.trend_url)


def fitted_summary(verdict: Mapping[str, Any], trend_url: str | None = None) -> str:
    """The summary of a verdict.json, cut to GitHub's step-summary limit when larger."""
    return fit_markdown(
        summary_from_verdict(verdict, trend_url=trend_url),
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
    coverage = json_mapping(data.get("coverage"))
    missing = json_texts(coverage.get("missing"))
    rows = [row for row in data.get("rows") or [] if isinstance(row, Mapping)]
    verdicts = [json_verdict(row.get("verdict")) for row in rows]
    reported = [str(row.get("bucket")) not in missing for row in rows]
    lines = ["## perfgate results", "", "### Overall result", ""]
    lines += [f"**{md_text(headline)}**  " for headline in json_texts(data.get("headlines"))]
    lines += ["", _tallies(verdicts, reported, coverage), "", _mode_text(data), ""]
    lines += ["### Run context", "", *_run_context(data), ""]
    results, technical = _table_lines(data, rows, verdicts, reported, trend_url)
    lines += [
        "### Results",
        "",
        "| Bucket | Result | Figure | Unit | Baseline | Change (95 % interval) | Samples "
        "| Confirmed by | Why |",
        "|---|---|---|---|---|---|---|---|---|",
        *results,
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
    notes = json_texts(data.get("notes"))
    if notes:
        lines += ["### Notes", ""] + [f"- {md_text(note)}" for note in notes] + [""]
    if not any(json_mapping(row.get("baseline")).get("samples") for row in rows):
        return "\n".join(lines)  # nothing was compared with a baseline: nothing to explain
    lines += ["### How to read this", "", *_how_to_read(data), ""]
    if any(len(json_list(row.get("metrics"))) > 1 for row in rows):
        lines += [
            "A bucket may gate several metrics of one run (say steady-state FPS and startup "
            "time). Each is judged against its own history, with its own minimum change, and "
            "has a line of its own (`bucket · metric`) when it is not a pass; the bucket takes "
            "the worst verdict of those that gate. A metric marked *report only* never "
            "changes its bucket's verdict.",
            "",
        ]
    return "\n".join(lines)


def _tallies(verdicts: list[Verdict], reported: list[bool], coverage: Mapping[str, Any]) -> str:
    """The verdicts counted in one line, then the buckets that did not report or run."""
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
    missing = json_texts(coverage.get("missing"))
    if missing:
        counts += f" · ❔ {len(missing)} did not report ({', '.join(md_text(b) for b in missing)})"
    skipped = json_texts(coverage.get("not_selected"))
    if skipped:
        named = ", ".join(md_text(b) for b in skipped)
        counts += f" · ⏭️ {len(skipped)} not selected for this run ({named})"
    return counts


def _mode_text(data: Mapping[str, Any]) -> str:
    """What the gate's verdict does to the job and the merge, in the mode it ran in."""
    if data.get("always_pass") is True:
        return (
            "**Always green (`gate.always_pass`):** the job exits 0 whatever the verdict; the "
            "commit status and this report carry it."
        )
    if data.get("mode") == Mode.BLOCKING.value:
        return (
            "**Required check:** a regression exits 1 and a failed benchmark exits 2, and "
            "branch protection requires this check."
        )
    return (
        "**Advisory rollout:** a regression exits 1 and a failed benchmark exits 2, but "
        "this check is not yet required in branch protection, so it stops no merge."
    )


def _run_context(data: Mapping[str, Any]) -> list[str]:
    """The commit, its target and baseline, the hardware and machines, and the run's cost."""
    target = md_text(str(data.get("target_branch") or "unknown"))
    hardware = ", ".join(md_text(h) for h in json_texts(data.get("hardware")))
    source = data.get("baseline_source")
    baseline = (
        "no baseline branch"
        if not isinstance(source, str)
        else f"baseline {md_text(source)} at {_short(data.get('baseline_tip'))}"
        if data.get("baseline_tip")
        else f"baseline {md_text(source)}, which does not exist yet"
    )
    lines = [
        f"Commit {_short(data.get('commit'))} judged against `{target}` "
        f"(merge base {_short(data.get('base_commit'))}), {baseline}; hardware: "
        f"{hardware or 'unknown'}.{_pair_bases(data)}"
    ]
    machines = json_texts(data.get("machines"))
    if machines:
        lines += ["", "Machines: " + "; ".join(md_text(m) for m in machines) + "."]
    return [*lines, "", cost_text(data.get("cost"))]


def _table_lines(
    data: Mapping[str, Any],
    rows: list[Mapping[str, Any]],
    verdicts: list[Verdict],
    reported: list[bool],
    trend_url: str | None,
) -> tuple[list[str], list[str]]:
    """The lines of the results table and of the technical details: a bucket's, then one
    for each further metric that is not a plain pass (the worst of a suite), and one that
    counts the rest."""
    lines, technical = [], []
    for row, verdict, was_reported in zip(rows, verdicts, reported, strict=True):
        bucket = md_text(str(row.get("bucket")))
        meaning = _meaning(
            reported=was_reported, excused=row.get("excused") is True, verdict=verdict
        )
        # The bucket's own reasons, where it has them; the verdict's general meaning otherwise.
        why = clipped("; ".join(json_texts(row.get("details"))), WHY_CHARS) if was_reported else ""
        log = _log_cell(json_mapping(row.get("log")), data.get("run_url"))
        linked = bucket_cell(row.get("bucket"), trend_url)
        lines.append(_result_line(linked, verdict, row, confirmation_text(row),
                                  f"{md_text(why) if why else meaning}{log}"))  # fmt: skip
        attempts = row.get("attempts")
        run = [
            md_text(str(row["phase"])) if row.get("phase") else "—",
            str(attempts) if isinstance(attempts, int) else "—",
            _minutes_cell(row.get("runner_minutes")),
            md_text(str(row["hardware"])) if row.get("hardware") else "—",
            md_text(str(row["bisect"])) if was_reported and row.get("bisect") else "—",
            admission_text(row.get("admission")),
        ]
        technical.append(_technical_line(bucket, verdict, row, run))
        noted, more = noted_metrics(row)
        for metric in noted:
            name = f"{bucket} · {md_text(str(metric.get('name')))}"
            judged = json_verdict(metric.get("verdict"))
            gates = "" if metric.get("gates") is not False else "(report only) "
            why = clipped("; ".join(json_texts(metric.get("details"))), WHY_CHARS)
            how = paired_text(metric.get("paired"), metric)
            lines.append(_result_line(name, judged, metric, how, f"{gates}{md_text(why)}"))
            technical.append(_technical_line(name, judged, metric, ["—"] * 6))
        if more:
            lines.append(f"| {bucket} · … | | | | | | | | {md_text(more)} (verdict.json lists "
                         "each) |")  # fmt: skip
    return lines, technical


def _result_line(name: str, verdict: Verdict, row: Mapping[str, Any], how: str, why: str) -> str:
    """One line of the results table: a bucket (its primary metric), or one further metric."""
    stats = json_mapping(row.get("baseline"))
    test = json_mapping(row.get("statistics"))
    figure, baseline, change = deciding_figures(row)
    return (
        f"| {name} | {VERDICT_ICONS[verdict]} | {format_figure(figure)} | "
        f"{md_text(str(row['unit'])) if row.get('unit') else '—'} | "
        f"{format_figure(baseline)} | "
        f"{change or '—'} | {_samples_cell(stats, test)} | {how or '—'} | {why} |"
    )


def _technical_line(name: str, verdict: Verdict, row: Mapping[str, Any], run: list[str]) -> str:
    """One line of the technical details: the test's figures, then ``run`` (phase ... bisect)."""
    stats = json_mapping(row.get("baseline"))
    test = json_mapping(row.get("statistics"))
    cells = [
        name,
        verdict.label,
        md_text(", ".join(json_texts(row.get("reasons")))),
        _percent(finite_number(test.get("noise_pct"))),
        format_figure(finite_number(stats.get("warn_line"))),
        format_figure(finite_number(stats.get("block_line"))),
        _t_cell(finite_number(test.get("t")), finite_number(test.get("t_block"))),
        _percent(finite_number(test.get("resolution_pct"))),
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
    minutes = finite_number(value)
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
    policy = json_mapping(data.get("policy"))
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
    rate = finite_number(policy.get("false_block_rate"))
    drop = finite_number(policy.get("min_drop_pct"))
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
