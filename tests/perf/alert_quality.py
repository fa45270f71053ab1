"""The post-merge alert rule, scored (``nox -s quality``): delay and false alerts per 1,000 pushes.

Each series is one bucket's pushes to its target branch on a pool like the runner-offset
suite's (``tests/perf/runner_offsets.py``): 8 runners with fixed offsets drawn in +-5 %,
sample noise of 1 or 2 %, 3 % of samples taken on a throttled GPU 15-35 % slow (admission
control measures again, up to 3 a run, else sets the sample aside). The "states" pools add
run-level states: ``STATE_SHARE`` of the runs land on a machine in a slower state (a clock
or boost state, a noisy neighbour for the whole run), every sample of the run
``STATE_DEPTH`` lower. A push stores its run's admitted samples, as many as a protected
push takes of a bucket by default (``PUSH_REPEATS``: ``alerts.push_repeats`` unset, 6);
``--push-repeats N`` scores ``alerts.push_repeats: N`` (2: a push at the bucket's default
repeats). A run the window cannot clear may take more at the push itself; that is left
out here, and paired samples are never stored.

``BURN_IN`` pushes make the history; the next ``POINTS`` are watched. In half the series
nothing changes; in the others the level drops once by 5 % (or 3 or 10 %) at a random push
and is fixed ``REVERT`` pushes later (a revert). Rules side by side, each seeing the same
pushes:

* ``block``: alert at a push whose run BLOCKs against its window (the gate's calibrated rule
  on the nearest 20 runs, judging the run's samples: what the window alone can say);
* ``alerts``: the rule in force, ``perfgate.judge.alerts`` with ``AlertPolicy()`` (or the
  ``--set`` overrides): a level shift confirmed by the runs after it.

Figures per pool and rule: the drops alerted within 3 pushes (``5%<=3``; 1 = at the drop's
own push), their mean delay, false alerts per 1,000 unchanged bucket-pushes (and a 95 %
upper bound), how often the suspect range holds the commit that dropped (``range%``) and
how many pushes it spans (``width``, what a bisect narrows), and the share of alerted drops
closed as recovered after their fix, and how many pushes that took (``rdelay``). Then the
price: the launches a push takes (admission's re-measures included) and its runner minutes
in the quality run's cost model (``S + L x launches``, ``targets.Options``), beside what the
same pushes cost at the bucket's own repeats (``BUCKET_REPEATS``, on the same draws).

Run: ``nox -s quality`` (quick) or ``python tests/perf/alert_quality.py --series 400``;
``--seed-offset N`` draws another set of series (the same mix of drops): a rule chosen on
the default set is confirmed on a held-out one.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.config import AlertsSpec, Bucket, load_config  # noqa: E402
from perfgate.judge.alerts import AlertPolicy, PushRun, Watcher  # noqa: E402
from perfgate.judge.calibrated import calibrated_decide  # noqa: E402
from perfgate.judge.policies import CalibratedPolicy  # noqa: E402
from perfgate.judge.verdicts import Verdict  # noqa: E402
from perfgate.judge.window import analyse_window  # noqa: E402
from tests.perf import economics, runner_offsets  # noqa: E402
from tests.perf.targets import Options, SuiteReport, Target, at_least, at_most, upper95  # noqa: E402

CVS = (0.01, 0.02)
STATE_SHARE = 0.05  # runs in a slower machine state ("states" pools)
STATE_DEPTH = (0.02, 0.04)  # ... every sample of such a run this much lower
# Samples a bucket run takes (perfgate's default repeats: what a pull request's run takes)
# and what a protected push takes and stores by default (``alerts.push_repeats`` unset).
BUCKET_REPEATS = Bucket.repeats
PUSH_REPEATS = AlertsSpec().push_samples(BUCKET_REPEATS)
BURN_IN = 80
POINTS = 60
CHANGE_RANGE = (5, POINTS - 20)
REVERT = 12  # pushes after the drop at which it is fixed
DROPS = (0.05, 0.05, 0.03, 0.10)  # a drop series' size, by seed (5 % the target)
WITHIN = 3  # pushes an alert may take, the drop's own included
DEFAULT_SERIES = 160
RULES = ("block", "alerts")
CHOSEN = "alerts"


@dataclass(frozen=True, kw_only=True)
class Pool:
    """One simulated runner pool."""

    cv: float
    states: bool

    @property
    def name(self) -> str:
        """'runners±5% 2% +states'."""
        return f"runners±5% {self.cv * 100:g}%{' +states' if self.states else ''}"


@dataclass(kw_only=True)
class Tally:
    """Counts of one rule on one pool."""

    unchanged: int = 0
    false_alerts: int = 0
    drops: dict[float, int] = field(default_factory=dict)
    within: dict[float, int] = field(default_factory=dict)  # alerted within WITHIN pushes
    delays: dict[float, int] = field(default_factory=dict)  # summed delay of those alerted
    alerted: dict[float, int] = field(default_factory=dict)  # alerted at all before the fix
    range_right: int = 0  # suspect ranges that hold the commit that dropped
    range_pushes: int = 0  # pushes in the suspect ranges, summed
    recovered: int = 0
    recovery_delay: int = 0
    reverts: int = 0
    watched: int = 0  # pushes watched, unchanged or not
    launches: int = 0  # their launches (admission's re-measures included)
    bucket_launches: int = 0  # ... had each taken only the bucket's repeats

    def add(self, other: Tally) -> None:
        """Accumulate another tally."""
        for name in ("unchanged", "false_alerts", "range_right", "range_pushes", "recovered",
                     "recovery_delay", "reverts", "watched", "launches",
                     "bucket_launches"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        pairs = ((self.drops, other.drops), (self.within, other.within),
                 (self.delays, other.delays), (self.alerted, other.alerted))  # fmt: skip
        for mine, theirs in pairs:
            for key, value in theirs.items():
                mine[key] = mine.get(key, 0) + value

    @property
    def per_1000(self) -> float:
        """False alerts per 1,000 unchanged bucket-pushes."""
        return 1000.0 * self.false_alerts / max(self.unchanged, 1)

    def detection(self, drop: float) -> float:
        """Share of drops of this size alerted within WITHIN pushes."""
        return self.within.get(drop, 0) / max(self.drops.get(drop, 0), 1)

    def delay(self, drop: float) -> float:
        """Mean pushes to the alert of drops alerted within WITHIN pushes (1: at the drop)."""
        return self.delays.get(drop, 0) / max(self.within.get(drop, 0), 1)


class _Block:
    """The ``block`` rule: the gate's window verdict on each pushed run."""

    def __init__(self, repeats: int) -> None:
        self.policy = CalibratedPolicy(initial_repeats=repeats, max_repeats=repeats)
        self.history: list[list[float]] = []
        self.open = False

    def add(self, values: list[float]) -> bool:
        model = analyse_window(self.history[::-1][: self.policy.max_runs], policy=self.policy)
        self.history.append(values)
        blocked = (
            calibrated_decide(model, values, policy=self.policy, final=True).verdict
            is Verdict.BLOCK
        )
        fired = blocked and not self.open
        self.open = blocked
        return fired


