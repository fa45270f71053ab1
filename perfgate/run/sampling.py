"""How many samples a bucket run takes: its repeats, then more on suspicion (R5).

Every run takes ``repeats`` samples. With ``gate.confirm: repeat`` the bench, which owns
the runner, then asks after each sample whether the verdict needs another one (the rule
in ``judge.rule`` answers, against the bucket's window) and measures again until it
does not, ``max_repeats`` are taken, or ``repeat_budget_minutes`` are spent. With
``gate.confirm: paired`` the repeats are followed, on suspicion, by a paired comparison
with the merge base (``run.paired``); this loop resumes only when no base can be measured.

A push to a protected branch (its samples are published and watched by post-merge
alerts) takes at least ``alerts.push_repeats`` samples of each bucket (6 unless set),
whatever their repeats: the alert rule sees better-measured pushed runs
(``as_run_measures``). ``push_repeats: 1`` leaves a push at the bucket's repeats.

Admission control may set a sample aside (the machine was unfit): it is then measured
again while the run's re-measure budget lasts, and the set-aside sample does not count
towards the plan; once the budget is spent, set-aside samples count as taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Generic, TypeVar

from perfgate.config import AlertsSpec, Bucket, ConfirmMode, GatePolicy
from perfgate.context import RunContext
from perfgate.errors import UsageError
from perfgate.result import SamplingStop

T = TypeVar("T")


class Step(StrEnum):
    """What a suspicious run should spend next (``gate.confirm: paired``; the judge says)."""

    DONE = "done"  # the window cleared it (or has nothing to judge): spend nothing
    REPEAT = "repeat"  # one more launch on this runner may still clear it
    PAIR = "pair"  # only the merge base measured beside it can decide


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


class Sampler(Generic[T]):
    """A bucket run's samples in the order taken; it can resume with another plan."""

    def __init__(
        self,
        measure: Callable[[int], T],
        *,
        healthy: Callable[[T], bool],
        set_aside: Callable[[T], bool] = lambda sample: False,
        remeasure: Callable[[T], bool] = lambda sample: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.measure = measure
        self.healthy = healthy
        self.set_aside = set_aside
        self.remeasure = remeasure
        self.clock = clock
        self.started = clock()
        self.taken: list[T] = []
        # Indexes of set-aside samples measured again: they do not count towards the plan.
        self.replaced: list[int] = []

    @property
    def counted(self) -> int:
        """Samples that count towards the plan."""
        return len(self.taken) - len(self.replaced)

    def take(self) -> bool:
        """One sample that counts (measured again while admission sets it aside and the
        budget allows); False when a sample failed."""
        while True:
            sample = self.measure(len(self.taken))
            self.taken.append(sample)
            if not self.healthy(sample):
                return False
            if not (self.set_aside(sample) and self.remeasure(sample)):
                return True
            self.replaced.append(len(self.taken) - 1)

    def run(
        self, plan: SamplingPlan, wants_more: Callable[[Sequence[T]], bool] | None
    ) -> SamplingStop:
        """Measure until the plan says stop, and say why it stopped.

        A sample that is not ``healthy`` ends the run (a failed run is not measured
        further). ``wants_more`` is asked once the repeats are in and after every further
        sample; None (nothing to confirm against) takes the repeats.
        """
        while True:
            if self.counted < plan.repeats:
                if not self.take():
                    return SamplingStop.FAILED
                continue
            if wants_more is None or plan.confirm is ConfirmMode.OFF:
                return SamplingStop.PLANNED
            if self.counted >= plan.max_repeats:
                more = self.counted > plan.repeats
                return SamplingStop.MAX_REPEATS if more else SamplingStop.PLANNED
            if not wants_more(self.taken):
                return SamplingStop.SETTLED
            # A cap: another sample starts only when it can finish within the budget, at the
            # time a sample has taken so far.
            elapsed = self.clock() - self.started
            per_sample = elapsed / max(len(self.taken), 1)
            if plan.budget_s is not None and elapsed + per_sample > plan.budget_s:
                return SamplingStop.TIME_BUDGET
            if not self.take():
                return SamplingStop.FAILED


def with_sample_count(
    buckets: Sequence[Bucket], *, repeats: int | None = None, samples: int | None = None
) -> tuple[Bucket, ...]:
    """``buckets`` taking ``repeats`` samples each (a suspicious run may still take more),
    or exactly ``samples`` (never more: the same design for every bucket and runner, as a
    qualification allocation needs); as declared with neither.

    A count outside 1..100 is a usage error naming its flag.
    """
    count = samples if samples is not None else repeats
    if count is None:
        return tuple(buckets)
    if not 1 <= count <= 100:
        flag = "--samples" if samples is not None else "--repeats"
        raise UsageError(f"{flag} {count}: take between 1 and 100 samples")
    if samples is not None:
        return tuple(replace(b, repeats=count, max_repeats=count) for b in buckets)
    return tuple(b.taking(count) for b in buckets)


def as_run_measures(
    buckets: Sequence[Bucket], run: RunContext, gate: GatePolicy, alerts: AlertsSpec
) -> tuple[Bucket, ...]:
    """``buckets`` as ``run`` measures them: a push to a protected branch, whose samples are
    published and watched by post-merge alerts (R9, R18), takes at least
    ``alerts.push_repeats`` samples of each; any other run (a pull request, a merge
    group, a local run) takes their own repeats."""
    if not gate.is_protected_push(run.event, run.branch):
        return tuple(buckets)
    return tuple(b.as_pushed(alerts) for b in buckets)
