"""perfgate against a GitHub API over real HTTP.

The real GitHub service cannot be reached from here, so ``tests/github_server.py``
stands in for it on 127.0.0.1 with GitHub's documented endpoints and failure modes;
perfgate reaches it only through ``GITHUB_API_URL``, as it would GitHub Enterprise.
The gate and post-report runs are real ``python -m perfgate`` subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from perfgate.github.client import ApiRetryPolicy, GitHubClient, GitHubError, GitHubPermissionError
from perfgate.github.post import MARKER, comment_body, upsert_comment
from perfgate.result import write_result
from tests.github_server import HUMAN, READ_TOKEN, WRITE_TOKEN, FakeGitHub, Fault, serve
from tests.github_support import HEAD_SHA, HOSTILE, make_result, write_config
from tests.paths import ROOT

MERGE_SHA = "9" * 40
STATUS_PATH = f"/repos/acme/sim/statuses/{HEAD_SHA}"
COMMENTS_PATH = "/repos/acme/sim/issues/7/comments"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve() as state:
        yield state


def client(state: FakeGitHub, token: str = WRITE_TOKEN, sleeps: list[float] | None = None) -> Any:
    waits = sleeps if sleeps is not None else []
    return GitHubClient(
        api_url=state.base_url,
        repository="acme/sim",
        token=token,
        retry=ApiRetryPolicy(attempts=3, backoff_s=1.0),
        sleep=waits.append,
    )


# -- the client ---------------------------------------------------------------------------


def test_status_request_is_exactly_what_github_expects(github: FakeGitHub) -> None:
    # A token read from a file keeps its newline; it must not reach the header.
    client(github, token=WRITE_TOKEN + "\n").create_status(
        HEAD_SHA, state="success", context="perfgate", description="PASS", target_url="https://r"
    )
    (request,) = github.requests
    assert (request.method, request.path) == ("POST", STATUS_PATH)
    assert request.body == {
        "state": "success",
        "context": "perfgate",
        "description": "PASS",
        "target_url": "https://r",
    }
    assert request.authorization == f"Bearer {WRITE_TOKEN}"


def test_a_502_is_retried_once_with_backoff(github: FakeGitHub) -> None:
    github.faults.append(Fault("POST", STATUS_PATH, 502, body={"message": "Bad Gateway"}))
    sleeps: list[float] = []
    client(github, sleeps=sleeps).create_status(
        HEAD_SHA, state="failure", context="perfgate", description="BLOCK", target_url=None
    )
    assert github.calls() == [("POST", STATUS_PATH), ("POST", STATUS_PATH)]
    assert sleeps == [1.0]
    assert [s["state"] for s in github.statuses[HEAD_SHA]] == ["failure"]


def test_a_secondary_rate_limit_waits_as_long_as_retry_after_says(github: FakeGitHub) -> None:
    github.faults.append(
        Fault(
            "POST",
            STATUS_PATH,
            403,
            headers={"Retry-After": "7"},
            body={"message": "You have exceeded a secondary rate limit"},
        )
    )
    sleeps: list[float] = []
    client(github, sleeps=sleeps).create_status(
        HEAD_SHA, state="success", context="perfgate", description="PASS", target_url=None
    )
    assert sleeps == [7.0]
    assert github.calls() == [("POST", STATUS_PATH), ("POST", STATUS_PATH)]
    assert len(github.statuses[HEAD_SHA]) == 1


def test_an_exhausted_rate_limit_waits_until_its_reset_time(github: FakeGitHub) -> None:
    reset = int(time.time()) + 20
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    github.faults.append(Fault("GET", COMMENTS_PATH, 429, headers=headers))
    sleeps: list[float] = []
    assert client(github, sleeps=sleeps).issue_comments(7) == []
    assert len(sleeps) == 1 and 15 <= sleeps[0] <= 20
    assert github.calls() == [("GET", COMMENTS_PATH)] * 2


def test_a_rate_limit_longer_than_a_job_can_wait_fails_clearly(github: FakeGitHub) -> None:
    github.faults.append(Fault("GET", COMMENTS_PATH, 403, headers={"Retry-After": "3600"}))
    sleeps: list[float] = []
    with pytest.raises(GitHubError, match=r"rate limited by GitHub \(403.*wait 3600s"):
        client(github, sleeps=sleeps).issue_comments(7)
    assert sleeps == []


def test_an_enterprise_api_path_prefix_is_kept(github: FakeGitHub) -> None:
    gh = GitHubClient(
        api_url=f"{github.base_url}/api/v3/", repository="acme/sim", token=WRITE_TOKEN
    )
    with pytest.raises(GitHubError, match="not found"):  # the stand-in serves no /api/v3
        gh.issue_comments(7)
    assert github.calls() == [("GET", "/api/v3/repos/acme/sim/issues/7/comments")]


def test_persistent_5xx_gives_up_with_a_clear_error(github: FakeGitHub) -> None:
    github.faults.append(Fault("POST", STATUS_PATH, 503, times=10))
    sleeps: list[float] = []
    with pytest.raises(GitHubError, match="answered 503") as caught:
        client(github, sleeps=sleeps).create_status(
            HEAD_SHA, state="success", context="perfgate", description="x", target_url=None
        )
    assert sleeps == [1.0, 2.0]
    assert len(github.requests) == 3
    assert caught.value.exit_code == 3


@pytest.mark.parametrize(
    ("token", "status", "advice"),
    [
        ("ghs_unknownTOKEN0123456789", 401, "set GITHUB_TOKEN to a valid token"),
        (READ_TOKEN, 403, "`statuses: write` and `pull-requests: write`"),
    ],
)
def test_401_and_403_say_what_to_do_and_never_show_the_token(
    github: FakeGitHub, token: str, status: int, advice: str
) -> None:
    gh = client(github, token=token)
    with pytest.raises(GitHubError) as caught:
        gh.create_status(HEAD_SHA, state="success", context="p", description="d", target_url=None)
    assert caught.value.status == status
    assert advice in str(caught.value)
    assert isinstance(caught.value, GitHubPermissionError) == (status == 403)
    assert token not in str(caught.value)
    assert token not in repr(gh)


def test_404_names_the_repository_to_check(github: FakeGitHub) -> None:
    gh = GitHubClient(api_url=github.base_url, repository="acme/missing", token=WRITE_TOKEN)
    with pytest.raises(GitHubError, match=r"not found \(404.*GITHUB_REPOSITORY \(acme/missing\)"):
        gh.issue_comments(7)


def test_comments_are_read_across_pages_by_following_link_headers(github: FakeGitHub) -> None:
    github.max_per_page = 10
    for index in range(25):
        github.add_comment(7, f"comment {index}")
    comments = client(github).issue_comments(7)
    assert [c["body"] for c in comments] == [f"comment {i}" for i in range(25)]
    pages = [r.query.get("page", ["1"])[0] for r in github.requests]
    assert pages == ["1", "2", "3"]
    assert {r.query["per_page"][0] for r in github.requests} == {"100", "10"}


def test_the_token_is_never_sent_to_another_host_by_a_pagination_link(github: FakeGitHub) -> None:
    github.max_per_page = 1
    github.add_comment(7, "one")
    github.add_comment(7, "two")
    github.foreign_next_link = "http://127.0.0.2:9"
    with pytest.raises(GitHubError, match=r"refusing to send the token to 127\.0\.0\.2:9"):
        client(github).issue_comments(7)
    assert len(github.requests) == 1


# -- the sticky comment -------------------------------------------------------------------


def test_the_marker_comment_is_found_on_a_later_page_and_edited_in_place(
    github: FakeGitHub,
) -> None:
    github.max_per_page = 10
    for index in range(23):
        github.add_comment(7, f"review {index}")
    old = github.add_comment(7, f"{MARKER}\nold verdict")
    github.add_comment(7, "later review")
    outcome = upsert_comment(client(github), 7, f"{MARKER}\nnew verdict")
    assert (outcome.comment_id, outcome.action, outcome.removed) == (old["id"], "updated", ())
    assert github.calls("POST") == []
    assert github.calls("PATCH") == [("PATCH", f"/repos/acme/sim/issues/comments/{old['id']}")]
    assert github.requests[-1].body == {"body": f"{MARKER}\nnew verdict"}
    assert [c["body"] for c in github.marker_comments(7, MARKER)] == [f"{MARKER}\nnew verdict"]


def test_the_comment_is_created_once_when_absent(github: FakeGitHub) -> None:
    outcome = upsert_comment(client(github), 7, f"{MARKER}\nverdict")
    assert outcome.action == "created"
    assert github.calls() == [
        ("GET", "/user"),  # 403 for the Actions bot's token: it writes as github-actions[bot]
        ("GET", COMMENTS_PATH),
        ("POST", COMMENTS_PATH),
        ("GET", COMMENTS_PATH),
    ]
    assert len(github.marker_comments(7, MARKER)) == 1


def test_leftover_duplicates_are_removed_keeping_the_oldest(github: FakeGitHub) -> None:
    planted = github.add_comment(7, f"{MARKER}\ncopied by a person", user=HUMAN)
    first = github.add_comment(7, f"{MARKER}\none")
    second = github.add_comment(7, f"{MARKER}\ntwo")
    third = github.add_comment(7, f"{MARKER}\nthree")
    outcome = upsert_comment(client(github), 7, f"{MARKER}\nfour")
    assert (outcome.comment_id, outcome.action) == (first["id"], "updated")
    assert outcome.removed == (second["id"], third["id"])
    remaining = github.marker_comments(7, MARKER)
    assert [(c["id"], c["body"]) for c in remaining] == [
        (planted["id"], f"{MARKER}\ncopied by a person"),  # neither edited nor deleted
        (first["id"], f"{MARKER}\nfour"),
    ]
    assert github.calls("DELETE") == [
        ("DELETE", f"/repos/acme/sim/issues/comments/{second['id']}"),
        ("DELETE", f"/repos/acme/sim/issues/comments/{third['id']}"),
    ]


def test_a_persons_planted_marker_is_never_adopted(github: FakeGitHub) -> None:
    planted = github.add_comment(7, f"{MARKER}\nPASS, trust me", user=HUMAN)
    outcome = upsert_comment(client(github), 7, f"{MARKER}\nverdict")
    assert outcome.action == "created" and outcome.comment_id != planted["id"]
    assert github.calls("PATCH") == [] and github.calls("DELETE") == []
    bodies = [(c["id"], c["body"]) for c in github.marker_comments(7, MARKER)]
    assert bodies == [
        (planted["id"], f"{MARKER}\nPASS, trust me"),
        (outcome.comment_id, f"{MARKER}\nverdict"),
    ]


def test_posting_as_a_person_edits_their_one_comment_in_place(github: FakeGitHub) -> None:
    github.poster = dict(HUMAN)  # a personal access token: /user names the author
    first = upsert_comment(client(github), 7, f"{MARKER}\none")
    second = upsert_comment(client(github), 7, f"{MARKER}\ntwo")
    assert (first.action, second.action) == ("created", "updated")
    assert second.comment_id == first.comment_id and second.removed == ()
    assert len(github.calls("POST")) == 1 and github.calls("DELETE") == []
    assert [c["body"] for c in github.marker_comments(7, MARKER)] == [f"{MARKER}\ntwo"]


def test_another_apps_marker_comment_is_never_adopted(github: FakeGitHub) -> None:
    other = github.add_comment(
        7, f"{MARKER}\nnot ours", user={"login": "other[bot]", "type": "Bot"}
    )
    outcome = upsert_comment(client(github), 7, f"{MARKER}\nverdict")
    assert outcome.action == "created" and outcome.comment_id != other["id"]
    assert github.calls("PATCH") == [] and github.calls("DELETE") == []


def test_two_racing_publishers_in_threads_leave_one_comment(github: FakeGitHub) -> None:
    github.list_barrier = threading.Barrier(2)
    bodies = [f"{MARKER}\nrun A", f"{MARKER}\nrun B"]
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda b: upsert_comment(client(github), 7, b), bodies))
    assert len(github.calls("POST")) == 2  # both runs saw no comment and created one
    remaining = github.marker_comments(7, MARKER)
    assert len(remaining) == 1
    assert {o.comment_id for o in outcomes} == {remaining[0]["id"]}
    assert remaining[0]["body"] in bodies


# -- gate --post and post-report as subprocesses ------------------------------------------


def write_inputs(tmp_path: Path, mode: str = "advisory", error: str | None = None) -> Path:
    """A config and one result artifact per bucket (the second one a regression)."""
    config = write_config(tmp_path, mode)
    results = tmp_path / "results"
    for index, bucket in enumerate(config.buckets):
        if error and index == 2:
            result = make_result(bucket, None, exit_code=1, error=error)
        else:
            result = make_result(bucket, 700.0 if index == 1 else 1000.0)
        write_result(result, results)
    return results


def gh_env(
    tmp_path: Path, state: FakeGitHub, *, token: str | None, fork: bool = False
) -> dict[str, str]:
    payload = {
        "number": 7,
        "pull_request": {
            "number": 7,
            "head": {
                "sha": HEAD_SHA,
                "ref": "feature",
                "repo": {"full_name": "mallory/sim" if fork else "acme/sim"},
            },
            "base": {"ref": "main"},
        },
    }
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": "acme/sim",
        "GITHUB_API_URL": state.base_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_SHA": MERGE_SHA,
        "GITHUB_REF": "refs/pull/7/merge",
        "GITHUB_HEAD_REF": "feature",
        "GITHUB_BASE_REF": "main",
        "GITHUB_RUN_ID": "99",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
    }
    if token:
        env["GITHUB_TOKEN"] = token
    return env


def perfgate(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def gate(tmp_path: Path, env: dict[str, str], report: str = "report") -> Any:
    return perfgate(tmp_path, env, "gate", "--results", "results", "--report-dir", report, "--post")


def test_gate_post_sets_statuses_on_the_head_commit_and_the_comment(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    done = gate(tmp_path, gh_env(tmp_path, github, token=WRITE_TOKEN))
    assert done.returncode == 0, done.stderr  # advisory mode
    statuses = github.statuses[HEAD_SHA]
    assert MERGE_SHA not in github.statuses  # never the synthetic merge commit
    assert [(s["context"], s["state"]) for s in statuses] == [
        ("perfgate", "success"),  # no baseline anywhere: WARN, never a pass, never a failure
        ("perfgate (cartpole/numpy)", "success"),
        ("perfgate (cartpole/python)", "success"),
        ("perfgate (pendulum/numpy)", "success"),
        ("perfgate (pendulum/python)", "success"),
    ]
    assert statuses[0]["description"].startswith("WARN: ")
    assert statuses[0]["description"].endswith(" (advisory)")
    assert {s["target_url"] for s in statuses} == {"https://github.com/acme/sim/actions/runs/99"}
    (comment,) = github.marker_comments(7, MARKER)
    verdict = json.loads((tmp_path / "report" / "verdict.json").read_text(encoding="utf-8"))
    assert comment["body"] == comment_body(
        verdict, head_sha=HEAD_SHA, run_url="https://github.com/acme/sim/actions/runs/99"
    )
    assert {r.authorization for r in github.requests} == {f"Bearer {WRITE_TOKEN}"}
    assert WRITE_TOKEN not in done.stdout + done.stderr
    assert "::notice::" not in done.stdout
    # A second run edits the same comment instead of adding one.
    again = gate(tmp_path, gh_env(tmp_path, github, token=WRITE_TOKEN))
    assert again.returncode == 0, again.stderr
    assert [c["id"] for c in github.marker_comments(7, MARKER)] == [comment["id"]]
    assert len(github.calls("POST")) == 5 + 1 + 5  # statuses, one comment, statuses again


def test_gate_writes_junit_and_the_hand_off_context(tmp_path: Path, github: FakeGitHub) -> None:
    write_inputs(tmp_path, error="Traceback: boom")
    done = gate(tmp_path, gh_env(tmp_path, github, token=None))
    assert done.returncode == 2, done.stderr  # a HARD_FAILURE, in advisory mode too (R8)
    report = tmp_path / "report"
    assert sorted(p.name for p in report.iterdir()) == [
        "context.json",
        "junit.xml",
        "summary.md",
        "verdict.json",
    ]
    suite = ET.parse(report / "junit.xml").getroot().find("testsuite")  # noqa: S314 (our own output)
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "0")
    assert json.loads((report / "context.json").read_text(encoding="utf-8")) == {
        "schema_version": 1,
        "repository": "acme/sim",
        "pr_number": 7,
        "head_sha": HEAD_SHA,
        "run_id": "99",
    }
    assert done.stdout.count("::notice::") == 1
    assert "GITHUB_TOKEN is not set" in done.stdout
    assert github.requests == []


@pytest.mark.parametrize(
    ("mode", "exit_code"),
    [("advisory", 2), ("blocking", 2), ("advisory\n  always_pass: true", 0)],
)
def test_a_read_only_token_prints_one_notice_and_keeps_the_verdicts_exit_code(
    tmp_path: Path, github: FakeGitHub, mode: str, exit_code: int
) -> None:
    write_inputs(tmp_path, mode=mode, error="Traceback: boom")
    done = gate(tmp_path, gh_env(tmp_path, github, token=READ_TOKEN))
    assert done.returncode == exit_code, done.stderr
    notices = [line for line in done.stdout.splitlines() if line.startswith("::notice::")]
    assert len(notices) == 1
    assert "job summary of https://github.com/acme/sim/actions/runs/99" in notices[0]
    assert "report artifact" in notices[0]
    assert github.calls() == [("POST", STATUS_PATH)]  # stopped at the first refusal
    assert github.statuses == {}
    assert READ_TOKEN not in done.stdout + done.stderr


def test_a_fork_pull_request_never_writes_and_says_where_the_verdict_is(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    done = gate(tmp_path, gh_env(tmp_path, github, token=READ_TOKEN, fork=True))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("::notice::") == 1
    assert "fork pull requests get a read-only token" in done.stdout
    assert github.requests == []


def test_a_push_gets_statuses_on_its_commit_and_no_comment(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    env = gh_env(tmp_path, github, token=WRITE_TOKEN)
    env.update(GITHUB_EVENT_NAME="push", GITHUB_SHA=HEAD_SHA, GITHUB_REF="refs/heads/main")
    done = gate(tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert github.calls() == [("POST", STATUS_PATH)] * 5
    assert "posted 5 commit status(es)" in done.stderr


def test_a_rejected_token_is_a_gate_malfunction_that_says_what_to_do(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    token = "ghs_revokedTOKEN0123456789"
    done = gate(tmp_path, gh_env(tmp_path, github, token=token))
    assert done.returncode == 3
    assert "GitHub rejected the token (401 Bad credentials)" in done.stderr
    assert (tmp_path / "report" / "verdict.json").is_file()  # the report was written first
    assert token not in done.stdout + done.stderr


def test_two_gate_runs_racing_leave_exactly_one_comment(tmp_path: Path, github: FakeGitHub) -> None:
    write_inputs(tmp_path)
    github.list_barrier = threading.Barrier(2)
    env = gh_env(tmp_path, github, token=WRITE_TOKEN)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda name: gate(tmp_path, env, name), ["report-a", "report-b"]))
    assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
    assert len(github.calls("POST")) == 2 * 5 + 2, github.calls()  # both created a comment
    assert len(github.marker_comments(7, MARKER)) == 1
    assert len(github.calls("DELETE")) >= 1


# -- the fork hand-off --------------------------------------------------------------------


def consumer_env(
    tmp_path: Path, state: FakeGitHub, *, head_sha: str = HEAD_SHA, pull_requests: Any = ()
) -> dict[str, str]:
    """The trusted workflow_run job: default-branch context, a write token, the event."""
    payload = {
        "action": "completed",
        "workflow_run": {
            "id": 99,
            "event": "pull_request",
            "head_sha": head_sha,
            "html_url": "https://github.com/acme/sim/actions/runs/99",
            "pull_requests": list(pull_requests),
        },
    }
    event_path = tmp_path / "workflow_run.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    env = gh_env(tmp_path, state, token=WRITE_TOKEN)
    env.update(
        GITHUB_EVENT_NAME="workflow_run",
        GITHUB_EVENT_PATH=str(event_path),
        GITHUB_SHA="8" * 40,
        GITHUB_REF="refs/heads/main",
        GITHUB_RUN_ID="100",
    )
    return env


def fork_report(tmp_path: Path, github: FakeGitHub, error: str | None = None) -> Path:
    write_inputs(tmp_path, error=error)
    done = gate(tmp_path, gh_env(tmp_path, github, token=READ_TOKEN, fork=True))
    assert done.returncode == (2 if error else 0), done.stderr  # a failed bucket exits 2
    return tmp_path / "report"


def test_post_report_posts_a_fork_verdict_after_checking_the_pull_request(
    tmp_path: Path, github: FakeGitHub
) -> None:
    report = fork_report(tmp_path, github)
    github.pulls[7] = HEAD_SHA
    done = perfgate(
        tmp_path, consumer_env(tmp_path, github), "post-report", "--report-dir", "report"
    )
    assert done.returncode == 0, done.stderr
    assert github.calls()[0] == ("GET", "/repos/acme/sim/pulls/7")
    assert len(github.statuses[HEAD_SHA]) == 5
    (comment,) = github.marker_comments(7, MARKER)
    verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    assert comment["body"] == comment_body(
        verdict, head_sha=HEAD_SHA, run_url="https://github.com/acme/sim/actions/runs/99"
    )
    assert WRITE_TOKEN not in done.stdout + done.stderr


def test_post_report_re_renders_hostile_text_and_never_pastes_summary_md(
    tmp_path: Path, github: FakeGitHub
) -> None:
    report = fork_report(tmp_path, github, error="Traceback: boom")
    github.pulls[7] = HEAD_SHA
    # What a malicious pull request could put in its own artifact.
    verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    verdict["headlines"] = [HOSTILE]
    verdict["notes"] = [HOSTILE]
    verdict["rows"][2]["details"] = [HOSTILE]
    verdict["rows"][2]["phase"] = "runtime"
    (report / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    (report / "summary.md").write_text("<img src=x onerror=alert(1)> @org/team", encoding="utf-8")
    done = perfgate(
        tmp_path, consumer_env(tmp_path, github), "post-report", "--report-dir", "report"
    )
    assert done.returncode == 0, done.stderr
    (comment,) = github.marker_comments(7, MARKER)
    body = comment["body"]
    assert "<img" not in body and "<script" not in body
    assert "@org" not in body
    assert "[link](" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body  # shown, as text


def rejection_statuses(github: FakeGitHub, sha: str) -> list[dict[str, Any]]:
    """The only thing a rejected report may post: one failing aggregate status on the run."""
    posted = [r for r in github.requests if r.method == "POST"]
    assert [r.path for r in posted] == [f"/repos/acme/sim/statuses/{sha}"]
    return [r.body for r in posted]


def test_post_report_rejects_a_report_for_another_commit_and_flags_the_run(
    tmp_path: Path, github: FakeGitHub
) -> None:
    fork_report(tmp_path, github)
    env = consumer_env(tmp_path, github, head_sha="f" * 40)
    done = perfgate(tmp_path, env, "post-report", "--report-dir", "report")
    assert done.returncode == 4
    assert "is not the triggering run's head commit" in done.stderr
    [status] = rejection_statuses(github, "f" * 40)
    assert status["state"] == "failure" and status["context"] == "perfgate"
    assert status["description"].startswith("report rejected:")
    assert len(status["description"]) <= 140
    assert github.calls("PATCH") == [] and github.calls("DELETE") == []


def test_post_report_rejects_a_pull_request_whose_head_is_another_commit(
    tmp_path: Path, github: FakeGitHub
) -> None:
    fork_report(tmp_path, github)
    github.pulls[7] = "e" * 40  # the report claims PR 7, whose head is not this run's commit
    done = perfgate(
        tmp_path, consumer_env(tmp_path, github), "post-report", "--report-dir", "report"
    )
    assert done.returncode == 4
    assert "names another pull request" in done.stderr
    assert github.calls("GET") == [("GET", "/repos/acme/sim/pulls/7")]
    [status] = rejection_statuses(github, HEAD_SHA)
    assert status["state"] == "failure"
