"""The GateReport: coverage, the additive description, headlines and exit codes (R5, R6, R8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.artifacts import load_results
from perfgate.config import Config, load_config
from perfgate.errors import GateMalfunction
from perfgate.judge.gate import ReportContext, build_report
from perfgate.judge.verdicts import Verdict
from perfgate.report.summary import summary_markdown
from perfgate.report.verdict import report_json
from perfgate.result import FailurePhase, StaleImage, write_result
from tests.factories import make_result, windows_of

STEADY = [99.0, 100.0, 101.0, 100.0, 99.0, 101.0]
# Three samples 20 % down: a confirmed regression (a BLOCK needs at least three).
SLOW = [80.0, 80.1, 79.9]
ALL_CLEAR = "No meaningful performance regressions detected"


def config(tmp_path: Path, mode: str = "advisory") -> Config:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        f"""
version: 1
gate: {{mode: {mode}, confirm: repeat}}
buckets:
  - task: cartpole
    backends: [{{physics: numpy}}, {{physics: python}}]
  - task: pendulum
    backends: [{{physics: numpy}}]
""",
        encoding="utf-8",
    )
    return load_config(path)


def report_for(cfg: Config, results, windows=None):  # type: ignore[no-untyped-def]
    if windows is None:
        windows = {b.id: STEADY for b in cfg.buckets}
    return build_report(config=cfg, expected=cfg.buckets, results=results,
                        windows=windows_of(windows))  # fmt: skip


def healthy_all(cfg: Config) -> list:  # type: ignore[type-arg]
    return [make_result(b.id, 100.0) for b in cfg.buckets]


def test_a_full_healthy_run_is_an_all_clear(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    report = report_for(cfg, healthy_all(cfg))
    assert report.overall is Verdict.PASS
    assert report.status_state == "success"
    assert any(ALL_CLEAR in h for h in report.headlines)
    assert not report.coverage.missing


def test_a_partial_matrix_is_never_an_all_clear(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    report = report_for(cfg, healthy_all(cfg)[:2])
    assert report.coverage.missing == ("pendulum/numpy",)
    assert report.overall is Verdict.HARD_FAILURE
    assert report.status_state == "failure"
    assert not any(ALL_CLEAR in h for h in report.headlines)
    assert "pendulum/numpy" in report.description
    assert ALL_CLEAR not in summary_markdown(report)
    assert "did not report" in summary_markdown(report)


def test_a_crossed_floor_is_named_as_the_blocking_signal(tmp_path: Path) -> None:
    path = tmp_path / "floors.yaml"
    path.write_text(
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
        "    floors: {'cpu-*': {numpy: [{name: sanity-floor, value: 1000}]}}\n"
    )
    cfg = load_config(path)
    report = report_for(
        cfg, [make_result("cartpole/numpy", 900.0)], {"cartpole/numpy": [900.0] * 6}
    )
    assert report.overall is Verdict.BLOCK
    assert "crossed floor sanity-floor" in report.description


def test_duplicate_artifacts_count_once_and_the_latest_attempt_wins(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    results = healthy_all(cfg)
    results.append(make_result("cartpole/numpy", 50.0, run_attempt="2"))
    report = report_for(cfg, results)
    assert report.coverage.reported == cfg.bucket_ids()
    assert report.coverage.duplicates == ("cartpole/numpy",)
    row = next(r for r in report.rows if r.bucket.id == "cartpole/numpy")
    assert row.result is not None and row.result.metric.value == 50.0
    assert len(report.rows) == 3


def test_an_excused_crash_beside_a_real_block_names_both(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    stale = StaleImage(package="newton", symbol="newton.X", installed="1.0", pinned="1.1")
    results = [
        make_result("cartpole/numpy", samples=SLOW),
        make_result(
            "cartpole/python", None, exit_code=1, phase=FailurePhase.IMPORT, stale_image=stale
        ),
        make_result("pendulum/numpy", 100.0),
    ]
    report = report_for(cfg, results)
    assert report.overall is Verdict.HARD_FAILURE
    assert "regression" in report.description and "cartpole/numpy" in report.description
    assert "stale CI image" in report.description and "cartpole/python" in report.description
    assert any("stale" in h for h in report.headlines)
    assert any("regressions were detected" in h for h in report.headlines)


def test_a_crash_beside_a_block_and_a_missing_bucket_names_all_three(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    results = [
        make_result("cartpole/numpy", samples=SLOW),
        make_result("cartpole/python", None, exit_code=1, phase=FailurePhase.RUNTIME),
    ]
    report = report_for(cfg, results)
    assert report.description.startswith("1 failed to run, 1 did not report, 1 regression(s) — ")
    for text in (
        "failed: cartpole/python",
        "missing: pendulum/numpy",
        "regressed: cartpole/numpy",
    ):
        assert text in report.description
    assert len(report.headlines) == 3


@pytest.mark.parametrize(
    ("mode", "values", "expected_exit"),
    [
        # R8: the exit code tells the verdict in every mode; advisory only means the check
        # is not yet required in branch protection.
        ("advisory", [80.0, 100.0, 100.0], 1),
        ("advisory", [None, 100.0, 100.0], 2),
        ("blocking", [80.0, 100.0, 100.0], 1),
        ("blocking", [None, 80.0, 100.0], 2),
        ("blocking", [100.0, 100.0, 100.0], 0),
        ("blocking", [100.0, 97.0, 100.0], 0),  # a WARN never fails the exit code
        ("advisory, always_pass: false", [None, 80.0, 100.0], 2),
        # The explicit opt-in to green runs: exit 0 whatever the verdict.
        ("advisory, always_pass: true", [80.0, 100.0, 100.0], 0),
        ("blocking, always_pass: true", [None, 80.0, 100.0], 0),
    ],
)
def test_exit_code_answers_did_the_gate_run(tmp_path, mode, values, expected_exit) -> None:  # type: ignore[no-untyped-def]
    cfg = config(tmp_path, mode)
    results = [
        make_result(b.id, v, samples=[v, v * 1.001, v * 0.999] if v is not None else (),
                    exit_code=0 if v is not None else 1,
                    phase=None if v is not None else FailurePhase.RUNTIME)
        for b, v in zip(cfg.buckets, values, strict=True)
    ]  # fmt: skip
    assert report_for(cfg, results).exit_code == expected_exit


def test_no_baseline_everywhere_is_a_warn_not_a_pass(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    report = report_for(cfg, healthy_all(cfg), windows={})
    assert report.overall is Verdict.WARN
    assert set(report.underfilled) == set(cfg.bucket_ids())
    assert not any(ALL_CLEAR in h for h in report.headlines)


def test_artifacts_for_unknown_buckets_are_ignored_and_noted(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    report = report_for(cfg, [*healthy_all(cfg), make_result("ghost/numpy", 1.0)])
    assert report.coverage.unexpected == ("ghost/numpy",)
    assert any("ghost/numpy" in note for note in report.notes)
    assert report.overall is Verdict.PASS


def test_verdict_json_has_the_documented_fields(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    data = report_json(report_for(cfg, healthy_all(cfg)[:2]))
    assert data["overall_verdict"] == "HARD_FAILURE"
    assert data["coverage"]["missing"] == ["pendulum/numpy"]
    row = data["rows"][0]
    assert {"bucket", "verdict", "reasons", "value", "baseline"} <= set(row)
    assert row["baseline"]["median"] == pytest.approx(100.0, rel=1e-3)
    assert row["statistics"]["policy"] == "calibrated"
    assert row["statistics"]["run_samples"] == 1
    assert data["policy"] == {
        "name": "calibrated",
        "false_block_rate": 0.001,
        "min_drop_pct": 3.0,
        "max_runs": 20,
        "confirm": "repeat",
    }


def test_no_artifacts_at_all_is_a_malfunction(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    with pytest.raises(GateMalfunction) as caught:
        load_results(tmp_path / "results")
    assert caught.value.exit_code == 3
    with pytest.raises(GateMalfunction):
        load_results(tmp_path / "absent")


def test_results_are_found_in_nested_artifact_directories(tmp_path: Path) -> None:
    write_result(make_result("cartpole/numpy"), tmp_path / "results" / "bench-cartpole-numpy")
    loaded = load_results(tmp_path / "results")
    assert [r.bucket.id for r in loaded.results] == ["cartpole/numpy"]


def test_one_unreadable_artifact_costs_its_bucket_and_names_the_file(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    results_dir = tmp_path / "results"
    write_result(healthy_all(cfg)[0], results_dir)
    (results_dir / "pendulum__numpy.json").write_text('{"x": 1}')
    (results_dir / "stray.json").write_text("not json")
    loaded = load_results(results_dir)
    assert len(loaded.results) == 1
    assert sorted(u.path.name for u in loaded.unreadable) == ["pendulum__numpy.json", "stray.json"]
    report = build_report(
        config=cfg, expected=cfg.buckets, results=loaded.results,
        windows=windows_of({b.id: STEADY for b in cfg.buckets}), unreadable=loaded.unreadable,
    )  # fmt: skip
    row = next(r for r in report.rows if r.bucket.id == "pendulum/numpy")
    assert row.verdict is Verdict.HARD_FAILURE and row.reasons == ("UNREADABLE_ARTIFACT",)
    assert row.details[0].startswith(f"{results_dir / 'pendulum__numpy.json'}: not a valid")
    assert report.coverage.missing == ("cartpole/python",)
    assert report.overall is Verdict.HARD_FAILURE
    # A file no bucket can be told from is still named, as a note.
    assert any("stray.json" in note for note in report.notes)


def test_the_window_is_read_for_the_artifact_that_is_judged(tmp_path: Path) -> None:
    from perfgate.judge.gate import latest_per_bucket

    first = make_result("cartpole/numpy", 100.0, hardware="gpu-fast", run_attempt="1")
    retried = make_result("cartpole/numpy", 50.0, hardware="gpu-slow", run_attempt="2")
    for order in ([first, retried], [retried, first]):
        assert latest_per_bucket(order)["cartpole/numpy"] is retried


def test_verdict_json_stays_within_the_schema_caps_however_many_notes(tmp_path: Path) -> None:
    from perfgate.github.handoff import validate_verdict

    cfg = config(tmp_path)
    notes = [f"{cfg.path}:{n}: corrupt baseline line skipped" for n in range(120)]
    report = build_report(
        config=cfg, expected=cfg.buckets, results=healthy_all(cfg),
        windows=windows_of({b.id: STEADY for b in cfg.buckets}),
        context=ReportContext(notes=notes),
    )  # fmt: skip
    data = report_json(report)
    assert len(data["notes"]) == 50 and data["notes"][-1] == "… and 71 more"
    assert validate_verdict(data) == []
