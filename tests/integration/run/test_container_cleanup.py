"""A container dies with its run, however the run ends (R14).

There is no Docker engine here, so a fake ``docker`` on PATH stands in for the client: it
records every call, and ``run`` blocks as a client attached to a running container does.
What is tested is perfgate's side: the ``docker run`` argv, and that ``docker rm --force``
names the same container after a timeout, a SIGTERM and a SIGKILL of perfgate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal"),
]

FAKE_DOCKER = """#!{python}
import json, os, sys, time
with open({calls!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "pid": os.getpid()}}) + "\\n")
if sys.argv[1] == "run":
    time.sleep(300)  # attached to the container until it ends
"""
CONFIG = """\
version: 1
defaults:
  driver: command
  timeout_minutes: {timeout}
  retries: 0
  container: {{image: registry.example/bench:1}}
  command:
    argv: [python, bench.py, "{{output_dir}}/r.json"]
    output: "{{output_dir}}/r.json"
  metric: {{path: fps}}
buckets:
  - task: boxed
    backends: [{{physics: cpu}}]
"""


def calls(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] not in "ZX"


def wait_for(condition, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("ending", ["timeout", "SIGTERM", "SIGKILL"])
def test_the_container_is_removed_however_the_run_ends(tmp_path: Path, ending: str) -> None:
    record = tmp_path / "docker-calls.jsonl"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER.format(python=sys.executable, calls=str(record)))
    docker.chmod(0o755)
    (tmp_path / "perfgate.yaml").write_text(
        CONFIG.format(timeout=0.03 if ending == "timeout" else 5), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "perfgate", "bench", "--no-judge"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: any(c["argv"][0] == "run" for c in calls(record)))
        (run,) = [c for c in calls(record) if c["argv"][0] == "run"]
        argv = run["argv"]
        assert isinstance(argv, list)
        name = argv[argv.index("--name") + 1]
        assert argv[:3] == ["run", "--rm", "--init"]
        assert argv[argv.index("registry.example/bench:1") + 1 :][:2] == ["python", "bench.py"]
        if ending != "timeout":
            process.send_signal(getattr(signal, ending))
        process.wait(timeout=60)
        wait_for(lambda: any(c["argv"][:3] == ["rm", "--force", name] for c in calls(record)))
        client = run["pid"]
        assert isinstance(client, int)
        wait_for(lambda: not alive(client), seconds=10)
    finally:  # whatever a failure left behind, by pid: never a broad name
        if process.poll() is None:
            process.kill()
        for call in calls(record):
            if isinstance(call["pid"], int) and alive(call["pid"]):
                os.kill(call["pid"], signal.SIGKILL)
    if ending == "timeout":
        assert process.returncode == 0  # the bucket failed (a hang); bench itself ran
