"""Run a benchmark process: timeout, phase classification (``run.logs`` reads the log),
per-attempt isolation, retry (R10)."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Generic, TypeVar

from perfgate.config import DEFAULT_KEEP_ENV, PhaseMarkers
from perfgate.result import CacheState, FailurePhase
from perfgate.run import guard
from perfgate.run.layout import SampleLayout
from perfgate.run.logs import (
    BEFORE_MEASUREMENT,
    REPEATING_EXCEPTIONS,
    LogScan,
    classify_failure,
    environment_fix,
    marker_strings,
    python_crash,
)

KILL_GRACE_S = 5.0
# After the benchmark ended, how long its output may still drain from the pipe.
DRAIN_S = 2.0


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """One attempt's command: argument list (never a shell), extra environment, outputs."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    # Files or glob patterns (inside the attempt's output directory) the command writes.
    outputs: tuple[str, ...] = ()
    # Run when the benchmark is torn down (timeout, interruption, perfgate's own death), e.g.
    # to remove a container that dying with its docker client would leave running.
    cleanup: tuple[str, ...] = ()


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
    # For an environment failure: what to do about it, in one line.
    fix: str | None = None


class EnvironmentProblem(Exception):
    """The environment cannot run the benchmark, found before launch; the message is the fix.

    Raised while an attempt is prepared (a container's profile, its image, its mounts);
    the bucket's result is a HARD_FAILURE in phase ``environment``, never retried.
    """


def why_not_retry(outcome: ProcessOutcome) -> str | None:
    """Why a failed attempt is not worth another one, in one line; None: retry it.

    The one place that decides what is retried (R10). A retry is kept for what can be
    flaky (launch, driver, out of memory, hangs, a crash while stepping). Not retried: an
    environment that cannot run the benchmark (its fix is named), and a crash that will
    repeat identically, a Python exception of a kind the same code and inputs raise again
    at the same place, raised before any measurement started.
    """
    if outcome.phase is FailurePhase.ENVIRONMENT:
        return f"not retried: {outcome.fix or 'the environment cannot run the benchmark'}"
    if outcome.phase not in BEFORE_MEASUREMENT:
        return None
    crash = python_crash(outcome.log_tail)
    if crash is None or crash.exception not in REPEATING_EXCEPTIONS:
        return None
    at = f" at {crash.where}" if crash.where else ""
    return (
        f"not retried: {crash.exception}{at} before any measurement repeats with the same "
        "code and inputs"
    )


# Credentials a CI job may hold, by name (case-insensitive): the benchmark (pull request
# code, or a replayed commit) never gets them. TOKEN also covers INPUT_*TOKEN* (action
# inputs), GH_ENTERPRISE_TOKEN and GITHUB_ENTERPRISE_TOKEN.
CREDENTIAL_PATTERNS = (
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*API_KEY*",
    "*ACCESS_KEY*",
    "*PRIVATE_KEY*",
    "ACTIONS_*",
    # git's injected configuration (extraheader auth) and helpers that answer for it.
    "GIT_CONFIG*",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "SSH_AUTH_SOCK",
)


def is_credential(name: str) -> bool:
    """True when ``name`` looks like a variable holding a credential."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in CREDENTIAL_PATTERNS)


def benchmark_environment(
    environ: Mapping[str, str], keep: Iterable[str] = DEFAULT_KEEP_ENV
) -> dict[str, str]:
    """The inherited environment minus credentials; ``keep`` names variables to pass anyway."""
    kept = set(keep)
    return {
        name: value for name, value in environ.items() if name in kept or not is_credential(name)
    }


def _guarded(invocation: Invocation) -> list[str]:
    """The guard's command line: it runs the benchmark and dies, with it, with perfgate."""
    return [
        sys.executable,
        "-I",
        guard.__file__,
        str(os.getpid()),
        str(KILL_GRACE_S - 1.0),
        json.dumps(list(invocation.cleanup), allow_nan=False),
        *invocation.argv,
    ]


@dataclass(frozen=True, kw_only=True)
class Watch:
    """How a benchmark process is run and watched: its timeout, the log markers its failures
    are classified by, the variables it keeps, and who sees its output live."""

    timeout_s: float
    markers: PhaseMarkers
    keep_env: Iterable[str] = DEFAULT_KEEP_ENV
    on_line: Callable[[str], None] | None = None


