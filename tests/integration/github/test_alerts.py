"""Post-merge alerts end to end: protected pushes to a bare origin, the baseline branch they
publish to, and ``perfgate alert --post`` against the loopback GitHub server (R18).

Each push commits to main in a clone of a local bare origin, pushes it, appends that push's
run (three samples, on one of three runners) to the baseline branch through the store's own
append path, then runs the alert verb as the push workflow's alert job would (GitHub's
environment for a push to main; the API is tests/github_server.py on 127.0.0.1, since the
GitHub service cannot be reached from here). The history has a known 6 % step.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.baselines.confirm import StoreWindows
from perfgate.baselines.evaluate import evaluate
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.config import PRIMARY, Config, load_config
from perfgate.github.alert_text import ACCEPTED_LABEL, LABEL
from perfgate.github.alerts import read_state
from perfgate.judge.confirm import Confirmer
from perfgate.judge.verdicts import Reason
from perfgate.run.launch import bucket_hashes
from perfgate.util.git import git
from tests.factories import make_result
from tests.github_server import BOT, HUMAN, READ_TOKEN, WRITE_TOKEN, FakeGitHub, Fault, serve
from tests.trend_stores import IDENTITY

CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  confirm: repeat
defaults:
  driver: demo
  repeats: 3
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
report:
  url: https://acme.github.io/sim/
alerts:
  bisect_max_minutes: 100000
"""
TWO_BUCKETS = CONFIG.replace("[{physics: numpy}]", "[{physics: numpy}, {physics: python}]")
RUNNERS = ("gpu-a", "gpu-b", "gpu-c")
OFFSETS = (1.02, 0.99, 0.985)  # each runner's steady offset


@dataclass
class Pushes:
    """A bare origin, a clone pushing to main, and the baseline branch the pushes publish to."""

    root: Path
    server: FakeGitHub
    clone: Path = field(init=False)
    config: Config = field(init=False)
    shas: list[str] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def __post_init__(self) -> None:
        origin = self.root / "origin.git"
        git("init", "-q", "--bare", "-b", "main", str(origin))
        self.clone = self.root / "clone"
        git("clone", "-q", str(origin), str(self.clone))
        git("checkout", "-q", "-b", "main", cwd=self.clone)
        (self.clone / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
        self.config = load_config(self.clone / "perfgate.yaml")
        self.store = BaselineStore(self.clone, branch="perf-baselines", remote="origin")

    def push(self, level: float, *, commits: int = 1, title: str = "change") -> str:
        """Commit (``commits`` at once: a merge-queue batch), push, publish its run."""
        for index in range(commits):
            git("commit", "--allow-empty", "-q", "-m", f"{title} {len(self.shas)}.{index}",
                cwd=self.clone, env=IDENTITY)  # fmt: skip
        sha = git("rev-parse", "HEAD", cwd=self.clone).strip()
        git("push", "-q", "origin", "main", cwd=self.clone)
        number = len(self.shas)
        self.shas.append(sha)
        runner = number % len(RUNNERS)
        when = datetime(2026, 3, 2, tzinfo=UTC) + timedelta(hours=number)
        samples = []
        for bucket in self.config.buckets:  # each bucket measured at the same level
            values = tuple(
                level * OFFSETS[runner] * math.exp(0.004 * self.rng.gauss(0.0, 1.0))
                for _ in range(3)
            )
            launch, benchmark = bucket_hashes(bucket)
            result = make_result(bucket.id, samples=values, commit=sha, run_id=f"run-{number}")
            result = replace(
                result,
                identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark),
                ci=replace(result.ci, runner_name=RUNNERS[runner]),
            )
            samples += samples_from_result(
                result, trusted_source="protected_branch", timestamp=when
            )
        self.store.append(samples, f"publish {sha[:7]}")
        return sha

    def env(self, *, event: str = "push", sha: str | None = None, **extra: str) -> dict[str, str]:
        """GitHub's environment for the alert job of the newest push."""
        payload = self.root / "event.json"
        payload.write_text(json.dumps(extra.pop("payload", {}) or {}), encoding="utf-8")
        return {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(payload),
            "GITHUB_REF": "refs/heads/main",
            "GITHUB_SHA": sha or self.shas[-1],
            "GITHUB_REPOSITORY": self.server.repository,
            "GITHUB_API_URL": self.server.base_url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "77",
            "GITHUB_TOKEN": WRITE_TOKEN,
            **extra,
        }


