"""Runner economics (``nox -s quality``): what a trustworthy verdict costs in runner minutes.

Every sample on a GPU pool is a launch of the benchmark, several minutes each, so the
quality of a verdict is half the story: this suite streams bucket runs through the whole
confirmation loop (repeats, the runner-aware window, more repeats or paired A/B on
suspicion, admission control, budgets) and counts launches beside the verdicts.

Cost model (``targets.Options``): a bucket run costs ``S + L x launches`` runner minutes,
S the job's setup (checkout, image, container start), L one launch; every launch counts
(repeats, admission's re-measures, both sides of every pair). The defaults are the Isaac
Lab example's: its buckets' ``launch_minutes`` (6 to 14) and S such that one launch per
bucket costs the upstream gate's 145 L40S-minutes a pull request.

Pools: 8 runners with fixed offsets spread over +-5 %, 3 % of samples throttled 15-35 %
(admission control re-measures up to 3 per run), sample noise CV 1 or 2 %, and:

* ``offsets``: nothing more;
* ``states``: ``STATE_P`` of runs sit 3-7 % lower with every sample (a clock state, a
  noisy neighbour for the run's whole length), the paired base included;
* ``drift``: offsets drift slowly (a random walk) and a runner leaves the pool half-way,
  a new one taking its place;
* ``throttled``: besides the throttling admission control sees, ``UNSEEN_P`` of samples
  run ``UNSEEN_SLOW`` slow and nothing notices (a GPU clocked down mid-launch with no
  record of it): the figure is kept;
* ``runstates``: frequent run-level states, a series' runs sitting in a slower state with
  a probability drawn in ``RUNSTATE_P`` and a depth drawn in ``RUNSTATE_SLOW`` (boost and
  clock states), every sample of the run together, the paired base included.

The last two are held out from the rule's tuning: they are generators of this suite's own,
not the window model's assumptions.

Strategies, side by side on the same series: ``today`` (the defaults before runner
economics: 2 repeats, pairs whenever a drop of the 3 % minimum is still possible, up to 16
pairs), ``new`` (perfgate's defaults now), and ``new`` without runner-aware windows, and
with confirmation off or by repeats (no mode may BLOCK unchanged code above the
false-alarm rate, run-level states included). Regressions: every series drops once, by
5 or 10 %, and a drop counts as caught only when the pull request that brings it is
BLOCKed (PR time). The Isaac Lab example runs its nine buckets a pull request at a time,
with its own budgets and its shared ``gate.budget_minutes``, read from its perfgate.yaml.

Stored runs: the window is built of the runs before, each as a protected push stores it.
``Options.stored_samples`` N (``--stored-samples``; by default perfgate's own
``alerts.push_repeats``, 6) tops each stored run up with more launches on its runner until N
were planned, the pull request itself still taking its strategy's repeats; the top-up is the
push's cost, not the pull request's, so it is not counted in launches. N = 1 stores each
run as taken (its repeats, and what confirmation added), as ``alerts.push_repeats: 1`` does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from perfgate.config import Bucket, Config, ConfirmMode, GatePolicy, load_config
from perfgate.judge.budget import (
    clear_drop,
    next_step,
    pair_affordability,
    pairs_affordable,
    samples_affordable,
    suspicion,
    unaffordable,
    uncleared,
)
from perfgate.judge.decision import Decision
from perfgate.judge.paired import PairedPolicy, PairNoise, paired_decide, settled_decision
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.runner_offsets import StoredRun, WindowRunners, WindowView, window_view
from perfgate.judge.verdicts import Verdict
from perfgate.run.allowance import MARGIN
from perfgate.run.sampling import Step
from tests.perf.targets import (
    Options,
    SuiteReport,
    Target,
    at_most,
    rate_at_least,
    rate_at_most,
    upper95,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = ROOT / "examples" / "isaaclab" / "perfgate.yaml"

RUNNERS = 8
OFFSET = 0.05  # runner offsets uniform (in log) over [-5 %, +5 %]
THROTTLE_P = 0.03
THROTTLE_SLOW = (0.15, 0.35)
REMEASURE = 3  # admission control's re-measures per bucket run
STATE_P = 0.05  # "states" pool: share of runs in a slower state
STATE_SLOW = (0.03, 0.07)
UNSEEN_P = 0.03  # "throttled" pool: samples slowed without admission control seeing it
UNSEEN_SLOW = (0.15, 0.25)
RUNSTATE_P = (0.1, 0.3)  # "runstates" pool: a series' share of runs in the slower state
RUNSTATE_SLOW = (0.05, 0.08)  # and the state's depth (one per series, a clock state)
DRIFT_SD = 0.001  # "drift" pool: per-run random-walk step of each runner's log offset
BURN_IN = 100  # runs recorded before the first judged point
POINTS = 60
CHANGE_RANGE = (15, POINTS - 5)
DROPS = (0.05, 0.10)
UPSTREAM_PR_MINUTES = 145.0  # the upstream gate, one launch per bucket (its reviewers' figure)
POOLS = (("offsets", 0.01), ("offsets", 0.02), ("states", 0.01), ("states", 0.02),
         ("drift", 0.02), ("throttled", 0.01), ("throttled", 0.02), ("runstates", 0.01),
         ("runstates", 0.02))  # fmt: skip
# Pools the rule's targets are judged on, each CV; the drift pool is reported only.
TARGET_POOLS = ("offsets", "states", "throttled", "runstates")
STATE_POOLS = ("states", "runstates")  # every confirmation mode's false BLOCK is a target


@dataclass(frozen=True, kw_only=True)
class Pool:
    """A runner pool: its noise, and what else moves a run."""

    kind: str  # offsets | states | drift | throttled | runstates
    cv: float

    @property
    def name(self) -> str:
        """'states 2%'."""
        return f"{self.kind} {self.cv * 100:g}%"


@dataclass(frozen=True, kw_only=True)
class Strategy:
    """How a bucket run takes samples and confirms (a perfgate.yaml, in effect)."""

    name: str
    confirm: str = "paired"  # off | repeat | paired
    repeats: int = 2
    max_repeats: int = 10
    max_pairs: int = 16
    repeat_budget: float | None = None  # minutes
    pair_budget: float | None = None
    confirm_drop_pct: float = 3.0  # confirm when the window cannot rule out a drop this large
    history_runs: int = 0  # runner-aware windows learn from this much history (0: off)
    # perfgate's confirmation now: more repeats before any pair, the window's noise pooled
    # into the pairs, pairs clearing at the drop that matters, no pairs that cannot decide
    economical: bool = False

    @classmethod
    def of(cls, name: str, gate: GatePolicy, bucket: Bucket | None = None) -> Strategy:
        """The strategy perfgate runs for ``bucket`` (Bucket's defaults when None)."""
        defaults = {f.name: f.default for f in fields(Bucket) if f.name in (
            "repeats", "max_repeats", "max_pairs")}  # fmt: skip
        return cls(
            name=name,
            confirm=gate.confirm.value,
            repeats=bucket.repeats if bucket else defaults["repeats"],
            max_repeats=bucket.max_repeats if bucket else defaults["max_repeats"],
            max_pairs=bucket.max_pairs if bucket else defaults["max_pairs"],
            repeat_budget=bucket.repeat_budget_minutes if bucket else None,
            pair_budget=bucket.pair_budget_minutes if bucket else None,
            confirm_drop_pct=gate.confirm_drop_pct,
            history_runs=gate.baseline.history_runs,
            economical=True,
        )

    def policy(self) -> CalibratedPolicy:
        """The window rule as the bench builds it for this bucket."""
        most = self.repeats if self.confirm == ConfirmMode.OFF else self.max_repeats
        return CalibratedPolicy(
            initial_repeats=self.repeats, max_repeats=most, history_runs=self.history_runs
        )

    def paired_policy(self) -> PairedPolicy:
        """The paired test as the bench builds it."""
        clear = clear_drop(3.0, self.confirm_drop_pct) if self.economical else None
        return PairedPolicy(max_pairs=self.max_pairs, clear_drop_pct=clear)


# The defaults before runner economics, kept for the side-by-side comparison.
TODAY = Strategy(name="today")
NEW = Strategy.of("new", GatePolicy())
STRATEGIES = (
    TODAY,
    NEW,
    replace(NEW, name="new, no runner offsets", history_runs=0),
    replace(NEW, name="new, confirm: off", confirm="off"),
    replace(NEW, name="new, confirm: repeat", confirm="repeat"),
)


@dataclass(kw_only=True)
class Tally:
    """Counts of one strategy on one pool."""

    unchanged: int = 0
    false_blocks: int = 0
    inconclusive: int = 0  # of unchanged runs
    launches: int = 0  # of unchanged runs
    paired: int = 0  # unchanged runs that paired
    drops: dict[float, int] = field(default_factory=dict)
    blocked: dict[float, int] = field(default_factory=dict)  # at the change itself (PR time)
    improved: int = 0  # drops called IMPROVED at the change itself

    def add(self, other: Tally) -> None:
        """Accumulate another tally."""
        for name in ("unchanged", "false_blocks", "inconclusive", "launches", "paired",
                     "improved"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.drops, other.drops), (self.blocked, other.blocked)):
            for d, v in theirs.items():
                mine[d] = mine.get(d, 0) + v

    @property
    def fa(self) -> float:
        """False BLOCKs per unchanged bucket run."""
        return self.false_blocks / max(self.unchanged, 1)

    @property
    def inc(self) -> float:
        """INCONCLUSIVE per unchanged bucket run."""
        return self.inconclusive / max(self.unchanged, 1)

    @property
    def launches_per_run(self) -> float:
        """Launches per unchanged bucket run (every sample, both sides of every pair)."""
        return self.launches / max(self.unchanged, 1)

    def detection(self, drop: float) -> float:
        """Share of drops of this size BLOCKed at the change (PR time)."""
        return self.blocked.get(drop, 0) / max(self.drops.get(drop, 0), 1)


