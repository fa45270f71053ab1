"""Fixtures and markers shared by every test folder.

Every test under tests/integration is marked ``integration`` and ``slow`` by its folder;
a unit test that starts a process is marked ``slow`` by hand. ``pytest --fast`` (``nox -s
unit -- --fast``) leaves the slow ones out: the in-process tests alone, the loop to run
while editing; a test it runs that starts a process fails, naming the marker. The whole
suite stays what `nox -s unit` and .ci/run run.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

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


@pytest.fixture(scope="session")
def noxfile() -> ModuleType:
    """noxfile.py, imported once as nox would (from the repository root)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.syspath_prepend(str(ROOT))
        return importlib.import_module("noxfile")
