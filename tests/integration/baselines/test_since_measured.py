"""`perfgate affected --since-measured`: a coalesced push measures the buckets that changed
since the baseline branch last measured them, on a real repository and baseline branch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.errors import ExitCode
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.paths import ROOT
from tests.publishers import store_push_run

CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
defaults:
  driver: command
  command: {argv: ['true'], output: '{output_dir}/o.json'}
  paths: ["source/**", "perfgate.yaml"]
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
  - task: pendulum
    paths: ["pendulum/**"]
    backends: [{physics: numpy}]
"""


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository on main whose first commit the baseline branch holds both buckets' run of."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    measured = commit_all(repo, "measured")
    store_push_run(repo, measured)
    return repo, measured


def _affected(repo: Path, branch: str = "main") -> tuple[list[str], str]:
    """The buckets `perfgate affected --since-measured BRANCH` selects, and what it said."""
    out = repo.parent / "outputs"
    env = {**os.environ, "GITHUB_OUTPUT": str(out), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "affected", "--config", "perfgate.yaml",
         "--since-measured", branch],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    return json.loads(outputs["buckets"]), done.stderr


@pytest.mark.parametrize(
    ("changes", "selected"),
    [
        ((), []),  # nothing since: no GPU job at all
        (("README.md",), []),  # superseded pushes that touched no bucket
        (("source/envs/x.py",), ["cartpole/numpy"]),
        (("source/envs/x.py", "pendulum/p.py"), ["cartpole/numpy", "pendulum/numpy"]),
    ],
)
def test_a_bucket_runs_when_its_paths_changed_since_its_last_measured_commit(
    tmp_path: Path, changes: tuple[str, ...], selected: list[str]
) -> None:
    repo, _ = _repo(tmp_path)
    # Two pushes since the measured commit (the first superseded unmeasured): the files of
    # both count, not only the last push's.
    for index, path in enumerate(changes):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("change\n")
        commit_all(repo, f"push {index}")
    commit_all(repo, "the push this run measures")
    assert _affected(repo)[0] == selected


def test_the_newest_measured_commit_is_the_one_compared(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    (repo / "source").mkdir()
    (repo / "source/x.py").write_text("change\n")
    store_push_run(repo, commit_all(repo, "measured again"))
    (repo / "README.md").write_text("docs\n")
    commit_all(repo, "docs")
    assert _affected(repo)[0] == []


def test_a_bucket_never_measured_or_measured_off_this_history_runs_and_is_named(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    commit_all(repo, "first")
    buckets, said = _affected(repo)
    assert buckets == ["cartpole/numpy", "pendulum/numpy"]
    assert "cartpole/numpy: never measured on main" in said
    # A history rewritten after the measured run: its commit is not on main any more.
    git("checkout", "-q", "-b", "side", cwd=repo)
    store_push_run(repo, commit_all(repo, "measured on a branch since rewritten"))
    git("checkout", "-q", "main", cwd=repo)
    git("branch", "-q", "-D", "side", cwd=repo)
    buckets, said = _affected(repo)
    assert buckets == ["cartpole/numpy", "pendulum/numpy"]
    # A run measuring an older commit than the branch's newest measured one.
    before = commit_all(repo, "before")
    store_push_run(repo, commit_all(repo, "measured after it"))
    git("checkout", "-q", "--detach", before, cwd=repo)
    buckets, said = _affected(repo)
    assert buckets == ["cartpole/numpy", "pendulum/numpy"]
    assert "outside this history" in said


def test_an_unreadable_baseline_branch_measures_every_bucket_and_says_so(
    tmp_path: Path,
) -> None:
    repo, _ = _repo(tmp_path)
    commit_all(repo, "the push")
    buckets, said = _affected(repo, "no-such-branch")
    assert buckets == ["cartpole/numpy", "pendulum/numpy"]
    assert "cannot be read" in said and "every bucket runs" in said


def test_since_measured_without_a_branch_name_is_a_usage_error(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "affected", "--config", "perfgate.yaml",
         "--since-measured", ""],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE
    assert "--since-measured: name the branch" in done.stderr