class _Rule:
    """``perfgate.judge.alerts`` streaming, one alert per new episode."""

    def __init__(self, policy: AlertPolicy) -> None:
        self.watcher = Watcher(policy=policy)
        self.seen = 0

    def add(
        self, values: list[float], runner: str, commit: str
    ) -> tuple[bool, tuple[int, int], int]:
        """(a new alert, its last good and first bad run, regressions recovered so far)."""
        self.watcher.add(PushRun(commit=commit, values=tuple(values), runner=runner))
        episodes = self.watcher.episodes
        fresh = len(episodes) > self.seen
        self.seen = len(episodes)
        bounds = (episodes[-1].alert.last_good, episodes[-1].alert.first_bad) if fresh else (0, 0)
        return fresh, bounds, sum(1 for e in episodes if e.recovery is not None)


def _run(
    rng: np.random.Generator, level: float, offset: float, cv: float, repeats: int
) -> tuple[list[float], int, int]:
    """One push's stored samples, ``repeats`` admitted ones (a throttled one re-measured),
    its launches, and the launches its first BUCKET_REPEATS admitted samples took: what
    the run would have cost at the bucket's own repeats, on the same draws."""
    runner = runner_offsets.Runner(rng, offset, cv, admit=True)
    kept: list[float] = []
    at_bucket_repeats = 0
    while len(kept) < repeats and runner.taken < repeats + runner_offsets.REMEASURE + 1:
        value = runner.sample(level)
        if value is not None:
            kept.append(value)
        if len(kept) <= BUCKET_REPEATS:
            at_bucket_repeats = runner.taken
    return kept or [level * offset], runner.taken, at_bucket_repeats


