"""Several metrics per bucket (R5): each judged against its own window, the worst gating wins."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from perfgate.config import PRIMARY, Config, GatePolicy, PolicyName, load_config
from perfgate.judge.bucket_policy import policy_for
from perfgate.judge.gate import GateReport, build_report
from perfgate.judge.judgement import Bisect, MetricKey, MetricWindow
from perfgate.judge.policies import CalibratedPolicy, ReferencePolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import (
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    Result,
)
from tests.factories import make_result, with_metric

BUCKET = "cartpole/numpy"
# Ten runs of two samples, 1 % noise: FPS at 100, startup at 10 s, GPU memory at 6 GB.
NOISE = [(1.005, 0.992), (1.009, 0.998), (0.987, 1.003), (1.012, 1.001), (0.994, 0.999),
         (1.006, 0.989), (0.997, 1.014), (1.002, 0.991), (0.988, 1.007),
         (1.010, 0.996)]  # fmt: skip


def runs(level: float) -> list[list[float]]:
    return [[level * a, level * b] for a, b in NOISE]


FPS, STARTUP, MEMORY = runs(100.0), runs(10.0), runs(6.0)
STEADY_FPS = (100.2, 99.7, 100.1)


def config(tmp_path: Path, metrics: str = "", floors: str = "") -> Config:
    """One demo bucket; ``metrics`` are YAML list items under ``defaults.metrics``."""
    text = dedent("""\
        version: 1
        gate: {mode: blocking, confirm: repeat}
        defaults:
          metrics:
            - {name: startup_s, sum: [runtime.startup_time_s.app_launch,
               runtime.startup_time_s.env_creation], direction: lower, unit: s,
               min_drop_pct: 10}
            - {name: gpu_mem_gb, path: resources.gpu_mem_gb.peak, direction: lower, unit: GB,
               required: false, gate: false}
        """)
    text += metrics
    text += "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n" + floors
    path = tmp_path / "perfgate.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def result(
    fps: tuple[float, ...] = STEADY_FPS,
    startup: tuple[float, ...] | None = (10.05, 9.97, 10.02),
    memory: tuple[float, ...] | None = (6.0, 6.01, 5.99),
    **kwargs: Any,
) -> Result:
    measured = make_result(BUCKET, samples=fps, **kwargs)
    if startup is not None:
        measured = with_metric(measured, "startup_s", startup)
    if memory is not None:
        measured = with_metric(
            measured, "gpu_mem_gb", memory, path="resources.gpu_mem_gb.peak", unit="GB"
        )
    return measured


def report(cfg: Config, measured: Result, **windows: list[list[float]]) -> GateReport:
    runs = {
        MetricKey(BUCKET): windows.get("fps", FPS),
        MetricKey(BUCKET, "startup_s"): windows.get("startup", STARTUP),
        MetricKey(BUCKET, "gpu_mem_gb"): windows.get("memory", MEMORY),
    }
    return build_report(
        config=cfg,
        expected=cfg.buckets,
        results=[measured],
        windows={key: MetricWindow(runs=window) for key, window in runs.items()},
    )


def verdicts(gate: GateReport) -> dict[str, Verdict]:
    judgement = gate.rows[0].judgement
    assert judgement is not None
    return {metric.name: metric.verdict for metric in judgement.metrics}


def test_a_slower_startup_blocks_its_bucket_though_fps_holds(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(startup=(13.0, 13.1, 12.9)))
    row = gate.rows[0]
    assert row.verdict is Verdict.BLOCK and gate.overall is Verdict.BLOCK
    assert verdicts(gate) == {
        PRIMARY: Verdict.PASS,
        "startup_s": Verdict.BLOCK,
        "gpu_mem_gb": Verdict.PASS,
    }
    assert row.judgement is not None
    # The row's figure and test stay the primary's; the bucket's reasons add the startup's.
    assert row.judgement.value == pytest.approx(100.1)
    assert row.judgement.decision is not None and row.judgement.decision.baseline is not None
    assert 98 < row.judgement.decision.baseline < 102
    assert Reason.REGRESSION in row.judgement.reasons
    assert any(d.startswith("startup_s: regression +30.") for d in row.details)
    assert row.headline.startswith("startup_s: regression")
    assert row.judgement.bisect is Bisect.BAD
    assert "regressed: cartpole/numpy startup_s +30." in gate.description
    assert gate.exit_code == 1


def test_each_metric_is_judged_against_its_own_window(tmp_path: Path) -> None:
    # The same figures pass against a window at their level and block against a faster one.
    cfg = config(tmp_path)
    slow = result(startup=(13.0, 13.1, 12.9))
    assert report(cfg, slow, startup=runs(13.0)).rows[0].verdict is Verdict.PASS
    assert verdicts(report(cfg, result(), startup=runs(8.0)))["startup_s"] is Verdict.BLOCK


def test_a_primary_regression_blocks_with_a_steady_startup(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(fps=(80.0, 80.1, 79.9)))
    assert verdicts(gate)[PRIMARY] is Verdict.BLOCK and verdicts(gate)["startup_s"] is Verdict.PASS
    assert "regressed: cartpole/numpy \u221220.0 %" in gate.description
    assert "startup_s" not in gate.description


def test_a_report_only_metric_is_judged_but_never_moves_the_bucket(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(memory=(9.0, 9.1, 8.9)))
    assert verdicts(gate)["gpu_mem_gb"] is Verdict.BLOCK
    assert gate.rows[0].verdict is Verdict.PASS
    assert all("gpu_mem_gb" not in detail for detail in gate.rows[0].details)


def test_a_gaining_metric_makes_the_bucket_improved(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(startup=(7.0, 7.1, 6.9)))
    assert gate.rows[0].verdict is Verdict.IMPROVED
    assert Reason.IMPROVEMENT in gate.rows[0].judgement.reasons  # type: ignore[union-attr]


def test_a_required_metric_missing_from_the_artifact_is_a_hard_failure(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(startup=None))
    row = gate.rows[0]
    assert row.verdict is Verdict.HARD_FAILURE
    assert verdicts(gate)["startup_s"] is Verdict.HARD_FAILURE
    assert Reason.MISSING_METRIC in row.judgement.reasons  # type: ignore[union-attr]
    assert any(
        d.startswith("startup_s: no number at runtime.startup_time_s.app_launch + ")
        for d in row.details
    )


def test_a_missing_optional_metric_is_a_warning(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        "    - {name: imports_s, path: runtime.startup_time_s.python_imports, "
        "direction: lower, required: false}\n",
    )
    gate = report(cfg, result(memory=None))
    # Reported only: its absence warns in its own line, never in the bucket's.
    assert verdicts(gate)["gpu_mem_gb"] is Verdict.WARN
    assert verdicts(gate)["imports_s"] is Verdict.WARN
    row = gate.rows[0]
    assert row.verdict is Verdict.WARN
    assert row.judgement is not None
    assert Reason.METRIC_ABSENT in row.judgement.reasons
    assert [d for d in row.details if "optional" in d] == [
        "imports_s: no number at runtime.startup_time_s.python_imports in this run "
        "(an optional metric): not judged"
    ]


def test_a_nonfinite_or_nonpositive_further_metric_is_not_a_measurement(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    for bad, reason in ((math.inf, Reason.NONFINITE_METRIC), (0.0, Reason.NONPOSITIVE_METRIC)):
        gate = report(cfg, result(startup=(10.0, bad, 10.0)))
        assert gate.rows[0].verdict is Verdict.HARD_FAILURE
        assert reason in gate.rows[0].judgement.reasons  # type: ignore[union-attr]


def test_a_floor_applies_to_its_own_metric_in_its_direction(tmp_path: Path) -> None:
    floors = (
        "    floors:\n      cpu-*:\n        numpy:\n"
        "          - {name: slow-start, value: 11.0, metric: startup_s}\n"
    )
    cfg = config(tmp_path, floors=floors)
    # Lower is better: 12 s is past an 11 s floor, 10 s is not; FPS of 100 never touches it.
    crossed = report(cfg, result(startup=(12.0, 12.0)), startup=runs(12.0))
    assert crossed.rows[0].verdict is Verdict.BLOCK
    assert any("startup_s: crossed floor slow-start" in d for d in crossed.rows[0].details)
    assert "startup_s crossed floor slow-start" in crossed.description
    assert report(cfg, result()).rows[0].verdict is Verdict.PASS


def test_an_unhealthy_run_judges_no_metric(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(exit_code=1))
    assert gate.rows[0].verdict is Verdict.HARD_FAILURE
    assert gate.rows[0].judgement is not None and gate.rows[0].judgement.metrics == ()


def test_no_baseline_for_a_new_metric_is_an_underfilled_bucket(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(), startup=[])
    assert verdicts(gate) == {
        PRIMARY: Verdict.PASS,
        "startup_s": Verdict.WARN,
        "gpu_mem_gb": Verdict.PASS,
    }
    assert gate.rows[0].verdict is Verdict.WARN
    assert gate.underfilled == (BUCKET,)
    assert gate.description.startswith("no baseline yet for 1 of 1")


def test_several_gating_metrics_share_the_false_block_rate(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    bucket = cfg.buckets[0]
    startup, memory = bucket.metrics
    primary = policy_for(bucket, cfg.gate, "cpu-x")
    own = policy_for(bucket, cfg.gate, "cpu-x", startup)
    reported = policy_for(bucket, cfg.gate, "cpu-x", memory)
    assert isinstance(primary, CalibratedPolicy) and isinstance(own, CalibratedPolicy)
    assert isinstance(reported, CalibratedPolicy)
    # Two metrics gate (the report-only one does not count): 0.1 % becomes 0.05 % each.
    assert primary.false_block_rate == own.false_block_rate == pytest.approx(0.0005)
    assert (primary.min_drop_pct, own.min_drop_pct, reported.min_drop_pct) == (3.0, 10.0, 3.0)
    (tmp_path / "alone.yaml").write_text(
        "version: 1\nbuckets: [{task: cartpole, backends: [{physics: numpy}]}]\n"
    )
    alone = load_config(tmp_path / "alone.yaml")
    single = policy_for(alone.buckets[0], alone.gate, "cpu-x")
    assert isinstance(single, CalibratedPolicy) and single.false_block_rate == 0.001


def test_a_metric_noise_floor_is_its_own_and_hardware_floors_stay_the_primarys(
    tmp_path: Path,
) -> None:
    cfg = config(
        tmp_path,
        "    - {name: step_s, path: a.b, direction: lower, noise_floor_pct: 4.0}\n",
        floors="    noise_floor_pct: {cpu-*: {numpy: 2.5}}\n",
    )
    bucket = cfg.buckets[0]
    by_name = {m.name: m for m in bucket.metrics}
    gate = GatePolicy(policy=cfg.gate.policy)
    assert policy_for(bucket, gate, "cpu-x").noise_floor_pct == 2.5
    assert policy_for(bucket, gate, "cpu-x", by_name["step_s"]).noise_floor_pct == 4.0
    assert policy_for(bucket, gate, "cpu-x", by_name["startup_s"]).noise_floor_pct == 0.0
    reference = GatePolicy(policy=PolicyName.REFERENCE)
    judged = policy_for(bucket, reference, "cpu-x", by_name["startup_s"])
    assert isinstance(judged, ReferencePolicy) and judged.min_drop_pct == 10.0


def paired_config(tmp_path: Path) -> Config:
    path = config(tmp_path).path
    path.write_text(path.read_text().replace("confirm: repeat", "confirm: paired"))
    return load_config(path)


def pairs_of(startup_head: float) -> PairedRecord:
    """Five pairs on one runner: FPS the same, the head's startup at ``startup_head``."""
    samples = []
    for pair, wobble in enumerate((1.0, 1.004, 0.997, 1.002, 0.999)):
        for side, startup in ((PairedSide.BASE, 10.0), (PairedSide.HEAD, startup_head)):
            samples.append(
                PairedSample(sample_index=len(samples), pair=pair, side=side,
                             value=100.0 * wobble,
                             metrics={"startup_s": startup * wobble, "gpu_mem_gb": 6.0})
            )  # fmt: skip
    return PairedRecord(status=PairedStatus.MEASURED, base_commit="e" * 40, max_pairs=16,
                        samples=tuple(samples), stopped=PairedStop.SETTLED)  # fmt: skip


