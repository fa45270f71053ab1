"""How a CI run fans out over runner jobs, and what it may cost at most (R17). Pure.

A runner job pays its setup (checkout, image, cache restore) once, whatever it measures,
so a run's buckets are split over a few jobs (*lanes*) per runner pool
(``workflows.bench_jobs``), each measuring its buckets in turn in one ``perfgate bench``
process. The split is fixed by the whole matrix (longest first, onto the least-loaded lane)
so a lane keeps its identity and its warm caches from run to run; a run then starts only
the lanes that hold a bucket it measures. The run's budget (``gate.budget_minutes``: what it
may spend beyond its plan) is shared out over the lanes that run, in proportion to their
buckets' launch time, so the whole matrix spends at most that much however it fans out.

``worst_case`` is the bill such a run may reach: every lane's setup, every planned launch
(with the warm-up a cold warm cache needs), every admission wait, and the budget whole.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from perfgate.config import AdmissionMode, AdmissionPolicy, AlertsSpec, Bucket, Config
from perfgate.config.policy import ConfirmMode


@dataclass(frozen=True, kw_only=True)
class Lane:
    """One runner job of a run: its buckets, measured in turn, and its share of the budget."""

    number: int  # 1-based, stable for a matrix: names its artifacts and warm caches
    runner: tuple[str, ...]
    buckets: tuple[Bucket, ...]
    budget_minutes: float | None = None

    @property
    def name(self) -> str:
        """``lane-2``: the lane's artifact and cache suffix."""
        return f"lane-{self.number}"

    @property
    def title(self) -> str:
        """The job's title: its first bucket, and how many more it measures."""
        first, more = self.buckets[0].id, len(self.buckets) - 1
        return f"{first} (+{more})" if more else first


def launch_minutes(bucket: Bucket) -> float:
    """One launch of ``bucket``: as declared, else the longest it may take (its timeout)."""
    return bucket.launch_minutes or bucket.timeout_minutes


def split(config: Config) -> tuple[Lane, ...]:
    """Every bucket of the matrix in a lane: at most ``workflows.bench_jobs`` lanes per
    runner pool, the longest buckets placed first, each onto the lane with the least
    launch time so far; each lane's buckets in the config's order."""
    lanes: list[Lane] = []
    for pool in config.runner_pools():
        members = [b for b in config.buckets if b.runner == pool]
        count = min(config.bench_jobs, len(members))
        loads = [0.0] * count
        placed: list[list[Bucket]] = [[] for _ in range(count)]
        for bucket in sorted(members, key=launch_minutes, reverse=True):
            lightest = loads.index(min(loads))
            placed[lightest].append(bucket)
            loads[lightest] += launch_minutes(bucket)
        order = {b.id: i for i, b in enumerate(config.buckets)}
        for chosen in placed:
            chosen.sort(key=lambda b: order[b.id])
            lanes.append(Lane(number=len(lanes) + 1, runner=pool, buckets=tuple(chosen)))
    return tuple(lanes)


def plan(config: Config, measured: Sequence[Bucket]) -> tuple[Lane, ...]:
    """The lanes a run starts to measure ``measured``: each fixed lane narrowed to them (a
    lane left with none is not started), the run's budget shared out by launch time."""
    ids = {bucket.id for bucket in measured}
    running = [
        replace(lane, buckets=tuple(b for b in lane.buckets if b.id in ids))
        for lane in split(config)
        if any(b.id in ids for b in lane.buckets)
    ]
    budget = config.gate.budget_minutes
    if budget is None:
        return tuple(running)
    weights = [sum(launch_minutes(b) for b in lane.buckets) for lane in running]
    total = sum(weights) or 1.0
    # Rounded down, so the shares never add up to more than the budget.
    return tuple(
        replace(lane, budget_minutes=math.floor(budget * weight / total * 1000) / 1000)
        for lane, weight in zip(running, weights, strict=True)
    )


def planned_minutes(bucket: Bucket, admission: AdmissionPolicy, warm: Collection[str]) -> float:
    """What one bucket run is planned to spend: one launch of each of its repeats, the
    warm-up its warm cache needs when it finds it cold (a bucket in ``warm``), and
    admission control's longest wait."""
    launches = bucket.repeats + (1 if bucket.id in warm else 0)
    wait = admission.wait_seconds / 60.0 if admission.mode is not AdmissionMode.OFF else 0.0
    return launches * launch_minutes(bucket) + wait


def unbudgeted_minutes(bucket: Bucket, confirm: ConfirmMode, admission: AdmissionPolicy) -> float:
    """The most a bucket run may spend beyond its plan when no run budget caps it: every
    launch retried, every re-measure, every confirming sample and pair its counts and its
    own budgets allow (each capped at what finishes within it)."""
    launch = launch_minutes(bucket)
    attempts = bucket.retries + 1
    extra = bucket.repeats * bucket.retries * launch
    if admission.mode is not AdmissionMode.OFF:
        extra += admission.remeasure * attempts * launch
    if confirm is not ConfirmMode.OFF:
        more = (bucket.most_samples(confirm) - bucket.repeats) * attempts * launch
        if bucket.repeat_budget_minutes is not None:
            more = min(more, bucket.repeat_budget_minutes)
        extra += more
    if confirm is ConfirmMode.PAIRED:
        pairs = (2 * bucket.max_pairs + 1) * attempts * launch  # and the base's warm-up
        if bucket.pair_budget_minutes is not None:
            pairs = min(pairs, bucket.pair_budget_minutes)
        extra += pairs
    return extra


@dataclass(frozen=True, kw_only=True)
class Bill:
    """The most one CI run may cost its runners, in runner minutes, and what it rests on."""

    jobs: int
    setup: float
    planned: float
    extra: float  # the run's budget, or what the counts allow without one
    capped: bool  # True: ``extra`` is gate.budget_minutes, a cap
    unknown_setup: tuple[str, ...] = ()  # runner pools with no setup_minutes declared

    @property
    def total(self) -> float:
        """Runner minutes in all."""
        return self.setup + self.planned + self.extra


def worst_case(config: Config, *, push: bool, warm: Collection[str] = ()) -> Bill:
    """The most a run of the whole matrix may cost (a push's, with ``alerts.push_repeats``):
    every lane's setup, every planned launch at its ``launch_minutes`` (else its timeout),
    the longest admission waits, and the run's budget whole (or, without one, what the
    buckets' counts and own budgets allow)."""
    lanes = split(config)
    alerts: AlertsSpec = config.alerts
    buckets = [b.as_pushed(alerts) if push else b for b in config.buckets]
    setups = [max((b.setup_minutes or 0.0) for b in lane.buckets) for lane in lanes]
    unknown = tuple(
        dict.fromkeys(
            "+".join(lane.runner)
            for lane in lanes
            if all(b.setup_minutes is None for b in lane.buckets)
        )
    )
    planned = sum(planned_minutes(b, config.admission, warm) for b in buckets)
    budget = config.gate.budget_minutes
    extra = (
        budget
        if budget is not None
        else sum(unbudgeted_minutes(b, config.gate.confirm, config.admission) for b in buckets)
    )
    return Bill(jobs=len(lanes), setup=sum(setups), planned=planned, extra=extra,
                capped=budget is not None, unknown_setup=unknown)  # fmt: skip
