"""A cancelled bench ends within seconds, its benchmark with it, nothing half-written (R8, R14).

A CI runner cancelling a job signals perfgate's own process, not its process group, and
the shell step it started may have inherited SIGINT ignored (a background job of a
non-interactive shell does, and Python then leaves it ignored). Whatever perfgate got,
SIGINT, SIGTERM or SIGKILL, mid-sample of a slow benchmark (fake_benchmark.py slow_flaky):
perfgate exits within seconds, the benchmark is gone, and the result directory holds no
artifact, whole or partial.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.factories import fake_matrix
from tests.paths import ROOT

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
