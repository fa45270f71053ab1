"""What a qualification renders to: qualification.json, qualification.md (the step summary)
and the terminal table, all from one QualificationReport (R15)."""

from __future__ import annotations

import dataclasses
from typing import Any

from perfgate.baselines.qualify.verdict import (
    SCHEMA_VERSION,
    BucketQualification,
    QualificationReport,
    QualVerdict,
)
from perfgate.report.untrusted import md_text
from perfgate.util.console import format_figure, render_table

HEADINGS = {
    QualVerdict.STABLE: "✅ STABLE_ENOUGH_TO_GATE",
    QualVerdict.INCONCLUSIVE: "⚠️ INCONCLUSIVE_DO_NOT_GATE",
    QualVerdict.UNSTABLE: "❌ UNSTABLE_DO_NOT_GATE",
}
MEANINGS = {
    QualVerdict.STABLE: "Every selected bucket's runner-to-runner noise is within the limits: "
    "a real regression stands out, so the gate may block on this pool.",
    QualVerdict.INCONCLUSIVE: "The evidence is incomplete, so nothing is known about the pool "
    "yet: do not let the gate block until a complete run qualifies it.",
    QualVerdict.UNSTABLE: "The pool's noise would hide or fake regressions: do not let the "
    "gate block on it until the reasons below are dealt with (a runner named there is one "
    "to drain).",
}


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.1f} %" if signed else f"{value:.1f} %"


def qualification_json(report: QualificationReport) -> dict[str, Any]:
    """qualification.json: the verdict, the policy fixed before measuring, every bucket."""
    design = report.design
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "perfgate-qualification",
        "verdict": report.verdict.value,
        "policy": {
            **dataclasses.asdict(report.policy),
            "allocations": design.allocations,
            "samples": design.samples,
            "min_runners": design.min_runners,
            "expected_hardware": design.hardware,
            "expected_target_branch": design.target_branch,
            "expected_commit": design.commit,
        },
        "scope": {
            "flags": {key: list(values) for key, values in report.scope.items()},
            "buckets": [bucket.bucket for bucket in report.buckets],
        },
        "problems": list(report.problems),
        "notes": list(report.notes),
        "unstable_runners": list(report.unstable_runners),
        "buckets": [_bucket_json(bucket) for bucket in report.buckets],
    }


def _bucket_json(bucket: BucketQualification) -> dict[str, Any]:
    metrics = bucket.metrics
    return {
        "bucket": bucket.bucket,
        "verdict": bucket.verdict.value,
        "unit": bucket.unit,
        "coverage": list(bucket.coverage),
        "instability": list(bucket.instability),
        "fingerprint": bucket.fingerprint.parts() if bucket.fingerprint else None,
        "metrics": None
        if metrics is None
        else {
            "samples": metrics.samples,
            "median": metrics.median,
            "mean": metrics.mean,
            "mad_pct": metrics.mad_pct,
            "cv_pct": metrics.cv_pct,
            "max_sample_offset_pct": metrics.max_sample_offset_pct,
            "max_runner_offset_pct": metrics.max_runner_offset_pct,
            "block_band_pct": metrics.rule.block_band_pct,
            "detectable_pct": metrics.rule.detectable_pct,
            "rule": {
                "policy": metrics.rule.policy,
                "power": metrics.rule.power,
                "false_block_rate": metrics.rule.false_block_rate,
                "detail": metrics.rule.detail,
            },
        },
        "runners": []
        if metrics is None
        else [
            {
                "runner": r.runner,
                "allocations": list(r.allocations),
                "samples": list(r.samples),
                "median": r.median,
                "offset_pct": r.offset_pct,
                "over_limit": r.over_limit,
            }
            for r in metrics.runners
        ],
        "allocations": [
            {
                "label": a.label,
                "runners": list(a.runners),
                "samples": [{"index": index, "value": value} for index, value in a.samples],
            }
            for a in bucket.allocations
        ],
        "noise": dataclasses.asdict(bucket.noise) if bucket.noise else None,
    }


def _row_cells(bucket: BucketQualification) -> list[str]:
    """Runners, samples, median, MAD, CV, max offsets, block band, detectable."""
    metrics = bucket.metrics
    if metrics is None:
        return [str(len({r for a in bucket.allocations for r in a.runners})), "0"] + ["—"] * 8
    return [
        str(len(metrics.runners)),
        str(metrics.samples),
        format_figure(metrics.median),
        _pct(metrics.mad_pct),
        _pct(metrics.cv_pct),
        _pct(metrics.max_sample_offset_pct, signed=True),
        _pct(metrics.max_runner_offset_pct, signed=True),
        _pct(metrics.rule.block_band_pct),
        _pct(metrics.rule.detectable_pct),
        metrics.rule.policy,
    ]


