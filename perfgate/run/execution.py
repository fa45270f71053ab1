"""Run a benchmark process: timeout, phase classification, per-attempt isolation, retry (R10)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Generic, TypeVar

from perfgate.config import PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.result import FailurePhase

LOG_TAIL_BYTES = 8192
HANG_FRACTION = 0.95  # a run that used 95 % of its budget is a hang, not a slow success
KILL_GRACE_S = 5.0


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """One attempt's command: argument list (never a shell), extra environment, outputs."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    # Files, directories or glob patterns the command writes; removed before each attempt.
    outputs: tuple[str, ...] = ()
    # Run after a timeout kill (best effort), e.g. to remove a container the kill left behind.
    on_timeout: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class AttemptDirs:
    """Private directories of one attempt."""

    number: int
    output_dir: Path
    cache_dir: Path


@dataclass(frozen=True, kw_only=True)
class ProcessOutcome:
    """What one process run did."""

    exit_code: int | None
    timed_out: bool
    wall_s: float
    log_tail: str
    phase: FailurePhase | None


def classify_failure(
    *,
    exit_code: int | None,
    timed_out: bool,
    wall_s: float,
    timeout_s: float,
    log: str,
    markers: PhaseMarkers,
) -> FailurePhase | None:
    """Name the phase a run failed in from its exit, its timing and its log; None if it did not."""
    if timed_out:
        return FailurePhase.HANG
    if exit_code == 0:
        return None
    if exit_code in (137, -signal.SIGKILL) or any(m in log for m in markers.oom):
        return FailurePhase.OOM
    if wall_s >= HANG_FRACTION * timeout_s:
        return FailurePhase.HANG
    initialised = markers.init_done is not None and markers.init_done in log
    stepped = markers.stepping is not None and markers.stepping in log
    # An import error once stepping started is a crash while running (a lazy import).
    if not (initialised or stepped) and any(m in log for m in markers.import_error):
        return FailurePhase.IMPORT
    if any(m in log for m in markers.driver_error):
        return FailurePhase.DRIVER
    # The latest marker the driver declares tells how far the run got.
    if markers.stepping is not None:
        return FailurePhase.RUNTIME if stepped else FailurePhase.INIT
    if markers.init_done is not None:
        return FailurePhase.RUNTIME if initialised else FailurePhase.INIT
    return FailurePhase.RUNTIME


def remove_outputs(invocation: Invocation) -> None:
    """Delete everything ``invocation`` may have written, so a retry cannot read it."""
    protected = {invocation.cwd.resolve(), *invocation.cwd.resolve().parents}
    for pattern in invocation.outputs:
        for name in glob.glob(str(invocation.cwd / pattern), recursive=True):
            match = Path(name)
            if match.resolve() in protected:
                # An output of "." or ".." would otherwise delete the checkout itself.
                raise ConfigError(
                    f"output {pattern!r} matches the working directory {invocation.cwd} or "
                    "one of its parents; point it at the file or directory the benchmark writes"
                )
            if match.is_dir() and not match.is_symlink():
                shutil.rmtree(match)
            elif match.exists() or match.is_symlink():
                match.unlink()


# Credentials a CI job may hold: the benchmark (PR code, or a replayed commit) never gets them.
_CREDENTIAL_NAMES = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
    }
)


def benchmark_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The inherited environment minus credentials (tokens and git's injected auth config)."""
    return {
        name: value
        for name, value in environ.items()
        if name not in _CREDENTIAL_NAMES and not name.startswith("GIT_CONFIG_")
    }


def run_process(
    invocation: Invocation, *, timeout_s: float, markers: PhaseMarkers, log_path: Path
) -> ProcessOutcome:
    """Run once with a timeout, the whole log to ``log_path``, a bounded tail kept in memory."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    timed_out = False
    with log_path.open("wb") as log:
        try:
            process = subprocess.Popen(
                list(invocation.argv),
                cwd=invocation.cwd,
                env={**benchmark_environment(os.environ), **invocation.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group, so a timeout kills the benchmark's children too.
                start_new_session=True,
            )
        except OSError as exc:
            log.write(f"perfgate: cannot start {invocation.argv[0]}: {exc}\n".encode())
            exit_code: int | None = 127
        else:
            try:
                exit_code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _terminate_group(process)
                exit_code = process.returncode
                if invocation.on_timeout:
                    _run_cleanup(invocation.on_timeout, log)
            except BaseException:
                # Interrupted (Ctrl-C, SIGTERM turned into an exception): never leave the
                # benchmark running orphaned.
                _terminate_group(process)
                raise
            # Nothing the benchmark started may outlive it: a straggler could write into the
            # next attempt's outputs (R10) or steal its CPU.
            _kill_group(process.pid)
    wall_s = time.monotonic() - started
    tail = _tail(log_path)
    if timed_out:
        tail += f"\nperfgate: killed after the {timeout_s:g} s timeout\n"
    phase = classify_failure(
        exit_code=exit_code,
        timed_out=timed_out,
        wall_s=wall_s,
        timeout_s=timeout_s,
        log=_full_text(log_path),
        markers=markers,
    )
    return ProcessOutcome(
        exit_code=exit_code, timed_out=timed_out, wall_s=wall_s, log_tail=tail, phase=phase
    )


def _terminate_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole group, give the leader a grace period, then SIGKILL the group."""
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE_S)
    # The leader may be gone while a child that ignores SIGTERM lives on.
    _kill_group(process.pid)
    process.wait()


