"""What a bucket run cost its runner, recorded in its artifact and summed on every surface
(R17): real subprocesses through the command driver, and the bench CLI as CI runs it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.result import SpendKind, read_result
from tests.factories import fake_matrix
from tests.integration.run.test_bench import artifact, fake_bucket, run


def test_a_retried_attempt_is_billed_as_a_retry_beside_the_sample_it_made(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "stale_then_new", retries=1))
    artifact(result, tmp_path / "results")
    spend = result.spend
    assert spend is not None
    assert (spend.of(SpendKind.MEASURE).launches, spend.of(SpendKind.RETRY).launches) == (1, 1)
    assert spend.launches == len(result.timings.attempts) == 2
    # Every launch's wall time, and nothing else: no job start was given, no wait was taken.
    walls = sum(a.wall_s for a in result.timings.attempts)
    assert spend.seconds == pytest.approx(walls, abs=0.002)
    assert SpendKind.SETUP not in spend.lines and SpendKind.WAIT not in spend.lines


def test_samples_past_the_repeats_are_billed_as_confirmation(tmp_path: Path) -> None:
    bucket = fake_bucket(tmp_path, "counting", repeats=2, max_repeats=10)
    asked: list[int] = []

    def confirm(*_: object) -> bool:
        asked.append(1)
        return len(asked) < 3  # two more samples, then settled

    result = run(tmp_path, bucket, confirm)
    assert result.spend is not None
    assert result.spend.of(SpendKind.MEASURE).launches == 2
    assert result.spend.of(SpendKind.CONFIRM).launches == 2
    confirming = sum(s.wall_s for s in result.metric.samples[2:])
    assert result.spend.of(SpendKind.CONFIRM).seconds == pytest.approx(confirming, abs=0.002)


def _matrix(tmp_path: Path) -> Path:
    """Two command buckets of one fake benchmark, one sample each."""
    return fake_matrix(tmp_path, "ok", ("one", "two"))


def test_the_jobs_setup_is_billed_once_to_its_first_bucket_and_the_gate_sums_every_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    config, out, report = _matrix(tmp_path), tmp_path / "results", tmp_path / "report"
    # As the rendered bench job's first step records it: the job began 90 s ago.
    monkeypatch.setenv("PERFGATE_JOB_STARTED", str(int(time.time()) - 90))
    code = cli.main(["bench", "--config", str(config), "--out", str(out), "--no-judge"])
    assert code == 0
    first, second = (read_result(out / f"fake__{name}.json") for name in ("one", "two"))
    assert first.spend is not None and second.spend is not None
    assert 89.0 <= first.spend.of(SpendKind.SETUP).seconds <= 150.0
    assert SpendKind.SETUP not in second.spend.lines, "setup is the job's, billed once"
    assert second.spend.of(SpendKind.MEASURE).launches == 1
    code = cli.main(["gate", "--config", str(config), "--results", str(out),
                     "--report-dir", str(report)])  # fmt: skip
    assert code == 0
    verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    rows = [row["runner_minutes"] for row in verdict["rows"]]
    total = (first.spend.seconds + second.spend.seconds) / 60.0
    assert sum(rows) == pytest.approx(total, abs=0.002)
    assert verdict["cost"]["runner_minutes"] == pytest.approx(total, abs=0.002)
    assert verdict["cost"]["by_kind"]["setup"]["minutes"] >= 89.0 / 60.0
    assert verdict["cost"]["launches"] == 2 and verdict["cost"]["unrecorded"] == []
    # The summary and the terminal say the same total.
    said = f"{verdict['cost']['runner_minutes']:.1f} min"
    assert f"Runner time: **{said}** in 2 launches (setup " in (report / "summary.md").read_text()
    assert f"Runner time: {said} in 2 launches" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["yesterday", "nan", str(int(time.time()) + 3600), "1e300"])
def test_a_job_start_that_is_no_time_of_this_job_is_said_and_never_billed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERFGATE_JOB_STARTED", value)
    out = tmp_path / "results"
    code = cli.main(["bench", "--config", str(_matrix(tmp_path)), "--out", str(out),
                     "--bucket", "fake/one", "--no-judge"])  # fmt: skip
    assert code == 0
    spend = read_result(out / "fake__one.json").spend
    assert spend is not None and SpendKind.SETUP not in spend.lines
    assert "is not when this job began" in capsys.readouterr().err


def _flaky_matrix(tmp_path: Path, backends: int, launch_s: float) -> Path:
    """``backends`` buckets of a benchmark whose every first attempt fails after
    ``launch_s``: each sample needs a retry as long as its launch."""
    return fake_matrix(tmp_path, "slow_flaky", [f"b{k}" for k in range(backends)], retries=1,
                       launch_minutes=launch_s / 60.0)  # fmt: skip


def test_the_run_budget_caps_what_every_bucket_spends_beyond_its_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retries are optional spending: the run's budget pays for as many as finish within
    it, and a retry it cannot afford is not started (the bucket fails, saying why)."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    launch_s = 0.4
    monkeypatch.setenv("FAKE_LAUNCH_S", str(launch_s))
    budget_s = 2.5 * launch_s
    out = tmp_path / "results"
    code = cli.main(["bench", "--config", str(_flaky_matrix(tmp_path, 4, launch_s)),
                     "--out", str(out), "--no-judge",
                     "--budget-minutes", str(budget_s / 60.0)])  # fmt: skip
    results = [read_result(path) for path in sorted(out.glob("*.json"))]
    assert len(results) == 4
    retried = [r for r in results if r.health.retried]
    refused = [r for r in results if r.health.not_retried]
    assert retried and refused, "some retries fit the budget and some did not"
    assert code == 2, "a bucket whose retry was refused is a HARD_FAILURE"
    for result in refused:
        assert "the run's budget cannot afford a retry" in (result.health.not_retried or "")
    spent = sum(r.spend.of(SpendKind.RETRY).seconds for r in results if r.spend)
    assert spent <= budget_s, f"retries took {spent:.2f} s of a {budget_s:.2f} s budget"
    # Unlimited (no budget anywhere): every sample takes its retry.
    out = tmp_path / "unlimited"
    (tmp_path / "u").mkdir()
    code = cli.main(["bench", "--config", str(_flaky_matrix(tmp_path / "u", 4, launch_s)),
                     "--out", str(out), "--no-judge"])  # fmt: skip
    assert code == 0
    assert all(read_result(p).health.retried for p in out.glob("*.json"))
