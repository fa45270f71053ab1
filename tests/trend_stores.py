"""Baseline branches with a known history, for the trend site's tests and the README picture.

``gated_history`` writes a store run by run through the store's own append path and, before
each run is appended, asks the gate itself (``judge.gate.evaluate``, HEAD at the run's
commit) what it makes of the run's figure, so a test can hold the site to those verdicts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baselines.seed import bucket_hashes
from perfgate.baselines.store import BaselineStore, sample_from_result
from perfgate.config import load_config
from perfgate.git import git
from perfgate.judge.gate import evaluate
from perfgate.result import Result
from tests.factories import make_result
from tests.paths import ROOT

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


@dataclass(frozen=True, kw_only=True)
class GatedHistory:
    """A repository whose baseline branch was written run by run, and what the gate said."""

    repo: Path
    shas: tuple[str, ...]
    # Per run: the gate's verdict label and block line (None: the window could not judge).
    gate_said: tuple[tuple[str, float | None, int], ...]


def commit(repo: Path, message: str) -> str:
    """Commit everything (or nothing) and return the new commit."""
    git("add", "-A", cwd=repo)
    git("commit", "--allow-empty", "-q", "-m", message, cwd=repo, env=IDENTITY)
    return git("rev-parse", "HEAD", cwd=repo).strip()


def _result(config_path: Path, sha: str, value: float, index: int, scale: float) -> Result:
    bucket = load_config(config_path).buckets[0]
    launch, benchmark = bucket_hashes(bucket)
    result = make_result(
        "cartpole/numpy", value * scale, commit=sha, run_id=f"run-{index}", hardware="cpu-test"
    )
    return replace(
        result,
        identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark),
        ci=replace(result.ci, runner_name=RUNNERS[index % 2]),
        metric=replace(result.metric, unit="env-steps/s"),
    )


def gated_history(root: Path, *, scale: float = 1.0) -> GatedHistory:
    """FIGURES (times ``scale``) at twelve commits of main; the gate's word on each run."""
    repo = root / "repo"
    git("init", "-q", "-b", "main", str(repo))
    config_path = repo / "perfgate.yaml"
    config_path.write_text(CONFIG, encoding="utf-8")
    shas = [commit(repo, f"c{i}") for i in range(len(FIGURES))]
    config = load_config(config_path)
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    said = []
    for index, (sha, repeats) in enumerate(zip(shas, FIGURES, strict=True)):
        git("checkout", "-q", "--detach", sha, cwd=repo)
        figure = sum(repeats) / len(repeats)  # the median of two
        result = _result(config_path, sha, figure, index, scale)
        row = evaluate(config, config.buckets, [result], store).rows[0]
        assert row.judgement is not None
        stats = row.judgement.stats
        said.append((row.verdict.label, stats.block_line if stats else None,
                     stats.size if stats else 0))  # fmt: skip
        samples = [
            sample_from_result(
                _result(config_path, sha, value, index, scale),
                trusted_source="perf",
                sample_index=k,
            )
            for k, value in enumerate(repeats)
        ]
        store.append(samples, f"publish {sha[:7]}")
    git("checkout", "-q", "main", cwd=repo)
    return GatedHistory(repo=repo, shas=tuple(shas), gate_said=tuple(said))


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
        commit(repo, f"change {index}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "seed", "--branch", "main", "--last", str(commits),
         "--samples", str(samples), "--execute"],
        cwd=repo, env={**env, **IDENTITY}, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return repo
