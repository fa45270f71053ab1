"""Baseline branches with a known history, for the trend site's tests and the docs' picture.

``gated_history`` writes a store run by run through the store's own append path and, before
each run is appended, asks the gate itself (``baselines.evaluate``, HEAD at the run's
commit) what it makes of the run's samples, so a test can hold the site to those verdicts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from perfgate.baselines.evaluate import evaluate
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.config import load_config
from perfgate.judge.calibration import BucketNoise, NoiseCalibration, write_calibration
from perfgate.judge.gate import Row
from perfgate.judge.verdicts import Reason
from perfgate.result import Result
from perfgate.run.launch import bucket_hashes
from perfgate.util.git import git
from tests.factories import make_result, with_metric
from tests.git_support import IDENTITY, commit_all
from tests.paths import ROOT

CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  policy: POLICY
  # The site draws the window's verdict: the gate's own under confirm: repeat (pairs are
  # never stored, so a paired gate's confirmation cannot be redrawn).
  confirm: repeat
  baseline: {min_samples: 6, min_runs: 3, max_runs: 8, max_samples: 16}
defaults:
  driver: command
  command: {argv: ['true'], output: '{output_dir}/o.json'}
  repeats: 3
  max_repeats: 6
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""
# A second metric (with_startup): judged with its own direction and minimum drop.
STARTUP = """\
    metrics:
      - {name: startup_s, path: runtime.startup_time_s.env_creation, direction: lower,
         unit: s, min_drop_pct: 20}