def terminal_table(report: QualificationReport) -> str:
    """The per-bucket table, then every reason the pool did not qualify."""
    rows = [[b.bucket, b.verdict.value, *_row_cells(b)] for b in report.buckets]
    headers = [
        *("bucket", "verdict", "runners", "samples", "median", "MAD", "CV"),
        *("max sample", "max runner", "BLOCK band", "detects", "rule"),
    ]
    lines = [render_table(headers, rows), ""]
    for bucket in report.buckets:
        lines += [f"{bucket.bucket}: {problem}" for problem in bucket.instability + bucket.coverage]
    lines += [f"pool: {problem}" for problem in report.problems]
    lines += [f"note: {note}" for note in report.notes]
    if report.unstable_runners:
        lines.append(f"runners to drain: {', '.join(report.unstable_runners)}")
    lines.append(f"{report.verdict.value}: {MEANINGS[report.verdict]}")
    return "\n".join(lines)


def _scope_text(report: QualificationReport) -> str:
    flags = [
        f"`--{key} {md_text(value)}`" for key, values in report.scope.items() for value in values
    ]
    chosen = ", ".join(md_text(b.bucket) for b in report.buckets)
    how = " ".join(flags) if flags else "every bucket of the config"
    return f"{len(report.buckets)} bucket(s), selected by {how}: {chosen}."


def qualification_markdown(report: QualificationReport) -> str:
    """qualification.md: reads as a GitHub step summary; untrusted text made inert."""
    design, policy = report.design, report.policy
    rules = sorted({b.metrics.rule.policy for b in report.buckets if b.metrics})
    expected = [
        f"{name} `{md_text(value)}`"
        for name, value in (
            ("hardware", design.hardware),
            ("target branch", design.target_branch),
            ("commit", design.commit),
        )
        if value
    ]
    lines = [
        "# Runner-pool stability qualification",
        "",
        f"## {HEADINGS[report.verdict]}",
        "",
        MEANINGS[report.verdict],
        "",
        f"**Evidence scope:** {_scope_text(report)}",
        "",
        "**Qualification policy fixed before measurement:** "
        f"{design.allocations} allocations x {design.samples} samples of each bucket on at least "
        f"{design.min_runners} distinct runners"
        + (f"; expected {', '.join(expected)}" if expected else "")
        + f". Limits: pooled CV ≤ {policy.max_pooled_cv_pct:g} %; every sample within "
        f"{policy.max_sample_deviation_pct:g} % and every runner's median within "
        f"{policy.max_runner_deviation_pct:g} % of the pooled median; the gate's "
        f"{'/'.join(rules) or 'verdict'} rule blocking at a regression of at most "
        f"{policy.max_block_band_pct:g} % (the effective BLOCK band). Detects: the regression "
        f"it blocks {policy.detection_power * 100:g} % of the time.",
        "",
        "| Bucket | Verdict | Runners | Samples | Median | MAD | CV | Max sample offset "
        "| Max runner offset | Effective BLOCK | Detects | Rule |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for bucket in report.buckets:
        cells = [md_text(bucket.bucket), HEADINGS[bucket.verdict], *_row_cells(bucket)]
        lines.append("| " + " | ".join(cells) + " |")
    reasons = [
        f"- **{md_text(b.bucket)}**: {md_text(problem)}"
        for b in report.buckets
        for problem in (*b.instability, *b.coverage)
    ]
    reasons += [f"- **pool**: {md_text(problem)}" for problem in report.problems]
    if reasons:
        lines += ["", "### Why the pool did not qualify", "", *reasons]
    drain = [
        (bucket, runner)
        for bucket in report.buckets
        if bucket.metrics is not None
        for runner in bucket.metrics.runners
        if runner.over_limit
    ]
    if drain:
        lines += [
            "",
            "### Runners to drain",
            "",
            "| Runner | Bucket | Median offset | Samples | Allocations |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {md_text(r.runner)} | {md_text(b.bucket)} | {_pct(r.offset_pct, signed=True)} | "
            f"{', '.join(format_figure(v) for v in r.samples)} | "
            f"{md_text(', '.join(r.allocations))} |"
            for b, r in drain
        ]
    lines += [
        "",
        "<details><summary>Runner allocation evidence</summary>",
        "",
        "| Bucket | Allocation | Runner | Samples (index: figure) |",
        "|---|---|---|---|",
    ]
    for bucket in report.buckets:
        for allocation in bucket.allocations:
            samples = ", ".join(
                f"{'?' if index is None else index}: {format_figure(value)}"
                for index, value in allocation.samples
            )
            lines.append(
                f"| {md_text(bucket.bucket)} | {md_text(allocation.label)} | "
                f"{md_text(', '.join(allocation.runners))} | {samples} |"
            )
    lines += ["", "</details>"]
    if report.notes:
        lines += ["", "### Notes", "", *(f"- {md_text(note)}" for note in report.notes)]
    lines += [
        "",
        "Qualification measures the pool and never writes baselines.",
        "",
    ]
    return "\n".join(lines)
