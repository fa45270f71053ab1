"""gate and publish over hostile artifacts: no all-clear over NaN, no foreign buckets (R3, R14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.result import write_result
from perfgate.util.git import git
from tests.factories import make_result
from tests.integration.judge import test_gate_cli
from tests.integration.judge.test_gate_cli import github_env

# The same clone of a bare origin, with a blocking one-bucket config.
checkout = test_gate_cli.checkout


def refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def nan_artifact(directory: Path, sha: str, literal: str) -> Path:
    """A pull request's artifact for cartpole/numpy whose figure is ``literal`` (NaN, ...)."""
    path = write_result(
        make_result("cartpole/numpy", 123.0, commit=sha, run_id="9", event="pull_request"),
        directory,
    )
    path.write_text(path.read_text().replace('"value": 123.0', f'"value": {literal}'))
    return path


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_figure_against_a_full_window_never_passes(
    checkout,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    literal: str,
) -> None:
    clone, sha = checkout
    store = BaselineStore(clone, branch="perf-baselines", remote="origin")
    store.append(
        [samples_from_result(make_result("cartpole/numpy", 100.0 + i, commit=sha, run_id=str(i)),
                            trusted_source="t")[0] for i in range(6)],
        "window",
    )  # fmt: skip
    github_env(monkeypatch, tmp_path, "pull_request", sha)
    nan_artifact(tmp_path / "results", sha, literal)
    report = tmp_path / "report"
    assert main(["gate", "--results", str(tmp_path / "results"), "--report-dir", str(report)]) == 2
    verdict = json.loads((report / "verdict.json").read_text(), parse_constant=refuse_constant)
    assert verdict["overall_verdict"] == "HARD_FAILURE"
    assert "No meaningful performance regressions" not in (report / "summary.md").read_text()
    assert "overall_verdict=HARD_FAILURE" in (tmp_path / "output.txt").read_text()


def test_publish_never_writes_a_non_finite_figure(
    checkout,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "push", sha)
    path = nan_artifact(tmp_path / "r1", sha, "NaN")
    path.write_text(path.read_text().replace('"pull_request"', '"push"'))
    assert main(["publish", "--results", str(tmp_path / "r1")]) == 3  # nothing readable at all
    assert git("ls-remote", "origin", "perf-baselines", cwd=clone) == ""


def test_publish_refuses_a_bucket_that_is_not_in_the_config(
    checkout,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "push", sha)
    results = tmp_path / "results"
    write_result(make_result("cartpole/numpy", 100.0, commit=sha, run_id="1"), results)
    write_result(make_result("intruder/numpy", 100.0, commit=sha, run_id="1"), results)
    assert main(["publish", "--results", str(results)]) == 4
    err = capsys.readouterr().err
    assert "buckets not in perfgate.yaml: intruder/numpy" in err and err.count("\n") == 1
    assert git("ls-remote", "origin", "perf-baselines", cwd=clone) == ""


def test_gate_reports_a_foreign_bucket_but_never_judges_it(
    checkout,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    _, sha = checkout
    github_env(monkeypatch, tmp_path, "pull_request", sha)
    results = tmp_path / "results"
    for bucket in ("cartpole/numpy", "intruder/numpy"):
        write_result(
            make_result(bucket, 100.0, commit=sha, run_id="3", event="pull_request"), results
        )
    report = tmp_path / "report"
    assert main(["gate", "--results", str(results), "--report-dir", str(report)]) == 0
    verdict = json.loads((report / "verdict.json").read_text())
    assert [row["bucket"] for row in verdict["rows"]] == ["cartpole/numpy"]
    assert verdict["coverage"]["unexpected"] == ["intruder/numpy"]
    assert any("intruder/numpy" in note and "not judged" in note for note in verdict["notes"])