def test_under_paired_each_metric_is_confirmed_by_its_own_pairs(tmp_path: Path) -> None:
    cfg = paired_config(tmp_path)
    slow = result(startup=(13.0, 13.1, 12.9))
    # The startup's window would block; on the same runner its pairs confirm it.
    confirmed = report(cfg, dataclasses.replace(slow, paired=pairs_of(13.0)))
    assert verdicts(confirmed) == {
        PRIMARY: Verdict.PASS, "startup_s": Verdict.BLOCK, "gpu_mem_gb": Verdict.PASS,
    }  # fmt: skip
    startup = confirmed.rows[0].judgement.metrics[1]  # type: ignore[union-attr]
    assert startup.paired is not None and startup.paired.reason is Reason.PAIRED_REGRESSION
    assert "startup_s +30.0 %" in confirmed.description
    # The pairs show the same startup on both sides: not confirmed, a pass.
    cleared = report(cfg, dataclasses.replace(slow, paired=pairs_of(10.0)))
    assert verdicts(cleared)["startup_s"] is Verdict.PASS
    # No pairs at all: the window's BLOCK is not confirmed.
    assert verdicts(report(cfg, slow))["startup_s"] is Verdict.INCONCLUSIVE


def test_too_few_baseline_runs_is_not_called_no_baseline(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(), fps=[[100.0, 100.1], [99.9, 100.05]])
    assert gate.rows[0].verdict is Verdict.WARN
    assert gate.description.startswith("too few baseline runs yet for 1 of 1; not judged")
    assert "⚠️ Too few baseline runs yet for some buckets: they are measured, not judged" in (
        gate.headlines
    )


def test_buckets_that_need_attention_are_counted_by_verdict(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(fps=(97.5, 97.6, 97.4)))
    assert gate.rows[0].verdict.level is Verdict.WARN
    label = gate.rows[0].verdict.label
    assert gate.description == (
        f"no confirmed regression; 1 of 1 buckets need attention (1 {label})"
    )