class Machine:
    """One bucket run on one runner: its samples through admission control."""

    def __init__(self, rng: np.random.Generator, factor: float, pool: Pool) -> None:
        self.rng, self.factor, self.cv = rng, factor, pool.cv
        self.unseen = UNSEEN_P if pool.kind == "throttled" else 0.0
        self.budget = REMEASURE
        self.taken = 0

    def sample(self, level: float) -> float | None:
        """One admitted figure at ``level`` (None: throttled and the budget is spent)."""
        while True:
            self.taken += 1
            value = level * self.factor * math.exp(self.cv * self.rng.standard_normal())
            if self.unseen and self.rng.random() < self.unseen:
                return value * (1.0 - self.rng.uniform(*UNSEEN_SLOW))  # kept: nobody saw it
            if self.rng.random() >= THROTTLE_P:
                return value
            if self.budget <= 0:
                return None
            self.budget -= 1


def look(strategy: Strategy, history: Sequence[StoredRun], runner: str) -> WindowView:
    """Analyse the window (nearest-first ``history``) the way ``strategy`` judges."""
    names = WindowRunners(names=tuple(run.runner for run in history))
    return window_view([run.values for run in history], names, runner, policy=strategy.policy())


def take_repeats(strategy: Strategy, machine: Machine, head: float) -> list[float]:
    """The run's planned repeats (admitted figures only)."""
    return take(machine, head, strategy.repeats)


