"""An accepted change on the trend site: marked on the chart, and the windows after it start
there exactly as the gate's do (R18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.baselines.acks import accepted_levels, acknowledgement, read_acks, record_acks
from perfgate.baselines.evaluate import evaluate
from perfgate.baselines.history import read_history
from perfgate.baselines.store import BaselineStore
from perfgate.config import load_config
from perfgate.report.rule import TrendRule, judge_series
from perfgate.report.trend import bucket_charts
from perfgate.util.git import git
from tests.trend_stores import _result, gated_history

pytestmark = pytest.mark.integration


def test_an_accepted_change_is_marked_and_starts_the_windows_after_it(tmp_path: Path) -> None:
    gated = gated_history(tmp_path)  # a 10 % drop lands at commit 12
    repo, shas = gated.repo, gated.shas
    assert gated.gate_said[12].verdict == "BLOCK"
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    reason = "<b>exact</b> solver"
    accepted = acknowledgement(bucket="cartpole/numpy", commit=shas[12], reason=reason,
                               by="ada", source="accept")  # fmt: skip
    assert record_acks(store, [accepted], "accept") == 1
    assert record_acks(store, [accepted], "accept again") == 0  # recorded once

    config = load_config(repo / "perfgate.yaml")
    history = read_history(store, config.buckets, target_branch="main", min_samples=6)
    acks, warnings = read_acks(repo, history.baseline_tip)
    assert warnings == [] and acks == [accepted]
    levels = accepted_levels(repo, acks, history.target_tip)
    rule = TrendRule.of(config.gate, config.buckets, accepted=levels)
    (series,) = history.series()
    judged = judge_series(series, rule)
    # The drop itself is the new level now: no run after it is judged against the old one.
    assert judged[12].verdict == "INCONCLUSIVE" and "accepted change" in judged[12].detail
    assert all(j.verdict != "BLOCK" for j in judged[12:])
    assert judged[11].verdict == "PASS"  # before the change nothing moved

    # The gate on a change whose merge base is commit 14 reads the same window as run 15
    # did (every run up to 14), and says the same of run 15's figures.
    git("checkout", "-q", "--detach", shas[14], cwd=repo)
    result = _result(repo / "perfgate.yaml", shas[14], judged[15].run.values, 15)
    (row,) = evaluate(config, config.buckets, [result], store).rows
    git("checkout", "-q", "main", cwd=repo)
    assert row.verdict.label == judged[15].verdict
    assert row.judgement is not None and row.judgement.decision is not None
    assert row.judgement.decision.baseline == pytest.approx(judged[15].baseline)

    (path, charts), *_ = bucket_charts(history, rule)
    (chart,) = charts
    layout = chart.figure()["layout"]
    marks = [a for a in layout["annotations"] if a.get("text") == "accepted"]
    # At the accepted commit's run: the x axis counts runs, oldest first.
    assert len(marks) == 1 and marks[0]["x"] == 12
    # The reason reaches plotly as text, never as its markup.
    assert "<b>" not in marks[0]["hovertext"] and "exact" in marks[0]["hovertext"]
    assert path.endswith("cartpole__numpy.html")
