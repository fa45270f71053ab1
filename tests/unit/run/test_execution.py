"""classify_failure: the phase a failed run died in, from exit code, timing and log, and
whether it is worth another attempt (pure)."""

from __future__ import annotations

import pytest

from perfgate.config import PhaseMarkers
from perfgate.result import FailurePhase
from perfgate.run.execution import ProcessOutcome, why_not_retry
from perfgate.run.logs import classify_failure, environment_fix

MARKERS = PhaseMarkers(
    driver_error=("CUDA_ERROR_",),
    init_done="AppLauncher initialization complete",
    stepping="Step Frametimes",
)
INIT = "AppLauncher initialization complete\n"
STEP = "Step Frametimes\n"


def phase(
    log: str = "",
    *,
    exit_code: int | None = 1,
    timed_out: bool = False,
    wall_s: float = 10.0,
    timeout_s: float = 600.0,
    markers: PhaseMarkers = MARKERS,
) -> FailurePhase | None:
    return classify_failure(
        exit_code=exit_code,
        timed_out=timed_out,
        wall_s=wall_s,
        timeout_s=timeout_s,
        log=log,
        markers=markers,
    )


def test_clean_exit_has_no_failure_phase_even_with_scary_words_in_the_log() -> None:
    assert phase("Traceback\nMemoryError handled\n" + INIT + STEP, exit_code=0) is None


@pytest.mark.parametrize("exit_code", [137, -9])
def test_sigkill_exit_is_oom(exit_code: int) -> None:
    assert phase(INIT + STEP, exit_code=exit_code) is FailurePhase.OOM


def test_oom_kill_message_is_oom_whatever_the_exit_code() -> None:
    assert phase(INIT + STEP + "Killed process 123 (python) oom-kill\n") is FailurePhase.OOM


def test_oom_outranks_the_hang_budget() -> None:
    assert phase(exit_code=137, wall_s=599, timeout_s=600) is FailurePhase.OOM


def test_timeout_is_a_hang() -> None:
    assert phase(INIT + STEP, exit_code=-15, timed_out=True) is FailurePhase.HANG


def test_a_failure_that_used_95_percent_of_the_budget_is_a_hang() -> None:
    assert phase(INIT + STEP, wall_s=570, timeout_s=600) is FailurePhase.HANG
    assert phase(INIT + STEP, wall_s=569, timeout_s=600) is FailurePhase.RUNTIME


def test_import_error_before_init_is_import() -> None:
    log = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'warp'\n"
    assert phase(log) is FailurePhase.IMPORT


def test_import_error_after_init_is_not_import() -> None:
    log = INIT + "ImportError: cannot import name 'x' from 'lazy'\n"
    assert phase(log) is FailurePhase.INIT
    assert phase(log + STEP) is FailurePhase.RUNTIME


def test_driver_marker_is_driver() -> None:
    assert phase(INIT + "CUDA_ERROR_ILLEGAL_ADDRESS\n") is FailurePhase.DRIVER


def test_crash_before_stepping_is_init() -> None:
    assert phase("Traceback\nRuntimeError: no device\n") is FailurePhase.INIT
    assert phase(INIT + "RuntimeError: scene\n") is FailurePhase.INIT


def test_crash_after_stepping_started_is_runtime() -> None:
    assert phase(INIT + STEP + "RuntimeError: diverged\n") is FailurePhase.RUNTIME


def test_with_only_an_init_marker_it_tells_init_from_runtime() -> None:
    markers = PhaseMarkers(init_done="ready")
    assert phase("RuntimeError\n", markers=markers) is FailurePhase.INIT
    assert phase("ready\nRuntimeError\n", markers=markers) is FailurePhase.RUNTIME


def test_without_markers_a_crash_is_runtime() -> None:
    assert phase("RuntimeError\n", markers=PhaseMarkers()) is FailurePhase.RUNTIME


def test_the_benchmark_never_inherits_ci_credentials() -> None:
    from perfgate.run.execution import benchmark_environment

    inherited = {
        "PATH": "/usr/bin",
        "GITHUB_TOKEN": "ghs_secret",
        "ACTIONS_RUNTIME_TOKEN": "secret",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraheader",
        "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic secret",
        "GITHUB_SHA": "abc",
    }
    assert benchmark_environment(inherited) == {"PATH": "/usr/bin", "GITHUB_SHA": "abc"}


ENV_MARKERS = PhaseMarkers(
    import_error=("ImportError",),
    driver_error=("CudaError",),
    stepping="Step Frametimes",
    environment={"no python here": "link the interpreter", "EULA?": "accept the EULA"},
)


@pytest.mark.parametrize(
    "log",
    [
        "no python here\n",
        # Later symptoms of an environment that could never have run it do not hide it.
        "EULA?\nTraceback\nImportError: x\n",
        "EULA?\n" + STEP + "CudaError: illegal address\n",
    ],
)
def test_an_environment_marker_wins_over_every_later_symptom(log: str) -> None:
    assert phase(log, markers=ENV_MARKERS) is FailurePhase.ENVIRONMENT
    assert phase(log, markers=ENV_MARKERS, timed_out=True) is FailurePhase.ENVIRONMENT
    assert phase(log, markers=ENV_MARKERS, exit_code=0) is None


def test_the_first_declared_environment_marker_names_the_fix() -> None:
    assert environment_fix("EULA?\nno python here\n", ENV_MARKERS) == "link the interpreter"
    assert environment_fix("fine\n", ENV_MARKERS) is None


def outcome(phase: FailurePhase | None, fix: str | None = None) -> ProcessOutcome:
    return ProcessOutcome(exit_code=1, timed_out=False, wall_s=1.0, log_tail="", phase=phase,
                          fix=fix)  # fmt: skip


def test_an_environment_failure_is_not_retried_and_it_names_the_fix() -> None:
    assert why_not_retry(outcome(FailurePhase.ENVIRONMENT, "accept the EULA")) == (
        "not retried: accept the EULA"
    )
    for flaky in (FailurePhase.INIT, FailurePhase.RUNTIME, FailurePhase.HANG, FailurePhase.DRIVER):
        assert why_not_retry(outcome(flaky)) is None
