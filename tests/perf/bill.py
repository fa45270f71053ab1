"""The whole bill (``nox -s quality``): what a merged pull request of the Isaac Lab example
costs the L40S pool, counted as a runner bills it, beside the upstream gate's (R17).

A merged relevant pull request costs its own run and the run of the push its merge
triggers, plus its share of the work done for every merge (era rolls, bisects). Each life
here is the example's nine buckets on one runner pool (``economics.make_series``: runner
offsets, throttled samples, run-level states), ``BURN_IN`` pushes of history, then
``MERGES`` merged pull requests, each a pull request's run and then its push's:

* **the pull request's run**: each bucket's repeats on its job's runner (a job measures
  its buckets in turn on one machine, each bucket's offset on it its own), the window's
  verdict, then confirmation (more launches, then pairs with the merge base) in its
  lane's order of suspicion within the lane's share of ``gate.budget_minutes``
  (``ci.lanes``), as the bench does; a paired bucket also pays the merge base's warm-up
  launch (its cache is keyed by the base) and its checkout;
* **the push's run**: each bucket's ``alerts.push_repeats`` samples on another job's
  runner, stored (the window of the next pull request) and watched by the post-merge
  alert rule (``perfgate.judge.alerts``);
* **every job's setup** S, once a job: one per bucket (upstream, and perfgate before),
  or one per lane.

In half the lives one merge brings a drop of 5 or 10 % to every bucket of one physics
backend; it counts as caught at PR time when the pull request that brings it is BLOCKed,
and after the merge when the alert rule alerts it within a number of pushes (timed too:
the hours from its merge to the end of the push run whose alert names it, merges arriving
``MERGE_GAP`` apart on average and a coalesced push waiting for the run before it). The
shipped case runs twice: merges back to back, and (working days) the same merges landing
only in ten working hours a day, the nights between. Two pools are held out from every
choice made here (``HELD_OUT``: unseen throttled samples, frequent run-level states), run
with upstream, before and the shipped case only, and judged by the same targets.

What is assumed, not measured (said again in the printed header): S and each bucket's
launch time as the example declares them (its ``setup_minutes``, solved from the upstream
gate's 145 L40S-minutes a PR; no L40S job was timed here), unless ``--spend FILE`` gives
what ``perfgate spend --json`` summed from a baseline branch's ledger; one launch fails
and is retried in ``FAIL_P`` of launches and a lane's cache is cold in ``COLD_P`` of
jobs; a merge base's checkout takes ``BASE_CHECKOUT`` minutes; an era roll a month (an
image build of ``ERA_BUILD`` minutes and a reseed) over ``MERGES_A_MONTH`` relevant merges; a real
regression in ``REGRESSION_P`` of merged pull requests, each alert dispatching a bisect
of its suspect range. Ten merges a day, six of them relevant: upstream runs on all ten
(it has no path filter), perfgate's GPU jobs on the six.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from perfgate.baselines.alerting import alert_policy
from perfgate.baselines.bisect import BISECT_REPEATS
from perfgate.ci.lanes import split, worst_case
from perfgate.config import PRIMARY, Bucket, Config, load_config
from perfgate.judge.alerts import PushRun, Watcher
from perfgate.judge.budget import suspicion, uncleared
from perfgate.judge.runner_offsets import StoredRun
from perfgate.judge.verdicts import Verdict
from tests.perf import economics
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
UPSTREAM_MERGED = 2 * economics.UPSTREAM_PR_MINUTES  # its PR run and its push's
BURN_IN = economics.BURN_IN
MERGES = 40  # merged relevant pull requests watched per life
CHANGE_RANGE = (5, MERGES - 15)
DROPS = (0.05, 0.10)
FAIL_P = 0.02  # launches that fail and are retried once
COLD_P = 0.05  # jobs whose warm cache is not restored (evicted, or a new lane)
BASE_CHECKOUT = 2.0  # minutes: the merge base's worktree and its LFS pull
ERA_BUILD = 60.0  # minutes of an L40S runner building a new era's image
MERGES_A_MONTH = 132  # six relevant merges a working day
REGRESSION_P = 0.02  # merged pull requests that bring a real regression
DAY_MERGES, DAY_RELEVANT = 10, 6
MERGE_GAP = 100.0  # minutes between relevant merges, on average (six in ten working hours)
WORKDAY, DAY = 600.0, 1440.0  # minutes: merges land in ten working hours a day
WITHIN = (3, 6, 10)  # pushes within which post-merge alerts are counted
# The stated bound of the post-merge alert target: every 5 % drop alerted within this many
# pushes of its merge (chosen from this suite's figures; docs/baselines.md says why).
ALERT_WITHIN = 6
POOLS = (("offsets", 0.01), ("states", 0.02))
# Held out from every choice this suite made (jobs, push, budget): the economics suite's
# generators the rule was not tuned to, judged by the same targets, on the cases that say
# what the shipped example gives up against upstream and before.
HELD_OUT = (("throttled", 0.02), ("runstates", 0.02))
HELD_OUT_CASES = ("upstream", "before: a job a bucket, push 6", "as it ships")
NEVER = 99  # the delay of a regression's bucket never alerted in its life


@dataclass(frozen=True, kw_only=True)
class Case:
    """How the example is run in CI: its jobs, its push, its budget."""

    name: str
    lanes: int | None  # runner jobs per pool (None: one per bucket, each its whole budget)
    push_samples: int
    confirm: bool = True
    upstream: bool = False  # upstream's gate: no path filter, nothing confirmed, no alerts
    # One push run per branch at a time, the newest pending push winning (the others'
    # changes are measured with it): fewer pushes measured, wider suspect ranges.
    coalesce: bool = False
    # Runner names never recur (one per job) and nothing else names the machine: the
    # runner model has no earlier run of a machine to learn its offset from.
    ephemeral: bool = False
    # Merges land only in working hours (WORKDAY of each DAY): the branch's push slot
    # stands idle overnight, so each morning's first merge finds it free.
    working_days: bool = False


def cases(config: Config) -> tuple[Case, ...]:
    """Upstream, perfgate before the whole bill was counted, candidates, and as it ships."""
    return (
        Case(name="upstream", lanes=None, push_samples=1, confirm=False, upstream=True),
        Case(name="before: a job a bucket, push 6", lanes=None, push_samples=6),
        Case(name="1 job, push 1", lanes=1, push_samples=1),
        Case(name="3 jobs, push 2", lanes=3, push_samples=2),
        Case(name="3 jobs, push 2, coalesced", lanes=3, push_samples=2, coalesce=True),
        Case(name="as it ships", lanes=config.bench_jobs,
             push_samples=config.alerts.push_repeats, coalesce=config.coalesce_pushes),
        Case(name="as it ships, no name recurs", lanes=config.bench_jobs, ephemeral=True,
             push_samples=config.alerts.push_repeats, coalesce=config.coalesce_pushes),
        Case(name="as it ships, working days", lanes=config.bench_jobs, working_days=True,
             push_samples=config.alerts.push_repeats, coalesce=config.coalesce_pushes),
    )  # fmt: skip


@dataclass(kw_only=True)
class Tally:
    """One case on one pool."""

    merged: list[float] = field(default_factory=list)  # minutes of each merged PR (PR + push)
    pr_minutes: float = 0.0
    push_minutes: float = 0.0
    unchanged: int = 0  # unchanged bucket-runs at PR time
    false_blocks: int = 0
    inconclusive: int = 0
    drops: dict[float, int] = field(default_factory=dict)  # regressions merged
    blocked: dict[float, int] = field(default_factory=dict)  # ... whose PR was BLOCKed
    delays: dict[float, list[int]] = field(default_factory=dict)  # pushes to alert (NEVER)
    # Hours from a regression's merge to the end of the push run whose alert named each
    # bucket (alerted buckets only): what the bound in pushes means on the clock.
    hours: dict[float, list[float]] = field(default_factory=dict)
    pushes: int = 0  # unchanged bucket-pushes watched
    false_alerts: int = 0
    bisect_minutes: float = 0.0

    def add(self, other: Tally) -> None:
        """Accumulate another tally."""
        self.merged += other.merged
        for name in ("pr_minutes", "push_minutes", "unchanged", "false_blocks", "inconclusive",
                     "pushes", "false_alerts", "bisect_minutes"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.drops, other.drops), (self.blocked, other.blocked)):
            for drop, count in theirs.items():
                mine[drop] = mine.get(drop, 0) + count
        for lists, theirs in ((self.delays, other.delays), (self.hours, other.hours)):
            for drop, items in theirs.items():
                lists.setdefault(drop, []).extend(items)

    def alerted(self, drop: float, pushes: int) -> int:
        """Buckets of ``drop`` regressions alerted within ``pushes`` pushes of their merge."""
        return sum(d <= pushes for d in self.delays.get(drop, []))

    def within(self, drop: float, pushes: int) -> float:
        """Share of ``drop`` regressions alerted within ``pushes`` pushes of their merge."""
        return self.alerted(drop, pushes) / max(len(self.delays.get(drop, [])), 1)

    def p95(self) -> float:
        """The 95th percentile of a merged pull request's minutes."""
        return float(np.percentile(self.merged, 95)) if self.merged else 0.0

    def p95_interval(self, resamples: int = 2000) -> tuple[float, float] | None:
        """A 95 % interval of that percentile: whole lives resampled (a life's merges share
        its runners, states and history, so they are not independent draws); None for
        fewer than two lives, which cannot tell how lives vary."""
        lives = np.reshape(self.merged, (-1, MERGES))
        if len(lives) < 2:
            return None
        rng = np.random.default_rng(0)  # the same interval for the same figures
        picks = rng.integers(0, len(lives), (resamples, len(lives)))
        p95s = np.percentile(lives[picks].reshape(resamples, -1), 95, axis=1)
        low, high = np.percentile(p95s, [2.5, 97.5])
        return float(low), float(high)


