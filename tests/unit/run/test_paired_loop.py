"""Paired confirmation's loop alone: the order of the sides, re-measures, stops."""

from __future__ import annotations

from dataclasses import replace

from perfgate.result import (
    AdmissionStatus,
    FailurePhase,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    SampleAdmission,
)
from perfgate.run.paired import measure_pairs, pair_order

BASE, HEAD = PairedSide.BASE, PairedSide.HEAD


def sample(side: PairedSide, pair: int, index: int, *, aside: bool = False,
           failed: bool = False) -> PairedSample:  # fmt: skip
    status = AdmissionStatus.CONTAMINATED if aside else AdmissionStatus.ADMITTED
    return PairedSample(
        sample_index=index,
        pair=pair,
        side=side,
        value=None if failed else 100.0,
        phase=FailurePhase.RUNTIME if failed else None,
        admission=SampleAdmission(sample_index=index, status=status),
    )


def test_the_order_swaps_every_pair() -> None:
    assert [pair_order(p) for p in range(3)] == [(BASE, HEAD), (HEAD, BASE), (BASE, HEAD)]


def test_pairs_until_the_judge_is_satisfied() -> None:
    samples, stop = measure_pairs(
        max_pairs=10,
        budget_s=None,
        measure=lambda side, pair, index: sample(side, pair, index),
        remeasure=lambda s: False,
        wants_more=lambda taken: len(taken) < 6,
    )
    assert stop is PairedStop.SETTLED
    assert [(s.pair, s.side) for s in samples] == [
        (0, BASE), (0, HEAD), (1, HEAD), (1, BASE), (2, BASE), (2, HEAD)
    ]  # fmt: skip


def test_max_pairs_and_the_time_budget_stop_it() -> None:
    """The budget is a cap: a pair starts only when, at what a pair takes, it ends within
    the budget, counted from the merge base's checkout; the first at its estimate."""

    def run(
        budget: float | None,
        *,
        started: float = 0.0,
        first: float = 0.0,
        launch: float = 15.0,
        warmup: float = 0.0,
    ) -> tuple[int, PairedStop, float]:
        now = [0.0]

        def measure(side: PairedSide, pair: int, index: int) -> PairedSample:
            cold = warmup if (index == 0 and side is BASE) else 0.0
            now[0] += launch + cold
            return replace(sample(side, pair, index), wall_s=launch + cold, warmup_s=cold)

        samples, stop = measure_pairs(
            max_pairs=3, budget_s=budget, measure=measure, remeasure=lambda s: False,
            wants_more=lambda taken: True, clock=lambda: now[0], started=started,
            first_pair_s=first,
        )  # fmt: skip
        return len(samples), stop, now[0] - started

    assert run(None)[:2] == (6, PairedStop.MAX_PAIRS)
    # Pairs of 30 s: two end by 60 s; a third (90 s) would not, so it never starts.
    assert run(70.0, first=30.0) == (4, PairedStop.TIME_BUDGET, 60.0)
    # 20 s of checkout before the first pair count: only one pair fits in 60 s.
    assert run(60.0, started=-20.0, first=30.0) == (2, PairedStop.TIME_BUDGET, 50.0)
    # A first pair that cannot finish within the budget never starts.
    assert run(30.0, first=30.0)[:2] == (0, PairedStop.TIME_BUDGET)
    # The base's warm-up is paid once: after a first pair of 45 s the next costs 30.
    assert run(110.0, first=45.0, warmup=15.0) == (6, PairedStop.MAX_PAIRS, 105.0)


def test_a_set_aside_sample_is_measured_again_in_its_pair() -> None:
    granted = [1]

    def remeasure(s: PairedSample) -> bool:
        granted[0] -= 1
        return granted[0] >= 0

    def measure(side: PairedSide, pair: int, index: int) -> PairedSample:
        return sample(side, pair, index, aside=index in (1, 2))

    samples, stop = measure_pairs(
        max_pairs=2, budget_s=None, measure=measure, remeasure=remeasure,
        wants_more=lambda taken: True,
    )  # fmt: skip
    # Sample 1 (head of pair 0) is measured again as sample 2, set aside too, and the
    # budget is spent: pair 0 keeps no usable head.
    assert [(s.sample_index, s.pair, s.side) for s in samples[:3]] == [
        (0, 0, BASE), (1, 0, HEAD), (2, 0, HEAD)
    ]  # fmt: skip
    assert stop is PairedStop.MAX_PAIRS


def test_a_failed_sample_ends_the_comparison() -> None:
    samples, stop = measure_pairs(
        max_pairs=5, budget_s=None,
        measure=lambda side, pair, index: sample(side, pair, index, failed=index == 2),
        remeasure=lambda s: False, wants_more=lambda taken: True,
    )  # fmt: skip
    assert (len(samples), stop) == (3, PairedStop.FAILED)


def test_pairs_not_taken_are_said_in_one_short_line_with_the_numbers_left_to_the_verdict() -> None:
    from perfgate.config import load_config
    from perfgate.judge.budget import Affordability
    from perfgate.run.paired import _paired_notice
    from perfgate.run.sampling import Step
    from tests.paths import ROOT

    plan = Affordability(what=Step.PAIR, budget_minutes=None, launch_minutes=0.0397, afforded=16,
                         most=16, needed=54, drop_pct=5.0, noise_pct=6.4)  # fmt: skip
    skipped = PairedRecord(status=PairedStatus.SKIPPED, reason=f"{plan.short()}: {plan.text()}")
    bucket = next(
        b for b in load_config(ROOT / "perfgate.yaml").buckets if b.id == "cartpole/python"
    )
    line = _paired_notice(bucket, skipped)
    assert line == (
        "cartpole/python: no pairs taken (16 pairs cannot confirm a 5 % drop); "
        "the window's verdict stands"
    )