def take(machine: Machine, head: float, launches: int) -> list[float]:
    """``launches`` planned launches at ``head`` (admitted figures only)."""
    return [v for v in (machine.sample(head) for _ in range(launches)) if v]


def stored_run(
    strategy: Strategy,
    kept: Sequence[float],
    *,
    runner: str,
    machine: Machine,
    head: float,
    stored_samples: int | None,
) -> StoredRun:
    """The run the window keeps of a point: its samples, topped up on ``machine`` until
    ``stored_samples`` were planned (a push of ``alerts.push_repeats``; None or 1: as taken)."""
    planned = max(strategy.repeats, len(kept))
    more = 0 if stored_samples is None else max(0, stored_samples - planned)
    return StoredRun(runner=runner, values=(*kept, *take(machine, head, more)))


def first_look(
    strategy: Strategy, machine: Machine, seen: WindowView, head: float, launch: float
) -> tuple[list[float], Decision]:
    """What the bench takes before confirmation is planned: the repeats (and under
    ``confirm: repeat`` more, while the rule asks); the window's decision on them."""
    policy = strategy.policy()
    kept = take_repeats(strategy, machine, head)
    if strategy.confirm == ConfirmMode.REPEAT:
        most = samples_affordable(strategy.repeat_budget, launch, strategy.repeats,
                                  strategy.max_repeats)  # fmt: skip
        while kept and len(kept) < most and seen.decide(kept, policy, final=False).need_more:
            value = machine.sample(head)
            if value is not None:
                kept.append(value)
    return kept, seen.decide(kept, policy, final=True)


def confirm_run(
    strategy: Strategy,
    machine: Machine,
    seen: WindowView,
    kept: list[float],
    decision: Decision,
    *,
    head: float,
    base: float,
    launch: float,
    left_minutes: float | None = None,
) -> tuple[Verdict, bool]:
    """``gate.confirm: paired`` as the bench's ``BucketRun.confirm`` spends it: more launches
    here while they may clear the run, then pairs while the window cannot, within the
    budgets and ``left_minutes`` of the run's shared budget. The verdict, and whether it
    paired."""
    if strategy.confirm != ConfirmMode.PAIRED or not kept:
        return decision.verdict, False
    policy, start = strategy.policy(), machine.taken

    def left() -> float | None:
        return None if left_minutes is None else left_minutes - launch * (machine.taken - start)

    if strategy.economical:
        most = samples_affordable(strategy.repeat_budget, launch, strategy.repeats,
                                  strategy.max_repeats)  # fmt: skip
        while len(kept) < most and (left() is None or (left() or 0.0) > 0) and next_step(
            decision, confirm_drop_pct=strategy.confirm_drop_pct, samples=len(kept),
            most=most) is Step.REPEAT:  # fmt: skip
            value = machine.sample(head)
            if value is not None:
                kept.append(value)
            decision = seen.decide(kept, policy, final=True)
    if not uncleared(decision, strategy.confirm_drop_pct):
        return decision.verdict, False
    pairs = pair_phase(strategy, machine, decision, head, base, launch, left())
    return confirmed(strategy, decision, pairs), pairs is not None


