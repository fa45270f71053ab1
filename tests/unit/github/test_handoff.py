"""The fork hand-off: a pull request's report is checked before a trusted job posts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfgate.context import RunContext
from perfgate.errors import ExitCode, UsageError
from perfgate.github.handoff import (
    MAX_VERDICT_BYTES,
    HandoffRejected,
    load_handoff,
    validate_verdict,
    write_context,
)
from perfgate.report.surfaces import write_report
from perfgate.report.verdict import report_json
from perfgate.result import CiInfo
from tests.github_support import HEAD_SHA, mixed_report

REPO = "acme/sim"


def fork_run() -> RunContext:
    return RunContext(
        commit="c" * 40,
        branch="feature",
        target_branch="main",
        event="pull_request",
        on_github=True,
        repository=REPO,
        pr_number=7,
        head_sha=HEAD_SHA,
        head_repository="mallory/sim",
        ci=CiInfo(run_id="99"),
    )


def report_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "report"
    write_report(mixed_report(tmp_path), directory)
    write_context(fork_run(), directory)
    return directory


def event(**overrides: Any) -> dict[str, Any]:
    run = {
        "id": 99,
        "head_sha": HEAD_SHA,
        "event": "pull_request",
        "html_url": "https://github.com/acme/sim/actions/runs/99",
        "pull_requests": [],
    }
    return {"workflow_run": {**run, **overrides}}


def load(directory: Path, payload: dict[str, Any] | None = None) -> Any:
    return load_handoff(
        directory, event_name="workflow_run", payload=payload or event(), repository=REPO
    )


def test_a_fork_report_is_accepted_and_bound_to_the_event_head(tmp_path: Path) -> None:
    handoff = load(report_dir(tmp_path))
    assert handoff.head_sha == HEAD_SHA
    assert handoff.pr_number == 7
    assert handoff.pr_confirmed is False  # fork runs list no pull requests: ask the API
    assert handoff.run_url == "https://github.com/acme/sim/actions/runs/99"
    assert handoff.verdict["overall_verdict"] == "HARD_FAILURE"


def test_a_pull_request_listed_by_the_event_is_confirmed(tmp_path: Path) -> None:
    handoff = load(report_dir(tmp_path), event(pull_requests=[{"number": 7}]))
    assert handoff.pr_confirmed is True


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        (event(head_sha="f" * 40), "is not the triggering run's head commit"),
        (event(id=100), "is not the triggering run 100"),
        (event(pull_requests=[{"number": 8}]), "pull request #7 is not one of the run's [8]"),
        (event(event="push"), "pr_number 7 given for a 'push' run"),
    ],
)
def test_a_report_not_from_the_triggering_run_is_rejected(
    tmp_path: Path, payload: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(HandoffRejected, match=r"context\.json: rejected") as caught:
        load(report_dir(tmp_path), payload)
    assert complaint in str(caught.value)
    assert caught.value.exit_code == ExitCode.USAGE


def test_another_repository_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(HandoffRejected, match="repository 'acme/sim' is not 'acme/other'"):
        load_handoff(
            report_dir(tmp_path),
            event_name="workflow_run",
            payload=event(),
            repository="acme/other",
        )


def test_post_report_outside_workflow_run_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="workflow_run"):
        load_handoff(report_dir(tmp_path), event_name="pull_request", payload={}, repository=REPO)


def test_an_oversized_verdict_is_rejected_before_it_is_parsed(tmp_path: Path) -> None:
    directory = report_dir(tmp_path)
    (directory / "verdict.json").write_text(" " * (MAX_VERDICT_BYTES + 1), encoding="utf-8")
    with pytest.raises(HandoffRejected, match="over the 2097152-byte cap"):
        load(directory)


def test_a_symlinked_verdict_is_rejected(tmp_path: Path) -> None:
    directory = report_dir(tmp_path)
    target = tmp_path / "elsewhere.json"
    (directory / "verdict.json").rename(target)
    (directory / "verdict.json").symlink_to(target)
    with pytest.raises(HandoffRejected, match="not a regular file"):
        load(directory)


def test_a_hostile_bucket_name_fails_the_schema(tmp_path: Path) -> None:
    directory = report_dir(tmp_path)
    verdict = json.loads((directory / "verdict.json").read_text(encoding="utf-8"))
    verdict["rows"][0]["bucket"] = "<img src=x onerror=alert(1)>/numpy"
    verdict["coverage"]["expected"][0] = verdict["rows"][0]["bucket"]
    (directory / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    with pytest.raises(HandoffRejected, match=r"verdict.json: rejected.*does not match"):
        load(directory)


def test_the_gates_own_verdict_satisfies_the_shipped_schema(tmp_path: Path) -> None:
    assert validate_verdict(report_json(mixed_report(tmp_path))) == []


def test_a_forged_state_that_contradicts_the_verdict_is_rejected(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    verdict["status_state"] = "success"
    assert validate_verdict(verdict) == ["status_state: does not follow from overall_verdict"]
    verdict = report_json(mixed_report(tmp_path))
    verdict["rows"] = verdict["rows"][:1]
    assert "rows: the rows do not match coverage.expected one for one" in validate_verdict(verdict)


def test_a_forged_all_clear_is_rejected_whatever_the_rows_say(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    verdict.update(overall_verdict="PASS", status_state="success")
    assert any("worst row is HARD_FAILURE" in p for p in validate_verdict(verdict))
    empty = report_json(mixed_report(tmp_path))
    empty.update(overall_verdict="PASS", status_state="success", rows=[])
    empty["coverage"].update(expected=[], reported=[], missing=[])
    assert any("empty" in p for p in validate_verdict(empty))


def test_a_report_that_drops_a_configured_bucket_is_rejected(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    trusted = [*verdict["coverage"]["expected"], "secret/numpy"]
    assert any("secret/numpy" in p for p in validate_verdict(verdict, trusted))
    assert validate_verdict(verdict, verdict["coverage"]["expected"]) == []
