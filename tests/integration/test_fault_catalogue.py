"""Fault catalogue: SIGTERM and SIGKILL of bench, seed and publish (R9, R14).

Each verb runs as a real ``python -m perfgate`` process in a session of its own, on a real
repository with a bare origin, and is killed at its most exposed moment: bench and seed
while the benchmark (a process tree with a child and an escaped grandchild, all ignoring
SIGTERM) runs; publish while its push is in flight (a slow pre-receive hook on origin).
Afterwards nothing of it is left running, the baseline branch is well-formed (every line
a finite sample, no duplicate), and running the verb again converges.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfgate.baselines.ledger import LEDGER_DIR, SpendRecord
from perfgate.config import load_config
from perfgate.result import write_result
from perfgate.util.git import git
from tests.factories import make_result, of_experiment
from tests.git_support import IDENTITY, origin_with_clone
from tests.paths import FIXTURES, ROOT

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

CONFIG = """\
version: 1
gate: {{mode: blocking, target_branches: [main], protected_branches: [main]}}
defaults:
  driver: command
  timeout_minutes: 5
  retries: 0
  repeats: 1
  command:
    argv: [{python}, bench.py, "{{output_dir}}/r.json", {state}]
    output: "{{output_dir}}/r.json"
  metric: {{path: fps, direction: higher, unit: frames/s}}
buckets:
  - task: linger
    backends: [{{physics: cpu}}]
"""
HOOK = """#!/bin/sh
touch {state}/pushing
if [ -e {state}/slow ]; then sleep 3; fi
cat > /dev/null
"""


@dataclass(frozen=True)
class Repo:
    origin: Path
    path: Path
    commit: str
    state: Path


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    state = tmp_path / "state"
    state.mkdir()
    config = CONFIG.format(python=json.dumps(sys.executable), state=json.dumps(str(state)))
    bench = (FIXTURES / "lingering_benchmark.py").read_text(encoding="utf-8")
    made = origin_with_clone(tmp_path, files={"bench.py": bench, "perfgate.yaml": config},
                             message="benchmark", clone="repo")  # fmt: skip
    return Repo(made.origin, made.path, made.head, state)


def environment(repo: Repo, tmp_path: Path, verb: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(IDENTITY, PYTHONPATH=str(ROOT))
    if verb == "publish":
        event = tmp_path / "push.json"
        event.write_text("{}", encoding="utf-8")
        env.update(GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="push", GITHUB_EVENT_PATH=str(event),
                   GITHUB_REF="refs/heads/main", GITHUB_SHA=repo.commit,
                   GITHUB_REPOSITORY="acme/sim")  # fmt: skip
    return env


def arguments(repo: Repo, tmp_path: Path, verb: str) -> list[str]:
    if verb == "bench":
        return ["bench", "--no-judge", "--out", str(tmp_path / "out"),
                "--work-dir", str(tmp_path / "work")]  # fmt: skip
    if verb == "seed":
        return ["seed", "--commit-branch", f"{repo.commit}:main", "--bucket", "linger/cpu",
                "--samples", "1", "--execute", "--push"]  # fmt: skip
    results = tmp_path / "results"
    made = make_result("linger/cpu", 100.0, commit=repo.commit, run_id="5")
    write_result(of_experiment(made, load_config(repo.path / "perfgate.yaml")), results)
    return ["publish", "--results", str(results)]


def start(repo: Repo, tmp_path: Path, verb: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "perfgate", *arguments(repo, tmp_path, verb)],
        cwd=repo.path,
        env=environment(repo, tmp_path, verb),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its session id finds every process it leaves behind
    )


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def running(pids: set[int], session: int) -> set[int]:
    """Which of ``pids``, and of the members of ``session``, still run (zombies do not)."""
    alive = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat and stat[0] not in "ZX" and (int(entry.name) in pids or int(stat[3]) == session):
            alive.add(int(entry.name))
    return alive


def stored(repo: Repo) -> list[dict[str, object]]:
    """Every sample line on origin's baseline branch, each checked to be a finite sample;
    every spend-ledger line checked to be a record, none twice."""
    if not git("ls-remote", str(repo.origin), "perf-baselines", cwd=repo.path):
        return []
    git("fetch", "-q", str(repo.origin), "+perf-baselines:refs/remotes/check/pb", cwd=repo.path)
    names = git("ls-tree", "-r", "--name-only", "refs/remotes/check/pb", cwd=repo.path).split()
    samples, spent = [], []
    for name in (n for n in names if n.endswith(".ndjson")):
        text = git("show", f"refs/remotes/check/pb:{name}", cwd=repo.path)
        assert text.endswith("\n"), f"{name}: a truncated last line"
        for line in text.splitlines():
            if name.startswith(f"{LEDGER_DIR}/"):
                spent.append(SpendRecord.from_line(line).key)
                continue
            sample = json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} stored"))
            assert isinstance(sample["value"], float) and math.isfinite(sample["value"])
            samples.append(sample)
    ids = [s["sample_id"] for s in samples]
    assert len(ids) == len(set(ids)), "a duplicate sample"
    assert len(spent) == len(set(spent)), "a bucket run's cost counted twice"
    return samples


@pytest.fixture
def cleanup(repo: Repo) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Whatever a failed test left behind is killed, by pid and session: never a broad name."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    pids = repo.state / "pids"
    tree = {int(p) for p in pids.read_text().split()} if pids.exists() else set()
    for process in started:
        for pid in running(tree, process.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize("verb", ["bench", "seed", "publish"])
def test_a_killed_verb_leaves_nothing_running_and_a_rerun_converges(
    repo: Repo,
    tmp_path: Path,
    verb: str,
    sig: signal.Signals,
    cleanup: list,
    wait_for: Callable[..., None],
) -> None:  # type: ignore[type-arg]
    if verb == "publish":
        hook = repo.origin / "hooks" / "pre-receive"
        hook.write_text(HOOK.format(state=repo.state), encoding="utf-8")
        hook.chmod(0o755)
        (repo.state / "slow").touch()
    process = start(repo, tmp_path, verb)
    cleanup.append(process)
    moment = repo.state / ("pushing" if verb == "publish" else "pids")
    wait_for(lambda: moment.exists() or process.poll() is not None)
    assert process.poll() is None, process.stderr.read() if process.stderr else ""
    pids = repo.state / "pids"
    tree = {int(p) for p in pids.read_text().split()} if verb != "publish" else set()

    process.send_signal(sig)
    code = process.wait(timeout=30)
    assert code == (-signal.SIGKILL if sig is signal.SIGKILL else 128 + sig), code
    wait_for(lambda: not running(tree, process.pid), seconds=20)
    stored(repo)  # well-formed, whatever the kill interrupted

    for leftover in ("fast", "slow"):
        (repo.state / leftover).unlink(missing_ok=True)
    (repo.state / "fast").touch()
    again = subprocess.run(
        [sys.executable, "-m", "perfgate", *arguments(repo, tmp_path, verb)],
        cwd=repo.path, env=environment(repo, tmp_path, verb),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    if verb == "bench":
        artifact = json.loads((tmp_path / "out" / "linger__cpu.json").read_text())
        assert artifact["metric"]["value"] == 100.0
    else:
        assert [s["value"] for s in stored(repo)] == [100.0]
    if verb == "seed":
        assert len(git("worktree", "list", cwd=repo.path).splitlines()) == 1