def pair_phase(
    strategy: Strategy,
    machine: Machine,
    decision: Decision,
    head: float,
    base: float,
    launch: float,
    left_minutes: float | None = None,
) -> Verdict | None:
    """Paired A/B when the window cannot clear the run; None when no pairs were taken."""
    paired_policy = strategy.paired_policy()
    prior = (
        PairNoise(noise_pct=decision.within_noise_pct, df=decision.within_df)
        if strategy.economical and decision.within_noise_pct and decision.within_df
        else None
    )
    budgets = [m for m in (strategy.pair_budget, left_minutes) if m is not None]
    afford = pairs_affordable(min(budgets) if budgets else None, launch, strategy.max_pairs)
    if strategy.economical:
        plan = pair_affordability(
            budget_minutes=strategy.pair_budget,
            max_pairs=strategy.max_pairs,
            launch_minutes=launch,
            # As the bench sizes them: for the window's estimated drop when it is larger.
            drop_pct=max(strategy.confirm_drop_pct, decision.drop_pct or 0.0),
            noise_pct=prior.noise_pct if prior else decision.noise_pct or 0.0,
            policy=paired_policy,
            prior_df=prior.df if prior else 0.0,
        )
        # As the bench plans it: the pairs, the merge base's warm-up, and the margin.
        if not plan.decides or unaffordable(plan.minutes * MARGIN + launch, left_minutes):
            return None
    pairs: list[tuple[float, float]] = []
    for index in range(afford):
        order = ("base", "head") if index % 2 == 0 else ("head", "base")
        got = {side: machine.sample(base if side == "base" else head) for side in order}
        if got["base"] is not None and got["head"] is not None:
            pairs.append((got["base"], got["head"]))
        if not paired_decide(pairs, policy=paired_policy, prior=prior).need_more:
            break
    return settled_decision(pairs, policy=paired_policy, prior=prior).verdict


def confirmed(strategy: Strategy, decision: Decision, pairs_verdict: Verdict | None) -> Verdict:
    """The gate's verdict: the pairs' when taken; else the window's, where ``today`` turned
    an unpaired window BLOCK into INCONCLUSIVE (perfgate now takes the window's verdict
    when the budget cannot decide, and says so)."""
    if pairs_verdict is not None:
        return pairs_verdict
    if not strategy.economical and decision.verdict is Verdict.BLOCK:
        return Verdict.INCONCLUSIVE
    return decision.verdict


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """One bucket run: its verdict, what it publishes, its launches, whether it paired."""

    verdict: Verdict
    kept: list[float]
    launches: int
    paired: bool


def bucket_run(
    strategy: Strategy,
    rng: np.random.Generator,
    seen: WindowView,
    *,
    factor: float,
    pool: Pool,
    head: float,
    base: float,
    launch: float,
) -> RunOutcome:
    """One bucket run of ``strategy``: repeats, then its confirmation."""
    machine = Machine(rng, factor, pool)
    kept, decision = first_look(strategy, machine, seen, head, launch)
    if not kept:
        return RunOutcome(verdict=Verdict.WARN, kept=kept, launches=machine.taken, paired=False)
    verdict, paired = confirm_run(strategy, machine, seen, kept, decision, head=head,
                                  base=base, launch=launch)  # fmt: skip
    return RunOutcome(verdict=verdict, kept=kept, launches=machine.taken, paired=paired)


@dataclass(frozen=True, kw_only=True)
class Series:
    """One bucket's life on a pool: runner offsets over time, schedule, states, a drop."""

    offsets: np.ndarray  # [run, runner slot] multiplicative offsets
    names: list[list[str]]  # runner name per (run, slot)
    schedule: np.ndarray  # runner slot per run
    states: np.ndarray  # per run: state factor (1.0: none)
    change: int  # judged-point index where the drop lands

    def machine_factor(self, run: int, slot: int | None = None) -> tuple[str, float]:
        """(runner name, the factor its samples carry) of run ``run``, on the runner its
        schedule draws unless ``slot`` names another."""
        slot = int(self.schedule[run]) if slot is None else slot
        return self.names[run][slot], float(self.offsets[run, slot] * self.states[run])


def make_series(pool: Pool, rng: np.random.Generator, n: int = BURN_IN + POINTS) -> Series:
    """Draw one series of ``n`` runs on ``pool`` (``BURN_IN + POINTS`` unless given)."""
    start = rng.uniform(math.log1p(-OFFSET), math.log1p(OFFSET), RUNNERS)
    logs = np.tile(start, (n, 1))
    names = [[f"runner-{k}" for k in range(RUNNERS)] for _ in range(n)]
    if pool.kind == "drift":
        logs = logs + np.cumsum(DRIFT_SD * rng.standard_normal((n, RUNNERS)), axis=0)
        # runner-3 leaves half-way through the judged points; a new runner takes its slot
        leave = BURN_IN + POINTS // 2
        logs[leave:, 3] = rng.uniform(math.log1p(-OFFSET), math.log1p(OFFSET))
        for i in range(leave, n):
            names[i][3] = "runner-new"
    states = np.ones(n)
    if pool.kind == "states":
        slow = rng.random(n) < STATE_P
        states[slow] = 1.0 - rng.uniform(*STATE_SLOW, int(slow.sum()))
    elif pool.kind == "runstates":
        share, depth = rng.uniform(*RUNSTATE_P), rng.uniform(*RUNSTATE_SLOW)
        states[rng.random(n) < share] = 1.0 - depth
    return Series(
        offsets=np.exp(logs),
        names=names,
        schedule=rng.integers(0, RUNNERS, n),
        states=states,
        change=int(rng.integers(*CHANGE_RANGE)),
    )


