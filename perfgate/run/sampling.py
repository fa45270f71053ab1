"""How many samples a bucket run takes: its repeats, then more on suspicion (R5).

Every run takes ``repeats`` samples. With ``gate.confirm: repeat`` the bench, which owns
the runner, then asks after each sample whether the verdict needs another one (the rule
in ``judge.stats`` answers, against the bucket's window) and measures again until it
does not, ``max_repeats`` are taken, or ``repeat_budget_minutes`` are spent. This module
is only that loop: a later confirmation mode (paired A/B runs) replaces it as a whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from perfgate.config import Bucket, ConfirmMode
from perfgate.result import SamplingStop

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class SamplingPlan:
    """A bucket's repeats, its confirmation budget, and whether it confirms at all."""

    confirm: ConfirmMode
    repeats: int
    max_repeats: int
    budget_s: float | None = None

    @classmethod
    def for_bucket(cls, bucket: Bucket, confirm: ConfirmMode) -> SamplingPlan:
        """The plan perfgate.yaml declares for ``bucket``."""
        budget = bucket.repeat_budget_minutes
        return cls(
            confirm=confirm,
            repeats=bucket.repeats,
            max_repeats=bucket.most_samples(confirm),
            budget_s=None if budget is None else budget * 60.0,
        )


def take_samples(
    plan: SamplingPlan,
    measure: Callable[[int], T],
    *,
    healthy: Callable[[T], bool],
    wants_more: Callable[[Sequence[T]], bool] | None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[T], SamplingStop]:
    """Measure samples 0, 1, ... until the plan says stop; the samples and why they stopped.

    ``measure(index)`` takes one sample; a sample that is not ``healthy`` ends the run (a
    failed run is not measured further). ``wants_more`` is asked once the repeats are in
    and after every further sample; None (nothing to confirm against) takes the repeats.
    """
    started = clock()
    taken: list[T] = []
    while True:
        taken.append(measure(len(taken)))
        if not healthy(taken[-1]):
            return taken, SamplingStop.FAILED
        if len(taken) < plan.repeats:
            continue
        if wants_more is None or plan.confirm is ConfirmMode.OFF:
            return taken, SamplingStop.PLANNED
        if len(taken) >= plan.max_repeats:
            stop = SamplingStop.MAX_REPEATS if len(taken) > plan.repeats else SamplingStop.PLANNED
            return taken, stop
        if not wants_more(taken):
            return taken, SamplingStop.SETTLED
        if plan.budget_s is not None and clock() - started >= plan.budget_s:
            return taken, SamplingStop.TIME_BUDGET
