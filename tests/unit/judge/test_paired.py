"""The paired test alone: base and head pairs from one runner, at its boundaries."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from perfgate.config import Direction
from perfgate.judge.paired import PairedPolicy, PairNoise, paired_decide, settled_decision
from perfgate.judge.verdicts import Reason, Verdict

POLICY = PairedPolicy(false_block_rate=0.001, min_drop_pct=3.0, max_pairs=16)


def pairs(
    base: float, head: float, count: int, wobble: float = 0.01, seed: int = 1
) -> list[tuple[float, float]]:
    """``count`` (base, head) pairs on one runner: each pair shares a runner offset."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        runner = math.exp(rng.gauss(0.0, 0.05))  # 5 % between runners: it cancels in a pair
        out.append(
            (base * runner * math.exp(rng.gauss(0, wobble)),
             head * runner * math.exp(rng.gauss(0, wobble)))
        )  # fmt: skip
    return out


def test_a_real_drop_blocks_with_its_paired_figures() -> None:
    decision = paired_decide(pairs(100.0, 90.0, 8), policy=POLICY)
    assert (decision.verdict, decision.reason) == (Verdict.BLOCK, Reason.PAIRED_REGRESSION)
    assert decision.effect_pct is not None and -12.0 < decision.effect_pct < -8.0
    assert decision.interval_pct is not None and decision.interval_pct[1] < -3.0
    assert not decision.need_more
    assert "confirmed on the same runner" in decision.detail


def test_unchanged_code_is_cleared_not_confirmed() -> None:
    decision = paired_decide(pairs(100.0, 100.0, 4), policy=POLICY)
    assert (decision.verdict, decision.reason) == (Verdict.PASS, Reason.NOT_CONFIRMED)
    assert "not confirmed on the same runner" in decision.detail
    assert not decision.need_more


def test_fewer_than_three_pairs_decide_nothing() -> None:
    two = pairs(100.0, 80.0, 2)
    assert paired_decide(two, policy=POLICY).need_more
    final = paired_decide(two, policy=POLICY, final=True)
    assert (final.verdict, final.reason) == (Verdict.INCONCLUSIVE, Reason.PAIRED_UNRESOLVED)
    assert paired_decide([], policy=POLICY, final=True).verdict is Verdict.INCONCLUSIVE


def test_noisy_pairs_ask_for_more_then_are_inconclusive() -> None:
    noisy = pairs(100.0, 96.0, 16, wobble=0.06, seed=3)
    assert paired_decide(noisy[:5], policy=POLICY).need_more
    last = paired_decide(noisy, policy=POLICY)
    assert (last.verdict, last.reason) == (Verdict.INCONCLUSIVE, Reason.PAIRED_UNRESOLVED)
    assert not last.need_more  # max_pairs reached


def test_a_significant_drop_under_the_minimum_is_a_warning() -> None:
    small = pairs(100.0, 99.0, 16, wobble=0.002)
    decision = paired_decide(small, policy=POLICY)
    assert (decision.verdict, decision.reason) == (Verdict.WARN, Reason.SMALL_REGRESSION)


def test_lower_is_better_mirrors_higher() -> None:
    latency = [(1 / b, 1 / h) for b, h in pairs(100.0, 90.0, 8)]
    decision = paired_decide(latency, direction=Direction.LOWER, policy=POLICY)
    assert decision.verdict is Verdict.BLOCK
    assert decision.effect_pct is not None and decision.effect_pct > 8.0


def test_a_noise_floor_keeps_identical_pairs_from_blocking_on_nothing() -> None:
    exact = [(100.0, 98.0)] * 6  # no spread at all: 2 % is a certainty without a floor
    assert paired_decide(exact, policy=POLICY).verdict is Verdict.WARN
    floored = PairedPolicy(min_drop_pct=1.0, noise_floor_pct=2.0, max_pairs=6)
    assert paired_decide(exact, policy=floored).verdict is not Verdict.BLOCK


@pytest.mark.parametrize("max_pairs", [3, 8, 16])
def test_the_looks_share_the_false_block_rate(max_pairs: int) -> None:
    policy = PairedPolicy(max_pairs=max_pairs)
    shares = [policy.look_share(last=n == max_pairs) for n in range(3, max_pairs + 1)]
    assert math.isclose(sum(shares), 1.0)


def test_unchanged_code_blocks_at_most_at_the_false_block_rate() -> None:
    """The bench's stopping rule on unchanged code, 4000 times: no BLOCK expected (0.1 %)."""
    rng = random.Random(7)
    blocks = 0
    for _ in range(4000):
        taken: list[tuple[float, float]] = []
        while True:
            noise = (math.exp(rng.gauss(0, 0.02)), math.exp(rng.gauss(0, 0.02)))
            taken.append((100.0 * noise[0], 100.0 * noise[1]))
            decision = paired_decide(taken, policy=POLICY)
            if not decision.need_more:
                break
        blocks += decision.verdict is Verdict.BLOCK
    assert blocks <= 4  # 0.1 % of 4000 is 4; the Bonferroni split keeps it well under


