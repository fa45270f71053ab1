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
from perfgate.run.allowance import MARGIN


@dataclass(frozen=True, kw_only=True)
class PairPlan:
    """What the judge side allows a paired comparison: how many pairs, or why none."""

    pairs: int  # at most this many (0: none)
    # Why none, said first, then its numbers after ': ' (the pairs cannot decide, or the
    # run's budget cannot afford them).
    skipped: str = ""


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
    started: float | None = None,
    first_pair_s: float = 0.0,
) -> tuple[list[PairedSample], PairedStop]:
    """Take pairs until the judge is satisfied, ``max_pairs`` are in, or another pair would
    not finish within the budget.

    ``measure(side, pair, index)`` takes one sample; a failed one (either side) ends the
    comparison. A sample admission control set aside is measured again while
    ``remeasure`` grants it (then its pair uses the new one), else its pair is left out.
    ``wants_more`` says whether the judge is still undecided: SETTLED only when it is not.

    The budget is a cap counted from ``started`` (the merge base's checkout included): a
    pair starts only when it can finish within it, at ``first_pair_s`` for the first pair
    and afterwards at what the last pair's launches took, its warm-ups left out (a cold
    cache is warmed once).
    """
    started = clock() if started is None else started
    samples: list[PairedSample] = []
    per_pair = first_pair_s
    for pair in range(max_pairs):
        if budget_s is not None and clock() - started + per_pair * MARGIN > budget_s:
            return samples, PairedStop.TIME_BUDGET
        first = len(samples)
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
        per_pair = sum(s.wall_s - s.warmup_s for s in samples[first:])
    return samples, PairedStop.MAX_PAIRS
