"""Stand between perfgate and its benchmark, so the benchmark never outlives perfgate (R14).

Usage: ``python -I guard.py PARENT_PID GRACE_S CLEANUP_JSON ARGV...``

perfgate starts this guard as the leader of a new session; the benchmark runs in the
guard's process group. perfgate tears the group down on a timeout, SIGTERM, SIGINT or
SIGHUP, but it cannot catch SIGKILL, and ``PR_SET_PDEATHSIG`` on the benchmark alone would
kill only its first process, never the children it started. So the guard asks Linux for a
signal when perfgate dies (``PR_SET_PDEATHSIG``, even after SIGKILL) and is a child
subreaper (``PR_SET_CHILD_SUBREAPER``), so that a descendant that escapes the group into a
session of its own is re-parented to it rather than to init. When perfgate dies, or asks
with SIGTERM, the guard terminates the group, waits ``GRACE_S``, kills what is left (group
members and adopted orphans), runs the cleanup command (``docker rm --force NAME``, so a
container dies with its client) and exits. When the benchmark ends by itself, the guard
kills its stragglers the same way and exits with the benchmark's own status (re-raising
its signal), so perfgate sees exactly what the benchmark did.

The kernel sends the parent-death signal when the *thread* that forked the guard exits:
perfgate starts and waits for the guard in one thread, which outlives it.

Standard library only, started with ``python -I``: it must not import perfgate (or the
benchmark's checkout) and must start in milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
REAP_DEADLINE_S = 5.0
CLEANUP_TIMEOUT_S = 60.0


class _Teardown(Exception):
    """perfgate asked for the benchmark to stop, or perfgate itself is gone."""


def _prctl(option: int, value: int) -> bool:
    """Linux prctl(2); False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0)) == 0


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgid) of ``pid`` from /proc, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2])


def _kill_rest() -> None:
    """SIGKILL every other member of our group and every adopted child; reap them all."""
    me, group = os.getpid(), os.getpgrp()
    deadline = time.monotonic() + REAP_DEADLINE_S
    while time.monotonic() < deadline:
        found = False
        with contextlib.suppress(OSError):
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit() or int(entry.name) == me:
                    continue
                stat = _stat(int(entry.name))
                if stat is not None and (stat[1] == group or stat[0] == me):
                    found = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(entry.name), signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not found:
            return
        time.sleep(0.01)


def _cleanup(argv: list[str]) -> None:
    # Quietly: when perfgate is gone nobody reads the log pipe, and a write would fail.
    if argv:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=CLEANUP_TIMEOUT_S,
                check=False,
            )


def _exit_like(code: int) -> NoReturn:
    """Exit with the benchmark's status; a signal death is re-raised on ourselves."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(ValueError, OSError):  # SIGKILL's handler cannot be set
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default is not to terminate
    os._exit(code)


def main(args: list[str]) -> None:
    """Run the benchmark in our group; tear it down when perfgate asks or dies."""
    parent, grace_s, cleanup, argv = int(args[0]), float(args[1]), json.loads(args[2]), args[3:]
    stopping: list[int] = []

    def teardown(signum: int, frame: FrameType | None) -> None:
        if not stopping:  # once: a second signal must not interrupt the teardown itself
            stopping.append(signum)
            raise _Teardown

    # Handlers, not SIG_IGN: an ignored signal would be inherited by the benchmark.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, teardown)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    status: int | None = None
    process: subprocess.Popen[bytes] | None = None
    try:
        if os.getppid() != parent:  # perfgate died before the signal was armed
            raise _Teardown
        try:
            process = subprocess.Popen(argv, restore_signals=True)
        except (OSError, ValueError) as exc:
            print(f"perfgate: cannot start {argv[0]}: {exc}", file=sys.stderr, flush=True)
            _exit_like(127)
        status = process.wait()
        stopping.append(0)  # done: a late signal must not interrupt the normal ending
    except _Teardown:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgrp(), signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while process is not None and status is None and time.monotonic() < deadline:
            status = process.poll()
            time.sleep(0.02)
        _kill_rest()
        _cleanup(cleanup)
        _exit_like(status if status is not None else -signal.SIGTERM)
    _kill_rest()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
