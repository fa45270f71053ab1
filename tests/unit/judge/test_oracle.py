"""Every rule and boundary of the oracle (docs/design.md R3, R5): health, floors, the window."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from perfgate.config import (
    AlertsSpec,
    ConfirmMode,
    Direction,
    Floor,
    FloorKind,
    GatePolicy,
    PolicyName,
    load_config,
)
from perfgate.judge.bucket_policy import (
    fitted_window_depth,
    policy_for,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.judgement import Bisect, Judgement
from perfgate.judge.oracle import judge
from perfgate.judge.policies import CalibratedPolicy, ReferencePolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import FailurePhase, SampleReading, StaleImage
from tests.factories import make_result, primary_check
from tests.paths import ROOT

REFERENCE = ReferencePolicy(k_warn=2.5, k_block=4.0, min_drop_pct=3.0)
CALIBRATED = CalibratedPolicy()
# median 100, MAD 1 -> warn line 97.5, block line 96.0 (reference policy)
WINDOW = [99.0, 100.0, 101.0, 100.0, 99.0, 101.0, 100.0]
# Ten runs of two samples at 100 with 1 % noise (calibrated policy).
RUNS = [[100.5, 99.2], [100.9, 99.8], [98.7, 100.3], [101.2, 100.1], [99.4, 99.9],
        [100.6, 98.9], [99.7, 101.4], [100.2, 99.1], [98.8, 100.7], [101.0, 99.6]]  # fmt: skip


def verdict_of(value: float | None, window: Any = WINDOW, **kwargs: Any) -> Judgement:
    """The reference policy's judgement of a one-figure result (the seed's setting)."""
    floors = kwargs.pop("floors", ())
    policy = kwargs.pop("policy", REFERENCE)
    samples = kwargs.pop("samples", None)
    result = make_result(value=value, **kwargs)
    if samples is not None:
        readings = tuple(SampleReading(sample_index=i, value=v) for i, v in enumerate(samples))
        result = replace(result, metric=replace(result.metric, samples=readings))
    return judge(result, [primary_check(window, floors=floors, policy=policy)])


def test_the_reference_lines_are_median_minus_k_unscaled_mad() -> None:
    decision = verdict_of(95.0).decision
    assert decision is not None
    assert (decision.baseline, decision.warn_line, decision.block_line) == (100.0, 97.5, 96.0)
    assert decision.noise_pct == pytest.approx(1.0)
    assert decision.effect_pct == pytest.approx(-5.0)


def test_within_noise_passes_with_rolling_window_reason() -> None:
    judgement = verdict_of(99.0)
    assert judgement.verdict is Verdict.PASS
    assert judgement.reasons == (Reason.ROLLING_WINDOW,)
    assert judgement.bisect is Bisect.GOOD


def test_exactly_on_the_warn_line_is_not_past_it() -> None:
    assert verdict_of(97.5).verdict is Verdict.PASS


def test_just_below_the_warn_line_warns() -> None:
    assert verdict_of(97.4).verdict is Verdict.WARN


def test_exactly_on_the_block_line_warns_but_does_not_block() -> None:
    assert verdict_of(96.0).verdict is Verdict.WARN


def test_below_the_block_line_with_a_large_drop_blocks() -> None:
    judgement = verdict_of(95.9)
    assert judgement.verdict is Verdict.BLOCK
    assert judgement.bisect is Bisect.BAD


def test_below_the_block_line_but_under_the_minimum_drop_warns() -> None:
    # Tight window: MAD 0.1 -> block line 99.6; 99.0 is past it but only a 1 % drop.
    tight = [100.0, 100.1, 99.9, 100.0, 100.1, 99.9]
    judgement = verdict_of(99.0, window=tight)
    assert judgement.verdict is Verdict.WARN
    assert Reason.BELOW_BLOCK_INSIDE_REGRESSION_FLOOR in judgement.reasons


def test_noise_floor_widens_a_too_tight_window() -> None:
    tight = [100.0] * 6
    assert verdict_of(97.0, window=tight).verdict is Verdict.BLOCK
    # 2 % floor -> noise 2 -> block line 92, warn line 95: 97 is fine.
    floored = replace(REFERENCE, noise_floor_pct=2.0)
    assert verdict_of(97.0, window=tight, policy=floored).verdict is Verdict.PASS


def test_lower_is_better_is_the_mirror_image() -> None:
    latency = [10.0, 10.5, 9.5, 10.0, 10.5, 9.5, 10.0]  # MAD 0.5: warn 11.25, block 12.0
    lower = Direction.LOWER
    assert verdict_of(9.0, window=latency, direction=lower).verdict is Verdict.PASS
    assert verdict_of(11.25, window=latency, direction=lower).verdict is Verdict.PASS
    assert verdict_of(11.5, window=latency, direction=lower).verdict is Verdict.WARN
    assert verdict_of(12.0, window=latency, direction=lower).verdict is Verdict.WARN
    assert verdict_of(12.5, window=latency, direction=lower).verdict is Verdict.BLOCK


@pytest.mark.parametrize("policy", [REFERENCE, CALIBRATED], ids=["reference", "calibrated"])
def test_no_baseline_warns_with_its_reason(policy: Any) -> None:
    judgement = verdict_of(100.0, window=[], policy=policy)
    assert judgement.verdict is Verdict.WARN
    assert judgement.reasons == (Reason.NO_BASELINE,)


@pytest.mark.parametrize("policy", [REFERENCE, CALIBRATED], ids=["reference", "calibrated"])
def test_too_few_samples_warns_even_for_a_huge_drop(policy: Any) -> None:
    judgement = verdict_of(10.0, window=[100.0, 100.0, 100.0, 100.0], policy=policy)
    assert judgement.verdict is Verdict.WARN
    assert judgement.reasons == (Reason.INSUFFICIENT_WINDOW,)


def test_a_retried_pass_is_a_warn() -> None:
    judgement = verdict_of(100.0, attempts=2)
    assert judgement.verdict is Verdict.WARN
    assert Reason.RETRIED_PASS in judgement.reasons


def test_a_crossed_gating_floor_forces_its_verdict() -> None:
    floors = (Floor(name="hard-floor", value=150.0, kind=FloorKind.BLOCK),)
    judgement = verdict_of(100.0, floors=floors)
    assert judgement.verdict is Verdict.BLOCK
    assert Reason.FLOOR_CROSSED in judgement.reasons
    assert any("hard-floor" in detail for detail in judgement.details())


def test_a_warn_floor_warns_and_a_reporting_floor_is_only_recorded() -> None:
    warn_floor = (Floor(name="soft", value=150.0, kind=FloorKind.WARN),)
    assert verdict_of(100.0, floors=warn_floor).verdict is Verdict.WARN
    report_floor = (Floor(name="watch", value=150.0, kind=FloorKind.REPORT),)
    judgement = verdict_of(100.0, floors=report_floor)
    assert judgement.verdict is Verdict.PASS
    assert Reason.FLOOR_RECORDED in judgement.reasons


def test_a_floor_exactly_met_is_not_crossed() -> None:
    floors = (Floor(name="hard-floor", value=100.0, kind=FloorKind.BLOCK),)
    assert verdict_of(100.0, floors=floors).verdict is Verdict.PASS


def test_floors_see_the_median_of_the_samples() -> None:
    floors = (Floor(name="hard-floor", value=100.0, kind=FloorKind.BLOCK),)
    # One slow sample of three does not cross the floor; the run's figure is 101.
    judgement = verdict_of(101.0, floors=floors, samples=[101.0, 60.0, 102.0])
    assert judgement.value == 101.0
    assert Reason.FLOOR_CROSSED not in judgement.reasons


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"exit_code": 1, "phase": FailurePhase.RUNTIME}, Reason.UNHEALTHY_RUN),
        ({"exit_code": 0, "phase": FailurePhase.HANG}, Reason.UNHEALTHY_RUN),
        ({"config_mismatch": "run.num_envs=1", "phase": FailurePhase.CONFIG_MISMATCH},
         Reason.CONFIG_MISMATCH),
        ({"error": "result file x was not written", "phase": FailurePhase.OUTPUT},
         Reason.UNHEALTHY_RUN),
    ],
)  # fmt: skip
def test_an_unhealthy_run_is_a_hard_failure_even_with_a_good_figure(kwargs, reason) -> None:  # type: ignore[no-untyped-def]
    judgement = verdict_of(100.0, **kwargs)
    assert judgement.verdict is Verdict.HARD_FAILURE
    assert judgement.reasons[0] is reason


def test_a_missing_or_nonpositive_metric_is_a_hard_failure() -> None:
    assert verdict_of(None).reasons == (Reason.MISSING_METRIC,)
    assert verdict_of(0.0).reasons == (Reason.NONPOSITIVE_METRIC,)
    assert verdict_of(-3.0).verdict is Verdict.HARD_FAILURE


def test_one_nonpositive_sample_is_a_hard_failure() -> None:
    judgement = verdict_of(100.0, samples=[100.0, 0.0, 101.0], policy=CALIBRATED, window=RUNS)
    assert judgement.verdict is Verdict.HARD_FAILURE
    assert judgement.reasons == (Reason.NONPOSITIVE_METRIC,)


def test_a_stale_image_crash_is_reported_and_never_a_pass() -> None:
    stale = StaleImage(package="warp", symbol="warp.foo", installed="1.8.0", pinned="1.9.0")
    judgement = verdict_of(None, exit_code=1, phase=FailurePhase.IMPORT, stale_image=stale)
    assert judgement.verdict is Verdict.HARD_FAILURE
    assert Reason.STALE_IMAGE in judgement.reasons
    assert judgement.bisect is Bisect.SKIP


def test_bisect_is_bad_only_for_crashes_in_init_or_runtime() -> None:
    assert verdict_of(None, exit_code=1, phase=FailurePhase.RUNTIME).bisect is Bisect.BAD
    assert verdict_of(None, exit_code=1, phase=FailurePhase.IMPORT).bisect is Bisect.SKIP
    assert verdict_of(100.0, window=[]).bisect is Bisect.SKIP


# -- the calibrated policy through the oracle --------------------------------------------


def test_every_sample_is_judged_not_their_mean() -> None:
    # Three samples 7 % down: a confirmed regression with its interval.
    judgement = verdict_of(93.0, samples=[93.1, 92.8, 93.3], policy=CALIBRATED, window=RUNS)
    assert judgement.verdict is Verdict.BLOCK
    assert judgement.reasons[0] is Reason.REGRESSION
    assert judgement.bisect is Bisect.BAD
    decision = judgement.decision
    assert decision is not None and decision.samples == 3 and decision.window_samples == 20
    assert decision.interval_pct is not None and decision.interval_pct[1] < -3.0


def test_the_same_drop_on_two_samples_is_inconclusive_not_a_block() -> None:
    # Significant, but a BLOCK needs three samples: the bench would have taken a third.
    judgement = verdict_of(93.0, samples=[93.1, 92.8], policy=CALIBRATED, window=RUNS)
    assert judgement.verdict is Verdict.INCONCLUSIVE
    assert judgement.reasons[0] is Reason.UNCONFIRMED
    assert judgement.verdict.level is Verdict.WARN
    assert judgement.bisect is Bisect.SKIP


def test_an_improvement_is_improved_pass_level_and_good_for_bisect() -> None:
    judgement = verdict_of(110.0, samples=[110.2, 109.8], policy=CALIBRATED, window=RUNS)
    assert judgement.verdict is Verdict.IMPROVED
    assert judgement.verdict.level is Verdict.PASS
    assert judgement.bisect is Bisect.GOOD


def test_a_retried_improvement_is_a_warn() -> None:
    judgement = verdict_of(
        110.0, samples=[110.2, 109.8], policy=CALIBRATED, window=RUNS, attempts=2
    )
    assert judgement.verdict is Verdict.WARN
    assert Reason.RETRIED_PASS in judgement.reasons


def test_a_window_of_one_figure_per_run_still_gates() -> None:
    # Recorded before repeats: every run holds one figure (no sample_index).
    old = [v for run in RUNS for v in run[:1]]
    judgement = verdict_of(100.0, samples=[100.3, 99.7], policy=CALIBRATED, window=old)
    assert judgement.verdict is Verdict.PASS
    assert judgement.decision is not None and judgement.decision.window_runs == 10
    blocked = verdict_of(90.0, samples=[90.1, 89.7, 90.4], policy=CALIBRATED, window=old)
    assert blocked.verdict is Verdict.BLOCK


def test_a_multimodal_window_and_a_level_shift_are_named() -> None:
    two_modes = [[100.0, 55.0], [99.0, 56.0], [101.0, 54.5], [100.5, 55.5], [99.5, 100.2],
                 [55.2, 100.1], [54.8, 99.8], [100.3, 55.1]]  # fmt: skip
    judgement = verdict_of(55.0, samples=[55.3, 54.9], policy=CALIBRATED, window=two_modes)
    assert judgement.verdict is Verdict.PASS
    assert Reason.MULTIMODAL in judgement.reasons
    assert any("2 modes" in detail for detail in judgement.details())
    shifted = [[92.0, 92.3], [91.8, 92.1], [92.2, 91.9], *RUNS]
    judgement = verdict_of(92.0, samples=[92.1, 91.9], policy=CALIBRATED, window=shifted)
    assert judgement.verdict is Verdict.PASS
    assert Reason.LEVEL_SHIFT in judgement.reasons


# -- the policy each bucket gets from perfgate.yaml ---------------------------------------


def test_policy_for_reads_every_gate_key() -> None:
    config = load_config(ROOT / "perfgate.yaml")
    bucket = next(b for b in config.buckets if b.id == "pendulum/python")
    policy = policy_for(bucket, config.gate, "cpu-x")
    assert isinstance(policy, CalibratedPolicy)
    assert (policy.false_block_rate, policy.min_drop_pct) == (0.001, 3.0)
    assert policy.noise_floor_pct == 2.0  # the bucket's own floor for cpu-*
    assert policy.run_noise_floor_pct == 1.0
    assert (policy.initial_repeats, policy.max_repeats) == (bucket.repeats, bucket.max_repeats)
    assert (policy.min_samples, policy.min_runs, policy.max_runs) == (5, 3, 20)
    off = replace(config.gate, confirm=type(config.gate.confirm)("off"))
    assert policy_for(bucket, off, "cpu-x").max_repeats == bucket.repeats  # type: ignore[union-attr]
    reference = policy_for(bucket, replace(config.gate, policy=PolicyName.REFERENCE), "cpu-x")
    assert reference == ReferencePolicy(noise_floor_pct=2.0, min_samples=5, max_samples=20)


def test_a_window_of_larger_pushed_runs_still_holds_max_runs_runs() -> None:
    # alerts.push_repeats (6 by default) stores pushed runs of more samples than a bucket's
    # own runs may take: the sample limits must cover them, or the window is cut short of
    # max_runs runs (with confirm: off a bucket's run takes its 3 repeats).
    config = load_config(ROOT / "perfgate.yaml")
    gate = replace(config.gate, confirm=ConfirmMode.OFF)
    pushed = AlertsSpec()
    assert window_sample_limit(gate, config.buckets) == 200 * 3
    assert window_sample_limit(gate, config.buckets, AlertsSpec(push_repeats=1)) == 200 * 3
    assert window_sample_limit(gate, config.buckets, pushed) == 200 * 6
    assert fitted_window_depth(gate, config.buckets, pushed) == (20 * 6, 20)
    assert fitted_window_depth(config.gate, config.buckets, pushed) == (20 * 10, 20)


def test_the_window_holds_max_runs_of_the_largest_repeats_and_the_runner_history() -> None:
    config = load_config(ROOT / "perfgate.yaml")
    # 200 runs of history (runner offsets, whole-run falls) of up to 10 samples each
    assert window_sample_limit(config.gate, config.buckets) == 200 * 10
    window_only = replace(config.gate, baseline=replace(config.gate.baseline, history_runs=0))
    assert window_sample_limit(window_only, config.buckets) == 20 * 10
    reference = replace(config.gate, policy=PolicyName.REFERENCE)
    assert window_sample_limit(reference, config.buckets) == 20
    assert window_sample_limit(GatePolicy(), ()) == 200
    # The calibrated rule judges the nearest max_runs runs and learns runner offsets from
    # history_runs, so no farther run is read; the reference rule counts samples alone.
    assert window_run_limit(config.gate) == 200
    assert window_run_limit(window_only) == 20
    assert window_run_limit(reference) is None