def run_process(invocation: Invocation, watch: Watch, log_path: Path) -> ProcessOutcome:
    """Run once with a timeout, the whole log to ``log_path``, a bounded tail kept in memory.

    The benchmark runs under :mod:`perfgate.run.guard` in a session of its own: a timeout
    or an interruption of perfgate (Ctrl-C, SIGTERM, SIGHUP) tears the whole group down,
    and the guard does so when perfgate is killed outright.
    """
    timeout_s, markers = watch.timeout_s, watch.markers
    log_path.parent.mkdir(parents=True, exist_ok=True)
    scan = LogScan(marker_strings(markers), on_line=watch.on_line)
    started = time.monotonic()
    timed_out = False
    with log_path.open("wb") as log:
        try:
            process = subprocess.Popen(
                _guarded(invocation),
                cwd=invocation.cwd,
                env={**benchmark_environment(os.environ, watch.keep_env), **invocation.env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:  # the working directory is missing, say
            message = f"perfgate: cannot start {invocation.argv[0]}: {exc}\n".encode()
            log.write(message)
            scan.feed(message)
            exit_code: int | None = 127
        else:
            assert process.stdout is not None
            with process.stdout as pipe:
                output = _Output(pipe=pipe, log=log, scan=scan)
                try:
                    timed_out = output.pump(process, started + timeout_s)
                except BaseException:
                    # Interrupted (Ctrl-C, SIGTERM, SIGHUP): never leave the benchmark running.
                    _terminate_group(process, output)
                    _run_cleanup(invocation.cleanup, log)
                    raise
                if timed_out:
                    _terminate_group(process, output)
                    _run_cleanup(invocation.cleanup, log)
                # Nothing the benchmark started may outlive it: a straggler could write into
                # the next attempt's outputs (R10) or steal its CPU.
                _kill_group(process.pid)
                exit_code = process.wait()
    wall_s = time.monotonic() - started
    tail = scan.tail()
    if timed_out:
        tail += f"\nperfgate: killed after the {timeout_s:g} s timeout\n"
    phase = classify_failure(
        exit_code=exit_code,
        timed_out=timed_out,
        wall_s=wall_s,
        timeout_s=timeout_s,
        log=scan,
        markers=markers,
    )
    return ProcessOutcome(
        exit_code=exit_code,
        timed_out=timed_out,
        wall_s=wall_s,
        log_tail=tail,
        phase=phase,
        fix=environment_fix(scan, markers) if phase is FailurePhase.ENVIRONMENT else None,
    )


@dataclass(frozen=True, kw_only=True)
class _Output:
    """Where the benchmark's output goes: the whole log to a file, the scan in memory."""

    pipe: IO[bytes]
    log: IO[bytes]
    scan: LogScan

    def _copy(self, timeout: float) -> bool:
        """Copy one chunk if one arrives within ``timeout``; False at end of output."""
        ready, _, _ = select.select([self.pipe], [], [], timeout)
        if not ready:
            return True
        chunk = os.read(self.pipe.fileno(), 1 << 16)
        self.log.write(chunk)
        self.scan.feed(chunk)
        return bool(chunk)

    def pump(self, process: subprocess.Popen[bytes], deadline: float) -> bool:
        """Copy output until the benchmark is done; True when ``deadline`` passed first."""
        while (remaining := deadline - time.monotonic()) > 0:
            if not self._copy(min(remaining, 1.0)):  # every writer closed: the group is done
                process.wait()
                return False
            if process.poll() is not None:
                # The guard is gone; something may still hold the pipe: drain, then stop.
                self.drain()
                return False
        return True

    def drain(self) -> None:
        """Whatever output is still coming, for at most DRAIN_S."""
        deadline = time.monotonic() + DRAIN_S
        while (remaining := deadline - time.monotonic()) > 0 and self._copy(remaining):
            pass


def _terminate_group(process: subprocess.Popen[bytes], output: _Output) -> None:
    """SIGTERM the whole group, give the guard a grace period, then SIGKILL the group."""
    _signal_group(process.pid, signal.SIGTERM)
    # Keep reading meanwhile: a benchmark blocked on a full pipe could not exit.
    output.pump(process, time.monotonic() + KILL_GRACE_S)
    # The guard may be gone while a child that ignores SIGTERM lives on.
    _kill_group(process.pid)
    process.wait()
    output.drain()


def _kill_group(group: int) -> None:
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, sig: signal.Signals) -> None:
    # ProcessLookupError: the group is already empty.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _run_cleanup(argv: tuple[str, ...], log: IO[bytes]) -> None:
    if not argv:
        return
    log.write(f"perfgate: cleanup: {' '.join(argv)}\n".encode())
    log.flush()
    try:
        subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"perfgate: cleanup failed: {exc}\n".encode())


