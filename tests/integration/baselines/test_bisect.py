"""Bisect samples a suspicious step again, as the bench confirms a suspicious run (R5).

Real git, real benchmark processes: the fake benchmark reads its speed from a file each
commit carries, so every replayed commit measures its own figure (with a small wobble).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.paths import FIXTURES

# Per commit: the speed its benchmark measures. Commit 3 is 20 % slower.
SPEEDS = (100.0, 100.0, 100.0, 80.0, 80.0, 80.0)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A repository whose commits each say how fast the fake benchmark runs there."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    # The state directory is relative: each replay's worktree has its own speed file.
    argv = [sys.executable, str(FIXTURES / "fake_benchmark.py"), "speed_from_state",
            "{output_dir}/r.json", "bench-state"]  # fmt: skip
    (repo / "perfgate.yaml").write_text(
        "version: 1\n"
        "defaults:\n"
        "  driver: command\n"
        "  retries: 0\n"
        f"  command: {{argv: {json.dumps(argv)}, output: '{{output_dir}}/r.json'}}\n"
        "  metric: {path: results.throughput.mean}\n"
        "buckets:\n  - task: sim\n    backends: [{physics: cpu}]\n",
        encoding="utf-8",
    )
    (repo / ".gitignore").write_text("bench-state/attempts\n.perfgate/\n", encoding="utf-8")
    shas = []
    for speed in SPEEDS:
        (repo / "bench-state").mkdir(exist_ok=True)
        (repo / "bench-state" / "speed").write_text(f"{speed}\n", encoding="utf-8")
        shas.append(commit_all(repo, f"speed {speed}"))
    monkeypatch.chdir(repo)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    return repo, shas


def test_a_suspicious_step_takes_more_samples_before_it_is_bad(
    repo: tuple[Path, list[str]],
) -> None:
    root, shas = repo
    code = main(["bisect", "--bucket", "sim/cpu", "--good", shas[0], "--bad", shas[-1],
                 "--repeats", "2", "--execute"])  # fmt: skip
    assert code == 0
    result = json.loads((root / ".perfgate" / "bisect" / "bisect.json").read_text())
    assert (result["status"], result["first_bad"]) == ("found", shas[3])
    samples = {shas.index(s["commit"]): len(s["figures"]) for s in result["steps"]}
    # Good: three runs of two fill the window. Unchanged code settles on its two samples;
    # a 20 % drop on two is suspicious but may not block yet, so a third sample confirms it.
    assert samples.pop(0) == 6
    assert all(n == (3 if shas[i] in (shas[3], shas[-1]) else 2) for i, n in samples.items())
    assert {s["label"] for s in result["steps"] if shas.index(s["commit"]) >= 3} == {"BAD"}


def test_a_calibration_the_gate_could_not_read_stops_bisect_before_any_launch(
    repo: tuple[Path, list[str]],
) -> None:
    """Bisect judges with the gate's calibration; one it cannot read is the config error
    the gate would raise (exit 4), before a single replay is measured."""
    root, shas = repo
    config = root / "perfgate.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("version: 1\n", "version: 1\n"
                                                   "gate: {calibration: noise.json}\n"),
        encoding="utf-8",
    )  # fmt: skip
    code = main(["bisect", "--bucket", "sim/cpu", "--good", shas[0], "--bad", shas[-1],
                 "--config", str(config), "--execute"])  # fmt: skip
    assert code == 4
    assert not (root / ".perfgate" / "bisect" / "state.json").exists()
    assert not list((root / ".perfgate").glob("**/run-*"))