def run_series(
    pool: Pool,
    seed: int,
    drop: float,
    launch: float,
    strategies: Sequence[Strategy] = STRATEGIES,
    stored_samples: int | None = None,
) -> dict[str, Tally]:
    """Stream one series through every strategy (same pool, schedule, states and drop);
    ``stored_samples``: the samples each stored run is topped up to (None: as taken)."""
    series = make_series(pool, np.random.default_rng(seed))
    out: dict[str, Tally] = {}
    for index, strategy in enumerate(strategies):
        noise = np.random.default_rng((seed, index))
        tally = Tally(drops={drop: 1}, blocked={drop: 0})
        history: list[StoredRun] = []  # nearest first
        for i in range(BURN_IN + POINTS):
            point = i - BURN_IN
            runner, factor = series.machine_factor(i)
            head = 100.0 * (1.0 - drop if point >= series.change else 1.0)
            base = 100.0 * (1.0 - drop if point > series.change else 1.0)
            if point < 0:
                machine = Machine(noise, factor, pool)
                kept = take_repeats(strategy, machine, head)
                history.insert(0, stored_run(strategy, kept, runner=runner, machine=machine,
                                             head=head, stored_samples=stored_samples))  # fmt: skip
                continue
            seen = look(strategy, history, runner)
            run = bucket_run(strategy, noise, seen, factor=factor, pool=pool, head=head,
                             base=base, launch=launch)  # fmt: skip
            history.insert(0, stored_run(strategy, run.kept, runner=runner, head=head,
                                         machine=Machine(noise, factor, pool),
                                         stored_samples=stored_samples))  # fmt: skip
            del history[max(strategy.history_runs, strategy.policy().max_runs) :]
            if point < series.change:
                tally.unchanged += 1
                tally.false_blocks += run.verdict is Verdict.BLOCK
                tally.inconclusive += run.verdict is Verdict.INCONCLUSIVE
                tally.launches += run.launches
                tally.paired += run.paired
            elif point == series.change:
                tally.blocked[drop] = int(run.verdict is Verdict.BLOCK)
                tally.improved += run.verdict is Verdict.IMPROVED
        out[strategy.name] = tally
    return out


# -- the Isaac Lab example: nine buckets, one shared budget ------------------------------


@dataclass(frozen=True, kw_only=True)
class Example:
    """The example's matrix as one perfgate.yaml declares it."""

    name: str
    buckets: tuple[tuple[Strategy, float], ...]  # (strategy, launch minutes) per bucket
    budget_minutes: float | None = None  # gate.budget_minutes: shared by the matrix


def examples(config: Config) -> tuple[Example, Example]:
    """The example as it was (its budgets before runner economics) and as it ships."""
    launches = [b.launch_minutes or 10.0 for b in config.buckets]
    before = replace(TODAY, repeats=2, max_repeats=6, repeat_budget=40.0, max_pairs=12,
                     pair_budget=60.0)  # fmt: skip
    return (
        Example(name="as it was", buckets=tuple((before, m) for m in launches)),
        Example(
            name="as it ships",
            buckets=tuple(
                (Strategy.of(b.id, config.gate, b), m)
                for b, m in zip(config.buckets, launches, strict=True)
            ),
            budget_minutes=config.gate.budget_minutes,
        ),
    )


def setup_minutes(config: Config) -> float:
    """S: a job's setup as the buckets declare it (``setup_minutes``), else solved so that
    one launch per bucket costs the upstream gate's 145 minutes a PR."""
    declared = [b.setup_minutes for b in config.buckets if b.setup_minutes is not None]
    if declared:
        return max(declared)
    total = sum(b.launch_minutes or 10.0 for b in config.buckets)
    return (UPSTREAM_PR_MINUTES - total) / len(config.buckets)


def launch_minutes(config: Config) -> float:
    """L: the mean of the buckets' ``launch_minutes`` (the cost model's default)."""
    return sum(b.launch_minutes or 0.0 for b in config.buckets) / len(config.buckets)