"""
# Per commit: the run's three repeats, about 0.6 % noise. Commit 7 is one wild run, a 10 %
# drop lands at commit 12, and commit 19 wins 8 % of it back; commit 22 is a noisy run.
FIGURES = [
    (99.8, 100.3, 99.9), (99.8, 99.4, 99.9), (100.7, 100.3, 100.6), (100.1, 100.2, 100.1),
    (99.0, 100.5, 100.3), (100.3, 99.0, 99.0), (99.5, 99.7, 100.2), (96.0, 93.0, 99.0),
    (100.2, 100.2, 99.6), (101.0, 100.3, 100.7), (99.6, 99.6, 99.8), (99.9, 100.4, 100.1),
    (89.8, 89.5, 89.7), (90.7, 89.6, 90.1), (90.2, 89.2, 90.0), (90.7, 88.9, 89.8),
    (89.9, 89.6, 90.3), (90.0, 89.2, 90.4), (90.4, 90.5, 90.8), (98.2, 98.1, 97.2),
    (98.4, 97.6, 97.7), (97.3, 97.4, 97.7), (95.2, 92.6, 97.4), (98.1, 98.8, 98.3),
]  # fmt: skip
RUNNERS = ("gpu-runner-a", "gpu-runner-b")


@dataclass(frozen=True, kw_only=True)
class GateSaid:
    """What the gate made of one run before it was stored (lines None: it could not judge)."""

    verdict: str
    baseline: float | None
    warn_line: float | None
    block_line: float | None
    window_samples: int
    # Runs of the window after the level shift it starts after (None: no shift).
    shift_kept_runs: int | None


@dataclass(frozen=True, kw_only=True)
class GatedHistory:
    """A repository whose baseline branch was written run by run, and what the gate said."""

    repo: Path
    shas: tuple[str, ...]
    gate_said: tuple[GateSaid, ...]
    # The gate's word on the startup_s metric of each run (with_startup only).
    startup_said: tuple[GateSaid, ...] = ()


def _result(config_path: Path, sha: str, values: tuple[float, ...], index: int) -> Result:
    bucket = load_config(config_path).buckets[0]
    launch, benchmark = bucket_hashes(bucket)
    result = make_result(
        "cartpole/numpy", samples=values, commit=sha, run_id=f"run-{index}", hardware="cpu-test"
    )
    return replace(
        result,
        identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark),
        ci=replace(result.ci, runner_name=RUNNERS[index % 2]),
        metric=replace(result.metric, unit="env-steps/s"),
    )


def _said(row: Row, metric: int = 0) -> GateSaid:
    assert row.judgement is not None
    judged_metric = row.judgement.metrics[metric]
    decision = judged_metric.decision
    assert decision is not None
    judged = Reason.INSUFFICIENT_WINDOW not in decision.reasons
    return GateSaid(
        verdict=(row.verdict if metric == 0 else judged_metric.verdict).label,
        baseline=decision.baseline if judged else None,
        warn_line=decision.warn_line if judged else None,
        block_line=decision.block_line if judged else None,
        window_samples=decision.window_samples,
        shift_kept_runs=decision.shift.kept_runs if decision.shift else None,
    )


def gated_history(
    root: Path,
    *,
    scale: float = 1.0,
    policy: str = "calibrated",
    measured_noise_pct: float | None = None,
    with_startup: bool = False,
) -> GatedHistory:
    """FIGURES (times ``scale``) at commits of main, run by run; the gate's word on each.

    With ``measured_noise_pct``, gate.calibration names a noise calibration that measured
    the bucket's experiment with that noise (runner-to-runner and per sample). With
    ``with_startup``, the bucket declares a second metric, ``startup_s`` (lower is better,
    its own 20 % minimum drop), each run's startup the inverse of its throughput.
    """
    repo = root / "repo"
    git("init", "-q", "-b", "main", str(repo))
    config_path = repo / "perfgate.yaml"
    config_text = CONFIG.replace("POLICY", policy)
    if measured_noise_pct is not None:
        config_text = config_text.replace(
            "  confirm: repeat\n", "  confirm: repeat\n  calibration: noise.json\n"
        )
    if with_startup:
        config_text += STARTUP
    config_path.write_text(config_text, encoding="utf-8")
    if measured_noise_pct is not None:
        launch, benchmark = bucket_hashes(load_config(config_path).buckets[0])
        noise = BucketNoise(
            bucket="cartpole/numpy", hardware="cpu-test", launch_hash=launch,
            benchmark_hash=benchmark, noise_pct=measured_noise_pct, df=40.0,
            run_noise_pct=measured_noise_pct, run_df=20.0, modes=1,
            noise_floor_pct=measured_noise_pct,
        )  # fmt: skip
        write_calibration(NoiseCalibration(buckets=(noise,)), repo / "noise.json")
    shas = [commit_all(repo, f"c{i}") for i in range(len(FIGURES))]
    config = load_config(config_path)
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    said, startup_said = [], []
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    for index, (sha, repeats) in enumerate(zip(shas, FIGURES, strict=True)):
        git("checkout", "-q", "--detach", sha, cwd=repo)
        result = _result(config_path, sha, tuple(v * scale for v in repeats), index)
        if with_startup:
            result = with_metric(result, "startup_s", tuple(1000.0 / v for v in repeats))
        (row,) = evaluate(config, config.buckets, [result], store).rows
        said.append(_said(row))
        startup_said.extend([_said(row, metric=1)] if with_startup else [])
        samples = samples_from_result(
            result, trusted_source="perf", timestamp=start + timedelta(hours=index)
        )
        store.append(samples, f"publish {sha[:7]}")
    git("checkout", "-q", "main", cwd=repo)
    return GatedHistory(
        repo=repo, shas=tuple(shas), gate_said=tuple(said), startup_said=tuple(startup_said)
    )


DEMO_CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  baseline: {min_samples: 3, max_samples: 10}
defaults: {driver: demo, num_envs: 64, steps: 40, warmup_steps: 5, retries: 0}
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
  - task: pendulum
    backends: [{physics: numpy}]
"""


def seeded_demo(root: Path, *, commits: int = 4, samples: int = 2) -> Path:
    """A repository carrying perfgate's own package, its last commits seeded with the demo.

    ``perfgate seed --execute`` replays each commit in a worktree and runs that commit's
    demo benchmark, so the baseline branch holds real measurements of this machine.
    """
    repo = root / "demo"
    git("init", "-q", "-b", "main", str(repo))
    shutil.copytree(
        ROOT / "perfgate", repo / "perfgate", ignore=shutil.ignore_patterns("__pycache__")
    )
    (repo / "perfgate.yaml").write_text(DEMO_CONFIG, encoding="utf-8")
    for index in range(commits):
        (repo / "CHANGES").write_text(f"change {index}\n", encoding="utf-8")
        commit_all(repo, f"change {index}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "seed", "--branch", "main", "--last", str(commits),
         "--samples", str(samples), "--execute"],
        cwd=repo, env={**env, **IDENTITY}, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return repo