def _lanes(config: Config, case: Case) -> list[list[int]]:
    """Bucket indices per runner job."""
    if case.lanes is None:
        return [[i] for i in range(len(config.buckets))]
    ids = {b.id: i for i, b in enumerate(config.buckets)}
    lanes = split(replace(config, bench_jobs=case.lanes))
    return [[ids[b.id] for b in lane.buckets] for lane in lanes]


def _shares(config: Config, case: Case, lanes: list[list[int]]) -> list[float | None]:
    """Each job's budget: a share by launch time, or (one job a bucket) the whole budget."""
    budget = config.gate.budget_minutes
    if budget is None or case.lanes is None:
        return [budget] * len(lanes)
    weights = [sum(config.buckets[i].launch_minutes or 10.0 for i in lane) for lane in lanes]
    return [budget * w / sum(weights) for w in weights]


def live(
    config: Config, case: Case, pool: economics.Pool, seed: int, drop: float, setup: float
) -> Tally:
    """One life of the example's nine buckets under ``case`` (see the module docstring)."""
    return Life(config, case, pool, seed, drop, setup).run()


class Life:
    """The nine buckets' series on one pool, their stored history and alert watchers."""

    def __init__(
        self, config: Config, case: Case, pool: economics.Pool, seed: int, drop: float,
        setup: float,
    ) -> None:  # fmt: skip
        self.config, self.case, self.pool, self.drop, self.setup = config, case, pool, drop, setup
        buckets: Sequence[Bucket] = config.buckets
        self.rng = np.random.default_rng(seed)
        self.serieses = [
            economics.make_series(pool, self.rng, BURN_IN + 2 * MERGES) for _ in buckets
        ]
        self.change = int(self.rng.integers(*CHANGE_RANGE))
        # A regression reaches one bucket (a task's change) or every bucket of one physics
        # backend (a physics change), as often.
        chosen = buckets[int(self.rng.integers(len(buckets)))]
        wide = bool(self.rng.random() < 0.5)
        self.hit = [
            drop > 0 and (b.physics == chosen.physics if wide else b is chosen) for b in buckets
        ]
        self.seed = seed
        self.strategies = [economics.Strategy.of(b.id, config.gate, b) for b in buckets]
        self.launch = [b.launch_minutes or 10.0 for b in buckets]
        self.lanes = _lanes(config, case)
        self.lane_of = {b: k for k, lane in enumerate(self.lanes) for b in lane}
        self.shares = _shares(config, case, self.lanes)
        self.history: list[list[StoredRun]] = [[] for _ in buckets]
        # The alert rule the example configures, as `perfgate alert` builds it.
        self.watchers = [Watcher(policy=alert_policy(config, b, PRIMARY)) for b in buckets]
        self.episodes = [0] * len(buckets)
        self.alerted = [False] * len(buckets)
        self.measured_since = 0  # measured pushes since the change, its own included
        self.tally = Tally()
        if drop:
            self.tally.drops, self.tally.blocked = {drop: 0}, {drop: 0}
            self.tally.delays, self.tally.hours = {drop: []}, {drop: []}

    def level(self, b: int, merge: int) -> float:
        """Bucket ``b``'s level once ``merge`` is in."""
        return 100.0 * (1.0 - self.drop if self.hit[b] and merge >= self.change else 1.0)

    def run(self) -> Tally:
        """The history, then every merge: its pull request's run, then its push's (a
        coalesced push only when the branch's last push run is done)."""
        for i in range(BURN_IN):
            self.push(i, -1)
        # Relevant merges arrive at random through working hours, MERGE_GAP minutes apart on
        # average: back to back, or (working days) in WORKDAY of each DAY, the same merges
        # with the nights between.
        arrivals = np.cumsum(self.rng.exponential(MERGE_GAP, MERGES))
        if self.case.working_days:
            arrivals = arrivals // WORKDAY * DAY + arrivals % WORKDAY
        change_at = float(arrivals[self.change])
        free_at, pending = 0.0, None
        costs = [0.0] * MERGES

        def run_push(merge: int, start: float) -> float:
            minutes, wall, alerted = self.push(BURN_IN + 2 * merge + 1, merge)
            costs[merge] += minutes
            self.tally.push_minutes += minutes
            if alerted:  # the alert goes out when the run is done
                self.tally.hours[self.drop] += [(start + wall - change_at) / 60.0] * alerted
            return start + wall

        for merge in range(MERGES):
            pr = self.pull_request(BURN_IN + 2 * merge, merge)
            self.tally.pr_minutes += pr
            costs[merge] += pr
            now = float(arrivals[merge])
            if not self.case.coalesce:
                run_push(merge, now)
                continue
            if pending is not None and free_at <= now:
                free_at, pending = run_push(pending, free_at), None
            if free_at <= now:
                free_at = run_push(merge, now)
            else:
                pending = merge  # replaces an older pending push: its changes come with this
        if pending is not None:
            run_push(pending, free_at)
        self.tally.merged += costs
        if self.drop:
            missed = sum(self.hit) - len(self.tally.delays[self.drop])
            self.tally.delays[self.drop] += [NEVER] * missed
        return self.tally

    def noise(self, index: int, b: int) -> np.random.Generator:
        """Bucket ``b``'s sample noise in the run at ``index``: a stream of its own, so what
        one run takes never moves another's draws and two rules compare life by life."""
        return np.random.default_rng((self.seed, 7, index, b))

    def machine(self, b: int, index: int, job: str) -> tuple[str, float]:
        """Who measures bucket ``b``'s run at ``index`` in a ``job`` and the factor it
        carries; under ephemeral names a name no other job has. A job measures its
        buckets in turn on one machine: the one its first bucket's schedule draws (each
        bucket's offset on it, and its states, stay the bucket's own)."""
        first = self.lanes[self.lane_of[b]][0]
        slot = int(self.serieses[first].schedule[index])
        runner, factor = self.serieses[b].machine_factor(index, slot)
        return (f"{job}-{index}-{first}" if self.case.ephemeral else runner), factor

    def push(self, index: int, merge: int) -> tuple[float, float, int]:
        """Every bucket's push run at ``index``: its runner minutes, its wall time and how
        many regressed buckets its alerts name for the first time."""
        case, tally, launch = self.case, self.tally, self.launch
        alerted = 0
        minutes = self.setup * len(self.lanes)
        walls = [self.setup] * len(self.lanes)
        if merge >= self.change:
            self.measured_since += 1
        for b in range(len(self.config.buckets)):
            runner, factor = self.machine(b, index, "push")
            machine = economics.Machine(self.noise(index, b), factor, self.pool)
            kept = economics.take(machine, self.level(b, merge), case.push_samples)
            minutes += launch[b] * machine.taken
            walls[self.lane_of[b]] += launch[b] * machine.taken
            values = tuple(kept) or (self.level(b, merge) * factor,)
            self.history[b].insert(0, StoredRun(runner=runner, values=values))
            del self.history[b][max(self.strategies[b].history_runs, 20) :]
            self.watchers[b].add(PushRun(commit=f"c{index}", values=values, runner=runner))
            if case.upstream:
                continue
            # An alert counts at the push that raised it, the history's pushes included:
            # one raised there is as false as one after a merge.
            episodes = self.watchers[b].episodes
            fresh = len(episodes) > self.episodes[b]
            self.episodes[b] = len(episodes)
            if not (self.hit[b] and merge >= self.change):
                tally.pushes += 1
                tally.false_alerts += fresh
            elif fresh and not self.alerted[b]:
                self.alerted[b] = True
                tally.delays[self.drop].append(self.measured_since)
                alerted += 1
            if fresh and merge >= 0:  # a merge's share of the bill: bisects after merges
                alert = episodes[-1].alert
                width = max(1, alert.first_bad - alert.last_good)
                if width > 1:
                    steps = math.ceil(math.log2(width)) + 1
                    tally.bisect_minutes += self.setup + BISECT_REPEATS * steps * launch[b]
        return minutes, max(walls), alerted

    def pull_request(self, index: int, merge: int) -> float:
        """The pull request's run of every bucket (its lanes, their shares); its minutes."""
        tally, launch, strategies = self.tally, self.launch, self.strategies
        minutes = self.setup * len(self.lanes)
        blocked = False
        for lane, share in zip(self.lanes, self.shares, strict=True):
            runs = {}
            for b in lane:
                runner, factor = self.machine(b, index, "pr")
                head = self.level(b, merge)
                base = self.level(b, merge - 1)
                machine = economics.Machine(self.noise(index, b), factor, self.pool)
                seen = economics.look(strategies[b], self.history[b], runner)
                kept, decision = economics.first_look(strategies[b], machine, seen, head,
                                                      launch[b])  # fmt: skip
                runs[b] = (machine, seen, kept, decision, head, base)
            suspicious = {
                b: suspicion(d)
                for b, (_, _, kept, d, _, _) in runs.items()
                if kept and uncleared(d, strategies[b].confirm_drop_pct)
            }
            order = sorted(suspicious, key=suspicious.__getitem__, reverse=True)
            spent = 0.0
            for b in [*order, *(b for b in runs if b not in order)]:
                machine, seen, kept, decision, head, base = runs[b]
                before = machine.taken
                verdict, paired = decision.verdict, False
                if self.case.confirm and kept:
                    left = None if share is None else share - spent
                    verdict, paired = economics.confirm_run(
                        strategies[b], machine, seen, kept, decision, head=head, base=base,
                        launch=launch[b], left_minutes=left,
                    )  # fmt: skip
                extra = launch[b] * (machine.taken - before)
                if paired:  # the merge base's cold cache and its checkout
                    extra += launch[b] + BASE_CHECKOUT
                spent += extra
                minutes += launch[b] * before + extra
                if self.hit[b] and merge == self.change:
                    blocked |= verdict is Verdict.BLOCK
                elif not (self.hit[b] and merge > self.change):
                    tally.unchanged += 1
                    tally.false_blocks += verdict is Verdict.BLOCK
                    tally.inconclusive += verdict is Verdict.INCONCLUSIVE
        if self.drop and merge == self.change:
            tally.drops[self.drop] += 1
            tally.blocked[self.drop] += blocked
        return minutes


