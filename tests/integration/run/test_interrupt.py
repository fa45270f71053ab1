"""A cancelled bench ends within seconds, its benchmark with it, nothing half-written (R8, R14).

A CI runner cancelling a job signals perfgate's own process, not its process group, and
the shell step it started may have inherited SIGINT ignored (a background job of a
non-interactive shell does, and Python then leaves it ignored). Whatever perfgate got,
SIGINT, SIGTERM or SIGKILL, mid-sample of a slow benchmark (fake_benchmark.py slow_flaky):
perfgate exits within seconds, the benchmark is gone, and the result directory holds no
artifact, whole or partial. Interrupted while pairing with the merge base, the same: the
artifact its repeats wrote goes too, and under `nox -s bench` nox waits for perfgate's
teardown rather than killing it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.util.git import git
from tests.factories import fake_matrix
from tests.git_support import commit_all
from tests.paths import FIXTURES, ROOT

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie does not)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] not in "ZX"


def ignore_sigint() -> None:
    """What a background job of a non-interactive shell inherits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def benchmark_pids() -> Iterator[list[int]]:
    """Whatever benchmark a failed test left behind is killed, by pid: never a broad name."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("sig", "sigint_inherited", "code", "said"),
    [
        (signal.SIGINT, "ignored", 130, "perfgate: interrupted"),
        (signal.SIGINT, "default", 130, "perfgate: interrupted"),
        (signal.SIGTERM, "ignored", 143, "perfgate: terminated by signal 15"),
        (signal.SIGKILL, "ignored", -signal.SIGKILL, ""),
    ],
    ids=["SIGINT-inherited-ignored", "SIGINT", "SIGTERM", "SIGKILL"],
)
def test_a_signal_to_perfgate_alone_ends_the_bench_and_its_benchmark(
    tmp_path: Path,
    sig: signal.Signals,
    sigint_inherited: str,
    code: int,
    said: str,
    benchmark_pids: list[int],
    wait_for: Callable[..., None],
) -> None:
    config = fake_matrix(tmp_path, "slow_flaky", ["cpu"], retries=1, timeout_minutes=5)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
    env.update(FAKE_LAUNCH_S="300", PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "perfgate", "bench", "--no-judge", "--config", str(config),
         "--out", str(out), "--work-dir", str(tmp_path / "work")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=ignore_sigint if sigint_inherited == "ignored" else None,
    )  # fmt: skip
    try:
        pid_file = tmp_path / "state-cpu" / "pid"
        wait_for(lambda: pid_file.exists() or process.poll() is not None)
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        benchmark = int(pid_file.read_text())
        benchmark_pids.append(benchmark)

        os.kill(process.pid, sig)  # perfgate's own process, not its group
        returncode = process.wait(timeout=15)
        wait_for(lambda: not alive(benchmark), seconds=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert returncode == code, stderr
    assert said in stderr
    assert said == "" or stderr.rstrip().endswith(said), stderr
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())


class PairedRepo:
    """A repository whose feature commit is 10 % slower than main, with main's window
    recorded on the local baseline branch, so a bench of it pairs with the merge base; the
    fake benchmark hangs in the merge base's checkout until perfgate is interrupted."""

    def __init__(self, root: Path) -> None:
        self.root, self.repo, self.state = root, root / "repo", root / "state"
        self.out, self.work = root / "out", root / "work"
        self.state.mkdir()
        git("init", "-q", "-b", "main", str(self.repo))
        argv = [sys.executable, str(FIXTURES / "fake_benchmark.py"), "checkout_speed",
                "{output_dir}/r.json", str(self.state)]  # fmt: skip
        (self.repo / "perfgate.yaml").write_text(
            "version: 1\n"
            "gate: {mode: blocking, confirm: paired}\n"
            "admission: {wait_seconds: 0}\n"
            "defaults:\n"
            "  driver: command\n"
            "  retries: 0\n"
            f"  command: {{argv: {json.dumps(argv)}, output: '{{output_dir}}/r.json'}}\n"
            "  metric: {path: results.throughput.mean}\n"
            "buckets:\n  - task: sim\n    backends: [{physics: gpu}]\n"
        )
        self.speed("main", 100.0)
        for _ in range(5):
            assert main(self.bench_args("--record")) == 0
        self.speed("feature", 90.0)
        shutil.rmtree(self.out)
        (self.state / "hold_under").write_text(str(self.work / "paired"))

    def speed(self, branch: str, speed: float) -> None:
        """Commit ``speed`` on ``branch``."""
        git("checkout", "-q", "-B", branch, cwd=self.repo)
        (self.repo / "speed.txt").write_text(f"{speed}\n")
        commit_all(self.repo, f"speed {speed}")

    def bench_args(self, *extra: str) -> list[str]:
        """``perfgate bench``'s arguments, everything it writes under the test's directory."""
        return ["bench", "--quiet", "--out", str(self.out), "--work-dir", str(self.work),
                "--report-dir", str(self.root / "report"), *extra]  # fmt: skip

    def interrupt_pairing(
        self, argv: list[str], sig: signal.Signals, wait_for: Callable[..., None]
    ) -> tuple[int, str, int]:
        """Start ``argv`` in the repository (a session of its own), wait until the merge
        base's benchmark runs, signal the session's group; exit code, stderr, benchmark pid."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
        process = subprocess.Popen(argv, cwd=self.repo, env={**env, "PYTHONPATH": str(ROOT)},
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)  # fmt: skip
        held = self.state / "held"
        try:
            wait_for(lambda: held.exists() or process.poll() is not None)
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert (self.out / "sim__gpu.json").is_file()  # the repeats' artifact, unconfirmed
            os.killpg(process.pid, sig)  # as a terminal's Ctrl-C: perfgate's group, not the guard
            returncode = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr = process.stderr.read().decode() if process.stderr else ""
        return returncode, stderr, int(held.read_text())


@pytest.fixture
def paired_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PairedRepo:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    return PairedRepo(tmp_path)


@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [
        (signal.SIGINT, 130, "perfgate: interrupted"),
        (signal.SIGTERM, 143, "perfgate: terminated by signal 15"),
    ],
    ids=["SIGINT", "SIGTERM"],
)
def test_interrupted_while_pairing_says_so_and_leaves_no_unconfirmed_artifact(
    paired_repo: PairedRepo,
    sig: signal.Signals,
    code: int,
    said: str,
    benchmark_pids: list[int],
    wait_for: Callable[..., None],
) -> None:
    """The repeats' artifact is written before the pairs; interrupted mid-pair, the run
    never finished, so gate and publish must find no artifact to take for a finished one."""
    argv = [sys.executable, "-m", "perfgate", *paired_repo.bench_args()]
    returncode, stderr, benchmark = paired_repo.interrupt_pairing(argv, sig, wait_for)
    benchmark_pids.append(benchmark)
    assert returncode == code, stderr
    assert stderr.rstrip().endswith(said), stderr
    assert not any(paired_repo.out.iterdir()), sorted(paired_repo.out.iterdir())
    wait_for(lambda: not alive(benchmark), seconds=15)
    assert str(paired_repo.work / "paired") not in git("worktree", "list", cwd=paired_repo.repo)


def test_a_ctrl_c_under_nox_lets_perfgate_finish_its_teardown(
    paired_repo: PairedRepo, benchmark_pids: list[int], wait_for: Callable[..., None]
) -> None:
    """`nox -s bench` runs perfgate through noxfile._call: a Ctrl-C reaches both, and nox
    waits while perfgate stops its benchmark (which takes a second), removes the merge
    base's checkout and its unconfirmed artifact, and says it was interrupted."""
    stand_in = (
        "import os, sys, types\n"
        f"sys.path.insert(0, {str(ROOT)!r}); os.chdir({str(ROOT)!r})\n"
        "import noxfile\n"
        "os.chdir(sys.argv[1])\n"
        "session = types.SimpleNamespace(log=lambda message: None)\n"
        "bindir = noxfile.Path(sys.executable).parent\n"
        "sys.exit(noxfile._call(session, bindir, *sys.argv[2:]))\n"
    )
    argv = [sys.executable, "-c", stand_in, str(paired_repo.repo), *paired_repo.bench_args()]
    returncode, stderr, benchmark = paired_repo.interrupt_pairing(argv, signal.SIGINT, wait_for)
    benchmark_pids.append(benchmark)
    assert returncode == 130, stderr
    assert stderr.rstrip().endswith("perfgate: interrupted"), stderr
    assert not any(paired_repo.out.iterdir())
    assert str(paired_repo.work / "paired") not in git("worktree", "list", cwd=paired_repo.repo)