# The window's within-run noise as the pairs' prior (runner economics, issue 24).
PRIOR = PairNoise(noise_pct=1.0, df=40.0)


def test_with_the_windows_noise_three_pairs_block_what_they_alone_cannot() -> None:
    three = pairs(100.0, 95.0, 3, seed=5)
    alone = paired_decide(three, policy=POLICY, final=True)
    pooled = paired_decide(three, policy=POLICY, final=True, prior=PRIOR)
    assert alone.verdict is not Verdict.BLOCK  # two degrees of freedom: t must pass ~30
    assert (pooled.verdict, pooled.pooled) == (Verdict.BLOCK, True)
    assert pooled.df == pytest.approx(2 + 40)


def test_pairs_noisier_than_the_window_says_stand_alone() -> None:
    noisy = pairs(100.0, 95.0, 6, wobble=0.08, seed=2)
    decision = paired_decide(noisy, policy=POLICY, prior=PRIOR)
    assert not decision.pooled
    assert decision.df == pytest.approx(5)


def test_two_pairs_may_clear_with_the_windows_noise_never_block() -> None:
    two = pairs(100.0, 100.0, 2, wobble=0.002)
    cleared = paired_decide(two, policy=POLICY, prior=PRIOR)
    assert (cleared.verdict, cleared.need_more) == (Verdict.PASS, False)
    dropped = paired_decide(pairs(100.0, 80.0, 2, wobble=0.002), policy=POLICY, prior=PRIOR)
    assert dropped.verdict is not Verdict.BLOCK and dropped.need_more


def test_pairs_stop_once_the_drop_that_matters_is_ruled_out() -> None:
    # A drop of about 2 %: not ruled out as a 3 % drop by three pairs, but ruled out as 4 %
    # (the clear drop of a gate whose confirm_drop_pct is 5).
    three = pairs(100.0, 98.0, 3, wobble=0.006, seed=4)
    strict = paired_decide(three, policy=POLICY, prior=PRIOR)
    relaxed = paired_decide(three, policy=replace(POLICY, clear_drop_pct=4.0), prior=PRIOR)
    assert strict.need_more
    assert (relaxed.verdict, relaxed.need_more) == (Verdict.PASS, False)
    assert "post-merge alerts watch the target branch for it" in relaxed.detail


def test_one_throttled_sample_does_not_defeat_a_real_drop() -> None:
    # Seven pairs of a 6 % drop; in one of them the base ran on a GPU that throttled 20 %
    # unseen. A mean and variance would make that one pair decide the test.
    taken = pairs(100.0, 94.0, 7, wobble=0.01, seed=11)
    base, head = taken[3]
    taken[3] = (base * 0.8, head)
    decision = paired_decide(taken, policy=POLICY, prior=PRIOR)
    assert (decision.verdict, decision.reason) == (Verdict.BLOCK, Reason.PAIRED_REGRESSION)
    assert decision.effect_pct is not None and -8.0 < decision.effect_pct < -4.0
    assert decision.pairs == 6 and "1 pair(s) set aside as outliers" in decision.detail


def test_one_throttled_head_sample_does_not_block_unchanged_code() -> None:
    taken = pairs(100.0, 100.0, 6, wobble=0.01, seed=12)
    base, head = taken[2]
    taken[2] = (base, head * 0.8)
    decision = paired_decide(taken, policy=POLICY, prior=PRIOR)
    assert decision.verdict is Verdict.PASS
    assert decision.effect_pct is not None and abs(decision.effect_pct) < 2.0


def test_the_gate_reaches_the_verdict_the_bench_stopped_at() -> None:
    """The bench stops at the first look that decides; the gate judges that same look.

    Re-judging the stopped pairs as a last look moves the block line: a drop the bench
    cleared as too small to matter would become significant, and PASS would turn WARN.
    """
    moved = 0
    rng = random.Random(5)
    for _ in range(400):
        taken: list[tuple[float, float]] = []
        while True:
            taken.append((100.0 * math.exp(rng.gauss(0, 0.01)),
                          97.0 * math.exp(rng.gauss(0, 0.01))))  # fmt: skip
            step = paired_decide(taken, policy=POLICY, prior=PRIOR)
            if not step.need_more:
                break
        gate = settled_decision(taken, policy=POLICY, prior=PRIOR)
        moved += (gate.verdict, gate.reason) != (step.verdict, step.reason)
        assert gate.pairs == step.pairs
    assert moved == 0


def test_pairs_the_bench_ran_out_of_are_judged_as_its_last_look() -> None:
    noisy = pairs(100.0, 96.0, 5, wobble=0.06, seed=3)
    assert paired_decide(noisy, policy=POLICY).need_more
    settled = settled_decision(noisy, policy=POLICY)
    assert settled == paired_decide(noisy, policy=POLICY, final=True)
    assert not settled.need_more
