"""What confirming costs and buys (R17): budgets that can decide, the next step, the order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfgate.judge.budget import (
    WindowNoise,
    clear_drop,
    next_step,
    pair_affordability,
    pairs_affordable,
    pairs_to_block,
    repeats_to_block,
    samples_affordable,
    suspicion,
    unaffordable,
    uncleared,
)
from perfgate.judge.decision import Decision
from perfgate.judge.paired import PairedPolicy
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.run.sampling import Step

PAIRED = PairedPolicy()


def decision(verdict: Verdict, reason: Reason, *, bound: float | None, drop: float = 0.0,
             repeats_bound: float | None = None) -> Decision:  # fmt: skip
    """A window decision with just what confirmation reads."""
    return Decision(
        verdict=verdict,
        reasons=(reason,),
        detail="",
        policy="calibrated",
        samples=2,
        window_samples=40,
        window_runs=20,
        drop_bound_pct=bound,
        drop_pct=drop,
        repeats_bound_pct=repeats_bound if repeats_bound is not None else bound,
    )


def test_no_pair_starts_once_the_budget_is_spent() -> None:
    # A cap: only what finishes within the budget (pairs of 28 min end at 28 and 56).
    assert pairs_affordable(60.0, 14.0, 12) == 2
    assert pairs_affordable(60.0, 10.0, 12) == 3  # ends at 20, 40 and 60: exactly the budget
    assert pairs_affordable(60.0, 6.0, 4) == 4  # max_pairs first
    assert pairs_affordable(20.0, 14.0, 8) == 0  # not even one pair fits
    assert pairs_affordable(None, 14.0, 8) == 8
    assert samples_affordable(40.0, 14.0, 1, 6) == 2  # end at 14 and 28; a third at 42
    assert samples_affordable(10.0, 14.0, 2, 6) == 2  # the repeats are always taken


def test_more_noise_needs_more_pairs_and_the_windows_noise_needs_fewer() -> None:
    needs = [pairs_to_block(5.0, noise, PAIRED) for noise in (0.5, 1.0, 2.0, 3.0)]
    assert all(n is not None for n in needs)
    assert needs == sorted(needs) and needs[0] < needs[-1]  # type: ignore[type-var]
    alone = pairs_to_block(5.0, 2.0, PAIRED)
    pooled = pairs_to_block(5.0, 2.0, PAIRED, prior_df=40.0)
    assert alone is not None and pooled is not None and pooled < alone
    assert pairs_to_block(3.0, 2.0, PAIRED, 40.0) > pooled  # type: ignore[operator]
    assert pairs_to_block(1.0, 20.0, PAIRED) is None  # not within MOST pairs


def test_repeats_cannot_average_away_the_noise_a_runs_samples_share() -> None:
    policy = CalibratedPolicy(initial_repeats=2, max_repeats=10)
    quiet = repeats_to_block(
        5.0, WindowNoise(noise_pct=2.0, run_noise_pct=0.5, df=30.0, window_runs=20), policy
    )
    assert quiet is not None and quiet >= policy.min_block_samples
    shared = WindowNoise(noise_pct=2.0, run_noise_pct=3.0, df=30.0, window_runs=20)
    assert repeats_to_block(5.0, shared, policy) is None


def test_a_budget_that_cannot_decide_is_named_with_its_numbers() -> None:
    plan = pair_affordability(budget_minutes=60.0, max_pairs=12, launch_minutes=14.0,
                              drop_pct=5.0, noise_pct=2.0, policy=PAIRED)  # fmt: skip
    assert plan.afforded == 2 and plan.needed is not None and plan.needed > 2
    assert not plan.decides
    assert plan.text() == (
        f"pair budget 60 min allows 2 pairs at 14 min a launch; BLOCKing a 5 % drop at 2 % "
        f"noise needs {plan.needed}"
    )
    roomy = replace(plan, budget_minutes=None, afforded=12, most=12)
    assert roomy.decides and roomy.text().startswith("max_pairs 12 allows 12 pairs")
    assert roomy.minutes == 2 * 14.0 * plan.needed  # type: ignore[operator]


def test_only_what_the_window_cannot_rule_out_is_confirmed() -> None:
    cleared = decision(Verdict.PASS, Reason.WITHIN_NOISE, bound=4.0)
    assert not uncleared(cleared, 5.0)  # a 5 % drop is ruled out: left to post-merge alerts
    assert uncleared(cleared, 3.0)
    assert uncleared(decision(Verdict.INCONCLUSIVE, Reason.UNRESOLVED, bound=9.0), 5.0)
    assert uncleared(decision(Verdict.BLOCK, Reason.REGRESSION, bound=12.0), 5.0)
    assert not uncleared(decision(Verdict.WARN, Reason.NO_BASELINE, bound=None), 5.0)
    # the reference rule has no interval: past its warn line is what it cannot clear
    assert uncleared(decision(Verdict.WARN, Reason.ROLLING_WINDOW, bound=None), 5.0)


def test_the_cheapest_evidence_first() -> None:
    unsure = decision(Verdict.PASS, Reason.WITHIN_NOISE, bound=6.0, drop=1.0, repeats_bound=2.5)
    assert next_step(unsure, confirm_drop_pct=5.0, samples=2, most=10) is Step.REPEAT
    assert next_step(unsure, confirm_drop_pct=5.0, samples=10, most=10) is Step.PAIR
    stuck = replace(unsure, repeats_bound_pct=5.5)  # the shared noise alone leaves 5 % open
    assert next_step(stuck, confirm_drop_pct=5.0, samples=2, most=10) is Step.PAIR
    blocking = decision(Verdict.BLOCK, Reason.REGRESSION, bound=12.0, drop=9.0, repeats_bound=1.0)
    assert next_step(blocking, confirm_drop_pct=5.0, samples=2, most=10) is Step.PAIR
    state = decision(Verdict.INCONCLUSIVE, Reason.RUN_STATE, bound=9.0, repeats_bound=1.0)
    assert next_step(state, confirm_drop_pct=5.0, samples=2, most=10) is Step.PAIR
    cleared = decision(Verdict.PASS, Reason.WITHIN_NOISE, bound=2.0)
    assert next_step(cleared, confirm_drop_pct=5.0, samples=2, most=10) is Step.DONE


def test_the_shared_budget_goes_to_the_most_suspicious_first() -> None:
    suspicious = {
        "a": suspicion(decision(Verdict.PASS, Reason.WITHIN_NOISE, bound=6.0)),
        "b": suspicion(decision(Verdict.BLOCK, Reason.REGRESSION, bound=11.0)),
        "c": suspicion(decision(Verdict.PASS, Reason.WITHIN_NOISE, bound=8.0)),
        "d": suspicion(decision(Verdict.INCONCLUSIVE, Reason.UNRESOLVED, bound=7.0)),
    }
    assert sorted(suspicious, key=suspicious.__getitem__, reverse=True) == ["b", "d", "c", "a"]
    assert unaffordable(60.0, None) == unaffordable(60.0, 60.0) == ""
    assert unaffordable(84.0, 30.0) == (
        "the run's confirmation budget cannot afford them: deciding needed 84 runner minutes, "
        "30 were left"
    )


@pytest.mark.parametrize(("minimum", "confirm", "clear"), [(3.0, 5.0, 4.0), (10.0, 5.0, 10.0)])
def test_pairs_clear_halfway_to_the_drop_that_matters(
    minimum: float, confirm: float, clear: float
) -> None:
    assert clear_drop(minimum, confirm) == clear
