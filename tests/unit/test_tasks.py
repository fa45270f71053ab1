"""The invoke tasks (tasks.py) pass the render session's exit code on (R8).

The nox session they start cannot run inside a unit test, so invoke's own MockContext
stands in for it, answering with the exit code ``perfgate render`` would give.
"""

from __future__ import annotations

import pytest
from invoke.context import MockContext
from invoke.exceptions import Exit
from invoke.runners import Result

import tasks
from perfgate.errors import ExitCode


def _render(exited: int, *, check: bool) -> Exit:
    context = MockContext(run=Result(exited=exited))
    task = tasks.check_workflows if check else tasks.render_workflows
    with pytest.raises(Exit) as failed:
        task(context)
    return failed.value


def test_a_stale_render_says_so_and_exits_1() -> None:
    failed = _render(ExitCode.BLOCK, check=True)
    assert failed.code == 1
    assert "rendered files are stale; run `invoke render-workflows`" in str(failed.message)


@pytest.mark.parametrize("check", [True, False], ids=["check", "render"])
@pytest.mark.parametrize("code", [ExitCode.MALFUNCTION, ExitCode.USAGE])
def test_a_config_error_or_malfunction_keeps_its_exit_code(check: bool, code: ExitCode) -> None:
    """A config error is exit 4 and a malfunction 3, from the task as from perfgate; neither
    is called a stale render."""
    failed = _render(code, check=check)
    assert failed.code == code
    assert "stale" not in str(failed.message)
    assert f"exit {int(code)}" in str(failed.message)


def test_a_render_without_a_failure_raises_nothing() -> None:
    tasks.check_workflows(MockContext(run=Result(exited=0)))
    tasks.render_workflows(MockContext(run=Result(exited=0)))
