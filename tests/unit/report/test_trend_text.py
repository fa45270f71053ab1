"""Text from the store reaches the trend site's charts as text, never as plotly markup (R14).

plotly draws legends, hovers and axis titles from a small HTML subset: a runner name or a
unit holding ``<a href=...>`` would be a clickable link on the page.
"""

from __future__ import annotations

import json
from dataclasses import replace

from perfgate.baselines.history import BranchCommit, Run, Series
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.verify import BucketReadiness, Readiness
from perfgate.config import load_config
from perfgate.report.rule import JudgedRun
from perfgate.report.trend_chart import chart_figure
from tests.factories import make_result
from tests.paths import ROOT

LINK = '<a href="https://evil.example/login">click</a>'


def test_store_text_is_escaped_for_plotly_in_legends_hovers_and_axis_titles() -> None:
    bucket = load_config(ROOT / "perfgate.yaml").buckets[0]
    sample = replace(
        samples_from_result(make_result(bucket.id, 100.0), trusted_source="protected_branch")[0],
        ci_runner_name=f"gpu-1 {LINK}",
        unit=f"fps {LINK}",
        metric_path="runtime.fps",
    )
    run = Run(commit=BranchCommit(sha="c" * 40, position=0, date="2026-01-01T00:00"),
              samples=(sample,))  # fmt: skip
    series = Series(
        bucket=bucket,
        hardware="cpu-test",
        metric="primary",
        metric_path=sample.metric_path,
        unit=sample.unit,
        direction="higher",
        runs=(run,),
        readiness=BucketReadiness(
            bucket=bucket.id, status=Readiness.EMPTY, samples=0, min_samples=5,
            fingerprints=0, other_samples=0, fingerprint=None,
        ),
    )  # fmt: skip
    judged = JudgedRun(
        run=run, figure=100.0, verdict="BLOCK", reasons=("REGRESSION",), detail=f"x {LINK}",
        window_size=5, window_runs=5, baseline=120.0, warn_line=115.0, block_line=110.0,
        change_text=f"-16 % {LINK}",
    )  # fmt: skip
    text = json.dumps(chart_figure(series, [judged]))
    assert "<a " not in text and "</a>" not in text
    assert text.count("&lt;a href=") >= 4  # legend, hover, axis title, the verdict's detail