T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class AttemptRecord(Generic[T]):
    """One launch: the process outcome and what was read from its output.

    A warm-up launch (``warmup``) fills a cold cache and is never measured; ``cache`` says
    what the launch's caches held when it started (R16).
    """

    number: int
    outcome: ProcessOutcome
    reading: T
    cache: CacheState = CacheState.COLD
    warmup: bool = False
    # Why no further attempt followed this failed one although retries were left.
    not_retried: str | None = None


def with_cache_env(invocation: Invocation, cache_dir: Path) -> Invocation:
    """Point the benchmark's caches (perfgate's, Warp's kernels, CUDA's JIT) at ``cache_dir``."""
    env = {
        **invocation.env,
        "PERFGATE_CACHE_DIR": str(cache_dir),
        "WARP_CACHE_PATH": str(cache_dir / "warp"),
        "CUDA_CACHE_PATH": str(cache_dir / "nv"),
    }
    return replace(invocation, env=env)


@dataclass(frozen=True, kw_only=True)
class Retries(Generic[T]):
    """How a failed attempt is retried (R10): up to ``retries`` more, ``on_retry`` told of
    each, and ``may_retry`` able to refuse one (why, in one line; None: go ahead)."""

    retries: int
    on_retry: Callable[[AttemptRecord[T]], None] | None = None
    may_retry: Callable[[AttemptRecord[T]], str | None] | None = None


def run_with_retry(
    *,
    plan: Callable[[AttemptDirs], Invocation],
    read: Callable[[AttemptDirs, ProcessOutcome], T],
    succeeded: Callable[[ProcessOutcome, T], bool],
    watch: Watch,
    layout: SampleLayout,
    retry: Retries[T],
    wrap: Callable[[Invocation, AttemptDirs], Invocation] | None = None,
) -> list[AttemptRecord[T]]:
    """Run up to ``1 + retry.retries`` attempts, each with fresh outputs and a fresh cache.

    With a warm cache in ``layout`` the attempts share that cache instead, across samples
    too: an attempt that finds it cold first takes a warm-up launch (its own record, never
    measured), and a retry empties it first. ``wrap`` (e.g. a container) rewrites each
    launch's command after its cache environment is set. Outputs live inside the attempt's
    output directory (validation sees to it), so removing that directory removes everything
    a failed attempt wrote (R10), and nothing outside it is ever deleted (R14). ``watch``
    says how each launch is run and watched. A failure :func:`why_not_retry` says would
    repeat ends the attempts; its record says why, and so does one ``retry.may_retry``
    refuses (the run's budget cannot afford another launch after the one that failed).
    """
    records: list[AttemptRecord[T]] = []
    warm = layout.warm

    def launch(number: int, *, warmup: bool) -> AttemptRecord[T]:
        dirs = AttemptDirs(
            number=number,
            output_dir=layout.output_dir(number, warmup=warmup),
            cache_dir=layout.cache_dir(number),
        )
        state = warm.state if warm is not None else CacheState.COLD
        invocation = with_cache_env(plan(dirs), dirs.cache_dir)
        shutil.rmtree(dirs.output_dir, ignore_errors=True)
        dirs.output_dir.mkdir(parents=True)
        dirs.cache_dir.mkdir(parents=True, exist_ok=True)
        outcome = run_process(
            wrap(invocation, dirs) if wrap is not None else invocation,
            watch,
            layout.log(number, warmup=warmup),
        )
        reading = read(dirs, outcome)
        record = AttemptRecord(
            number=number, outcome=outcome, reading=reading, cache=state, warmup=warmup
        )
        records.append(record)
        return record

    for number in range(1, retry.retries + 2):
        if number > 1:
            # A retry can never report the failed attempt's figures (R10); its log stays.
            for warmup in (False, True):
                shutil.rmtree(layout.output_dir(number - 1, warmup=warmup), ignore_errors=True)
        if warm is None:
            record = launch(number, warmup=False)
        else:
            if number > 1:
                warm.empty()
            record = launch(number, warmup=warm.state is CacheState.COLD)
            if succeeded(record.outcome, record.reading) and record.warmup:
                # Never measured: its figures go (its log stays), the cache it filled stays.
                shutil.rmtree(layout.output_dir(number, warmup=True))
                warm.mark_warm()
                record = launch(number, warmup=False)
        if succeeded(record.outcome, record.reading):
            if warm is not None:
                warm.mark_warm()
            break
        if number > retry.retries:
            break
        refusal = why_not_retry(record.outcome) or (
            retry.may_retry(record) if retry.may_retry else None
        )
        if refusal is not None:
            records[-1] = replace(record, not_retried=refusal)
            break
        if retry.on_retry is not None:
            retry.on_retry(record)
    return records