def addons(config: Config, case: Case, setup: float, tally: Tally, merges: int) -> float:
    """What every merged pull request also pays, on average: retried launches, cold caches
    (a warm-up of each bucket of the job), its share of the era roll and of bisects."""
    launches = sum(b.launch_minutes or 10.0 for b in config.buckets)
    runs = tally.pr_minutes + tally.push_minutes
    retries = FAIL_P * runs / max(merges, 1)
    cold = COLD_P * 2 * launches  # both runs: every bucket's warm-up, in the jobs found cold
    reseed = len(_lanes(config, case)) * setup + config.gate.baseline.min_samples * launches
    era = (ERA_BUILD + reseed) / MERGES_A_MONTH
    bisects = 0.0 if case.upstream else tally.bisect_minutes / max(merges, 1)
    return retries + cold + era + bisects


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """What ``perfgate spend --json`` measured: a job's setup and each bucket's launch."""

    source: str = ""
    setup_minutes: float | None = None
    launch_minutes: tuple[tuple[str, float], ...] = ()

    @classmethod
    def read(cls, path: str | None) -> Recorded:
        """The figures of a ``spend --json`` document (nothing measured without one)."""
        if path is None:
            return cls()
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            launches = data.get("launch_minutes") or {}
            measured = tuple(sorted((str(k), float(v)) for k, v in launches.items()))
            setup = data.get("setup_minutes")
            return cls(source=path, setup_minutes=None if setup is None else float(setup),
                       launch_minutes=measured)  # fmt: skip
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise SystemExit(
                f"--spend {path}: not a `perfgate spend --json` document ({exc}); write one "
                "with `python -m perfgate spend --remote --json > FILE`"
            ) from None

    def example(self) -> Config:
        """The Isaac Lab example, each bucket's launch as recorded where it was."""
        config = load_config(ROOT / "examples/isaaclab/perfgate.yaml")
        measured = dict(self.launch_minutes)
        buckets = tuple(
            replace(b, launch_minutes=measured[b.id]) if b.id in measured else b
            for b in config.buckets
        )
        return replace(config, buckets=buckets)

    def setup(self, config: Config) -> float:
        """S: as measured, else as the example declares or solves it."""
        if self.setup_minutes is not None:
            return self.setup_minutes
        return economics.setup_minutes(config)

    def said(self, config: Config, setup: float) -> str:
        """Where S and L came from, for the header."""
        measured = {b for b, _ in self.launch_minutes} & set(config.bucket_ids())
        where = f" (from {self.source})" if self.source else ""
        s_from = (
            "measured"
            if self.setup_minutes is not None
            else "assumed (the example's setup_minutes, solved from upstream's 145 a PR)"
        )
        return (
            f"S = {setup:.2f} min a job, {s_from}; launches measured for {len(measured)} of "
            f"{len(config.buckets)} buckets{where}, the rest the declared launch_minutes"
        )


