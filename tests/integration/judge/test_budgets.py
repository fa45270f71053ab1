"""Budgets that can decide, and launches that can start, checked before a GPU minute (R17).

Real git throughout: a bare origin and a clone whose baseline branch holds recorded runs
(their noise and launch durations); the Isaac Lab stand-in checkout plays the checkout a
hosted config job plans every launch on.
"""

from __future__ import annotations

import io
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.publish import record_samples
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.result import CiInfo, MetricReading, Result, SampleReading
from perfgate.util.git import git
from tests.factories import make_result

pytestmark = pytest.mark.integration

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip


def recorded_run(sha: str, index: int, rng: random.Random, *, cv: float, seconds: float) -> Result:
    """One run of two samples of ``cartpole/numpy`` on one of four runners."""
    values = [100.0 * math.exp(cv * rng.gauss(0, 1)) for _ in range(2)]
    result = make_result("cartpole/numpy", commit=sha, samples=values, run_id=f"run-{index}",
                         ci=CiInfo(run_id=f"run-{index}", run_attempt="1",
                                   runner_name=f"gpu runner {index % 4}"))  # fmt: skip
    samples = tuple(
        SampleReading(sample_index=i, value=v, wall_s=seconds) for i, v in enumerate(values)
    )
    metric: MetricReading = replace(result.metric, samples=samples)
    return replace(result, metric=metric)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A clone whose local baseline branch holds 30 runs at 2 % noise, 14 minutes a launch."""
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone))
    git("checkout", "-q", "-b", "main", cwd=clone)
    git("commit", "--allow-empty", "-q", "-m", "c0", cwd=clone, env=IDENTITY)
    git("push", "-q", "origin", "main", cwd=clone)
    sha = git("rev-parse", "HEAD", cwd=clone).strip()
    rng = random.Random(3)
    runs = [recorded_run(sha, i, rng, cv=0.02, seconds=14 * 60.0) for i in range(30)]
    # The local baseline branch: what validate reads outside CI.
    store = BaselineStore(clone, branch="perf-baselines")
    record_samples(store, runs, "protected_branch", "record")
    return clone


def write_config(clone: Path, budget: str) -> Path:
    path = clone / "perfgate.yaml"
    path.write_text(
        "version: 1\n"
        "gate: {confirm: paired, confirm_drop_pct: 5}\n"
        f"defaults: {{driver: demo, repeats: 2, max_pairs: 12, {budget}}}\n"
        "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n",
        encoding="utf-8",
    )
    return path


def test_a_budget_that_cannot_decide_is_named_with_the_recorded_numbers(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(recorded)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    assert (
        main(["validate", "--config", str(write_config(recorded, "pair_budget_minutes: 60"))]) == 0
    )
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if line.startswith("warning:"))
    assert "cartpole/numpy: 2 pairs cannot confirm a 5 % drop; the window decides" in warning
    # 14 minutes a launch: the 60-minute budget starts pairs at 0, 28 and 56 minutes.
    assert "[pair budget 60 min allows 2 pairs at 14 min a launch; " in warning
    assert "BLOCKing a 5 % drop at 2" in warning
    # Five hours decide a 5 % drop; a 3 % one is left to post-merge detection, and said so.
    assert (
        main(["validate", "--config", str(write_config(recorded, "pair_budget_minutes: 300"))]) == 0
    )
    out = capsys.readouterr().out
    assert "warning:" not in out
    assert "notice: cartpole/numpy: drops under 5 % are left to the post-merge alerts" in out
    assert "[pair budget 300 min allows 10 pairs" in out


def test_each_window_sample_keeps_its_runner_and_launch_seconds(recorded: Path) -> None:
    store = BaselineStore(recorded, branch="perf-baselines")
    tip = store.refresh()
    base = git("rev-parse", "HEAD", cwd=recorded).strip()
    from perfgate.baselines.samples import WindowKey

    key = WindowKey.for_result(make_result("cartpole/numpy"))
    window = store.windows({"b": key}, tip=tip, base=base, max_samples=100)["b"]
    runners = window.runners().names
    assert len(runners) == len(window.runs()) == 30
    assert set(runners) == {f"gpu runner {k}" for k in range(4)}
    assert set(window.launch_seconds()) == {840.0}


def test_each_runner_pools_budget_is_checked_against_its_own_recordings(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quiet, fast pool that sorts first must not speak for the noisy, slow one."""
    sha = git("rev-parse", "HEAD", cwd=recorded).strip()
    rng = random.Random(4)
    quiet = [replace(recorded_run(sha, 100 + i, rng, cv=0.002, seconds=60.0),
                     hardware=replace(make_result().hardware, slug="aaa-quiet-pool"))
             for i in range(30)]  # fmt: skip
    record_samples(BaselineStore(recorded, branch="perf-baselines"), quiet, "protected_branch",
                   "record")  # fmt: skip
    monkeypatch.chdir(recorded)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    config = write_config(recorded, "pair_budget_minutes: 60")
    assert main(["validate", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, out
    assert "cartpole/numpy on cpu-test: 2 pairs cannot confirm" in warnings[0]
    assert "[pair budget 60 min allows 2 pairs at 14 min" in warnings[0]
    assert "aaa-quiet-pool" not in warnings[0]


def test_a_bench_says_each_budget_in_one_short_line_and_the_numbers_only_when_asked(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run printed 170-190 characters of internal vocabulary per bucket before it began."""
    from perfgate.baselines.store import open_store
    from perfgate.cli.config import report_budgets
    from perfgate.config import load_config

    monkeypatch.chdir(recorded)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    for budget in ("pair_budget_minutes: 60", "pair_budget_minutes: 300"):
        config = load_config(write_config(recorded, budget))
        short, detailed = io.StringIO(), io.StringIO()
        store = open_store(config, local=True)
        assert report_budgets(config, config.buckets, None, store, short, detailed=False) == 1
        assert report_budgets(config, config.buckets, None, store, detailed, detailed=True) == 1
        line = short.getvalue().strip()
        assert len(line) <= 100 and "\n" not in line, line
        assert not any(word in line for word in ("max_pairs", "BLOCKing", "a launch", "noise"))
        assert detailed.getvalue().startswith(line + " [") and "min a launch" in detailed.getvalue()


def test_validate_says_when_no_recorded_machine_recurs(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four runners taking turns recur; a pool of ephemeral runner names (one per job) does
    not, and the runner model cannot learn there: validate names the fix."""
    monkeypatch.chdir(recorded)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    config = str(write_config(recorded, "pair_budget_minutes: 300"))
    assert main(["validate", "--config", config]) == 0
    assert "no machine recurs" not in capsys.readouterr().out
    sha = git("rev-parse", "HEAD", cwd=recorded).strip()
    rng = random.Random(5)
    runs = [recorded_run(sha, i, rng, cv=0.02, seconds=840.0) for i in range(30, 50)]
    ephemeral = [
        replace(run, ci=replace(run.ci, runner_name=f"arc-l40s-{rng.getrandbits(32):08x}"))
        for run in runs
    ]
    record_samples(BaselineStore(recorded, branch="perf-baselines"), ephemeral,
                   "protected_branch", "record")  # fmt: skip
    assert main(["validate", "--config", config]) == 0
    warning = next(
        line for line in capsys.readouterr().out.splitlines() if "no machine recurs" in line
    )
    assert "cartpole/numpy (cpu-test)" in warning
    assert "set gate.runner_identity: gpu" in warning
