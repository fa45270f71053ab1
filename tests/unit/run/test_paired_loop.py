"""Paired confirmation's loop alone: the order of the sides, re-measures, stops."""

from __future__ import annotations

from perfgate.result import (
    AdmissionStatus,
    FailurePhase,
    PairedSample,
    PairedSide,
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
    def run(budget: float | None, ticks: list[float]) -> tuple[int, PairedStop]:
        clock = iter(ticks)
        samples, stop = measure_pairs(
            max_pairs=3, budget_s=budget,
            measure=lambda side, pair, index: sample(side, pair, index),
            remeasure=lambda s: False, wants_more=lambda taken: True,
            clock=lambda: next(clock),
        )  # fmt: skip
        return len(samples), stop

    assert run(None, [0.0]) == (6, PairedStop.MAX_PAIRS)
    # A cap: a pair of 30 s fits once more in 60 s (a slower second one still ends it) ...
    assert run(60.0, [0.0, 30.0, 61.0]) == (4, PairedStop.TIME_BUDGET)
    # ... one of 35 s does not, so the second pair never starts (the budget is not overrun).
    assert run(60.0, [0.0, 35.0]) == (2, PairedStop.TIME_BUDGET)


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
