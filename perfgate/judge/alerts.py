"""Post-merge alerts: one bucket's runs along its target branch, oldest first -> the
regressions to alert, the improvements to record and the recoveries (R18). Pure.

A pull request can afford a few samples; the target branch sees every push. After each
protected push the history of one bucket and metric is replayed run by run, and each run
is judged against the level before it:

* **The level.** Runs before a candidate change, up to ``window_runs`` of them, are fitted
  as a level per segment (a segment starts at an accepted change, a recorded improvement)
  plus an offset per runner shared by every segment (a pool's runners differ by a few per
  cent, steadily for weeks: estimated from the runs each one took, shrunk towards zero
  when it took few), plus noise: within a run (its samples) and between runs (what is left).
  Everything is in log space (``judge.goodness.to_g``), so changes are relative.
* **A regression** is alerted when the latest ``confirm_runs`` runs (the candidate change
  is that many runs back, its first run on a new commit after the last run before it)
  all say so: their weighted mean is a drop of at least ``min_drop_pct``, past a t line set from
  ``false_alert_rate`` per bucket-push and a rank line (Mann-Whitney against the level's
  own runs at ``rank_rate``, which caps false alerts for any distribution of whole-run
  noise: slow machine states, noisy neighbours), the same runs with the one farthest
  below the level left out are still a drop of ``min_drop_pct`` past a t line at
  ``leave_one_out_rate``, and every one of them lies at least ``persist_z`` of its noise
  below the level: one slow run among good ones is no change.
  The per-run bar and the leave-one-out line are what keep a run in a slow machine state
  from alerting with the rest merely low. Either alone lets it through: with the per-run
  bar only, such runs made most false alerts of the whole bill's 2 %-noise states pool
  (and carried drops under the minimum past it); with an earlier leave-one-out line (its
  t line alone, no minimum drop) in place of the per-run bar, the alert suite's false
  alerts rose by half (``nox -s quality``).
* **An improvement** is the mirror image: recorded, never alerted; the level starts again
  at it.
* **An improvement that never held** is withdrawn. If a regression against it is found
  before ``confirm_runs`` runs after those that confirmed it lay nearer its level than the
  level before it, and the same runs are no regression against that older level, the
  improvement was undone (fast runs by chance, or a change reverted) and no run is below
  what the bucket had: nothing is alerted, the improvement leaves the record and the
  level before it is in force again. Otherwise the regression is alerted as usual. An
  alert against a level the bucket never really had could not recover, and stayed open
  over every later drop.
* **A recovery** closes a regression: the latest ``confirm_runs`` runs are each nearer the
  level from before it than the regression's level, and together within
  ``recovered_share`` of the minimum drop of it.
* **An accepted change** (``known_shifts``: the first run at or after an acknowledged
  commit) starts a new level there: an open regression ends as accepted, and no change at
  that run is ever alerted.

The suspect range of a change runs from the nearest run clearly at the old level to the
first of the unbroken run of pushes clearly at the new one, so a run that could be either
widens it rather than leaving its commit out; the rule only splits where the commit
changes, so the range is never empty.
``nox -s quality`` (tests/perf/alert_quality.py) scores this rule: delay and false alerts
per 1,000 bucket-pushes on runner pools with offsets, throttling and run-level states.
Over 500 lines on purpose: the level, the regression, improvement and recovery rules and
the replay that applies them share one state and are read together.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from perfgate.config import AlertsSpec, Direction, OraclePolicy
from perfgate.judge.goodness import effect_text, from_g, g_of_regression, pct_of_g, to_g
from perfgate.judge.numerics import (
    huber_location,
    location_var,
    mann_whitney_u,
    mwu_critical,
    robust_scale,
    t_isf,
)

#: Runs before a change searched for the last one clearly at the old level: a small change
#: confirmed late may have started several pushes before the runs that confirmed it.
SCAN_BACK = 10


class ChangeKind(StrEnum):
    """Which way a confirmed level change went."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


