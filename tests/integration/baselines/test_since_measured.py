"""`perfgate affected --since-measured`: a coalesced push measures the buckets that changed
since the baseline branch last measured them, on a real repository and baseline branch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.baselines.imports.history import TRUSTED_SOURCE as IMPORTED
from perfgate.baselines.seed.replay import TRUSTED_SOURCE as SEEDED
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
    metrics:
      - {name: startup_s, path: runtime.startup_s, direction: lower, unit: s}
"""
BOTH = ["cartpole/numpy", "pendulum/numpy"]


def _repo(tmp_path: Path, *, measured: bool = True) -> Path:
    """A repository on main whose first commit the baseline branch holds a push run of."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    first = commit_all(repo, "measured")
    if measured:
        store_push_run(repo, first)
    return repo


def _change(repo: Path, *paths: str, message: str = "a push") -> str:
    for path in paths:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(f"{message}\n")
    return commit_all(repo, message)


def _edit_config(repo: Path, old: str, new: str) -> None:
    """Commit perfgate.yaml with ``old`` replaced by ``new``."""
    config = repo / "perfgate.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))
    commit_all(repo, f"perfgate.yaml: {new.strip()}")


def _run(repo: Path, branch: str = "main") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITHUB_OUTPUT": str(repo.parent / "outputs"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "affected", "--config", "perfgate.yaml",
         "--since-measured", branch],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def _affected(repo: Path, branch: str = "main") -> tuple[list[str], str]:
    """The buckets `perfgate affected --since-measured BRANCH` selects, and what it said."""
    done = _run(repo, branch)
    assert done.returncode == 0, done.stderr
    out = (repo.parent / "outputs").read_text()
    outputs = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return json.loads(outputs["buckets"]), done.stderr


@pytest.mark.parametrize(
    ("changes", "selected"),
    [
        ((), []),  # nothing since: no GPU job at all
        (("README.md",), []),  # superseded pushes that touched no bucket
        (("source/envs/x.py",), ["cartpole/numpy"]),
        (("source/envs/x.py", "pendulum/p.py"), BOTH),
        (("pendulum/caf\u00e9.py",), ["pendulum/numpy"]),  # a path git would quote
        (("pendulum/caf\udce9.py",), ["pendulum/numpy"]),  # a name that is no UTF-8
    ],
)
def test_a_bucket_runs_when_its_paths_changed_since_its_last_measured_commit(
    tmp_path: Path, changes: tuple[str, ...], selected: list[str]
) -> None:
    repo = _repo(tmp_path)
    # A push per change since the measured commit (all but the last superseded
    # unmeasured): the files of every one count, not only the last push's.
    for index, path in enumerate(changes):
        _change(repo, path, message=f"push {index}")
    commit_all(repo, "the push this run measures")
    assert _affected(repo)[0] == selected


def test_a_file_moved_out_of_a_buckets_paths_changes_that_bucket(tmp_path: Path) -> None:
    repo = _repo(tmp_path, measured=False)
    _change(repo, "pendulum/big.py", message="the bucket's file")
    store_push_run(repo, git("rev-parse", "HEAD", cwd=repo).strip())
    git("mv", "pendulum/big.py", "big.py", cwd=repo)
    commit_all(repo, "moved out")
    assert _affected(repo)[0] == ["pendulum/numpy"]


def test_the_nearest_measured_ancestor_is_the_one_compared(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    store_push_run(repo, _change(repo, "source/x.py", message="measured again"))
    _change(repo, "README.md", message="docs")
    assert _affected(repo)[0] == []
    # A run of an older commit than the newest measured one compares with what was
    # measured in its own history.
    older = _change(repo, "docs/a.md", message="older")
    store_push_run(repo, _change(repo, "source/y.py", message="measured after it"))
    git("checkout", "-q", "--detach", older, cwd=repo)
    assert _affected(repo)[0] == []


def test_only_runs_of_this_experiment_measured_here_count(tmp_path: Path) -> None:
    repo = _repo(tmp_path, measured=False)
    # Another tool's import at this very commit; then a push run's samples read as another
    # target branch's.
    store_push_run(repo, _change(repo, "README.md", message="docs"), source=IMPORTED)
    buckets, said = _affected(repo)
    assert buckets == BOTH
    assert "cartpole/numpy: its experiment was never measured at a commit of this history" in said
    store_push_run(repo, _change(repo, "README.md", message="measured"))
    assert _affected(repo, "release")[0] == BOTH
    assert _affected(repo)[0] == []
    # pendulum's experiment changes in perfgate.yaml, which its paths do not select.
    _edit_config(repo, "  - task: pendulum\n", "  - task: pendulum\n    num_envs: 32\n")
    assert _affected(repo)[0] == BOTH
    # A seed of the new experiment counts; then pendulum's metric changes, outside its paths.
    store_push_run(repo, git("rev-parse", "HEAD", cwd=repo).strip(), source=SEEDED)
    assert _affected(repo)[0] == []
    _edit_config(repo, "    num_envs: 32\n", "    num_envs: 32\n    metric: {path: results.fps}\n")
    assert _affected(repo)[0] == BOTH
    # A measured run of that, then its second metric reads another figure.
    store_push_run(repo, git("rev-parse", "HEAD", cwd=repo).strip())
    assert _affected(repo)[0] == []
    _edit_config(repo, "runtime.startup_s", "runtime.boot_s")
    assert _affected(repo)[0] == BOTH


def test_a_history_that_cannot_be_read_measures_every_bucket_and_says_so(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    _change(repo, "README.md", message="docs")
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth=1", f"file://{repo}", str(shallow))
    buckets, said = _affected(shallow)
    assert buckets == BOTH
    assert "cannot be read" in said and "every bucket runs" in said


def test_since_measured_without_a_branch_name_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(_repo(tmp_path), "")
    assert done.returncode == ExitCode.USAGE
    assert "--since-measured: name the branch" in done.stderr
