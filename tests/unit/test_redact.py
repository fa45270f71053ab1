"""Credentials in URLs never reach a log (R14)."""

from __future__ import annotations

import pytest

import perfgate.cli.config
from perfgate import cli
from perfgate.errors import GateMalfunction, GitError
from perfgate.util.redact import redact


def test_userinfo_is_removed_from_every_url_in_a_text() -> None:
    text = (
        "fetch https://x-access-token:ghs_abc@github.com/o/r.git failed; "
        "next http://user@host:8080/p?q=a@b; ssh git@github.com:o/r stays"
    )
    assert redact(text) == (
        "fetch https://***@github.com/o/r.git failed; "
        "next http://***@host:8080/p?q=a@b; ssh git@github.com:o/r stays"
    )


def test_a_git_error_quoting_a_credentialed_url_is_redacted() -> None:
    error = GitError(["fetch", "origin"], 128, "fatal: repository 'https://u:pw@h/r' not found\n")
    assert "pw" not in str(error) and "https://***@h/r" in str(error)


def test_the_command_line_never_prints_userinfo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever error reaches the one place that prints errors, its URLs lose their userinfo."""

    def fails(args: object) -> int:
        raise GateMalfunction("cannot fetch https://x-access-token:ghs_secret@github.com/o/r")

    monkeypatch.setattr(perfgate.cli.config, "run_validate", fails)
    assert cli.main(["validate"]) == 3
    err = capsys.readouterr().err
    assert "ghs_secret" not in err and "https://***@github.com/o/r" in err
