"""Every rule and boundary of the oracle (DESIGN.md R3, R5)."""

from __future__ import annotations

import pytest

from perfgate.config import Direction, Floor, FloorKind, OraclePolicy
from perfgate.judge.oracle import Bisect, Reason, Verdict, judge, window_stats
from perfgate.result import FailurePhase, StaleImage
from tests.factories import make_result

POLICY = OraclePolicy(k_warn=2.5, k_block=4.0, min_block_regression_pct=3.0, noise_floor_pct=0.0)
# median 100, MAD 1 -> warn line 97.5, block line 96.0
WINDOW = [99.0, 100.0, 101.0, 100.0, 99.0, 101.0, 100.0]


def verdict_of(value: float | None, window=WINDOW, **kwargs):  # type: ignore[no-untyped-def]
    floors = kwargs.pop("floors", ())
    noise = kwargs.pop("noise_floor_pct", 0.0)
    policy = kwargs.pop("policy", POLICY)
    return judge(
        make_result(value=value, **kwargs),
        window,
        floors=floors,
        noise_floor_pct=noise,
        policy=policy,
        min_samples=5,
    )


def test_window_statistics_are_median_and_unscaled_mad() -> None:
    stats = window_stats(95.0, WINDOW, 0.0, POLICY, Direction.HIGHER)
    assert (stats.median, stats.mad, stats.noise) == (100.0, 1.0, 1.0)
    assert (stats.warn_line, stats.block_line) == (97.5, 96.0)
    assert stats.change_pct == pytest.approx(-5.0)


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
    assert verdict_of(97.0, window=tight, noise_floor_pct=2.0).verdict is Verdict.PASS


def test_lower_is_better_is_the_mirror_image() -> None:
    latency = [10.0, 10.5, 9.5, 10.0, 10.5, 9.5, 10.0]  # MAD 0.5: warn 11.25, block 12.0
    lower = Direction.LOWER
    assert verdict_of(9.0, window=latency, direction=lower).verdict is Verdict.PASS
    assert verdict_of(11.25, window=latency, direction=lower).verdict is Verdict.PASS
    assert verdict_of(11.5, window=latency, direction=lower).verdict is Verdict.WARN
    assert verdict_of(12.0, window=latency, direction=lower).verdict is Verdict.WARN
    assert verdict_of(12.5, window=latency, direction=lower).verdict is Verdict.BLOCK


def test_no_baseline_warns_with_its_reason() -> None:
    judgement = verdict_of(100.0, window=[])
    assert judgement.verdict is Verdict.WARN
    assert judgement.reasons == (Reason.NO_BASELINE,)
    assert judgement.stats is None


def test_too_few_samples_warns_even_for_a_huge_drop() -> None:
    judgement = verdict_of(10.0, window=[100.0, 100.0, 100.0, 100.0])
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
