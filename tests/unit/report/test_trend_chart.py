"""The trend chart's hover: pointing at a sample names its commit, even on a judged line.

plotly's "closest" hover picks one trace; when the band lines took the hover too, a sample
lying on the warn line showed "warn line 1.89M" and no commit.
"""

from __future__ import annotations

from dataclasses import replace

from perfgate.baselines.history import BranchCommit, Run, Series
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.verify import BucketReadiness, Readiness
from perfgate.config import load_config
from perfgate.report.rule import JudgedRun
from perfgate.report.trend_chart import chart_figure
from tests.factories import make_result
from tests.paths import ROOT


def series_of(*figures: float) -> tuple[Series, list[Run]]:
    """A one-metric series of one-sample runs, one commit each."""
    bucket = load_config(ROOT / "perfgate.yaml").buckets[0]
    sample = samples_from_result(make_result(bucket.id, 1.0), trusted_source="protected_branch")[0]
    runs = [
        Run(commit=BranchCommit(sha=f"{i:x}" * 40, position=i, date="2026-01-01T00:00"),
            samples=(replace(sample, value=figure),))
        for i, figure in enumerate(figures, start=1)
    ]  # fmt: skip
    series = Series(
        bucket=bucket, hardware="cpu-test", metric="primary", metric_path=sample.metric_path,
        unit="fps", direction="higher", runs=tuple(runs),
        readiness=BucketReadiness(
            bucket=bucket.id, status=Readiness.READY, samples=len(runs), min_samples=1,
            fingerprints=1, other_samples=0, fingerprint=None,
        ),
    )  # fmt: skip
    return series, runs


def test_only_samples_and_verdicts_take_the_hover_and_a_sample_names_its_lines() -> None:
    series, (first, second) = series_of(100.0, 95.0)
    judged = [
        JudgedRun(run=first, figure=100.0, verdict="PASS", reasons=(), detail="",
                  window_size=0, window_runs=0),
        # the second run's sample lies exactly on its warn line
        JudgedRun(run=second, figure=95.0, verdict="WARN", reasons=("SUSPICIOUS",), detail="",
                  window_size=5, window_runs=5, baseline=100.0, warn_line=95.0, block_line=90.0),
    ]  # fmt: skip
    figure = chart_figure(series, judged)
    lines = [t for t in figure["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == ["block line", "warn line", "baseline"]
    assert all(t.get("hoverinfo") == "skip" and "hovertemplate" not in t for t in lines)

    (samples,) = [t for t in figure["data"] if t.get("meta") == "samples"]
    assert "%{customdata[0]}" in samples["hovertemplate"]
    assert samples["hovertemplate"].endswith("%{customdata[3]}<extra></extra>")
    unjudged, on_the_line = samples["customdata"]
    assert unjudged[0] == first.commit.short and unjudged[3] == ""
    assert on_the_line[0] == second.commit.short
    assert on_the_line[3] == "<br>judged against: baseline 100 · warn line 95 · block line 90 fps"
