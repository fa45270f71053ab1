"""What published runs cost lands with their samples and `perfgate spend` sums it (R17).

Real git: a bare origin, a clone on a push to main, the publish and spend verbs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.config import load_config
from perfgate.errors import ExitCode
from perfgate.result import FailurePhase, Spend, SpendKind, SpendLine, write_result
from perfgate.util.git import git
from tests.factories import make_result, of_experiment
from tests.git_support import MakeClone

LEDGER = "spend/cpu-test/2026-11-30.ndjson"
CONFIG = """
version: 1
gate: {mode: blocking, protected_branches: [main]}
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""


@pytest.fixture
def checkout(
    origin_clone: MakeClone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, str]:
    """A bare origin and a clone (the working directory) on a push to main."""
    made = origin_clone()
    (made.path / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    payload = tmp_path / "push.json"
    payload.write_text("{}")
    push = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push",
            "GITHUB_EVENT_PATH": str(payload), "GITHUB_REF": "refs/heads/main",
            "GITHUB_SHA": made.head, "GITHUB_REPOSITORY": "org/repo"}  # fmt: skip
    for name, value in push.items():
        monkeypatch.setenv(name, value)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    return made.origin, made.path, made.head


def cost(setup_s: float, launch_s: float, retries: int = 0) -> Spend:
    lines = {SpendKind.MEASURE: SpendLine(launches=2, seconds=2 * launch_s)}
    if setup_s:
        lines[SpendKind.SETUP] = SpendLine(seconds=setup_s)
    if retries:
        lines[SpendKind.RETRY] = SpendLine(launches=retries, seconds=retries * launch_s)
    return Spend(lines=lines)


def artifacts(directory: Path, sha: str, run: str, *results: tuple[str, Spend, bool]) -> Path:
    """Bench artifacts of the working directory's config, one per (bucket, spend, healthy)."""
    config = load_config(Path("perfgate.yaml"))
    for bucket, spent, healthy in results:
        result = make_result(bucket, 100.0 if healthy else None, commit=sha, run_id=run,
                             exit_code=0 if healthy else 1,
                             phase=None if healthy else FailurePhase.INIT)  # fmt: skip
        write_result(replace(of_experiment(result, config), spend=spent), directory)
    return directory


def publish(results: Path, report: Path) -> int:
    return main(["publish", "--results", str(results), "--report-dir", str(report)])


def ledger(origin: Path) -> list[dict[str, object]]:
    text = git("show", f"perf-baselines:{LEDGER}", cwd=origin)
    return [json.loads(line) for line in text.splitlines()]


def test_a_publish_lands_what_its_runs_cost_with_their_samples_once(
    checkout: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin, _, sha = checkout
    results = artifacts(tmp_path / "r1", sha, "11", ("cartpole/numpy", cost(300.0, 600.0), True))
    assert publish(results, tmp_path / "report") == 0
    lines = ledger(origin)
    assert [(line["run"], line["bucket"]) for line in lines] == [("11.1", "cartpole/numpy")]
    # One commit carries both: the samples and the line.
    changed = git("show", "--name-only", "--format=", "perf-baselines", cwd=origin).split()
    assert LEDGER in changed and "samples/cpu-test/cartpole/numpy.ndjson" in changed
    assert "recorded what 1 bucket run(s) cost" in capsys.readouterr().err
    # The same artifacts published again (a job re-run) add nothing.
    assert publish(results, tmp_path / "report") == 0
    assert len(ledger(origin)) == 1


def test_a_run_whose_samples_are_refused_still_counts_what_it_cost(
    checkout: tuple[Path, Path, str], tmp_path: Path
) -> None:
    origin, _, sha = checkout
    results = artifacts(tmp_path / "r1", sha, "12", ("cartpole/numpy", cost(0.0, 600.0, 1), False))
    assert publish(results, tmp_path / "report") == ExitCode.HARD_FAILURE  # as the gate's
    (line,) = ledger(origin)
    assert line["run"] == "12.1"
    samples = git("ls-tree", "-r", "--name-only", "perf-baselines", "--", "samples/", cwd=origin)
    assert samples == "", "no figure of a failed run is a baseline"


def test_spend_sums_the_branch_per_day_bucket_and_run_and_says_setup_and_launch(
    checkout: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, sha = checkout
    for run, setup_s, launch_s in (("21", 300.0, 600.0), ("22", 420.0, 480.0)):
        results = artifacts(
            tmp_path / run, sha, run, ("cartpole/numpy", cost(setup_s, launch_s), True)
        )
        assert publish(results, tmp_path / "report") == 0
    capsys.readouterr()
    assert main(["spend", "--json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["runs"] == 2
    assert document["runner_minutes"] == pytest.approx(5 + 20 + 7 + 16)
    assert document["per_run"]["max"] == pytest.approx(25.0)
    assert document["setup_minutes"] == pytest.approx(6.0)
    assert document["launch_minutes"] == {"cartpole/numpy": pytest.approx(9.0)}
    assert document["by_bucket"] == [{"bucket": "cartpole/numpy", "runs": 2, "minutes": 48.0}]
    assert "48.0 runner-minutes in 2 run(s)" in err
    assert "a job's setup: 6.00 min (the median" in err


def test_spend_on_a_branch_without_a_ledger_says_so_and_a_corrupt_line_is_named(
    checkout: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, clone, sha = checkout
    assert main(["spend"]) == 0
    assert "no run's cost is recorded on perf-baselines" in capsys.readouterr().out
    results = artifacts(tmp_path / "r1", sha, "31", ("cartpole/numpy", cost(300.0, 600.0), True))
    assert publish(results, tmp_path / "report") == 0
    # Someone's hand edit leaves a line that is not a record: it is named, the rest summed.
    git("fetch", "-q", "origin", "perf-baselines:perf-baselines", cwd=clone)
    work = tmp_path / "edit"
    git("worktree", "add", "-q", str(work), "perf-baselines", cwd=clone)
    with (work / LEDGER).open("a", encoding="utf-8") as handle:
        handle.write("{half a line\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "edit", cwd=work)
    git("push", "-q", "origin", "perf-baselines", cwd=clone)
    capsys.readouterr()
    assert main(["spend"]) == 0
    out, err = capsys.readouterr()
    assert f"perf-baselines:{LEDGER}:2: not a spend record" in err
    assert "in 1 run(s)" in out
    assert main(["spend", "--days", "0"]) == ExitCode.USAGE