@dataclass(kw_only=True)
class PrTally:
    """Relevant pull requests of unchanged code on the example's matrix."""

    prs: int = 0
    minutes: float = 0.0
    false_blocks: int = 0
    inconclusive: int = 0
    bucket_runs: int = 0

    def add(self, other: PrTally) -> None:
        """Accumulate another tally."""
        for name in ("prs", "minutes", "false_blocks", "inconclusive", "bucket_runs"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def per_pr(self) -> float:
        """Mean runner minutes of a PR."""
        return self.minutes / max(self.prs, 1)


def run_example(
    pool: Pool,
    seed: int,
    cases: Sequence[Example],
    setup: float,
    stored_samples: int | None = None,
) -> dict[str, PrTally]:
    """Unchanged PRs on the example's nine buckets, each bucket a series on ``pool``: every
    bucket takes its repeats, then the ones the window cannot clear are confirmed, the
    most suspicious first, within what is left of the shared budget (stored runs as
    ``run_series`` stores them)."""
    rng = np.random.default_rng(seed)
    width = len(cases[0].buckets)
    serieses = [make_series(pool, rng) for _ in range(width)]
    out: dict[str, PrTally] = {}
    for index, case in enumerate(cases):
        noise = np.random.default_rng((seed, 100 + index))
        tally = PrTally()
        histories: list[list[StoredRun]] = [[] for _ in range(width)]
        for i in range(BURN_IN + POINTS):
            runs = {}
            for b, ((strategy, launch), series) in enumerate(zip(case.buckets, serieses,
                                                                 strict=True)):  # fmt: skip
                runner, factor = series.machine_factor(i)
                machine = Machine(noise, factor, pool)
                if i < BURN_IN:
                    kept = take_repeats(strategy, machine, 100.0)
                    histories[b].insert(0, stored_run(strategy, kept, runner=runner,
                                                      machine=machine, head=100.0,
                                                      stored_samples=stored_samples))  # fmt: skip
                    continue
                seen = look(strategy, histories[b], runner)
                kept, decision = first_look(strategy, machine, seen, 100.0, launch)
                runs[b] = (runner, machine, seen, kept, decision)
            if i < BURN_IN:
                continue
            tally.prs += 1
            suspicious = {
                b: suspicion(d)
                for b, (_, _, _, kept, d) in runs.items()
                if kept and uncleared(d, case.buckets[b][0].confirm_drop_pct)
            }
            order = sorted(suspicious, key=suspicious.__getitem__, reverse=True)
            spent = 0.0
            for b in [*order, *(b for b in runs if b not in order)]:
                strategy, launch = case.buckets[b]
                runner, machine, seen, kept, decision = runs[b]
                left = None if case.budget_minutes is None else case.budget_minutes - spent
                before = machine.taken
                verdict, _ = confirm_run(strategy, machine, seen, kept, decision, head=100.0,
                                         base=100.0, launch=launch, left_minutes=left)  # fmt: skip
                spent += launch * (machine.taken - before)
                tally.minutes += setup + launch * machine.taken
                tally.bucket_runs += 1
                tally.false_blocks += verdict is Verdict.BLOCK
                tally.inconclusive += verdict is Verdict.INCONCLUSIVE
                histories[b].insert(0, stored_run(strategy, kept, runner=runner, head=100.0,
                                                  machine=Machine(noise, machine.factor, pool),
                                                  stored_samples=stored_samples))  # fmt: skip
                del histories[b][max(strategy.history_runs, 20) :]
        out[case.name] = tally
    return out


# -- the suite ----------------------------------------------------------------------------


def _series_work(args: tuple[str, float, int, int, float, int | None]) -> dict[str, Tally]:
    kind, cv, seed, shift, launch, stored = args
    return run_series(Pool(kind=kind, cv=cv), 9_100_003 + shift + seed, DROPS[seed % len(DROPS)],
                      launch, stored_samples=stored)  # fmt: skip


def _example_work(args: tuple[str, float, int, int, float, int | None]) -> dict[str, PrTally]:
    kind, cv, seed, shift, setup, stored = args
    return run_example(Pool(kind=kind, cv=cv), 5_300_009 + shift + seed,
                       examples(load_config(EXAMPLE_CONFIG)), setup, stored)  # fmt: skip


def quality(options: Options) -> SuiteReport:
    """Run every pool and the example; print the tables; the issue's targets."""
    started = time.perf_counter()
    series = max(12, options.series * 2 // 5)  # 24 quick, 256 full
    stored = options.stored_samples
    shift = options.seed_offset
    tasks = [(kind, cv, s, shift, options.launch_minutes, stored) for kind, cv in POOLS
             for s in range(series)]  # fmt: skip
    results: dict[str, dict[str, Tally]] = {}
    config = load_config(EXAMPLE_CONFIG)
    setup = setup_minutes(config)
    example_pools = (("offsets", 0.01), ("offsets", 0.02), ("states", 0.02))
    prs = max(2, series // 6)
    example_tasks = [(kind, cv, s, shift, setup, stored) for kind, cv in example_pools
                     for s in range(prs)]  # fmt: skip
    example: dict[str, dict[str, PrTally]] = {}
    with ProcessPoolExecutor(max_workers=options.jobs) as pool:
        for (kind, cv, *_), part in zip(tasks, pool.map(_series_work, tasks), strict=True):
            total = results.setdefault(Pool(kind=kind, cv=cv).name, {})
            for name, tally in part.items():
                total.setdefault(name, Tally()).add(tally)
        for (kind, cv, *_), cases in zip(
            example_tasks, pool.map(_example_work, example_tasks), strict=True
        ):
            total_ex = example.setdefault(Pool(kind=kind, cv=cv).name, {})
            for name, pr in cases.items():
                total_ex.setdefault(name, PrTally()).add(pr)
    elapsed = time.perf_counter() - started
    _print(results, example, options, series, prs, setup, elapsed)
    return SuiteReport(
        name="economics",
        figures=_figures(results, example, options, series, setup),
        targets=tuple(_targets(results, example, options)),
    )


def _pct(x: float, digits: int = 2) -> str:
    return f"{x * 100:.{digits}f}"


def _print(
    results: dict[str, dict[str, Tally]],
    example: dict[str, dict[str, PrTally]],
    options: Options,
    series: int,
    prs: int,
    setup: float,
    elapsed: float,
) -> None:
    print()
    print(
        f"runner economics: {series} series/pool x {POINTS} points after {BURN_IN} recorded "
        f"runs; {RUNNERS} runners +-{OFFSET:.0%}, {THROTTLE_P:.0%} of samples throttled; "
        f"S = {options.setup_minutes:.1f} min, L = {options.launch_minutes:.1f} min; "
        f"stored runs: {_stored(options)}; "
        f"{f'seed offset {options.seed_offset}; ' if options.seed_offset else ''}{elapsed:.0f} s"
    )
    head = (
        f"{'pool':<12}{'strategy':<24}{'FA%':>7}{'FA95%':>7}{'INC%':>6}{'launch':>7}"
        f"{'min/run':>8}{'xrep':>6}{'min/PR':>7}{'paired%':>8}{'det5%':>6}{'det10%':>7}"
        f"{'unchanged':>10}"
    )
    print(head)
    print("-" * len(head))
    for pool, by_strategy in results.items():
        for name, t in by_strategy.items():
            repeats = _strategy(name).repeats
            minutes = options.run_minutes(t.launches_per_run)
            print(
                f"{pool:<12}{name:<24}{_pct(t.fa, 3):>7}"
                f"{_pct(upper95(t.false_blocks, t.unchanged), 3):>7}{_pct(t.inc, 1):>6}"
                f"{t.launches_per_run:7.2f}{minutes:8.1f}"
                f"{minutes / options.run_minutes(repeats):6.2f}{9 * minutes:7.0f}"
                f"{_pct(t.paired / max(t.unchanged, 1), 1):>8}{_pct(t.detection(0.05), 0):>6}"
                f"{_pct(t.detection(0.10), 0):>7}{t.unchanged:>10}"
            )
    print()
    print(
        f"the Isaac Lab example: {prs} series of {POINTS} relevant PRs of unchanged code per "
        f"pool, its nine buckets at their launch_minutes, S = {setup:.1f} min (one launch "
        f"per bucket: the upstream gate's {UPSTREAM_PR_MINUTES:g} min)"
    )
    head = f"{'pool':<12}{'perfgate.yaml':<14}{'min/PR':>7}{'xupstream':>10}{'FA%':>7}{'INC%':>6}"
    print(head)
    print("-" * len(head))
    for pool, cases in example.items():
        for name, pr in cases.items():
            runs = max(pr.bucket_runs, 1)
            print(
                f"{pool:<12}{name:<14}{pr.per_pr:7.0f}{pr.per_pr / UPSTREAM_PR_MINUTES:10.2f}"
                f"{_pct(pr.false_blocks / runs, 3):>7}{_pct(pr.inconclusive / runs, 1):>6}"
            )


def _stored(options: Options) -> str:
    """What a stored run holds, as the header says it."""
    if options.stored_samples <= 1:
        return "as taken (alerts.push_repeats: 1)"
    count = options.stored_samples
    return f"topped up to {count} samples (alerts.push_repeats: {count})"


def _strategy(name: str) -> Strategy:
    return next(s for s in STRATEGIES if s.name == name)


def _figures(
    results: dict[str, dict[str, Tally]],
    example: dict[str, dict[str, PrTally]],
    options: Options,
    series: int,
    setup: float,
) -> dict[str, object]:
    pools = {
        pool: {
            name: {
                "false_block_rate": t.fa,
                "false_block_upper95": upper95(t.false_blocks, t.unchanged),
                "inconclusive_rate": t.inc,
                "launches_per_run": t.launches_per_run,
                "minutes_per_run": options.run_minutes(t.launches_per_run),
                "minutes_per_pr": 9 * options.run_minutes(t.launches_per_run),
                "cost_over_repeats": options.run_minutes(t.launches_per_run)
                / options.run_minutes(_strategy(name).repeats),
                "paired_rate": t.paired / max(t.unchanged, 1),
                "detected_5pct": t.detection(0.05),
                "detected_10pct": t.detection(0.10),
                "drops_called_improved": t.improved,
                "unchanged_runs": t.unchanged,
                "drops": dict(sorted((str(d), n) for d, n in t.drops.items())),
            }
            for name, t in by_strategy.items()
        }
        for pool, by_strategy in results.items()
    }
    cases = {
        pool: {
            name: {
                "minutes_per_pr": pr.per_pr,
                "over_upstream": pr.per_pr / UPSTREAM_PR_MINUTES,
                "false_block_rate": pr.false_blocks / max(pr.bucket_runs, 1),
                "inconclusive_rate": pr.inconclusive / max(pr.bucket_runs, 1),
                "prs": pr.prs,
            }
            for name, pr in by_case.items()
        }
        for pool, by_case in example.items()
    }
    return {"series_per_pool": series, "stored_samples": options.stored_samples,
            "example_setup_minutes": setup, "pools": pools, "example": cases}  # fmt: skip


def _targets(
    results: dict[str, dict[str, Tally]],
    example: dict[str, dict[str, PrTally]],
    options: Options,
) -> list[Target]:
    targets: list[Target] = []
    for pool, by_strategy in results.items():
        if pool.split()[0] not in TARGET_POOLS:
            continue
        new, today = by_strategy[NEW.name], by_strategy[TODAY.name]
        cost = options.run_minutes(new.launches_per_run) / options.run_minutes(NEW.repeats)
        was = options.run_minutes(today.launches_per_run) / options.run_minutes(TODAY.repeats)
        bound = upper95(new.false_blocks, new.unchanged)
        drops5, drops10 = new.drops.get(0.05, 0), new.drops.get(0.10, 0)
        targets += [
            at_most(f"{pool}: unchanged code costs <= 1.25 x its repeats alone", cost, 1.25, "x",
                    f"x{cost:.2f} (today x{was:.2f})"),
            rate_at_most(f"{pool}: false BLOCK <= 0.1 % per bucket-run", new.false_blocks,
                         new.unchanged, 0.1,
                         f"{_pct(new.fa, 3)} % (95 % bound {_pct(bound, 3)} %; today "
                         f"{_pct(today.fa, 3)} %)"),
            rate_at_most(f"{pool}: INCONCLUSIVE <= 1 % of unchanged runs", new.inconclusive,
                         new.unchanged, 1.0,
                         f"{_pct(new.inc, 2)} % (today {_pct(today.inc, 2)} %)"),
            rate_at_least(f"{pool}: 10 % drops BLOCKed at PR time >= 99 %",
                          new.blocked.get(0.10, 0), drops10, 99.0,
                          f"{_pct(new.detection(0.10), 1)} % of {drops10} (today "
                          f"{_pct(today.detection(0.10), 1)} %)"),
            rate_at_least(f"{pool}: 5 % drops BLOCKed at PR time >= 80 %",
                          new.blocked.get(0.05, 0), drops5, 80.0,
                          f"{_pct(new.detection(0.05), 1)} % of {drops5} (today "
                          f"{_pct(today.detection(0.05), 1)} %)"),
            rate_at_most(f"{pool}: real drops (5 % or more) called IMPROVED <= 0.1 %",
                         new.improved, drops5 + drops10, 0.1,
                         f"{new.improved} of {drops5 + drops10} (today {today.improved})"),
        ]  # fmt: skip
        if pool.split()[0] in STATE_POOLS:
            # Every confirmation mode of the new rule; today's defaults are the comparison
            # printed in the table, not a target.
            for name, t in by_strategy.items():
                if name == TODAY.name:
                    continue
                targets.append(
                    rate_at_most(f"{pool}: {name}: false BLOCK <= 0.1 % (run-level states)",
                                 t.false_blocks, t.unchanged, 0.1,
                                 f"{_pct(t.fa, 3)} % (95 % bound "
                                 f"{_pct(upper95(t.false_blocks, t.unchanged), 3)} %)")
                )  # fmt: skip
    limit = 1.5 * UPSTREAM_PR_MINUTES
    for pool, cases in example.items():
        ships, was = cases["as it ships"], cases["as it was"]
        targets.append(
            at_most(f"Isaac Lab example, {pool}: a relevant PR of unchanged code <= 1.5 x 145 "
                    "L40S-minutes", ships.per_pr, limit, "min",
                    f"{ships.per_pr:.0f} min, x{ships.per_pr / UPSTREAM_PR_MINUTES:.2f} "
                    f"(as it was: {was.per_pr:.0f} min)")
        )  # fmt: skip
    return targets