@pytest.fixture
def pushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pushes]:
    """A fresh origin and clone (cwd), the loopback API, and no GITHUB_* from outside."""
    for name in list(__import__("os").environ):
        if name.startswith(("GITHUB_", "RUNNER_")):
            monkeypatch.delenv(name)
    with serve(FakeGitHub()) as server:
        made = Pushes(root=tmp_path, server=server)
        monkeypatch.chdir(made.clone)
        yield made


def run_in_ci(pushes: Pushes, monkeypatch: pytest.MonkeyPatch, args: list[str], **env: str) -> int:
    """``perfgate ARGS`` in GitHub's environment (a push to main unless ``env`` says); its exit."""
    with monkeypatch.context() as patch:
        for name, value in pushes.env(**env).items():
            patch.setenv(name, value)
        return cli.main(args)


def alert(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str
) -> dict[str, object]:
    """Run ``perfgate alert ARGS`` as the alert job; its alerts.json."""
    assert run_in_ci(pushes, monkeypatch, ["alert", *args], **env) == 0
    document = json.loads((pushes.clone / ".perfgate/alerts/alerts.json").read_text())
    assert isinstance(document, dict)
    return document


def step_history(pushes: Pushes, *, batch: int = 1) -> str:
    """Twelve pushes at 100, then the 6 % step in a push of ``batch`` commits; its sha."""
    for _ in range(12):
        pushes.push(100.0)
    return pushes.push(94.0, commits=batch, title="slower solver")


def alerted(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, *, batch: int = 1
) -> tuple[str, str, dict[str, object]]:
    """The step and two more pushes at its level, then the alert job: (good, bad, alerts.json)."""
    step = step_history(pushes, batch=batch)
    good = pushes.shas[-2]
    for _ in range(2):
        pushes.push(94.0)
    return good, step, alert(pushes, monkeypatch, "--post")


def writes(server: FakeGitHub) -> list[tuple[str, str]]:
    """Every request that would change something on GitHub."""
    return [call for call in server.calls() if call[0] in ("POST", "PATCH", "PUT", "DELETE")]


