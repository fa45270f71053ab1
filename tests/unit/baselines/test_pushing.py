"""Telling a lost race from a refusal, and spreading retries out (pure parts of the push)."""

from __future__ import annotations

import pytest

from perfgate.baselines.pushing import PushFailure, PushRetryPolicy, classify, reason, remote_says

# git's own words, captured from real pushes (local bare origins and github.com).
HOOK = """remote: baselines are frozen during the migration
To /tmp/origin.git
 ! [remote rejected] 1a2b3c -> perf-baselines (pre-receive hook declined)
error: failed to push some refs to '/tmp/origin.git'
"""
PROTECTED = """remote: error: GH006: Protected branch update failed for refs/heads/perf-baselines.
To https://github.com/org/repo
 ! [remote rejected] 1a2b3c -> perf-baselines (protected branch hook declined)
"""
FETCH_FIRST = """To /tmp/origin.git
 ! [rejected]        1a2b3c -> perf-baselines (fetch first)
error: failed to push some refs to '/tmp/origin.git'
hint: Updates were rejected because the remote contains work that you do
"""
LOCK = """remote: error: cannot lock ref 'refs/heads/perf-baselines': is at 0062 but expected a2e2
To /tmp/origin.git
 ! [remote rejected] 1a2b3c -> perf-baselines (failed to update ref)
"""
LEASE = """To /tmp/origin.git
 ! [rejected]        (delete) -> refs/perfgate/incoming/perf-baselines/abc (stale info)
 ! [rejected]        1a2b3c -> perf-baselines (atomic push failed)
fatal: the remote end hung up unexpectedly
"""
FORBIDDEN = """remote: Permission to org/repo.git denied to github-actions[bot].
fatal: unable to access 'https://github.com/org/repo/': The requested URL returned error: 403
"""
OFFLINE = (
    "fatal: unable to access 'https://github.com/org/repo/': Could not resolve host: github.com\n"
)
SERVER = "error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502\n"


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        (HOOK, PushFailure.REFUSED),
        (PROTECTED, PushFailure.REFUSED),
        (FETCH_FIRST, PushFailure.RACE),
        (LOCK, PushFailure.RACE),
        (LEASE, PushFailure.RACE),
        (FORBIDDEN, PushFailure.DENIED),
        (OFFLINE, PushFailure.TRANSIENT),
        (SERVER, PushFailure.TRANSIENT),
        ("fatal: something nobody has seen\n", None),
    ],
)
def test_each_push_failure_is_told_apart(stderr: str, kind: PushFailure | None) -> None:
    assert classify(stderr) is kind


def test_a_refusal_is_reported_in_the_servers_words() -> None:
    assert remote_says(HOOK) == (
        "baselines are frozen during the migration; "
        "! [remote rejected] 1a2b3c -> perf-baselines (pre-receive hook declined)"
    )
    assert reason(FETCH_FIRST) == "! [rejected]        1a2b3c -> perf-baselines (fetch first)"


def test_backoff_windows_double_from_the_length_of_an_attempt_up_to_the_cap() -> None:
    policy = PushRetryPolicy(first_delay_s=0.1, max_delay_s=30.0)
    widest = [policy.delay(n, attempt_s=0.5, draw=lambda low, high: high) for n in (1, 2, 3, 4)]
    assert widest == [0.5, 1.0, 2.0, 4.0]
    # A fast attempt still waits at least the first window; a long one never past the cap.
    assert policy.delay(1, attempt_s=0.001, draw=lambda low, high: high) == 0.1
    assert policy.delay(12, attempt_s=2.0, draw=lambda low, high: high) == 30.0
    # Full jitter: anywhere from nothing to the window.
    assert policy.delay(3, attempt_s=0.5, draw=lambda low, high: low) == 0.0