@dataclass(frozen=True, kw_only=True)
class AlertPolicy:
    """The rule's settings: perfgate.yaml's ``alerts`` (``AlertsSpec`` says what each is),
    and the metric's minimum drop (``baselines.alerting.alert_policy`` builds it)."""

    false_alert_rate: float = AlertsSpec.false_alert_rate
    # The smallest change alerted (or recorded as an improvement): the gate's minimum drop.
    min_drop_pct: float = OraclePolicy.min_drop_pct
    confirm_runs: int = AlertsSpec.confirm_runs
    window_runs: int = AlertsSpec.window_runs
    min_runs: int = AlertsSpec.min_runs
    min_level_runs: int = AlertsSpec.min_level_runs
    rank_rate: float = AlertsSpec.rank_rate
    leave_one_out_rate: float = AlertsSpec.leave_one_out_rate
    persist_z: float = AlertsSpec.persist_z
    recovered_share: float = AlertsSpec.recovered_share
    confidence: float = AlertsSpec.confidence


@dataclass(frozen=True, kw_only=True)
class PushRun:
    """One stored run of the bucket on the target branch: its commit, figures and runner."""

    commit: str
    values: tuple[float, ...]
    runner: str


@dataclass(frozen=True, kw_only=True)
class Change:
    """A confirmed level change: where it starts, how big it is, and how sure.

    Indices are run indices (oldest first). ``first`` is where the runs behind the figures
    start, ``confirmed`` the run whose push confirmed the change. ``last_good`` and
    ``first_bad`` bound the suspect range (see the module's docstring): the commits after
    the one and up to the other. The levels are the pool's, in metric units.
    """

    kind: ChangeKind
    first: int
    confirmed: int
    last_good: int
    first_bad: int
    before: float
    after: float
    change_pct: float
    interval_pct: tuple[float, float]
    t: float
    runs: int  # runs at the new level behind the figures

    def effect_text(self) -> str:
        """'-6.1 % (-7.9 ... -4.2)': the change with its interval."""
        return effect_text(self.change_pct, self.interval_pct)


@dataclass(frozen=True, kw_only=True)
class Recovery:
    """A regression's level back where it was before it."""

    first: int
    confirmed: int
    level: float
    # What is left of the regression, against the level before it, with its interval.
    change_pct: float
    interval_pct: tuple[float, float]

    def effect_text(self) -> str:
        """The change left, with its interval."""
        return effect_text(self.change_pct, self.interval_pct)


@dataclass(frozen=True, kw_only=True)
class Episode:
    """One alerted regression: its alert, its figures now, and how it ended (if it did)."""

    alert: Change
    # The regression with every run at its level so far (what a follow-up comment says).
    latest: Change
    recovery: Recovery | None = None
    # The run at which an accepted change ended it.
    accepted_at: int | None = None


@dataclass(frozen=True, kw_only=True)
class Watch:
    """The replayed history: every regression episode and improvement, oldest first."""

    runs: int
    episodes: tuple[Episode, ...]
    improvements: tuple[Change, ...]


# ----------------------------------------------------------------------------------------
# The level before a change
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Run:
    """A run on the goodness scale: its location, samples and the spread within it."""

    location: float
    samples: int
    runner: str
    commit: str
    deviations: tuple[float, ...]


def _summarise(run: PushRun, direction: Direction) -> _Run:
    g = [to_g(v, direction) for v in run.values]
    m = len(g)
    # The median of three or more is robust to one wild sample; of two, it is the mean.
    location = statistics.median(g)
    mean = math.fsum(g) / m
    inflate = math.sqrt(m / (m - 1)) if m > 1 else 0.0
    return _Run(
        location=location,
        samples=m,
        runner=run.runner,
        commit=run.commit,
        deviations=tuple((v - mean) * inflate for v in g) if m > 1 else (),
    )