def _work(args: tuple[str, float, int, int, Recorded]) -> dict[str, Tally]:
    kind, cv, seed, shift, recorded = args
    config = recorded.example()
    setup = recorded.setup(config)
    pool = economics.Pool(kind=kind, cv=cv)
    drop = 0.0 if seed % 2 == 0 else DROPS[(seed // 2) % len(DROPS)]
    held_out = (kind, cv) in HELD_OUT
    return {
        case.name: live(config, case, pool, 7_700_001 + shift + seed, drop, setup)
        for case in cases(config)
        if not held_out or case.name in HELD_OUT_CASES
    }


def _tasks(
    lives: int, shift: int, recorded: Recorded
) -> list[tuple[str, float, int, int, Recorded]]:
    """Every pool's lives, the held-out pools' included: ``_work``'s arguments."""
    return [(kind, cv, s, shift, recorded) for kind, cv in POOLS + HELD_OUT
            for s in range(lives)]  # fmt: skip


def quality(options: Options) -> SuiteReport:
    """Every case on every pool, side by side; the issue's targets for the shipped case."""
    started = time.perf_counter()
    recorded = Recorded.read(options.spend)
    config = recorded.example()
    setup = recorded.setup(config)
    lives = 8 if options.quick else 40
    tasks = _tasks(lives, options.seed_offset, recorded)
    results: dict[str, dict[str, Tally]] = {}
    with ProcessPoolExecutor(max_workers=options.jobs) as pool:
        for (kind, cv, *_), part in zip(tasks, pool.map(_work, tasks), strict=True):
            total = results.setdefault(economics.Pool(kind=kind, cv=cv).name, {})
            for name, tally in part.items():
                total.setdefault(name, Tally()).add(tally)
    table = _table(config, results, setup, lives, time.perf_counter() - started)
    table.insert(1, recorded.said(config, setup))
    print()
    print("\n".join(table))
    if options.quick:
        # Ten drops a pool cannot decide a 99 % target: the quick run reports, never judges.
        print("(quick run: figures only; its targets are judged by the full run, "
              "nox -s quality -- --series 640)")  # fmt: skip
        return SuiteReport(name="bill", figures=_figures(config, results, setup))
    return SuiteReport(name="bill", figures=_figures(config, results, setup),
                       targets=tuple(_targets(config, results, setup, options)))  # fmt: skip


def per_merged(config: Config, case: Case, setup: float, tally: Tally) -> tuple[float, float]:
    """(mean, 95th percentile) runner minutes of a merged relevant pull request, add-ons in."""
    merges = len(tally.merged)
    extra = addons(config, case, setup, tally, merges)
    return (sum(tally.merged) / max(merges, 1) + extra, tally.p95() + extra)


def per_day(config: Config, case: Case, mean: float) -> float:
    """Runner minutes a day at ten merges, six relevant: upstream runs on all ten."""
    return (DAY_MERGES if case.upstream else DAY_RELEVANT) * mean


def _case(config: Config, name: str) -> Case:
    return next(c for c in cases(config) if c.name == name)


def _table(
    config: Config, results: dict[str, dict[str, Tally]], setup: float, lives: int, elapsed: float
) -> list[str]:
    lines = [
        f"the whole bill: the Isaac Lab example, {lives} lives a pool x {MERGES} merged relevant "
        f"PRs after {BURN_IN} pushes; a merged PR is its run and its push's, plus retries "
        f"({FAIL_P:.0%} of launches), cold caches ({COLD_P:.0%} of jobs), an era a month and "
        f"bisects. Assumed, not measured: {DAY_MERGES} merges a day of which {DAY_RELEVANT} "
        f"relevant; {elapsed:.0f} s"
    ]
    head = (f"{'pool':<14}{'case':<30}{'PR':>5}{'push':>6}{'merged':>7}{'x290':>6}{'p95':>6}"
            f"{'/day':>6}{'FA%':>6}{'INC%':>6}{'10%PR':>6}{'5%PR':>6}"
            + "".join(f"{'5%<=' + str(n):>7}" for n in WITHIN) + f"{'FA/1k':>6}")  # fmt: skip
    lines += [head, "-" * len(head)]
    for pool, by_case in results.items():
        for name, t in by_case.items():
            case = _case(config, name)
            merges = max(len(t.merged), 1)
            mean, p95 = per_merged(config, case, setup, t)
            # Upstream's verdicts are its own rule's, not simulated here: its cost alone.
            verdicts = ("     -" * 2 if case.upstream else
                        f"{100 * t.false_blocks / max(t.unchanged, 1):6.2f}"
                        f"{100 * t.inconclusive / max(t.unchanged, 1):6.2f}")  # fmt: skip
            detect = ("     -" * 2 if case.upstream else
                      f"{_pct(t.blocked.get(0.10, 0), t.drops.get(0.10, 0)):>6}"
                      f"{_pct(t.blocked.get(0.05, 0), t.drops.get(0.05, 0)):>6}")  # fmt: skip
            alerts = ("      -" * len(WITHIN) + "     -" if case.upstream else
                      "".join(f"{100 * t.within(0.05, n):7.0f}" for n in WITHIN)
                      + f"{1000 * t.false_alerts / max(t.pushes, 1):6.2f}")  # fmt: skip
            lines.append(
                f"{pool:<14}{name:<30}{t.pr_minutes / merges:5.0f}{t.push_minutes / merges:6.0f}"
                f"{mean:7.0f}{mean / UPSTREAM_MERGED:6.2f}{p95 / UPSTREAM_MERGED:6.2f}"
                f"{per_day(config, case, mean):6.0f}{verdicts}{detect}{alerts}"
            )
    for push in (False, True):
        bill = _worst(config, push)
        lines.append(f"worst case the example's budgets allow, {'a push' if push else 'a PR'}: "
                     f"{bill:.0f} runner-min (validate prints it)")  # fmt: skip
    return lines


def _worst(config: Config, push: bool) -> float:
    """The most a run of the example may cost, as validate prints it."""
    from perfgate.cli.ci import bench_job_needs

    return worst_case(config, push=push, warm=bench_job_needs(config)["warm_buckets"]).total


def _pct(events: int, trials: int) -> str:
    return f"{100 * events / trials:.0f}" if trials else "-"


def _figures(
    config: Config, results: dict[str, dict[str, Tally]], setup: float
) -> dict[str, object]:
    figures: dict[str, object] = {"setup_minutes": setup, "upstream_merged": UPSTREAM_MERGED}
    for pool, by_case in results.items():
        for name, t in by_case.items():
            mean, p95 = per_merged(config, _case(config, name), setup, t)
            figures[f"{pool} / {name}"] = {
                "merged_mean": mean, "merged_p95": p95,
                "per_day": per_day(config, _case(config, name), mean),
                "pr_minutes": t.pr_minutes / max(len(t.merged), 1),
                "push_minutes": t.push_minutes / max(len(t.merged), 1),
                "false_block_rate": t.false_blocks / max(t.unchanged, 1),
                "inconclusive_rate": t.inconclusive / max(t.unchanged, 1),
                "blocked_10pct": t.blocked.get(0.10, 0) / max(t.drops.get(0.10, 0), 1),
                "blocked_5pct": t.blocked.get(0.05, 0) / max(t.drops.get(0.05, 0), 1),
                **{f"alerted_5pct_within_{n}": t.within(0.05, n) for n in WITHIN},
                "alert_hours_5pct": _hours(t),
                "false_alerts_per_1000": 1000 * t.false_alerts / max(t.pushes, 1),
            }  # fmt: skip
    return figures


def _targets(
    config: Config, results: dict[str, dict[str, Tally]], setup: float, options: Options
) -> list[Target]:
    ships, working = _case(config, "as it ships"), _case(config, "as it ships, working days")
    upstream = cases(config)[0]
    targets: list[Target] = []
    for pool, by_case in results.items():
        t = by_case[ships.name]
        mean, p95 = per_merged(config, ships, setup, t)
        up_mean, _ = per_merged(config, upstream, setup, by_case[upstream.name])
        bound = ALERT_WITHIN
        targets += [
            _mean_target(pool, mean, up_mean),
            _p95_target(pool, t, p95),
            at_most(f"bill {pool}: a day of 10 merges (6 relevant) <= upstream's",
                    per_day(config, ships, mean), per_day(config, upstream, up_mean), "min"),
            rate_at_most(f"bill {pool}: false BLOCK <= 0.1 %", t.false_blocks, t.unchanged,
                         0.1, f"{100 * t.false_blocks / max(t.unchanged, 1):.3f} % (95 % "
                         f"bound {100 * upper95(t.false_blocks, t.unchanged):.3f} %)"),
            rate_at_least(f"bill {pool}: 10 % drops BLOCKed at PR time >= 99 %",
                          t.blocked.get(0.10, 0), t.drops.get(0.10, 0), 99.0,
                          f"{t.blocked.get(0.10, 0)} of {t.drops.get(0.10, 0)}"),
            rate_at_least(f"bill {pool}: every 5 % drop alerted within {bound} pushes",
                          t.alerted(0.05, bound), len(t.delays.get(0.05, [])), 100.0,
                          _every(t, bound)),
            at_most(f"bill {pool}: false alerts per 1,000 bucket-pushes",
                    1000 * t.false_alerts / max(t.pushes, 1), 1.0, ""),
        ]  # fmt: skip
        # The same lives with merges in working hours only: each morning's first merge
        # finds the push slot idle, so more push runs are paid and alerts wait for nights.
        nights = by_case.get(working.name)
        if nights is None:  # a held-out pool runs the shipped case back to back only
            continue
        w_mean, w_p95 = per_merged(config, working, setup, nights)
        targets += [
            _mean_target(f"{pool}, working days", w_mean, up_mean),
            _p95_target(f"{pool}, working days", nights, w_p95),
            rate_at_least(f"bill {pool}, working days: every 5 % drop alerted within {bound} "
                          "pushes", nights.alerted(0.05, bound), len(nights.delays.get(0.05, [])),
                          100.0, _every(nights, bound)),
        ]  # fmt: skip
    worst = _worst(config, False) + _worst(config, True)
    targets.append(at_most("bill: the worst a merged PR's budgets allow <= 3 x 290 (validate)",
                           worst / UPSTREAM_MERGED, 3.0, "x",
                           f"x{worst / UPSTREAM_MERGED:.2f} ({worst:.0f} min)"))  # fmt: skip
    return targets


def _mean_target(pool: str, mean: float, upstream_mean: float) -> Target:
    """The typical merged pull request's target: at most upstream's 290."""
    return at_most(f"bill {pool}: a merged relevant PR, mean <= 1.0 x upstream's 290",
                   mean / UPSTREAM_MERGED, 1.0, "x", f"x{mean / UPSTREAM_MERGED:.2f} "
                   f"({mean:.0f} min; upstream in this model {upstream_mean:.0f})")  # fmt: skip


def _p95_target(pool: str, tally: Tally, p95: float) -> Target:
    """The 95th-percentile target, with how far the lives measured pin it down: decided
    only when the bound lies outside the percentile's 95 % interval."""
    name = f"bill {pool}: a merged relevant PR, 95th percentile <= 1.5 x 290"
    ratio = p95 / UPSTREAM_MERGED
    interval = tally.p95_interval()
    if interval is None:
        return replace(at_most(name, ratio, 1.5, "x", f"x{ratio:.2f} (one life)"), decided=False)
    extra = p95 - tally.p95()  # the add-ons, the same for every merge
    low, high = ((x + extra) / UPSTREAM_MERGED for x in interval)
    detail = f"x{ratio:.2f} (95 % interval over lives {low:.2f}-{high:.2f})"
    return replace(at_most(name, ratio, 1.5, "x", detail), decided=not low <= 1.5 <= high)


def _every(tally: Tally, pushes: int) -> str:
    """How many 5 % regressions' buckets were alerted within ``pushes``, the late ones, and
    the least share alerted that so few trials support (one-sided 95 %)."""
    delays = tally.delays.get(0.05, [])
    alerted = tally.alerted(0.05, pushes)
    least = 1.0 - upper95(len(delays) - alerted, len(delays)) if delays else float("nan")
    late = ", ".join("never" if d == NEVER else f"at push {d}"
                     for d in sorted(d for d in delays if d > pushes))  # fmt: skip
    late_text = f" ({late})" if late else ""
    hours = _hours(tally)
    clock = (f"; alerted {hours['median']:.0f} h after the merge (median), at most "
             f"{hours['longest']:.0f} h" if hours else "")  # fmt: skip
    return (f"{alerted} of {len(delays)}{late_text}; share alerted >= {100 * least:.0f} % at 95 %"
            f"{clock}")  # fmt: skip


def _hours(tally: Tally) -> dict[str, float] | None:
    """The clock time from a 5 % regression's merge to each of its buckets' alerts: the
    median and the longest (None when none was alerted)."""
    hours = tally.hours.get(0.05, [])
    return {"median": float(np.median(hours)), "longest": max(hours)} if hours else None
