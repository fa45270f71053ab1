"""A container dies with its run, however the run ends (R14).

There is no Docker engine here, so tests/fixtures/fake_docker.py stands in for the client:
it records every call, and ``run`` blocks as a client attached to a running container
does. What is tested is perfgate's side: the ``docker run`` argv, and that ``docker rm
--force`` names the same container after a timeout, a SIGTERM and a SIGKILL of perfgate,
with nothing of the run left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paths import FIXTURES, ROOT

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal"),
]

CONFIG = """\
version: 1
defaults:
  driver: command
  timeout_minutes: {timeout}
  retries: 0
  container:
    image: registry.example/bench:1
    docker: [{python}, {fake}]
  command:
    argv: [python, bench.py, "{{output_dir}}/r.json"]
    output: "{{output_dir}}/r.json"
  metric: {{path: fps}}
buckets:
  - task: boxed
    backends: [{{physics: cpu}}]
"""


def calls(state: Path) -> list[list[str]]:
    log = state / "calls.log"
    return [json.loads(line)[:-1] for line in log.read_text().splitlines()] if log.exists() else []


def clients(name: str) -> list[int]:
    """Processes whose command line names the container: the fake docker client."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if name.encode() in argv and state not in "ZX":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("ending", ["timeout", "SIGTERM", "SIGKILL"])
def test_the_container_is_removed_however_the_run_ends(
    tmp_path: Path, ending: str, wait_for: Callable[..., None]
) -> None:
    state = tmp_path / "docker"
    (tmp_path / "perfgate.yaml").write_text(
        CONFIG.format(
            timeout=0.03 if ending == "timeout" else 5,
            python=json.dumps(sys.executable),
            fake=json.dumps(str(FIXTURES / "fake_docker.py")),
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
    env.update(FAKE_DOCKER_STATE=str(state), PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "perfgate", "bench", "--no-judge"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    name = ""
    try:
        wait_for(lambda: any(call[0] == "run" for call in calls(state)))
        (run,) = [call for call in calls(state) if call[0] == "run"]
        name = run[run.index("--name") + 1]
        assert run[:4] == ["run", "--rm", "--init", "--name"]
        assert run[run.index("registry.example/bench:1") + 1 :][:2] == ["python", "bench.py"]
        if ending != "timeout":
            process.send_signal(getattr(signal, ending))
        process.wait(timeout=60)
        wait_for(lambda: ["rm", "--force", name] in calls(state))
        wait_for(lambda: not clients(name), seconds=10)
    finally:  # whatever a failure left behind, by pid: never a broad name
        if process.poll() is None:
            process.kill()
        for pid in clients(name) if name else ():
            os.kill(pid, signal.SIGKILL)
    if ending == "timeout":
        assert process.returncode == 2  # the bucket failed (a hang): a HARD_FAILURE (R8)
