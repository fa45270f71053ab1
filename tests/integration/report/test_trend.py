"""The trend site from a real baseline branch: it agrees with the gate, run by run.

The store is written run by run through the store's own append path; before each run is
appended, the gate itself (``judge.gate.evaluate``, HEAD at that run's commit) judges the
run's figure. The site built afterwards must show, for every run, the verdict, window and
lines the gate gave it then.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.history import read_history
from perfgate.baselines.seed import bucket_hashes
from perfgate.baselines.store import BaselineStore, sample_from_result
from perfgate.config import load_config
from perfgate.git import git
from perfgate.judge.gate import evaluate
from perfgate.report.rule import judge_series
from perfgate.result import Result
from tests.factories import make_result

pytestmark = pytest.mark.integration

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip
CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  oracle: {noise_floor_pct: 0.5}
  baseline: {min_samples: 3, max_samples: 6}
defaults: {driver: command, command: {argv: ['true'], output: '{output_dir}/o.json'}}
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""
# Per commit: the run's two repeats. A 10 % drop lands at commit 8; commit 5 is noisy.
FIGURES = [(100.0, 101.0), (99.0, 100.5), (100.8, 99.6), (100.2, 100.9), (99.4, 100.1),
           (97.5, 98.0), (100.3, 99.9), (100.6, 100.0), (90.1, 89.7), (90.4, 90.0),
           (89.8, 90.3), (90.2, 89.9)]  # fmt: skip
RUNNERS = ("gpu-runner-a", "gpu-runner-b")


def _commit(repo: Path, message: str) -> str:
    git("add", "-A", cwd=repo)
    git("commit", "--allow-empty", "-q", "-m", message, cwd=repo, env=IDENTITY)
    return git("rev-parse", "HEAD", cwd=repo).strip()


def _result(config_path: Path, sha: str, value: float, index: int) -> Result:
    bucket = load_config(config_path).buckets[0]
    launch, benchmark = bucket_hashes(bucket)
    result = make_result(
        "cartpole/numpy", value, commit=sha, run_id=f"run-{index}", hardware="cpu-test"
    )
    return replace(
        result,
        identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark),
        ci=replace(result.ci, runner_name=RUNNERS[index % 2]),
    )


@pytest.fixture
def gated_history(tmp_path: Path) -> tuple[Path, list[str], list[tuple[str, float | None]]]:
    """A repository whose baseline branch was written run by run, and the gate's verdicts."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    config_path = repo / "perfgate.yaml"
    config_path.write_text(CONFIG, encoding="utf-8")
    shas = [_commit(repo, f"c{i}") for i in range(len(FIGURES))]
    config = load_config(config_path)
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    gate_said: list[tuple[str, float | None]] = []
    for index, (sha, repeats) in enumerate(zip(shas, FIGURES, strict=True)):
        git("checkout", "-q", "--detach", sha, cwd=repo)
        figure = sum(repeats) / len(repeats)
        report = evaluate(
            config, config.buckets, [_result(config_path, sha, figure, index)], store
        )
        judgement = report.rows[0].judgement
        assert judgement is not None
        stats = judgement.stats
        gate_said.append((report.rows[0].verdict.label, stats.block_line if stats else None))
        samples = [
            sample_from_result(
                _result(config_path, sha, value, index), trusted_source="perf", sample_index=k
            )
            for k, value in enumerate(repeats)
        ]
        store.append(samples, f"publish {sha[:7]}")
    git("checkout", "-q", "main", cwd=repo)
    return repo, shas, gate_said


def test_every_run_shows_the_verdict_and_lines_the_gate_gave_it(
    gated_history: tuple[Path, list[str], list[tuple[str, float | None]]],
) -> None:
    repo, shas, gate_said = gated_history
    config = load_config(repo / "perfgate.yaml")
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    history = read_history(store, config.buckets, target_branch="main", min_samples=3)
    (series,) = history.series
    judged = judge_series(series, config.gate)
    assert [j.run.commit.sha for j in judged] == shas
    shown = [(j.verdict, j.block_line) for j in judged]
    # Lines are drawn once the window can judge (min_samples 3: from the third run on).
    expected = [(v, line if i >= 2 else None) for i, (v, line) in enumerate(gate_said)]
    assert shown == expected
    verdicts = [v for v, _ in gate_said]
    assert verdicts[8] == "BLOCK" and verdicts[:2] == ["WARN", "WARN"]
    assert series.readiness.status.value == "READY"
    assert {j.run.runner for j in judged} == set(RUNNERS)


def _perfgate(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], cwd=repo, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def test_report_writes_an_offline_site(
    gated_history: tuple[Path, list[str], list[tuple[str, float | None]]], tmp_path: Path
) -> None:
    repo, shas, gate_said = gated_history
    site = tmp_path / "site"
    done = _perfgate(repo, "report", "--out", str(site), "--last", "5")
    assert done.returncode == 0, done.stderr
    index = (site / "index.html").read_text(encoding="utf-8")
    page = site / "buckets" / "cartpole__numpy.html"
    assert 'href="buckets/cartpole__numpy.html#cpu-test--runtime-total_fps-mean"' in index
    latest = gate_said[-1][0]
    assert f'<span class="verdict {latest}">{latest}</span>' in index
    assert "READY" in index and shas[-1][:7] in index
    text = page.read_text(encoding="utf-8")
    (figure_json,) = re.findall(r'<script type="application/json" id="data-1">(.*?)</script>', text)
    figure = json.loads(figure_json)
    points = [t for t in figure["data"] if t.get("meta") == "samples"]
    assert sorted(t["name"] for t in points) == sorted(RUNNERS)
    assert sum(len(t["y"]) for t in points) == 2 * len(shas)
    assert [t["name"] for t in figure["data"][:3]] == ["block line", "warn line", "window median"]
    # Nothing is fetched at view time: every script and stylesheet is a file of the site.
    for html in (index, text):
        for ref in re.findall(r'(?:src|href)="([^"#]+)', html):
            assert "://" not in ref
            base = site if html is index else page.parent
            assert (base / ref).resolve().is_file(), ref
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000

    again = _perfgate(repo, "report", "--out", str(site))
    assert again.returncode == 0, again.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine", encoding="utf-8")
    refused = _perfgate(repo, "report", "--out", str(tmp_path / "other"))
    assert refused.returncode == 4 and "holds other files" in refused.stderr
    assert (tmp_path / "other" / "keep.txt").read_text(encoding="utf-8") == "mine"