def run_series(
    pool: Pool, seed: int, drop: float, policy: AlertPolicy, repeats: int
) -> dict[str, Tally]:
    """One series through every rule: the same pushes, runners, states and drop, each
    push storing ``repeats`` samples."""
    rng = np.random.default_rng(seed)
    offsets = np.exp(
        rng.uniform(math.log1p(-runner_offsets.OFFSET), math.log1p(runner_offsets.OFFSET),
                    runner_offsets.RUNNERS)
    )  # fmt: skip
    change = int(rng.integers(*CHANGE_RANGE)) if drop else POINTS + 1
    pushes = []
    launches = bucket_launches = 0
    for i in range(BURN_IN + POINTS):
        point = i - BURN_IN
        dropped = change <= point < change + REVERT
        runner = int(rng.integers(runner_offsets.RUNNERS))
        offset = float(offsets[runner])
        if pool.states and rng.random() < STATE_SHARE:
            offset *= 1.0 - rng.uniform(*STATE_DEPTH)
        level = 100.0 * (1.0 - drop if dropped else 1.0)
        values, taken, at_bucket_repeats = _run(rng, level, offset, pool.cv, repeats)
        if point >= 0:
            launches += taken
            bucket_launches += at_bucket_repeats
        pushes.append((values, f"runner-{runner}", f"c{i:04d}"))
    out: dict[str, Tally] = {}
    for rule in RULES:
        tally = Tally(watched=POINTS, launches=launches, bucket_launches=bucket_launches)
        if drop:
            tally.drops[drop] = 1
        block = _Block(repeats) if rule == "block" else None
        confirm = None if block else _Rule(policy)
        first_alert = None
        for i, (values, runner, commit) in enumerate(pushes):
            point = i - BURN_IN
            if block is not None:
                fired, bounds, recovered = block.add(values), (i - 1, i), 0
            else:
                assert confirm is not None
                fired, bounds, recovered = confirm.add(values, runner, commit)
            if point < 0:
                continue
            if point < change:
                tally.unchanged += 1
                tally.false_alerts += fired
            elif fired and first_alert is None and point < change + REVERT:
                first_alert = point
                delay = point - change + 1
                tally.alerted[drop] = 1
                if delay <= WITHIN:
                    tally.within[drop] = 1
                    tally.delays[drop] = delay
                good, bad = bounds
                tally.range_right += good < BURN_IN + change <= bad
                tally.range_pushes += bad - good
            if (
                first_alert is not None
                and point >= change + REVERT
                and recovered
                and not tally.recovered
            ):
                tally.recovered = 1
                tally.recovery_delay = point - (change + REVERT) + 1
        tally.reverts = int(first_alert is not None and rule != "block")
        out[rule] = tally
    return out


