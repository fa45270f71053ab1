"""Commands that may stall on the network, run with a time limit (R8: a stall exits 3).

Each runs in a session of its own: when its time runs out, every process it started
(git's remote helper, ssh, a probe script's children) is killed with it, so none is left
holding the output pipes and the wait ends. Without a terminal, ssh cannot prompt either.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` capturing its text output; after ``timeout`` seconds, kill its whole
    process group and raise ``subprocess.TimeoutExpired``."""
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",  # a registry tool's odd byte never hides its exit status
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(input_text, timeout=timeout)
        except BaseException:
            # A timeout, Ctrl-C or SIGTERM: the group is no longer in the terminal's
            # process group, so nothing else would stop it.
            _kill_group(process)
            raise
    return subprocess.CompletedProcess(list(argv), process.returncode, stdout, stderr)


def run_streaming(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run ``argv`` with its output on ours (a build's log stays readable) and return its exit
    status; after ``timeout`` seconds, kill its whole process group and raise
    ``subprocess.TimeoutExpired``."""
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    ) as process:
        try:
            return process.wait(timeout=timeout)
        except BaseException:
            _kill_group(process)
            raise


def _kill_group(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
