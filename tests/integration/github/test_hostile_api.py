"""A flaky or hostile API answer is a clean outcome (R8, R14), against the loopback server.

GitHub itself cannot be reached here: tests/github_server.py serves its REST shapes over
real HTTP on 127.0.0.1 and injects the failures below.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perfgate.github.client import (
    MAX_PAGES,
    ApiRetryPolicy,
    GitHubClient,
    GitHubError,
    GitHubPermissionError,
)
from tests.github_server import WRITE_TOKEN, FakeGitHub, Fault, serve
from tests.github_support import HEAD_SHA
from tests.integration.github.test_github import gate, gh_env, write_inputs

STATUS_PATH = f"/repos/acme/sim/statuses/{HEAD_SHA}"
COMMENTS_PATH = "/repos/acme/sim/issues/7/comments"
SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve() as state:
        yield state


class Clock:
    """A monotonic clock that only moves when the client sleeps: minutes pass instantly."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def client(state: FakeGitHub, clock: Clock, **policy: float) -> GitHubClient:
    return GitHubClient(
        api_url=state.base_url,
        repository="acme/sim",
        token=WRITE_TOKEN,
        retry=ApiRetryPolicy(attempts=3, backoff_s=1.0, **policy),  # type: ignore[arg-type]
        sleep=clock.sleep,
        clock=clock,
    )


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_rate_limit_without_hints_waits_a_minute_then_backs_off(
    github: FakeGitHub, status: int
) -> None:
    """GitHub: no Retry-After and requests remaining -> wait >= 1 min, then exponentially."""
    github.faults.append(Fault("POST", STATUS_PATH, status, body=SECONDARY, times=3))
    clock = Clock()
    client(github, clock).create_status(
        HEAD_SHA, state="success", context="perfgate", description="PASS", target_url=None
    )
    assert clock.waits == [60.0, 120.0, 240.0]
    assert len(github.statuses[HEAD_SHA]) == 1


def test_a_429_with_no_body_at_all_is_still_a_rate_limit(github: FakeGitHub) -> None:
    github.faults.append(Fault("GET", COMMENTS_PATH, 429, raw=b""))
    clock = Clock()
    assert client(github, clock).issue_comments(7) == []
    assert clock.waits == [60.0]


def test_rate_limits_give_up_within_the_total_deadline(github: FakeGitHub) -> None:
    github.faults.append(Fault("GET", COMMENTS_PATH, 429, body=SECONDARY, times=50))
    clock = Clock()
    limited = r"rate limited by GitHub \(429.*re-run the job"
    with pytest.raises(GitHubError, match=limited) as caught:
        client(github, clock, deadline_s=900.0).issue_comments(7)
    assert clock.waits == [60.0, 120.0, 240.0]  # the next (480 s) would pass 900 s in all
    assert sum(clock.waits) <= 900.0
    assert caught.value.exit_code == 3


def test_a_403_that_is_no_rate_limit_is_still_a_permission_error(github: FakeGitHub) -> None:
    github.faults.append(
        Fault("POST", STATUS_PATH, 403, body={"message": "Resource not accessible by integration"})
    )
    clock = Clock()
    with pytest.raises(GitHubPermissionError):
        client(github, clock).create_status(
            HEAD_SHA, state="success", context="perfgate", description="PASS", target_url=None
        )
    assert clock.waits == []


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"\xff\xfe", b'{"id": '])
def test_a_200_whose_body_is_not_json_is_a_clean_error(github: FakeGitHub, body: bytes) -> None:
    github.faults.append(Fault("GET", COMMENTS_PATH, 200, raw=body))
    with pytest.raises(GitHubError, match="answered 200 with a body that is not JSON"):
        client(github, Clock()).issue_comments(7)


def test_gate_post_over_a_non_json_answer_exits_3_without_a_traceback(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    github.faults.append(Fault("POST", STATUS_PATH, 200, raw=b"<html>proxy error</html>", times=9))
    done = gate(tmp_path, gh_env(tmp_path, github, token=WRITE_TOKEN))
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "body that is not JSON" in done.stderr


def test_userinfo_in_a_pagination_link_is_never_printed(github: FakeGitHub) -> None:
    """A Link header pointing elsewhere, with credentials in it: refused, and not echoed."""
    github.max_per_page = 1
    github.add_comment(7, "one")
    github.add_comment(7, "two")
    github.foreign_next_link = "http://admin:hunter2@127.0.0.2:9"
    with pytest.raises(GitHubError) as caught:
        client(github, Clock()).issue_comments(7)
    assert "refusing to send the token to 127.0.0.2:9" in str(caught.value)
    assert "hunter2" not in str(caught.value) and "admin" not in str(caught.value)


def test_a_pagination_link_back_to_the_same_page_is_refused_after_one_request(
    github: FakeGitHub,
) -> None:
    """A Link whose "next" is the page just read would be followed for ever."""
    github.add_comment(7, "one")
    github.looping_pages = 300  # finite, so the client that follows it ends too
    with pytest.raises(GitHubError) as caught:
        client(github, Clock()).issue_comments(7)
    assert "links back to a page already read" in str(caught.value)
    assert len(github.requests) == 1  # the page; its link back to itself is never followed
    assert WRITE_TOKEN not in str(caught.value)


def test_paging_gives_up_after_a_bounded_number_of_pages(github: FakeGitHub) -> None:
    github.max_per_page = 1
    for index in range(MAX_PAGES + 5):
        github.add_comment(7, f"comment {index}")
    with pytest.raises(GitHubError, match=rf"more than {MAX_PAGES} pages"):
        client(github, Clock()).issue_comments(7)
    assert len(github.requests) == MAX_PAGES


def test_gate_post_over_endless_paging_exits_3_naming_the_reason(
    tmp_path: Path, github: FakeGitHub
) -> None:
    write_inputs(tmp_path)
    github.looping_pages = 300
    done = gate(tmp_path, gh_env(tmp_path, github, token=WRITE_TOKEN))
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "links back to a page already read" in done.stderr
    assert WRITE_TOKEN not in done.stdout + done.stderr
    assert len([r for r in github.requests if r.path == COMMENTS_PATH]) == 1
