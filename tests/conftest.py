"""Fixtures and markers shared by every test folder.

Every test under tests/integration is marked ``integration`` and ``slow`` by its folder;
a unit test that starts a process is marked ``slow`` by hand. ``pytest --fast`` (``nox -s
unit -- --fast``) leaves the slow ones out: the in-process tests alone, the loop to run
while editing; a test it runs that starts a process fails, naming the marker. The whole
suite stays what `nox -s unit` and .ci/run run.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.git_support import Clone, MakeClone, origin_with_clone
from tests.paths import ROOT

INTEGRATION = ROOT / "tests" / "integration"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--fast``."""
    parser.addoption(
        "--fast",
        action="store_true",
        help="run the in-process tests only: leave out those marked slow (tests/integration, "
        "and unit tests that start processes)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests/integration by its folder; with --fast, deselect every slow test."""
    for item in items:
        if item.path.is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
    if config.getoption("--fast"):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


# The test running now, which the --fast audit hook names.
_RUNNING: list[str] = []
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec"})


def _refuse_processes(event: str, args: tuple[object, ...]) -> None:
    """Under --fast, a test that starts a process fails, naming the marker it needs."""
    if event in PROCESS_EVENTS and _RUNNING:
        raise RuntimeError(
            f"{_RUNNING[-1]} starts a process ({args[0]!r}): mark it @pytest.mark.slow, "
            "or keep it in process"
        )


def pytest_configure(config: pytest.Config) -> None:
    """With --fast, hold the fast loop to in-process tests (an audit hook sees every start)."""
    if config.getoption("--fast"):
        sys.addaudithook(_refuse_processes)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Name the running test for the --fast audit hook."""
    _RUNNING.append(item.nodeid)
    try:
        yield
    finally:
        _RUNNING.pop()


@pytest.fixture
def origin_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeClone:
    """Makes a clone of a bare origin whose branch holds one commit (``origin_with_clone``'s
    arguments: files, branch, message) and makes it the working directory, with no
    GITHUB_* or RUNNER_* variables: a local run, whatever runs the tests."""

    def make(**arguments: Any) -> Clone:
        clone = origin_with_clone(tmp_path, **arguments)
        monkeypatch.chdir(clone.path)
        for name in [n for n in os.environ if n.startswith(("GITHUB_", "RUNNER_"))]:
            monkeypatch.delenv(name)
        return clone

    return make


def _wait_for(condition: Callable[[], object], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {seconds:g} s"
        time.sleep(0.05)


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """Poll ``condition()`` every 50 ms until it holds; fail after ``seconds`` (30).

    A guard against a hang, never a measure of speed: the bound is far beyond what the
    awaited step needs on a loaded machine.
    """
    return _wait_for


@pytest.fixture(scope="session")
def noxfile() -> ModuleType:
    """noxfile.py, imported once as nox would (from the repository root)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.syspath_prepend(str(ROOT))
        return importlib.import_module("noxfile")
