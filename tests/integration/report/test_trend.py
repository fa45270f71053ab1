"""The trend site from a real baseline branch: it agrees with the gate, run by run.

The store is written run by run through the store's own append path; before each run is
appended, the gate itself (``baselines.evaluate``, HEAD at that run's commit) judges the
run's figure. The site built afterwards must show, for every run, the verdict, window and
lines the gate gave it then.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.baselines.history import read_history
from perfgate.baselines.store import BaselineStore
from perfgate.config import load_config
from perfgate.judge.calibration import configured_calibration
from perfgate.report.rule import JudgedRun, TrendRule, judge_series
from perfgate.report.trend import judged_series
from tests.trend_stores import FIGURES, RUNNERS, GatedHistory, GateSaid, gated_history


@pytest.fixture
def gated(tmp_path: Path) -> GatedHistory:
    return gated_history(tmp_path)


def shown(gated: GatedHistory) -> tuple[list[JudgedRun], list[GateSaid]]:
    """Every run as the trend site judges it, and what it shows in the gate's terms."""
    repo, shas = gated.repo, list(gated.shas)
    config = load_config(repo / "perfgate.yaml")
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    history = read_history(store, config.buckets, target_branch="main", min_samples=6)
    (series,) = history.series()
    rule = TrendRule.of(config.gate, config.buckets, configured_calibration(config))
    judged = judge_series(series, rule)
    assert [j.run.commit.sha for j in judged] == shas
    assert [j.run.values for j in judged] == list(FIGURES)
    return judged, [
        GateSaid(
            verdict=j.verdict,
            baseline=j.baseline,
            warn_line=j.warn_line,
            block_line=j.block_line,
            window_samples=j.window_size,
            shift_kept_runs=None if j.shift_commit is None else i - shas.index(j.shift_commit),
        )
        for i, j in enumerate(judged)
    ]


def test_every_run_shows_the_verdict_and_lines_the_gate_gave_it(gated: GatedHistory) -> None:
    shas, gate_said = list(gated.shas), gated.gate_said
    judged, said = shown(gated)
    assert said == list(gate_said)
    # The history holds every verdict the rule can reach from stored runs, and level shifts.
    verdicts = [said.verdict for said in gate_said]
    assert verdicts[:3] == ["WARN"] * 3 and gate_said[2].block_line is None  # too few runs yet
    assert verdicts[12] == "BLOCK" and verdicts[19] == "IMPROVED"
    assert {"PASS", "WARN", "INCONCLUSIVE"} <= set(verdicts)
    assert gate_said[-2].shift_kept_runs == 3  # the window starts at commit 19's step
    assert {j.shift_commit for j in judged} >= {shas[12], shas[19]}
    assert {j.run.runner for j in judged} == set(RUNNERS)


def test_judging_in_several_processes_changes_nothing(gated: GatedHistory) -> None:
    config = load_config(gated.repo / "perfgate.yaml")
    store = BaselineStore(gated.repo, branch="perf-baselines", remote=None)
    history = read_history(store, config.buckets, target_branch="main", min_samples=6)
    rule = TrendRule.of(config.gate, config.buckets)
    (series,) = history.series()
    assert (
        list(judged_series([series, series], rule, jobs=2))
        == [(series, judge_series(series, rule))] * 2
    )


def test_the_reference_rule_is_drawn_as_the_gate_applies_it(tmp_path: Path) -> None:
    """policy: reference judges against the nearest 16 samples: five runs and one sample."""
    gated = gated_history(tmp_path, policy="reference")
    _, said = shown(gated)
    assert said == list(gated.gate_said)
    assert {s.verdict for s in said} >= {"PASS", "BLOCK"}
    assert [s.window_samples for s in said][-3:] == [16, 16, 16]


def _perfgate(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], cwd=repo, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_calibrated_bucket_is_drawn_with_its_measured_noise(
    gated: GatedHistory, tmp_path: Path
) -> None:
    """gate.calibration: the site judges each run with the noise the pool measured, as the gate."""
    calibrated = gated_history(tmp_path / "calibrated", measured_noise_pct=4.0)
    _, said = shown(calibrated)
    assert said == list(calibrated.gate_said)
    verdicts = [s.verdict for s in said]
    # 4 % is far above the quiet window before the 10 % drop: the drop still BLOCKs.
    assert verdicts[12] == "BLOCK"
    # Where the window is as noisy (its level shift included), the calibration judges.
    assert verdicts != [s.verdict for s in gated.gate_said]


