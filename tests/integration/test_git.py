"""git as perfgate runs it: never prompting, and network calls bounded in time (R8)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from perfgate.errors import ExitCode, GitError, GitTimeout
from perfgate.util import git as git_module
from perfgate.util.git import git
from tests.stalled import asking_server, ends_within, silent_server


def test_git_never_waits_at_a_prompt_for_credentials(tmp_path: Path) -> None:
    with asking_server() as url, pytest.raises(GitError) as raised:
        ends_within(60, lambda: git("ls-remote", url, cwd=tmp_path))
    assert "terminal prompts disabled" in raised.value.stderr


def test_a_stalled_network_call_ends_at_its_time_limit_with_a_clear_error(
    tmp_path: Path,
) -> None:
    began = time.monotonic()
    with silent_server() as url, pytest.raises(GitTimeout) as raised:
        ends_within(60, lambda: git("ls-remote", url, cwd=tmp_path, timeout=1))
    assert time.monotonic() - began < 30
    assert str(raised.value).startswith(f"git ls-remote {url} timed out after 1 s")
    assert "check that the remote answers" in str(raised.value)
    assert raised.value.exit_code is ExitCode.MALFUNCTION


def test_a_network_call_given_no_time_limit_gets_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "NETWORK_TIMEOUT_S", 1.0)
    git("init", "-q", str(tmp_path / "repo"))
    with silent_server() as url, pytest.raises(GitTimeout, match="timed out after 1 s"):
        ends_within(60, lambda: git("fetch", url, cwd=tmp_path / "repo"))


def test_a_deadline_bounds_a_call_to_what_is_left_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_module, "NETWORK_TIMEOUT_S", 300.0)
    assert 9.0 < git_module.time_left(time.monotonic() + 10) <= 10.0
    assert git_module.time_left(time.monotonic() + 1e6) == 300.0
    # A call made at (or past) the deadline still gets a moment to answer.
    assert git_module.time_left(time.monotonic() - 5) == git_module.LAST_CALL_S
