"""Run context from GitHub's standard environment and event payload.

The environment dicts and payload files stand in for a GitHub Actions job, which
cannot exist here; their shape follows GitHub's documented webhook payloads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfgate.context import RunContext, check_run_label, detect
from perfgate.errors import GateMalfunction, UsageError
from perfgate.result import CiInfo

SHA = "1" * 40
HEAD_SHA = "2" * 40


def github_env(tmp_path: Path, event: str, payload: dict[str, Any], **extra: str) -> dict[str, str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": "acme/sim",
        "GITHUB_SHA": SHA,
        "GITHUB_RUN_ID": "987",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_WORKFLOW": "perf",
        "GITHUB_JOB": "bench",
        "RUNNER_NAME": "gpu-runner-7",
        "GITHUB_SERVER_URL": "https://ghe.example",
        "GITHUB_API_URL": "https://ghe.example/api/v3",
        **extra,
    }


def test_pull_request_targets_the_base_ref_not_the_merge_ref(tmp_path: Path) -> None:
    payload = {
        "number": 55,
        "pull_request": {
            "number": 55,
            "head": {"sha": HEAD_SHA, "ref": "feature/x", "repo": {"full_name": "fork/sim"}},
            "base": {"ref": "develop"},
        },
    }
    env = github_env(
        tmp_path,
        "pull_request",
        payload,
        GITHUB_REF="refs/pull/55/merge",
        GITHUB_HEAD_REF="feature/x",
        GITHUB_BASE_REF="develop",
    )
    context = detect(env)
    assert context.target_branch == "develop"
    assert context.branch == "feature/x"
    assert (context.pr_number, context.head_sha, context.commit) == (55, HEAD_SHA, SHA)
    assert context.is_pull_request and context.is_fork
    assert context.api_url == "https://ghe.example/api/v3"
    assert context.run_url == "https://ghe.example/acme/sim/actions/runs/987"
    assert context.ci == CiInfo(
        run_id="987", run_attempt="2", workflow="perf", job="bench", runner_name="gpu-runner-7"
    )


def test_pull_request_base_falls_back_to_the_payload(tmp_path: Path) -> None:
    payload = {
        "pull_request": {
            "number": 8,
            "head": {"sha": HEAD_SHA, "ref": "fix", "repo": {"full_name": "acme/sim"}},
            "base": {"ref": "main"},
        }
    }
    context = detect(github_env(tmp_path, "pull_request", payload, GITHUB_REF="refs/pull/8/merge"))
    assert (context.target_branch, context.branch) == ("main", "fix")
    assert not context.is_fork


def test_merge_group_targets_the_queue_base(tmp_path: Path) -> None:
    queue_ref = f"refs/heads/gh-readonly-queue/main/pr-12-{HEAD_SHA}"
    payload = {
        "merge_group": {"head_sha": HEAD_SHA, "head_ref": queue_ref, "base_ref": "refs/heads/main"}
    }
    context = detect(github_env(tmp_path, "merge_group", payload, GITHUB_REF=queue_ref))
    assert context.target_branch == "main"
    assert context.branch == f"gh-readonly-queue/main/pr-12-{HEAD_SHA}"
    assert context.head_sha == HEAD_SHA
    assert not context.is_pull_request


def test_merge_group_without_base_ref_reads_the_base_from_the_queue_ref(tmp_path: Path) -> None:
    queue_ref = f"refs/heads/gh-readonly-queue/release/1.2/pr-3-{HEAD_SHA}"
    context = detect(github_env(tmp_path, "merge_group", {}, GITHUB_REF=queue_ref))
    assert context.target_branch == "release/1.2"


def test_push_targets_its_own_branch(tmp_path: Path) -> None:
    context = detect(github_env(tmp_path, "push", {}, GITHUB_REF="refs/heads/main"))
    assert (context.branch, context.target_branch, context.event) == ("main", "main", "push")
    assert context.pr_number is None
    assert context.source_json()["commit"] == SHA


def test_tag_push_has_no_branch(tmp_path: Path) -> None:
    context = detect(github_env(tmp_path, "push", {}, GITHUB_REF="refs/tags/v1.0"))
    assert (context.branch, context.target_branch) == (None, None)


def test_unreadable_event_payload_is_a_malfunction(tmp_path: Path) -> None:
    env = github_env(tmp_path, "push", {}, GITHUB_REF="refs/heads/main")
    Path(env["GITHUB_EVENT_PATH"]).write_text("{not json", encoding="utf-8")
    with pytest.raises(GateMalfunction, match="GITHUB_EVENT_PATH"):
        detect(env)


@pytest.mark.slow  # starts git
def test_outside_github_the_target_is_the_override_or_the_default(tmp_path: Path) -> None:
    # tmp_path is no git checkout, so commit and branch are unknown.
    local = detect({}, cwd=tmp_path, default_target="main")
    assert local == RunContext(commit=None, branch=None, target_branch="main", event="local")
    override = detect({"PERFGATE_TARGET_BRANCH": "develop"}, cwd=tmp_path, default_target="main")
    assert override.target_branch == "develop"


def test_a_job_that_checked_out_another_commit_says_which(tmp_path: Path) -> None:
    """The qualify workflow pins one commit; its allocations record that commit, not the
    dispatched run's GITHUB_SHA."""
    pinned = "3" * 40
    env = github_env(tmp_path, "workflow_dispatch", {}, GITHUB_REF="refs/heads/main")
    assert detect({**env, "PERFGATE_COMMIT": pinned}).commit == pinned
    assert detect(env).commit == SHA
    with pytest.raises(UsageError, match="PERFGATE_COMMIT 'main' is not a full commit SHA"):
        detect({**env, "PERFGATE_COMMIT": "main"})


@pytest.mark.slow  # starts git
def test_run_labels_are_plain_names_and_local_runs_name_their_runner(tmp_path: Path) -> None:
    assert check_run_label("allocation-3") == "allocation-3"
    for bad in ("", "-a", "a/b", "a b", "x" * 129, "../up"):
        with pytest.raises(UsageError, match="run label"):
            check_run_label(bad)
    local = detect({"RUNNER_NAME": "laptop-b"}, cwd=tmp_path)
    assert (local.ci.runner_name, local.event) == ("laptop-b", "local")
    assert detect({}, cwd=tmp_path).ci.runner_name is None


def test_a_runner_jobs_log_artifact_is_recorded_when_it_is_a_name_github_accepts(
    tmp_path: Path,
) -> None:
    """A job of several buckets uploads one log artifact; results name it for the reports."""
    env = github_env(tmp_path, "push", {}, GITHUB_REF="refs/heads/main",
                     PERFGATE_LOG_ARTIFACT="perfgate-log-lane-2")  # fmt: skip
    assert detect(env).ci.log_artifact == "perfgate-log-lane-2"
    for bad in ("", "logs with spaces", "a/b", "x" * 201):
        env["PERFGATE_LOG_ARTIFACT"] = bad
        assert detect(env).ci.log_artifact is None, bad