def test_each_metric_is_drawn_with_its_own_rule(tmp_path: Path) -> None:
    """A bucket's second metric: its own series, judged with its own direction and minimum."""
    gated = gated_history(tmp_path, with_startup=True)
    config = load_config(gated.repo / "perfgate.yaml")
    store = BaselineStore(gated.repo, branch="perf-baselines", remote=None)
    history = read_history(store, config.buckets, target_branch="main", min_samples=6)
    primary, startup = history.series()
    assert (primary.metric, startup.metric) == ("primary", "startup_s")
    judged = judge_series(startup, TrendRule.of(config.gate, config.buckets))
    assert [j.verdict for j in judged] == [s.verdict for s in gated.startup_said]
    assert [j.block_line for j in judged] == [s.block_line for s in gated.startup_said]
    # The 10 % drop BLOCKs the throughput; startup's own 20 % minimum does not block it.
    assert "BLOCK" in {s.verdict for s in gated.gate_said}
    assert "BLOCK" not in {j.verdict for j in judged}


def assert_one_plotly_per_site(site: Path) -> None:
    """plotly.js (megabytes) is in the site once, assets/plotly.min.js: every bucket page
    loads that one copy, and no page inlines it."""
    copies = [
        path.relative_to(site)
        for path in site.rglob("*")
        if path.is_file() and "* plotly.js v" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert copies == [Path("assets/plotly.min.js")]
    pages = sorted((site / "buckets").glob("*.html"))
    assert pages
    for page in pages:
        scripts = re.findall(r'<script[^>]* src="([^"]+)"', page.read_text(encoding="utf-8"))
        assert scripts.count("../assets/plotly.min.js") == 1, (page, scripts)
        assert page.stat().st_size < 1_000_000
    assert "plotly" not in (site / "index.html").read_text(encoding="utf-8")


def test_report_writes_an_offline_site(gated: GatedHistory, tmp_path: Path) -> None:
    repo, shas, gate_said = gated.repo, gated.shas, gated.gate_said
    site = tmp_path / "site"
    done = _perfgate(repo, "report", "--out", str(site), "--last", "5")
    assert done.returncode == 0, done.stderr
    index = (site / "index.html").read_text(encoding="utf-8")
    page = site / "buckets" / "cartpole__numpy.html"
    assert 'href="buckets/cartpole__numpy.html#cpu-test--runtime-total_fps-mean"' in index
    latest = gate_said[-1].verdict
    assert f'<span class="verdict {latest}">{latest}</span>' in index
    assert "READY" in index and shas[-1][:7] in index
    text = page.read_text(encoding="utf-8")
    (figure_json,) = re.findall(r'<script type="application/json" id="data-1">(.*?)</script>', text)
    figure = json.loads(figure_json)
    points = [t for t in figure["data"] if t.get("meta") == "samples"]
    assert sorted(t["name"] for t in points) == sorted(RUNNERS)
    assert sum(len(t["y"]) for t in points) == sum(len(run) for run in FIGURES)
    assert [t["name"] for t in figure["data"][:3]] == ["block line", "warn line", "baseline"]
    circled = {t["name"] for t in figure["data"] if t["name"].startswith("judged ")}
    assert circled == {f"judged {v.verdict}" for v in gate_said[3:] if v.verdict != "PASS"}
    assert len(figure["layout"]["shapes"]) >= 2  # the level shifts, marked
    # Nothing is fetched at view time: every script and stylesheet is a file of the site.
    for html in (index, text):
        for ref in re.findall(r'(?:src|href)="([^"#]+)', html):
            assert "://" not in ref
            base = site if html is index else page.parent
            assert (base / ref).resolve().is_file(), ref
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    assert_one_plotly_per_site(site)

    assert "those pairs are not stored" not in text  # confirm: repeat draws the gate's own

    config = repo / "perfgate.yaml"
    config.write_text(config.read_text().replace("confirm: repeat", "confirm: paired"))
    again = _perfgate(repo, "report", "--out", str(site))
    assert again.returncode == 0, again.stderr
    assert_one_plotly_per_site(site)  # a rebuild replaces the site, never adds a copy
    # A paired gate's confirmation is not stored: the page says it draws the window's verdict.
    assert "those pairs are not stored" in page.read_text(encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine", encoding="utf-8")
    # --backend chooses as every verb's selection does: an unknown key is refused.
    unknown = _perfgate(repo, "report", "--out", str(site), "--backend", "warp")
    assert unknown.returncode == 4 and "unknown backend key warp" in unknown.stderr
    chosen = _perfgate(repo, "report", "--out", str(site), "--backend", "numpy")
    assert chosen.returncode == 0, chosen.stderr
    refused = _perfgate(repo, "report", "--out", str(tmp_path / "other"))
    assert refused.returncode == 4 and "holds other files" in refused.stderr
    assert (tmp_path / "other" / "keep.txt").read_text(encoding="utf-8") == "mine"