@dataclass(frozen=True, kw_only=True)
class _Level:
    """The fitted level just before a candidate change, and the noise around it."""

    level: float
    level_var: float
    offsets: dict[str, float]
    counts: dict[str, int]
    tau2: float  # variance of runner offsets
    between2: float  # run-to-run variance left after runner offsets
    within2: float  # sample variance within a run
    scale2: float  # variance of a corrected run of the window (the shrinkage unit)
    df: float
    residuals: tuple[float, ...]  # the window's corrected run residuals, sorted

    def residual(self, run: _Run) -> tuple[float, float]:
        """The run's distance from this level (its runner's offset removed) and its variance."""
        offset = self.offsets.get(run.runner, 0.0)
        count = self.counts.get(run.runner, 0)
        # The offset's posterior variance: what its runs left unknown of it.
        offset_var = 0.0 if self.tau2 <= 0.0 else 1.0 / (1.0 / self.tau2 + count / self.scale2)
        var = self.between2 + self.within2 * location_var(run.samples) + offset_var
        return run.location - self.level - offset, max(var, 1e-12)


def _fit(runs: Sequence[_Run], segments: Sequence[int]) -> _Level:
    """A level per segment, shared runner offsets (shrunk), and the noise left."""
    n = len(runs)
    last = segments[-1]
    multi = [r for r in runs if r.deviations]
    within2 = 0.0
    if len(multi) >= 2:
        within, _ = robust_scale([d for r in multi for d in r.deviations], groups=len(multi))
        within2 = within * within
    y = [r.location for r in runs]
    ids = sorted(set(segments))
    levels = {s: statistics.median([y[j] for j in range(n) if segments[j] == s]) for s in ids}
    offsets: dict[str, float] = {}
    by_runner: dict[str, list[int]] = {}
    for j, r in enumerate(runs):
        by_runner.setdefault(r.runner, []).append(j)
    tau2 = 0.0
    scale = df = 0.0
    for _ in range(4):
        u = [y[j] - levels[segments[j]] - offsets.get(runs[j].runner, 0.0) for j in range(n)]
        scale, df = robust_scale(u, groups=len(ids))
        if scale <= 0.0:
            scale = 1e-9
        raw = {
            name: math.fsum(y[j] - levels[segments[j]] for j in members) / len(members)
            for name, members in by_runner.items()
        }
        if len(raw) >= 3:
            # Method of moments: the spread of runner means beyond what their runs explain.
            tau2 = max(
                0.0,
                math.fsum(m * m - scale * scale / len(by_runner[k]) for k, m in raw.items())
                / len(raw),
            )
        shrink = scale * scale / tau2 if tau2 > 0.0 else math.inf
        offsets = {
            name: (mean * len(by_runner[name]) / (len(by_runner[name]) + shrink))
            if tau2 > 0.0
            else 0.0
            for name, mean in raw.items()
        }
        for s in ids:
            members = [
                y[j] - offsets.get(runs[j].runner, 0.0) for j in range(n) if segments[j] == s
            ]
            levels[s] = huber_location(members, scale, start=levels[s])
    u = [y[j] - levels[segments[j]] - offsets.get(runs[j].runner, 0.0) for j in range(n)]
    scale, df = robust_scale(u, groups=len(ids))
    scale = max(scale, 1e-9)
    mean_var = math.fsum(location_var(r.samples) for r in runs) / n
    current = sum(1 for s in segments if s == last)
    return _Level(
        level=levels[last],
        level_var=scale * scale * location_var(current),
        offsets=offsets,
        counts={name: len(members) for name, members in by_runner.items()},
        tau2=tau2,
        between2=max(scale * scale - within2 * mean_var, 0.0),
        within2=within2,
        scale2=scale * scale,
        df=max(df, 1.0),
        residuals=tuple(sorted(u)),
    )


@dataclass(frozen=True, kw_only=True)
class _Test:
    """Runs since a candidate change against the level before it."""

    delta: float  # weighted mean distance, g
    se: float
    df: float
    z: tuple[float, ...]  # each run's distance in its own noise
    u: float  # Mann-Whitney U of the runs against the window's runs
    level: float
    # The runs' change and its t with the one farthest below the level left out (of a
    # single run: its own).
    delta_without_lowest: float
    t_without_lowest: float

    @property
    def t(self) -> float:
        """The studentised change."""
        return self.delta / self.se if self.se > 0 else math.copysign(math.inf, self.delta)


