"""why_not_retry: a crash that repeats identically is not retried; what can be flaky is (pure)."""

from __future__ import annotations

import pytest

from perfgate.result import FailurePhase
from perfgate.run.execution import ProcessOutcome, why_not_retry
from perfgate.run.logs import python_crash

KEY_ERROR = """\
perfgate-demo: environments ready
Traceback (most recent call last):
  File "/opt/bench/run.py", line 40, in <module>
    main()
  File "/opt/bench/run.py", line 12, in main
    task = settings["task"]
           ~~~~~~~~^^^^^^^^
KeyError: 'task'
"""
CUDA = """\
Traceback (most recent call last):
  File "/opt/bench/run.py", line 20, in main
    env = make_env()
RuntimeError: CUDA error: an illegal memory access was encountered
"""
# A chained exception: the last traceback is the one that ended the run.
CHAINED = """\
Traceback (most recent call last):
  File "/opt/bench/config.py", line 3, in load
    return json.loads(text)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/bench/run.py", line 8, in main
    raise ValueError("no config")
ValueError: no config
"""


def outcome(log: str, phase: FailurePhase | None, exit_code: int | None = 1) -> ProcessOutcome:
    return ProcessOutcome(
        exit_code=exit_code, timed_out=False, wall_s=1.0, log_tail=log, phase=phase
    )


def test_the_last_traceback_names_the_exception_and_where_it_was_raised() -> None:
    crash = python_crash(KEY_ERROR)
    assert crash is not None
    assert (crash.exception, crash.message, crash.where) == (
        "KeyError",
        "'task'",
        "run.py:12 in main",
    )
    chained = python_crash(CHAINED)
    assert chained is not None and (chained.exception, chained.where) == (
        "ValueError",
        "run.py:8 in main",
    )
    assert python_crash("Segmentation fault (core dumped)\n") is None


@pytest.mark.parametrize("phase", [FailurePhase.IMPORT, FailurePhase.INIT])
def test_a_programming_error_before_any_measurement_is_not_retried(phase: FailurePhase) -> None:
    reason = why_not_retry(outcome(KEY_ERROR, phase))
    assert reason == (
        "not retried: KeyError at run.py:12 in main before any measurement repeats with the "
        "same code and inputs"
    )


@pytest.mark.parametrize(
    ("log", "phase"),
    [
        (KEY_ERROR, FailurePhase.RUNTIME),  # stepping had started: the state may differ
        (CUDA, FailurePhase.INIT),  # the machine's state: may pass on another attempt
        (KEY_ERROR, FailurePhase.DRIVER),
        (KEY_ERROR, FailurePhase.OOM),
        (KEY_ERROR, FailurePhase.HANG),
        ("killed\n", FailurePhase.INIT),  # no traceback: nothing says it would repeat
        ("", None),
    ],
)
def test_what_can_be_flaky_is_retried(log: str, phase: FailurePhase | None) -> None:
    assert why_not_retry(outcome(log, phase)) is None