def test_a_step_opens_one_issue_the_next_push_comments_and_recovery_closes_it(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    step = step_history(pushes)
    good = pushes.shas[-2]
    pushes.push(94.0)
    assert alert(pushes, monkeypatch, "--post")["regressions"] == []  # two runs: not yet
    pushes.push(94.0)
    document = alert(pushes, monkeypatch, "--post")
    (issue,) = server.issues_labelled(LABEL)
    state = read_state(issue["body"])
    assert state is not None
    assert (state.key.good, state.key.bad) == (good, step)
    assert issue["state"] == "open" and issue["user"]["login"] == BOT["login"]
    body = issue["body"]
    assert "\u22126." in body and "\u2026" in body  # the change (true minus) with its interval
    assert step[:12] in body and "slower solver" in body  # the suspect commit and its title
    assert "https://acme.github.io/sim/buckets/cartpole__numpy.html" in body
    assert "one commit: it is the change" in body  # nothing to bisect
    (regression,) = document["regressions"]  # type: ignore[misc]
    assert regression["state"] == "open" and -7.5 < regression["alert"]["change_pct"] < -4.5

    # The next push still shows it: one comment on the same issue, none on a re-run.
    pushes.push(94.0)
    alert(pushes, monkeypatch, "--post")
    alert(pushes, monkeypatch, "--post")
    assert len(server.issues_labelled(LABEL)) == 1
    comments = server.comments[issue["number"]]
    assert len(comments) == 1 and "Still slower" in comments[0]["body"]

    # The fix lands: three pushes back at the level close it with the figures.
    for _ in range(3):
        pushes.push(100.0, title="revert")
        alert(pushes, monkeypatch, "--post")
    (closed,) = server.issues_labelled(LABEL)
    assert closed["state"] == "closed" and closed["state_reason"] == "completed"
    assert "Recovered at" in server.comments[issue["number"]][-1]["body"]
    assert not server.dispatches


def test_a_batched_push_dispatches_one_bisect_of_its_range(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    good, step, document = alerted(pushes, monkeypatch, batch=3)
    (request,) = document["bisects"]  # type: ignore[misc]
    (issue,) = server.issues_labelled(LABEL)
    assert "3 commits costs at most" in issue["body"]
    assert request == {"issue": issue["number"], "bucket": "cartpole/numpy", "good": good,
                       "bad": step, "minutes": request["minutes"]}  # fmt: skip
    # The dispatch job (actions: write) starts perfgate-bisect.yml for that range.
    alert(pushes, monkeypatch, "--dispatch")
    (dispatched,) = server.dispatches
    assert dispatched == {
        "workflow": "perfgate-bisect.yml",
        "ref": "main",
        "inputs": {
            "bucket": "cartpole/numpy",
            "good": good,
            "bad": step,
            "dry-run": "false",
            "issue": str(issue["number"]),
        },
    }
    # A range already bisected is never dispatched again.
    pushes.push(94.0)
    assert alert(pushes, monkeypatch, "--post")["bisects"] == []


def test_the_bisect_result_is_posted_on_the_alerts_issue(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = pushes.server
    good, step, _ = alerted(pushes, monkeypatch, batch=3)
    (issue,) = server.issues_labelled(LABEL)
    culprit = git("rev-parse", f"{step}~1", cwd=pushes.clone).strip()
    result = tmp_path / "bisect.json"
    result.write_text(json.dumps({
        "bucket": "cartpole/numpy", "good": good, "bad": step, "candidates": 3,
        "status": "found", "first_bad": culprit, "last_good": f"{step}~2",
        "change_pct": -6.1, "first_bad_step": {"figure": 94.1}, "last_good_step": {"figure": 100.2},
    }))  # fmt: skip
    with monkeypatch.context() as patch:
        for name, value in pushes.env(event="workflow_dispatch").items():
            patch.setenv(name, value)
        assert cli.main(["post-bisect", "--result", str(result), "--issue",
                         str(issue["number"])]) == 0  # fmt: skip
        # Never on an issue that is not this bucket's alert.
        other = server.open_issue("unrelated", "text", [LABEL])
        assert cli.main(["post-bisect", "--result", str(result), "--issue",
                         str(other["number"])]) == 4  # fmt: skip
    (comment,) = server.comments[issue["number"]]
    assert culprit[:12] in comment["body"] and "slower solver 12.1" in comment["body"]
    assert "94.1" in comment["body"] and "100" in comment["body"]
    state = read_state(server.issues[issue["number"]]["body"])
    assert state is not None and state.bisect == {"status": "found", "first_bad": culprit}
    assert other["number"] not in server.comments


def test_unchanged_history_opens_no_issue(pushes: Pushes, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(18):
        pushes.push(100.0)
    document = alert(pushes, monkeypatch, "--post")
    assert document["regressions"] == [] and document["series"] == 1
    assert pushes.server.issues_labelled(LABEL) == []
    assert not [call for call in writes(pushes.server) if "labels" not in call[1]]


@pytest.mark.parametrize(
    ("event", "extra"),
    [
        (
            "pull_request",
            {
                "GITHUB_REF": "refs/pull/9/merge",
                "GITHUB_BASE_REF": "main",
                "GITHUB_HEAD_REF": "feature",
            },
        ),
        (
            "pull_request",
            {
                "GITHUB_REF": "refs/pull/9/merge",
                "GITHUB_BASE_REF": "main",
                "GITHUB_HEAD_REF": "feature",
                "GITHUB_TOKEN": READ_TOKEN,
            },
        ),
        ("workflow_dispatch", {}),
        ("push", {"GITHUB_REF": "refs/heads/feature"}),
    ],
    ids=["pull-request", "fork-read-only-token", "dispatch", "unprotected-branch"],
)
def test_only_a_protected_push_posts(
    pushes: Pushes,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    event: str,
    extra: dict[str, str],
) -> None:
    step_history(pushes)
    for _ in range(2):
        pushes.push(94.0)
    payload = {"pull_request": {"number": 9, "head": {"repo": {"full_name": "mallory/sim"},
                                                      "sha": pushes.shas[-1]},
                                "base": {"ref": "main"}}}  # fmt: skip
    document = alert(pushes, monkeypatch, "--post", event=event, payload=payload, **extra)
    assert len(document["regressions"]) == 1  # type: ignore[arg-type]  # judged, not posted
    assert "alerts were not posted" in capsys.readouterr().out
    assert pushes.server.calls() == []  # not even a read: the token is never used
    assert WRITE_TOKEN not in capsys.readouterr().err


def test_an_accepted_label_stops_the_alert_and_moves_the_window(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    _, step, _ = alerted(pushes, monkeypatch)
    (issue,) = server.issues_labelled(LABEL)
    server.add_label(issue["number"], ACCEPTED_LABEL)
    pushes.push(94.0)
    document = alert(pushes, monkeypatch, "--post")
    (closed,) = server.issues_labelled(LABEL)
    assert closed["state"] == "closed" and closed["state_reason"] == "not_planned"
    assert "Accepted as intended" in server.comments[issue["number"]][-1]["body"]
    # The rule now takes the step as a known level: no regression there at all.
    assert document["regressions"] == []
    assert [(p["action"], p["detail"]) for p in document["posted"]] == [("closed", "accepted")]  # type: ignore[union-attr]
    # Recorded on the baseline branch, and never alerted again.
    recorded = git("show", "origin/perf-baselines:acknowledgements.ndjson", cwd=pushes.clone)
    assert json.loads(recorded)["commit"] == step
    for _ in range(4):
        pushes.push(94.0)
        alert(pushes, monkeypatch, "--post")
    assert len(server.issues_labelled(LABEL)) == 1
    _window_starts_at_the_accepted_change(pushes, step)


def test_a_pull_request_carries_its_acceptance_ahead_of_the_merge(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    for _ in range(12):
        pushes.push(100.0)
    step = pushes.push(94.0, title="exact solver")
    merged = {
        "title": "Exact solver",
        "merged_at": "2026-03-02T12:00:00Z",
        "merge_commit_sha": step,
        "base": {"ref": "main"},
        "labels": [],
    }
    server.commit_pulls[step] = [
        {**merged, "number": 31, "author_association": "MEMBER",
         "body": "A more accurate contact solver.\n\nperfgate-accept: cartpole/numpy 6 % "
                 "slower, intended\nperfgate-accept: nosuch/bucket never recorded"},
        # An outside author could still edit the description after the merge.
        {**merged, "number": 32, "author_association": "CONTRIBUTOR",
         "body": "perfgate-accept: cartpole/numpy metric=primary by a contributor"},
    ]  # fmt: skip
    # Only the push of the merged commit applies it.
    alert(pushes, monkeypatch, "--post")
    for _ in range(4):
        pushes.push(94.0)
        document = alert(pushes, monkeypatch, "--post")
    assert document["regressions"] == [] and server.issues_labelled(LABEL) == []
    recorded = git("show", "origin/perf-baselines:acknowledgements.ndjson", cwd=pushes.clone)
    (line,) = recorded.splitlines()
    assert json.loads(line)["reason"] == "6 % slower, intended"
    _window_starts_at_the_accepted_change(pushes, step)


def _window_starts_at_the_accepted_change(pushes: Pushes, step: str) -> None:
    """A pull request after the change is judged against the new level, not the old one."""
    head = pushes.shas[-1]
    git("checkout", "-q", "--detach", head, cwd=pushes.clone)
    result = make_result("cartpole/numpy", samples=(94.0, 94.2, 93.9), commit=head,
                         event="pull_request", branch="feature")  # fmt: skip
    launch, benchmark = bucket_hashes(pushes.config.buckets[0])
    result = replace(
        result, identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark)
    )
    (row,) = evaluate(pushes.config, pushes.config.buckets, [result], pushes.store).rows
    assert row.judgement is not None and row.judgement.decision is not None
    shift = row.judgement.decision.shift
    assert shift is not None and shift.accepted
    # The window's level is the runs since the accepted commit, every one of them.
    assert shift.kept_runs == len(pushes.shas) - pushes.shas.index(step)
    assert row.verdict.label in ("PASS", "WARN", "INCONCLUSIVE")
    assert "accepted change" in " ".join(row.details)
    git("checkout", "-q", "main", cwd=pushes.clone)


def test_a_token_that_may_not_write_issues_names_the_permission(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    step_history(pushes)
    for _ in range(2):
        pushes.push(94.0)
    with monkeypatch.context() as patch:
        for name, value in pushes.env(GITHUB_TOKEN=READ_TOKEN).items():
            patch.setenv(name, value)
        assert cli.main(["alert", "--post"]) == 3
    err = capsys.readouterr().err
    assert "issues: write" in err and READ_TOKEN not in err


def test_accept_records_once_and_refuses_what_it_cannot_apply(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    step = step_history(pushes)
    args = ["accept", "--bucket", "cartpole/numpy", "--reason", "exact solver", "--remote"]
    assert cli.main([*args, "--commit", step[:10]]) == 0
    assert cli.main([*args, "--commit", step]) == 0  # the same acceptance: recorded once
    recorded = git("show", "origin/perf-baselines:acknowledgements.ndjson", cwd=pushes.clone)
    (line,) = recorded.splitlines()
    assert json.loads(line)["commit"] == step and json.loads(line)["source"] == "accept"
    assert "accepted already" in capsys.readouterr().err
    # A commit off the target branch, an unknown bucket or metric, a pull request's run.
    git("checkout", "-q", "-b", "side", cwd=pushes.clone)
    git("commit", "--allow-empty", "-q", "-m", "side", cwd=pushes.clone, env=IDENTITY)
    assert cli.main([*args, "--commit", "HEAD"]) == 4
    assert "is not on main" in capsys.readouterr().err
    assert cli.main([*args, "--commit", step, "--metric", "nosuch"]) == 4
    assert cli.main(["accept", "--bucket", "nosuch/x", "--commit", step, "--reason", "r"]) == 4
    with monkeypatch.context() as patch:
        for name, value in pushes.env(event="pull_request").items():
            patch.setenv(name, value)
        assert cli.main([*args, "--commit", step]) == 4
    assert "refusing to accept" in capsys.readouterr().err


def test_two_racing_alert_jobs_leave_one_issue(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    step_history(pushes)
    for _ in range(2):
        pushes.push(94.0)
    # A second alert job (the next push's) saw no issue either, and opened its own first.
    alert(pushes, monkeypatch)  # no --post: what that job would write
    document = json.loads((pushes.clone / ".perfgate/alerts/alerts.json").read_text())
    (regression,) = document["regressions"]
    key = {k: regression[k] for k in ("bucket", "hardware", "metric", "good", "bad")}
    marker = json.dumps({"bisect": None, "key": key}, sort_keys=True, separators=(",", ":"))
    server.racing_issues.append(
        {"title": "raced", "body": f"<!-- perfgate-alert {marker} -->\nraced", "labels": [LABEL]}
    )
    alert(pushes, monkeypatch, "--post")
    first, second = server.issues_labelled(LABEL)
    assert first["state"] == "open" and first["title"] == "raced"
    assert (
        second["state"] == "closed"
        and f"#{first['number']}" in (server.comments[second["number"]][0]["body"])
    )


def test_the_bench_confirms_against_the_accepted_level_as_the_gate_judges(
    pushes: Pushes,
) -> None:
    """An accepted change no run has measured yet: the gate judges the window as settling
    on the new level (R18), and so must the bench, which reads the same window."""
    for _ in range(12):
        pushes.push(100.0)
    # The slower solver lands, and its push is not measured yet.
    git("commit", "--allow-empty", "-q", "-m", "slower solver", cwd=pushes.clone, env=IDENTITY)
    git("push", "-q", "origin", "main", cwd=pushes.clone)
    step = git("rev-parse", "HEAD", cwd=pushes.clone).strip()
    bucket = pushes.config.buckets[0]
    result = make_result("cartpole/numpy", samples=(94.0, 94.2, 93.9), commit=step,
                         event="pull_request", branch="feature")  # fmt: skip
    launch, benchmark = bucket_hashes(bucket)
    result = replace(
        result, identity=replace(result.identity, launch_hash=launch, benchmark_hash=benchmark)
    )

    def reasons() -> tuple[Reason, Reason]:
        """The first reason of the gate's window decision, and of the bench's."""
        (row,) = evaluate(pushes.config, pushes.config.buckets, [result], pushes.store).rows
        assert row.judgement is not None and row.judgement.decision is not None
        windows = StoreWindows(pushes.config, pushes.store, say=lambda _: None)
        confirmer = Confirmer(pushes.config, windows)
        bench = confirmer.decisions(bucket, result, final=True)[PRIMARY]
        assert bench is not None
        return row.judgement.decision.reasons[0], bench.reasons[0]

    # Against the old level the run is a 6 % drop the window cannot settle alone, for both.
    assert reasons() == (Reason.UNRESOLVED, Reason.UNRESOLVED)
    args = ["accept", "--bucket", "cartpole/numpy", "--reason", "exact solver", "--remote"]
    assert cli.main([*args, "--commit", step]) == 0
    assert reasons() == (Reason.SHIFT_SETTLING, Reason.SHIFT_SETTLING)


def test_a_huge_commit_title_is_clipped_and_the_issue_still_opens(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three suspects with ~100 KB subjects (markup escaping would grow them further): the
    issue opens within GitHub's 65 536 characters and the bisect is still asked for."""
    for _ in range(12):
        pushes.push(100.0)
    huge = "slower solver " + "<b>x</b>|" * 11_000
    step = pushes.push(94.0, commits=3, title=huge)
    for _ in range(2):
        pushes.push(94.0)
    document = alert(pushes, monkeypatch, "--post")
    (issue,) = pushes.server.issues_labelled(LABEL)
    body = issue["body"]
    assert len(body) < 20_000  # each title clipped, not only the whole body
    assert body.count("slower solver") == 3 and "\u2026" in body
    assert step[:12] in body
    assert [b["bad"] for b in document["bisects"]] == [step]  # type: ignore[index]


def test_an_alert_github_refuses_does_not_stop_the_other_buckets(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = pushes.server
    (pushes.clone / "perfgate.yaml").write_text(TWO_BUCKETS, encoding="utf-8")
    pushes.config = load_config(pushes.clone / "perfgate.yaml")
    step_history(pushes, batch=3)
    for _ in range(2):
        pushes.push(94.0)
    # GitHub refuses the first issue perfgate opens (as it refuses a body over its limit).
    refused = {"message": "Validation Failed: body is too long"}
    server.faults.append(Fault("POST", rf"/repos/{server.repository}/issues", 422, body=refused))
    assert run_in_ci(pushes, monkeypatch, ["alert", "--post"]) == 3  # a malfunction (R8)
    document = json.loads((pushes.clone / ".perfgate/alerts/alerts.json").read_text())
    assert len(document["regressions"]) == 2
    (issue,) = server.issues_labelled(LABEL)
    state = read_state(issue["body"])
    assert state is not None
    opened = state.key.bucket
    (failed,) = document["failed"]
    assert {failed["bucket"], opened} == {"cartpole/numpy", "cartpole/python"}
    assert "body is too long" in failed["error"]
    assert [p["action"] for p in document["posted"]] == ["opened", "bisect-requested"]
    assert [b["bucket"] for b in document["bisects"]] == [opened]
    said = capsys.readouterr()
    assert f"{failed['bucket']}" in said.out + said.err and "body is too long" in said.out
    # The dispatch job still starts the other bucket's bisect.
    alert(pushes, monkeypatch, "--dispatch")
    assert [d["inputs"]["bucket"] for d in server.dispatches] == [opened]
    # The next push opens the issue GitHub refused.
    pushes.push(94.0)
    alert(pushes, monkeypatch, "--post")
    assert len(server.issues_labelled(LABEL)) == 2


def test_accept_in_ci_only_from_a_push_to_the_protected_target(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    step = step_history(pushes)
    args = ["accept", "--bucket", "cartpole/numpy", "--reason", "exact solver", "--remote",
            "--commit", step]  # fmt: skip
    assert run_in_ci(pushes, monkeypatch, args, GITHUB_REF="refs/heads/feature") == 4
    assert "refusing to accept" in capsys.readouterr().err
    recorded = git("ls-tree", "--name-only", "origin/perf-baselines", cwd=pushes.clone)
    assert "acknowledgements.ndjson" not in recorded
    assert run_in_ci(pushes, monkeypatch, args) == 0  # the push to main may
    recorded = git("show", "origin/perf-baselines:acknowledgements.ndjson", cwd=pushes.clone)
    assert json.loads(recorded)["commit"] == step


def test_accept_refuses_a_target_that_is_not_a_protected_target_branch(
    pushes: Pushes, capsys: pytest.CaptureFixture[str]
) -> None:
    """An acceptance is stored by commit: one for a commit of ``side`` would apply on main
    once side is merged, so only a gated, protected branch's commits are accepted."""
    step_history(pushes)
    git("checkout", "-q", "-b", "side", cwd=pushes.clone)
    git("commit", "--allow-empty", "-q", "-m", "side", cwd=pushes.clone, env=IDENTITY)
    git("push", "-q", "origin", "side", cwd=pushes.clone)
    side = git("rev-parse", "HEAD", cwd=pushes.clone).strip()
    args = ["accept", "--bucket", "cartpole/numpy", "--reason", "exact solver", "--remote"]
    assert cli.main([*args, "--commit", side, "--target", "side"]) == 4
    err = capsys.readouterr().err
    assert "--target side" in err and "target_branches" in err
    recorded = git("ls-tree", "--name-only", "origin/perf-baselines", cwd=pushes.clone)
    assert "acknowledgements.ndjson" not in recorded


def test_a_follow_up_marker_by_anyone_else_does_not_silence_the_push(
    pushes: Pushes, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = pushes.server
    alerted(pushes, monkeypatch)
    (issue,) = server.issues_labelled(LABEL)
    sha = pushes.push(94.0)
    server.add_comment(issue["number"], f"<!-- perfgate-alert-push {sha} -->\nnothing new",
                       user=HUMAN)  # fmt: skip
    alert(pushes, monkeypatch, "--post")
    alert(pushes, monkeypatch, "--post")  # perfgate's own marker still counts: one comment

    def ours() -> list[str]:
        return [c["body"] for c in server.comments[issue["number"]]
                if c["user"]["login"] == BOT["login"]]  # fmt: skip

    (comment,) = ours()
    assert "Still slower" in comment and sha[:12] in comment