def _work(args: tuple[Pool, int, int, int, int, AlertPolicy, int]) -> dict[str, Tally]:
    pool, first, count, salt, shift, policy, repeats = args
    total = {rule: Tally() for rule in RULES}
    for s in range(first, first + count):
        # Even series: unchanged; odd series: one drop, its size cycling through DROPS.
        drop = DROPS[(s // 2) % len(DROPS)] if s % 2 else 0.0
        seed = salt * 1_000_003 + shift + s
        for rule, tally in run_series(pool, seed, drop, policy, repeats).items():
            total[rule].add(tally)
    return total


POOLS = tuple(Pool(cv=cv, states=states) for states in (False, True) for cv in CVS)


def score(
    series: int,
    jobs: int,
    policy: AlertPolicy | None = None,
    pools: tuple[Pool, ...] = POOLS,
    seed_offset: int = 0,
    repeats: int = PUSH_REPEATS,
) -> dict[str, dict[str, Tally]]:
    """Every pool, every rule: ``series`` series per pool (``policy``: the rule's settings;
    ``seed_offset``: another set of series, the same mix of drops, for a held-out check;
    ``repeats``: the samples each push stores)."""
    policy = policy or AlertPolicy()
    chunk = max(5, series // (4 * max(jobs, 1)))
    tasks = [
        (
            pool,
            start,
            min(chunk, series - start),
            zlib.crc32(pool.name.encode()),
            seed_offset,
            policy,
            repeats,
        )
        for pool in pools
        for start in range(0, series, chunk)
    ]
    results = {pool.name: {rule: Tally() for rule in RULES} for pool in pools}
    with ProcessPoolExecutor(max_workers=jobs) as executor:
        for (pool, *_), outcome in zip(tasks, executor.map(_work, tasks), strict=True):
            for rule, tally in outcome.items():
                results[pool.name][rule].add(tally)
    return results


def targets(results: dict[str, dict[str, Tally]]) -> list[Target]:
    """The issue's targets for the rule in force, for every pool."""
    found: list[Target] = []
    for pool, by_rule in results.items():
        tally = by_rule[CHOSEN]
        detected = 100.0 * tally.detection(0.05)
        found.append(at_least(f"alerts {pool}: 5 % drops alerted within {WITHIN} pushes",
                              round(detected, 2), 100.0, "%"))  # fmt: skip
        found.append(at_most(f"alerts {pool}: false alerts per 1,000 bucket-pushes",
                             round(tally.per_1000, 3), 1.0, ""))  # fmt: skip
    return found


def quality(options: Options) -> SuiteReport:
    """The alert suite as ``nox -s quality`` runs it: every pool, printed; its targets."""
    series = DEFAULT_SERIES // 4 if options.quick else DEFAULT_SERIES
    started = time.perf_counter()
    results = score(series, options.jobs, seed_offset=options.seed_offset)
    print()
    for line in render(results, series, time.perf_counter() - started, options):
        print(line)
    figures = {
        pool: {rule: {"detected_5pct": t.detection(0.05), "delay_5pct": t.delay(0.05),
                      "false_alerts_per_1000": t.per_1000, "unchanged_pushes": t.unchanged,
                      **push_cost(t, options)}
               for rule, t in by_rule.items()}
        for pool, by_rule in results.items()
    }  # fmt: skip
    return SuiteReport(name="alerts", figures=figures, targets=tuple(targets(results)))


def push_cost(tally: Tally, options: Options) -> dict[str, float]:
    """What a watched push costs in runner minutes (``S + L x launches``), and what it
    would have cost at the bucket's own repeats, on the same draws."""
    pushes = max(tally.watched, 1)
    minutes = options.run_minutes(tally.launches / pushes)
    before = options.run_minutes(tally.bucket_launches / pushes)
    return {
        "launches_per_push": tally.launches / pushes,
        "minutes_per_push": minutes,
        "bucket_repeats_minutes_per_push": before,
        "cost_over_bucket_repeats": minutes / before,
    }


def render(
    results: dict[str, dict[str, Tally]],
    series: int,
    elapsed: float,
    options: Options,
    repeats: int = PUSH_REPEATS,
) -> list[str]:
    """The table, side by side per pool, then what a push costs, then the targets."""
    sizes = "/".join(f"{d:.0%}" for d in sorted(set(DROPS)))
    lines = [
        f"post-merge alerts: {series} series/pool ({BURN_IN} pushes of history, {POINTS} "
        f"watched); half unchanged, half one drop of {sizes} fixed {REVERT} pushes later; "
        f"{repeats} samples a push (a PR's run: {BUCKET_REPEATS}); states: "
        f"{STATE_SHARE:.0%} of runs {STATE_DEPTH[0]:.0%}-{STATE_DEPTH[1]:.0%} slower; "
        f"{elapsed:.0f} s",
    ]
    head = (
        f"{'pool':<24}{'rule':<11}{'5%<=3':>7}{'delay5':>7}{'3%<=3':>7}{'10%<=3':>7}"
        f"{'FA/1000':>8}{'FA95':>7}{'range%':>7}{'width':>6}{'recov%':>7}{'rdelay':>7}{'pushes':>8}"
    )
    lines += [head, "-" * len(head)]
    for pool, by_rule in results.items():
        for rule, t in by_rule.items():
            alerted = max(sum(t.alerted.values()), 1)
            lines.append(
                f"{pool:<24}{rule:<11}{t.detection(0.05) * 100:>7.1f}{t.delay(0.05):>7.2f}"
                f"{t.detection(0.03) * 100:>7.1f}{t.detection(0.10) * 100:>7.1f}"
                f"{t.per_1000:>8.2f}{1000 * upper95(t.false_alerts, t.unchanged):>7.2f}"
                f"{100 * t.range_right / alerted:>7.1f}{t.range_pushes / alerted:>6.2f}"
                f"{100 * t.recovered / max(t.reverts, 1):>7.1f}"
                f"{t.recovery_delay / max(t.recovered, 1):>7.2f}{t.unchanged:>8}"
            )
    lines += [
        "",
        f"cost of a push (S = {options.setup_minutes:.1f} min + L = "
        f"{options.launch_minutes:.1f} min a launch, admission's re-measures included), "
        f"{repeats} samples against the bucket's {BUCKET_REPEATS}:",
    ]
    for pool, by_rule in results.items():
        cost = push_cost(by_rule[CHOSEN], options)
        lines.append(
            f"  {pool:<24}{cost['launches_per_push']:5.2f} launches, "
            f"{cost['minutes_per_push']:5.1f} min a push against "
            f"{cost['bucket_repeats_minutes_per_push']:5.1f} "
            f"(x{cost['cost_over_bucket_repeats']:.2f})"
        )
    lines += ["", "targets (the rule in force):"]
    for target in targets(results):
        lines.append(f"  [{'met' if target.met else 'MISSED':>6}] {target.name:<66} {target.value}")
    return lines


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Score every pool and rule; exit 1 when a target is missed."""
    example = load_config(economics.EXAMPLE_CONFIG)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--series", type=int, default=DEFAULT_SERIES, help="series per pool (%(default)s)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="override an AlertPolicy field (sensitivity runs)",
    )  # fmt: skip
    parser.add_argument(
        "--push-repeats", type=int, default=PUSH_REPEATS, metavar="N",
        help="samples a push stores (default %(default)s: alerts.push_repeats unset; N "
             f"tries alerts.push_repeats: N, {BUCKET_REPEATS} a push at the bucket's repeats)",
    )  # fmt: skip
    parser.add_argument("--pool", action="append", help="only pools whose name starts so")
    parser.add_argument(
        "--seed-offset", type=int, default=0, metavar="N",
        help="shift every series' seed by N (below 1,000,000), the mix of drops kept: a "
             "held-out set of series for a rule chosen on the default one",
    )  # fmt: skip
    parser.add_argument(
        "--setup-minutes", type=float, default=economics.setup_minutes(example), metavar="S",
        help="cost model: a bucket job's setup, runner minutes (default %(default).1f)",
    )  # fmt: skip
    parser.add_argument(
        "--launch-minutes", type=float, default=economics.launch_minutes(example),
        metavar="L", help="cost model: one launch, runner minutes (default %(default).1f)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    pools = tuple(p for p in POOLS if not args.pool or any(p.name.startswith(x) for x in args.pool))
    fields = {f.name: f.type for f in dataclasses.fields(AlertPolicy)}
    overrides = dict(item.split("=", 1) for item in args.set)
    policy = AlertPolicy(**{k: int(v) if fields[k] == "int" else float(v)  # type: ignore[arg-type]
                            for k, v in overrides.items()})  # fmt: skip
    if not 0 <= args.seed_offset < 1_000_000:
        parser.error("--seed-offset must be in 0 ... 999,999")
    if not BUCKET_REPEATS <= args.push_repeats <= 100:
        # A push never takes fewer than the bucket's repeats (AlertsSpec.push_samples).
        parser.error(f"--push-repeats must be in {BUCKET_REPEATS} ... 100")
    options = Options(
        series=args.series,
        quick=False,
        jobs=args.jobs,
        setup_minutes=args.setup_minutes,
        launch_minutes=args.launch_minutes,
    )
    started = time.perf_counter()
    results = score(args.series, args.jobs, policy, pools, args.seed_offset, args.push_repeats)
    for line in render(results, args.series, time.perf_counter() - started, options,
                       args.push_repeats):  # fmt: skip
        out(line)
    return 0 if all(target.met for target in targets(results)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
