"""Seeding with the demo driver: each replayed commit measures its own demo code.

The repository built here holds a copy of perfgate's own package; its second commit
makes the demo benchmark slower on purpose (a sleep in every step) and its third undoes
that. The seed replays each commit in a worktree, where the demo driver runs that
commit's own `perfgate/run/demo.py`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from perfgate.baselines.samples import WindowKey, sample_path
from perfgate.baselines.store import BaselineStore
from perfgate.util.git import git
from tests.git_support import IDENTITY, commit_all, empty_origin
from tests.paths import ROOT

CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  baseline: {min_samples: 2, max_samples: 2}
defaults: {driver: demo, num_envs: 64, steps: 40, warmup_steps: 5, retries: 0, repeats: 1}
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""
STEP = "        step(actions)\n"
# The regression under test: 2 ms more work a step (the demo times steps in CPU time, so
# the step burns it rather than sleeping).
SLOW_STEP = (
    "        step(actions)\n"
    "        _until = time.process_time() + 0.002  # the regression under test\n"
    "        while time.process_time() < _until:\n"
    "            pass\n"
)


def test_each_commit_is_measured_with_its_own_demo(tmp_path: Path) -> None:
    _, repo = empty_origin(tmp_path, clone="repo")
    shutil.copytree(
        ROOT / "perfgate", repo / "perfgate", ignore=shutil.ignore_patterns("__pycache__")
    )
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    demo = repo / "perfgate" / "run" / "demo.py"
    original = demo.read_text(encoding="utf-8")
    assert original.count(STEP) == 1, "the demo's timed step call moved; update this test"
    fast = commit_all(repo, "demo as shipped")
    demo.write_text(original.replace(STEP, SLOW_STEP), encoding="utf-8")
    slow = commit_all(repo, "demo made slower")
    demo.write_text(original, encoding="utf-8")
    fixed = commit_all(repo, "slowdown undone")
    git("push", "-q", "origin", "main", cwd=repo)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "seed", "--push", "--branch", "main", "--last", "3",
         "--samples", "2", "--execute"],
        cwd=repo, env={**env, **IDENTITY}, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr

    store = BaselineStore(repo, branch="perf-baselines", remote="origin")
    tip = store.refresh()
    assert tip is not None
    hardware = git("ls-tree", "--name-only", f"{tip}:samples", cwd=repo).split()[0]
    path = sample_path(hardware, "cartpole", "numpy")
    samples = store.read([path], tip)[path]
    assert len(samples) == 6 and {s.trusted_source for s in samples} == {"seed"}
    # What each replayed run cost is kept beside its samples: six runs, six lines.
    assert len(store.spend(tip)) == 6
    first = samples[0]
    key = WindowKey(
        hardware=hardware, task="cartpole", backend_key="numpy", target_branch="main",
        launch_hash=first.launch_hash, benchmark_hash=first.benchmark_hash,
        runtime_hash=first.runtime_hash, baseline_epoch=first.baseline_epoch,
    )  # fmt: skip
    medians = {}
    for commit in (fast, slow, fixed):
        window = store.windows({"b": key}, tip=tip, base=commit, max_samples=2)["b"]
        assert [s.commit for s in window.entries] == [commit, commit]
        medians[commit] = statistics.median(window.values)
    # 64 envs per 2 ms of extra work caps the slow commit far below the numpy demo's speed.
    assert medians[slow] < 64 / 0.002
    assert medians[fast] > 10 * medians[slow]
    assert medians[fixed] > 10 * medians[slow]
