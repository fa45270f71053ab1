"""publish when the branch cannot be written: a refusing hook, a deadline, pending samples (R9).

Real git throughout: a bare origin whose server-side hooks refuse pushes or keep
moving the branch (the way a rival publisher would), and the publish verb's exit code.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.config import load_config
from perfgate.result import write_result
from perfgate.util.git import git
from tests.factories import make_result, of_experiment
from tests.git_support import MakeClone

LIVE = "samples/cpu-test/cartpole/numpy.ndjson"
CONFIG = """
version: 1
gate:
  mode: blocking
  protected_branches: [main]
  baseline: {{publish_deadline_minutes: {deadline}}}
buckets:
  - task: cartpole
    backends: [{{physics: numpy}}]
"""
REFUSE = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = "refs/heads/perf-baselines" ]; then
    echo "baselines are frozen during the migration" >&2
    exit 1
  fi
done
exit 0
"""
# An update hook that lands a rival commit first, every time: a race this push never wins.
RIVAL = """#!/bin/sh
[ "$1" = "refs/heads/perf-baselines" ] || exit 0
if [ "$2" != "0000000000000000000000000000000000000000" ]; then
  next=$(git -c user.name=rival -c user.email=r@x commit-tree "$2^{tree}" -p "$2" -m rival)
  git update-ref refs/heads/perf-baselines "$next" "$2"
fi
exit 0
"""


@pytest.fixture
def checkout(
    origin_clone: MakeClone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, str]:
    """A bare origin and a clone (the working directory) on a push to main."""
    made = origin_clone()
    origin, clone, sha = made.origin, made.path, made.head
    write_config(clone, deadline=10)
    payload = tmp_path / "push.json"
    payload.write_text(json.dumps({}))
    for name, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(payload),
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_SHA": sha,
        "GITHUB_REPOSITORY": "org/repo",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    return origin, clone, sha


def write_config(clone: Path, deadline: float) -> None:
    (clone / "perfgate.yaml").write_text(CONFIG.format(deadline=deadline), encoding="utf-8")


def hook(origin: Path, name: str, script: str | None) -> None:
    path = origin / "hooks" / name
    if script is None:
        path.unlink()
        return
    path.write_text(script, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def artifacts(directory: Path, sha: str, value: float, run: str) -> Path:
    """A bench artifact of the config in the working directory (the clone)."""
    result = make_result("cartpole/numpy", value, commit=sha, run_id=run)
    write_result(of_experiment(result, load_config(Path("perfgate.yaml"))), directory)
    return directory


def publish(results: Path, report: Path, *pending: Path) -> int:
    argv = ["publish", "--results", str(results), "--report-dir", str(report)]
    for path in pending:
        argv += ["--pending", str(path)]
    return main(argv)


def stored_values(origin: Path) -> list[float]:
    text = git("show", f"perf-baselines:{LIVE}", cwd=origin)
    return sorted(json.loads(line)["value"] for line in text.splitlines())


def test_a_push_refused_by_a_server_hook_is_reported_as_such_and_its_samples_kept(
    checkout, tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    origin, _, sha = checkout
    hook(origin, "pre-receive", REFUSE)
    began = time.monotonic()
    assert publish(artifacts(tmp_path / "r1", sha, 100.0, "1"), tmp_path / "report") == 3
    # Refused at once, not retried for the 10-minute deadline as if it were a race.
    assert time.monotonic() - began < 60
    said = capsys.readouterr().err
    assert "refused the push" in said
    assert "pre-receive hook declined" in said
    assert "baselines are frozen during the migration" in said
    assert "others kept winning" not in said and "gave up" not in said
    pending = tmp_path / "report" / "pending-samples.ndjson"
    assert str(pending) in said
    assert [json.loads(line)["value"] for line in pending.read_text().splitlines()] == [100.0]
    assert git("ls-remote", str(origin), "perf-baselines") == ""


def test_kept_samples_land_with_a_later_publish_once_however_often_they_are_given(
    checkout, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    origin, _, sha = checkout
    hook(origin, "pre-receive", REFUSE)
    assert publish(artifacts(tmp_path / "r1", sha, 100.0, "1"), tmp_path / "job1") == 3
    kept = tmp_path / "job1" / "pending-samples.ndjson"
    hook(origin, "pre-receive", None)
    # The next run's job: its own figure, and the file the failed job uploaded.
    assert publish(artifacts(tmp_path / "r2", sha, 101.0, "2"), tmp_path / "job2", kept) == 0
    assert stored_values(origin) == [100.0, 101.0]
    assert publish(artifacts(tmp_path / "r3", sha, 102.0, "3"), tmp_path / "job3", kept) == 0
    assert publish(artifacts(tmp_path / "r3", sha, 102.0, "3"), tmp_path / "job3", kept.parent) == 0
    assert stored_values(origin) == [100.0, 101.0, 102.0]


def test_a_retried_job_lands_what_its_failed_attempt_kept(checkout, tmp_path) -> None:  # type: ignore[no-untyped-def]
    origin, _, sha = checkout
    hook(origin, "pre-receive", REFUSE)
    report = tmp_path / "report"
    assert publish(artifacts(tmp_path / "r1", sha, 100.0, "1"), report) == 3
    hook(origin, "pre-receive", None)
    assert publish(artifacts(tmp_path / "r2", sha, 101.0, "2"), report) == 0
    assert stored_values(origin) == [100.0, 101.0]
    assert not (report / "pending-samples.ndjson").exists()


def test_samples_that_miss_the_deadline_are_kept_and_land_with_the_next_publish(
    checkout, tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    origin, clone, sha = checkout
    assert publish(artifacts(tmp_path / "r0", sha, 99.0, "0"), tmp_path / "job0") == 0
    hook(origin, "update", RIVAL)
    write_config(clone, deadline=0.05)  # three seconds of lost races
    began = time.monotonic()
    assert publish(artifacts(tmp_path / "r1", sha, 100.0, "1"), tmp_path / "job1") == 3
    assert 3 <= time.monotonic() - began < 60
    said = capsys.readouterr().err
    assert "gave up landing samples" in said and "race" in said
    kept = tmp_path / "job1" / "pending-samples.ndjson"
    assert str(kept) in said
    # Nothing waits on the origin outside the branch: the run's artifact keeps the samples.
    assert git("for-each-ref", "refs/perfgate/", cwd=origin) == ""

    hook(origin, "update", None)
    write_config(clone, deadline=10)
    assert publish(artifacts(tmp_path / "r2", sha, 101.0, "2"), tmp_path / "job2", kept) == 0
    assert stored_values(origin) == [99.0, 100.0, 101.0]