def _weighted(level: _Level, parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The inverse-variance mean of run residuals and its standard error, the level's in."""
    weights = [1.0 / var for _, var in parts]
    total = math.fsum(weights)
    delta = math.fsum(e * w for (e, _), w in zip(parts, weights, strict=True)) / total
    return delta, math.sqrt(1.0 / total + level.level_var)


def _test(level: _Level, after: Sequence[_Run]) -> _Test:
    parts = [level.residual(run) for run in after]
    delta, se = _weighted(level, parts)
    z = tuple(e / math.sqrt(var + level.level_var) for e, var in parts)
    lowest = z.index(min(z))
    rest_delta, rest_se = _weighted(level, [p for k, p in enumerate(parts) if k != lowest] or parts)
    return _Test(
        delta=delta,
        se=se,
        df=level.df,
        z=z,
        u=mann_whitney_u(level.residuals, [e for e, _ in parts]),
        level=level.level,
        delta_without_lowest=rest_delta,
        t_without_lowest=rest_delta / rest_se,
    )


# ----------------------------------------------------------------------------------------
# The replay
# ----------------------------------------------------------------------------------------


class Watcher:
    """The replay, one run at a time: add each run (oldest first), read the watch at any point."""

    def __init__(
        self, *, direction: Direction = Direction.HIGHER, policy: AlertPolicy | None = None
    ):
        self.policy = policy or AlertPolicy()
        if self.policy.confirm_runs < 1:
            raise ValueError("confirm_runs must be at least 1")
        self.direction = direction
        self.runs: list[_Run] = []
        # Where a new level starts (accepted changes, improvements), and the runs of a
        # regression that recovered: never part of a level again.
        self.boundaries: list[int] = []
        self.excluded: set[int] = set()
        self.episodes: list[Episode] = []
        self.improvements: list[Change] = []
        # The open regression and the level it is measured against.
        self.alert: Change | None = None
        self.good: _Level | None = None
        self.fits: dict[int, _Level | None] = {}

    def add(self, run: PushRun, *, accepted: bool = False) -> None:
        """The next run; ``accepted``: an accepted change starts a new level at it."""
        if not run.values:
            raise ValueError(f"the run at {run.commit[:12]} has no figure")
        self.runs.append(_summarise(run, self.direction))
        now = len(self.runs) - 1
        if accepted:
            if self.alert is not None:
                self.episodes[-1] = replace(self.episodes[-1], accepted_at=now)
                self.alert = self.good = None
            self._new_level(now)
        elif self.alert is None:
            self._detect(now)
        else:
            self._follow(now)

    def result(self) -> Watch:
        """Every regression episode and improvement so far."""
        return Watch(
            runs=len(self.runs),
            episodes=tuple(self.episodes),
            improvements=tuple(self.improvements),
        )

    def _segment(self, index: int) -> int:
        return sum(1 for b in self.boundaries if b <= index)

    def _level_before(self, first: int) -> _Level | None:
        """The level the runs from ``first`` on are judged against (None: too few runs)."""
        if first in self.fits:
            return self.fits[first]
        policy = self.policy
        chosen = [j for j in range(first) if j not in self.excluded][-policy.window_runs :]
        fitted = None
        segments = [self._segment(j) for j in chosen]
        if (
            len(chosen) >= policy.min_runs
            and segments[-1] == self._segment(first)
            and segments.count(segments[-1]) >= policy.min_level_runs
        ):
            fitted = _fit([self.runs[j] for j in chosen], segments)
        self.fits[first] = fitted
        return fitted

    def _split(self, now: int) -> tuple[int, _Level, _Test] | None:
        """The candidate change: its first run, its level, and the runs since against it."""
        first = now - self.policy.confirm_runs + 1
        if first <= max(self.boundaries, default=0):
            return None
        before = max((j for j in range(first) if j not in self.excluded), default=None)
        if before is None or self.runs[before].commit == self.runs[first].commit:
            return None  # the level changed between runs of one commit: not a code change
        level = self._level_before(first)
        if level is None:
            return None
        return first, level, _test(level, self.runs[first : now + 1])

    def _lines(self, runs: int, level: _Level) -> tuple[float, float]:
        """The t line and the rank line (the largest U) of a look at ``runs`` runs."""
        rank = mwu_critical(runs, len(level.residuals), self.policy.rank_rate)
        return t_isf(self.policy.false_alert_rate, level.df), float(rank)

    def _interval(self, test: _Test) -> tuple[float, float]:
        ci = t_isf((1.0 - self.policy.confidence) / 2.0, test.df)
        lo = pct_of_g(test.delta - ci * test.se, self.direction)
        hi = pct_of_g(test.delta + ci * test.se, self.direction)
        return min(lo, hi), max(lo, hi)

    def _change(
        self, kind: ChangeKind, first: int, now: int, test: _Test, bounds: tuple[int, int]
    ) -> Change:
        last_good, first_bad = bounds
        return Change(
            kind=kind,
            first=first,
            confirmed=now,
            last_good=last_good,
            first_bad=first_bad,
            before=from_g(test.level, self.direction),
            after=from_g(test.level + test.delta, self.direction),
            change_pct=pct_of_g(test.delta, self.direction),
            interval_pct=self._interval(test),
            t=test.t,
            runs=now - first + 1,
        )

    def _bounds(self, first: int, now: int, delta: float, level: _Level) -> tuple[int, int]:
        """The suspect range: the nearest run clearly at the old level (odds of 99 to 1: a
        culprit left out costs more than one more suspect), and the first of the unbroken
        run of pushes clearly at the new level (19 to 1) that ends at this one. A run in
        between may be at either level, so its commit is a suspect too."""

        def odds(index: int) -> float:
            # Log likelihood ratio of "at the new level" to "at the old one".
            distance, var = level.residual(self.runs[index])
            return (distance * delta - delta * delta / 2.0) / (var + level.level_var)

        before = [j for j in range(max(first - SCAN_BACK, 0), first) if j not in self.excluded]
        good = next((j for j in reversed(before) if odds(j) <= -math.log(99.0)), None)
        if good is None:
            good = max(before[0] - 1, 0) if before else first - 1
        bad = now
        while bad - 1 > good and odds(bad - 1) >= math.log(19.0):
            bad -= 1
        while bad < now and self.runs[bad].commit == self.runs[good].commit:
            bad += 1
        return good, bad

    def _detect(self, now: int) -> None:
        """At a push with no open regression: is there a new regression, or an improvement?"""
        split = self._split(now)
        if split is None:
            return
        first, level, test = split
        policy = self.policy
        t_line, u_line = self._lines(len(test.z), level)
        if self._regresses(level, test):
            if self._withdraw_improvement(first, now, level):
                return
            bounds = self._bounds(first, now, test.delta, level)
            found = self._change(ChangeKind.REGRESSION, first, now, test, bounds)
            self.alert, self.good = found, level
            self.episodes.append(Episode(alert=found, latest=found))
        elif (
            test.delta >= -g_of_regression(-policy.min_drop_pct, self.direction)
            and test.t >= t_line
            and test.u >= len(test.z) * len(level.residuals) - u_line
            and min(test.z) >= policy.persist_z
        ):
            bounds = self._bounds(first, now, test.delta, level)
            self.improvements.append(self._change(ChangeKind.IMPROVEMENT, first, now, test, bounds))
            self._new_level(first)

    def _regresses(self, level: _Level, test: _Test) -> bool:
        """The regression rule: a drop of the minimum past the t and rank lines, which
        without its lowest run is still a drop of the minimum past the leave-one-out line,
        and every run past the level by ``persist_z`` of its noise."""
        policy = self.policy
        t_line, u_line = self._lines(len(test.z), level)
        minimum = g_of_regression(policy.min_drop_pct, self.direction)
        return (
            -test.delta >= minimum
            and test.t <= -t_line
            and test.u <= u_line
            and -test.delta_without_lowest >= minimum
            and test.t_without_lowest <= -t_isf(policy.leave_one_out_rate, level.df)
            and max(test.z) <= -policy.persist_z
        )

    def _withdraw_improvement(self, first: int, now: int, level: _Level) -> bool:
        """A regression that only undoes the latest improvement before it held: withdraw
        the improvement (the level before it is in force again) instead of alerting."""
        gain = self.improvements[-1] if self.improvements else None
        if gain is None or gain.first != max(self.boundaries):
            return False  # the level starts at an accepted change, or at no improvement
        self.boundaries.remove(gain.first)
        self.fits.clear()
        before = self._level_before(first)
        between = [self.runs[j] for j in range(gain.confirmed + 1, first) if j not in self.excluded]
        withdrawn = (
            before is not None
            # Held: confirm_runs runs after its own nearer its level than the one before it.
            and sum(
                1 for run in between if abs(level.residual(run)[0]) < abs(before.residual(run)[0])
            )
            < self.policy.confirm_runs
            # Back at the level before it, not below it: no regression against that level.
            and not self._regresses(before, _test(before, self.runs[first : now + 1]))
        )
        if withdrawn:
            self.improvements.pop()
        else:
            self._new_level(gain.first)
        return withdrawn

    def _follow(self, now: int) -> None:
        """At a push with an open regression: its figures now; has it recovered?"""
        alert, good = self.alert, self.good
        assert alert is not None and good is not None
        since = self.runs[alert.first : now + 1]
        bounds = (alert.last_good, alert.first_bad)
        latest = self._change(ChangeKind.REGRESSION, alert.first, now, _test(good, since), bounds)
        self.episodes[-1] = Episode(alert=alert, latest=latest)
        policy = self.policy
        back = policy.recovered_share * g_of_regression(policy.min_drop_pct, self.direction)
        first = now - policy.confirm_runs + 1
        if first <= alert.first or self.runs[first].commit == self.runs[first - 1].commit:
            return
        test = _test(good, self.runs[first : now + 1])
        # Back: within the share of the minimum drop of the old level, and every run
        # nearer to it than to the regression's level.
        regressed = _test(good, self.runs[alert.first : first]).delta
        distances = [good.residual(run)[0] for run in self.runs[first : now + 1]]
        if test.delta < -back or min(distances) < regressed / 2.0:
            return
        recovery = Recovery(
            first=first,
            confirmed=now,
            level=from_g(test.level + test.delta, self.direction),
            change_pct=pct_of_g(test.delta, self.direction),
            interval_pct=self._interval(test),
        )
        self.episodes[-1] = Episode(alert=alert, latest=latest, recovery=recovery)
        # The regression's runs measured another level: never part of one again.
        self.excluded.update(range(alert.first, first))
        self.alert = self.good = None
        self.fits.clear()

    def _new_level(self, first: int) -> None:
        self.boundaries.append(first)
        self.fits.clear()


def watch(
    runs: Sequence[PushRun],
    *,
    direction: Direction = Direction.HIGHER,
    policy: AlertPolicy | None = None,
    known_shifts: Collection[int] = (),
) -> Watch:
    """Replay one bucket's runs (oldest first) and say what changed and what is open now.

    ``known_shifts`` are the indices of runs where an accepted change starts a new level.
    """
    watcher = Watcher(direction=direction, policy=policy)
    for index, run in enumerate(runs):
        watcher.add(run, accepted=index in known_shifts)
    return watcher.result()


__all__ = [
    "AlertPolicy",
    "Change",
    "ChangeKind",
    "Episode",
    "PushRun",
    "Recovery",
    "Watch",
    "Watcher",
    "watch",
]