def _kill_group(group: int) -> None:
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, sig: signal.Signals) -> None:
    # ProcessLookupError: the group is already empty.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _run_cleanup(argv: tuple[str, ...], log: IO[bytes]) -> None:
    log.write(f"perfgate: timeout cleanup: {' '.join(argv)}\n".encode())
    log.flush()
    try:
        subprocess.run(list(argv), stdout=log, stderr=subprocess.STDOUT, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"perfgate: timeout cleanup failed: {exc}\n".encode())


def _tail(path: Path) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - LOG_TAIL_BYTES))
        data = handle.read()
    text = data.decode("utf-8", errors="replace")
    return text if size <= LOG_TAIL_BYTES else "…" + text.split("\n", 1)[-1]


def _full_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class AttemptRecord(Generic[T]):
    """One attempt: the process outcome and what was read from its output."""

    number: int
    outcome: ProcessOutcome
    reading: T
    cache_dir: Path


def with_cache_env(invocation: Invocation, cache_dir: Path) -> Invocation:
    """Point the benchmark's caches (perfgate's own and Warp's kernel cache) at ``cache_dir``."""
    env = {
        **invocation.env,
        "PERFGATE_CACHE_DIR": str(cache_dir),
        "WARP_CACHE_PATH": str(cache_dir / "warp"),
    }
    return replace(invocation, env=env)


def run_with_retry(
    *,
    plan: Callable[[AttemptDirs], Invocation],
    read: Callable[[AttemptDirs, ProcessOutcome], T],
    succeeded: Callable[[ProcessOutcome, T], bool],
    retries: int,
    timeout_s: float,
    markers: PhaseMarkers,
    work_dir: Path,
    cache_root: Path,
    wrap: Callable[[Invocation, AttemptDirs], Invocation] | None = None,
) -> list[AttemptRecord[T]]:
    """Run up to ``1 + retries`` attempts, each with fresh output and cache directories.

    ``wrap`` (e.g. a container) rewrites each attempt's command after its cache environment is
    set; outputs are still cleaned through the unwrapped invocation's host paths.
    """
    records: list[AttemptRecord[T]] = []
    previous: tuple[Invocation, AttemptDirs] | None = None
    for number in range(1, retries + 2):
        dirs = AttemptDirs(
            number=number,
            output_dir=work_dir / f"attempt-{number}" / "output",
            cache_dir=cache_root / f"attempt-{number}",
        )
        invocation = with_cache_env(plan(dirs), dirs.cache_dir)
        if previous is not None:
            remove_outputs(previous[0])
            shutil.rmtree(previous[1].output_dir, ignore_errors=True)
        remove_outputs(invocation)
        shutil.rmtree(dirs.output_dir, ignore_errors=True)
        dirs.output_dir.mkdir(parents=True)
        dirs.cache_dir.mkdir(parents=True, exist_ok=True)
        outcome = run_process(
            wrap(invocation, dirs) if wrap is not None else invocation,
            timeout_s=timeout_s,
            markers=markers,
            log_path=work_dir / f"attempt-{number}" / "log.txt",
        )
        reading = read(dirs, outcome)
        records.append(
            AttemptRecord(number=number, outcome=outcome, reading=reading, cache_dir=dirs.cache_dir)
        )
        if succeeded(outcome, reading):
            break
        previous = (invocation, dirs)
    return records
