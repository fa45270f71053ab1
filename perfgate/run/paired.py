"""Paired confirmation's loop: the merge base and the change, alternately on one runner.

A rolling window compares this runner today with other runners on other days; the pool's
spread between runners (qualification tolerates 5 %) and the GPU's state are in that
comparison, and statistics alone cannot take them out. Measuring the merge base and the
change on the same runner, one right after the other, does: a pair shares the runner, its
clocks and its neighbours, so their ratio is the change alone. The judge side
(``judge.paired``) decides after every pair whether another is needed; this module only
takes them, within ``max_pairs`` and ``pair_budget_minutes``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.config import Bucket
from perfgate.result import PairedSample, PairedSide, PairedStop


@dataclass(frozen=True, kw_only=True)
class PairPlan:
    """What the judge side allows a paired comparison: how many pairs, or why none."""

    pairs: int  # at most this many (0: none)
    skipped: str = ""  # why none: the pairs cannot decide, or the run's budget cannot afford them


@dataclass(frozen=True, kw_only=True)
class BaseCheckout:
    """The merge base, ready to measure: its commit, a throwaway worktree, its own bucket."""

    commit: str
    checkout: Path
    # The bucket as the merge base's own perfgate.yaml declares it (its own benchmark).
    bucket: Bucket


def pair_order(pair: int) -> tuple[PairedSide, PairedSide]:
    """Base first in even pairs, head first in odd ones (A B, B A, A B, ...).

    Each pair runs both sides back to back; swapping who goes first every pair means a
    runner that warms up or drifts steadily during the comparison favours neither side.
    """
    if pair % 2 == 0:
        return PairedSide.BASE, PairedSide.HEAD
    return PairedSide.HEAD, PairedSide.BASE


def measure_pairs(
    *,
    max_pairs: int,
    budget_s: float | None,
    measure: Callable[[PairedSide, int, int], PairedSample],
    remeasure: Callable[[PairedSample], bool],
    wants_more: Callable[[Sequence[PairedSample]], bool],
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[PairedSample], PairedStop]:
    """Take pairs until the judge is satisfied, ``max_pairs`` are in, or another pair would
    not finish within the budget.

    ``measure(side, pair, index)`` takes one sample; a failed one (either side) ends the
    comparison. A sample admission control set aside is measured again while
    ``remeasure`` grants it (then its pair uses the new one), else its pair is left out.
    ``wants_more`` says whether the judge is still undecided: SETTLED only when it is not.
    """
    started = clock()
    samples: list[PairedSample] = []
    for pair in range(max_pairs):
        for side in pair_order(pair):
            while True:
                sample = measure(side, pair, len(samples))
                samples.append(sample)
                if sample.failed:
                    return samples, PairedStop.FAILED
                if sample.usable or not remeasure(sample):
                    break
        if not wants_more(samples):
            return samples, PairedStop.SETTLED
        # A cap: the next pair starts only when it can finish within the budget, at the
        # time a pair has taken so far (the merge base's checkout and warm-up included).
        if budget_s is not None:
            elapsed = clock() - started
            if elapsed + elapsed / (pair + 1) > budget_s:
                return samples, PairedStop.TIME_BUDGET
    return samples, PairedStop.MAX_PAIRS
