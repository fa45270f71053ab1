"""Runner offsets and whole-run excursions, learned from a bucket's history (R5). Pure.

A pool's runners differ by a few per cent, and a runner's offset against the pool holds
for weeks (qualification measures it). A window of 20 runs spread over 8 runners carries
that spread as noise shared by each run's samples, so it can rarely rule out a drop of a
few per cent. Here each stored run's runner is known, so the offsets are estimated from
the bucket's history (longer than its window) and taken out:

* each run's level is compared with the median of its neighbours in time (landed changes
  move both, so they cancel), and the residuals are grouped by runner;
* a runner's offset is the recency-weighted mean of its residuals, shrunk towards zero by
  how little it has run (empirical Bayes: ``tau^2 / (tau^2 + s^2 / n)``, tau the spread
  between runners, s one residual's noise), so a runner seen twice moves little and one
  never seen is not moved at all, its whole uncertainty (tau) kept in the test;
* older runs weigh less (half weight ``HALF_LIFE`` runs back), so a slowly drifting
  offset is followed and a runner that left the pool simply stops mattering.

What the correction leaves is also where whole-run falls show: a machine that spent a
whole run in a slower state (a clock state, a noisy neighbour) moves every sample of that
run together. The history's runs of unchanged code that fell as a whole are kept
(``Excursions``), and the verdict rule never lets the window alone BLOCK a run that such a
fall could explain (its drop is not past the deepest one by the block margin): only a
paired comparison, which runs the base in the same state, can tell them apart. Falls past
``EXCURSION_SIGMAS`` run-to-run sigmas are counted apart: with them in the history, one
run that fell is not taken for a level shift.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from perfgate.config import Direction
from perfgate.judge.calibrated import calibrated_decide
from perfgate.judge.decision import Decision
from perfgate.judge.goodness import pct_of_g, to_g
from perfgate.judge.numerics import MAD_TO_SIGMA
from perfgate.judge.policies import CalibratedPolicy, Calibration
from perfgate.judge.window import RunHistory, WindowInput, WindowModel, analyse_window

# Neighbours on each side whose median is a run's local level.
NEIGHBOURS = 8
# A run's residual weighs half as much this many runs back (offsets drift over weeks).
HALF_LIFE = 100
# A run further below its local level than this many robust run-level sigmas moved as a
# whole (p ~ 1.3e-3 per run for normal noise): an excursion of unchanged code.
EXCURSION_SIGMAS = 3.0
# Past this share of runs beyond EXCURSION_SIGMAS, whole-run states are a part of the
# pool's noise, not excursions from it.
FREQUENT = 0.05


@dataclass(frozen=True, kw_only=True)
class StoredRun:
    """One run of the history: the runner it ran on (None: unknown) and its samples."""

    runner: str | None
    values: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class Offset:
    """One runner's estimated offset against the pool, in log units (goodness scale)."""

    g: float  # shrunk estimate: add to the pool's level to get this runner's
    var: float  # its posterior variance (what is left unknown)
    runs: int  # history runs of this runner behind it


# A runner's offset where none is taken out: asked for every run of every window.
_NO_OFFSET = Offset(g=0.0, var=0.0, runs=0)


@dataclass(frozen=True, kw_only=True)
class Excursions:
    """How the history's runs fell as a whole below their neighbours (runner corrected)."""

    falls: tuple[float, ...]  # every positive fall, log units, deepest first
    count: int  # falls past EXCURSION_SIGMAS robust run-level sigmas
    runs: int  # history runs looked at


@dataclass(frozen=True, kw_only=True)
class RunnerModel:
    """Every runner's offset, the pool's spread, and the whole-run excursions seen."""

    direction: Direction
    offsets: Mapping[str, Offset] = field(default_factory=dict)
    tau: float = 0.0  # spread of the offsets between runners, log units
    runs: int = 0  # history runs used
    excursions: Excursions | None = None

    @property
    def corrects(self) -> bool:
        """True when there is an offset worth taking out (two runners or more, a spread)."""
        return len(self.offsets) >= 2 and self.tau > 0.0

    def offset(self, runner: str | None) -> Offset:
        """A runner's offset; an unknown one is the pool's (zero) with the pool's spread."""
        if not self.corrects:
            return _NO_OFFSET
        known = self.offsets.get(runner) if runner is not None else None
        return known or Offset(g=0.0, var=self.tau * self.tau, runs=0)

    def correct(self, values: Sequence[float], runner: str | None) -> list[float]:
        """A run's figures as the pool's typical runner would have measured them."""
        g = self.offset(runner).g
        if g == 0.0:
            return [float(v) for v in values]
        # g is on the goodness scale: a faster runner (g > 0) is scaled down either way.
        factor = math.exp(-g if self.direction is Direction.HIGHER else g)
        return [float(v) * factor for v in values]

    def offset_pct(self, runner: str | None) -> float:
        """A runner's offset as a change of the metric against the pool, in %."""
        return pct_of_g(self.offset(runner).g, self.direction)

    def history_for(self, runner: str | None) -> RunHistory:
        """What the verdict rule needs of the history for a run on ``runner``."""
        found = self.excursions
        return RunHistory(
            offset_var=self.offset(runner).var,
            falls=found.falls if found else (),
            excursions=found.count if found else 0,
            runs=found.runs if found else self.runs,
        )

    @property
    def run_excursions(self) -> bool:
        """True when whole runs fell past the run-to-run noise (a level shift needs two runs)."""
        return self.excursions is not None and self.excursions.count > 0


def fit_runners(
    history: Sequence[StoredRun], direction: Direction = Direction.HIGHER
) -> RunnerModel:
    """Estimate each runner's offset (and the whole-run excursions) from ``history``.

    ``history`` is nearest-first, as windows are. Runs without samples are ignored; runs
    without a runner name only serve as neighbours.
    """
    runs = [run for run in history if run.values]
    model = RunnerModel(direction=direction, runs=len(runs))
    if len(runs) < 3:
        return model
    means = [statistics.fmean(to_g(v, direction) for v in run.values) for run in runs]
    residuals = [means[i] - _local_level(means, i) for i in range(len(runs))]
    by_runner: dict[str, list[tuple[float, float]]] = {}
    for age, (run, resid) in enumerate(zip(runs, residuals, strict=True)):
        if run.runner is not None:
            by_runner.setdefault(run.runner, []).append((resid, 0.5 ** (age / HALF_LIFE)))
    # One residual's noise: the spread around each runner's median, robust to a rare run
    # that fell, yet with the states runs often sit in (then the MAD sees one state only,
    # and a runner that happened to land in the slower one more often would be taken for
    # a slower runner): the larger of the MAD's and the plain variance's figure.
    medians = {name: statistics.median(r for r, _ in points) for name, points in by_runner.items()}
    centred = [r - medians[run.runner] for run, r in zip(runs, residuals, strict=True)
               if run.runner is not None]  # fmt: skip
    s2 = _robust_var(centred)
    if len(centred) >= 2 and _frequent_states(centred, s2):
        s2 = max(s2, statistics.variance(centred))
    raw = {name: _weighted(points, s2) for name, points in by_runner.items()}
    tau2 = _between_var(raw)
    # Offsets are against the pool: its runs' residuals centre below zero when whole runs
    # often sit in a slower state (the local level is the usual state's).
    total = math.fsum(n_eff for _, n_eff, _, _ in raw.values())
    pool = math.fsum(mean * n_eff for mean, n_eff, _, _ in raw.values()) / total if total else 0.0
    offsets = {}
    for name, (mean, _, count, noise) in raw.items():
        shrink = tau2 / (tau2 + noise) if tau2 > 0 else 0.0
        offsets[name] = Offset(g=shrink * (mean - pool), var=shrink * noise if tau2 > 0 else 0.0,
                               runs=count)  # fmt: skip
    corrected = [
        r - (offsets[run.runner].g if run.runner is not None else 0.0)
        for run, r in zip(runs, residuals, strict=True)
    ]
    return RunnerModel(
        direction=direction,
        offsets=offsets if len(offsets) >= 2 and tau2 > 0 else {},
        tau=math.sqrt(tau2) if len(offsets) >= 2 else 0.0,
        runs=len(runs),
        excursions=_excursions(corrected),
    )


def _local_level(means: Sequence[float], index: int) -> float:
    """The median of the runs around ``index`` (itself left out): the level it ran at."""
    lo, hi = max(0, index - NEIGHBOURS), min(len(means), index + NEIGHBOURS + 1)
    around = [means[j] for j in range(lo, hi) if j != index]
    return statistics.median(around)


def _weighted(points: Sequence[tuple[float, float]], s2: float) -> tuple[float, float, int, float]:
    """(weighted Huber mean, effective count, runs, the mean's variance) of (residual,
    weight) points.

    Huber-weighted (k = 1.5 sigma): a run that fell as a whole barely moves its runner.
    The variance is the sandwich one, from the clipped residuals themselves: when whole
    runs often sit in a slower state, a runner's mean moves with how many of its runs
    did, by more than the MAD (which sees the main state only) says. Never below what
    the MAD says.
    """
    k = 1.5 * math.sqrt(s2)
    mean = statistics.median(r for r, _ in points)
    for _ in range(50 if k > 0.0 else 0):
        # Newton on the piecewise-linear estimating equation: exact once the set of
        # clipped residuals stops changing (as stats.huber_location does).
        total, inside = 0.0, 0.0
        for r, w in points:
            total += w * min(max(r - mean, -k), k)
            inside += w if abs(r - mean) <= k else 0.0
        step = total / inside if inside > 0.0 else 0.0
        mean += step
        if abs(step) <= 1e-12:
            break
    total = math.fsum(w for _, w in points)
    n_eff = total * total / math.fsum(w * w for _, w in points)
    floor = s2 / n_eff if n_eff > 0 else math.inf
    slope = math.fsum(w for r, w in points if abs(r - mean) <= k)
    if k <= 0.0 or slope <= 0.0:
        return mean, n_eff, len(points), floor
    # psi's spread over its slope: the Huber mean's variance from the data (n/(n-1)).
    psi2 = math.fsum((w * min(max(r - mean, -k), k)) ** 2 for r, w in points)
    count = len(points)
    sandwich = psi2 / (slope * slope) * (count / (count - 1) if count > 1 else 1.0)
    return mean, n_eff, count, max(sandwich, floor)


def _frequent_states(centred: Sequence[float], s2: float) -> bool:
    """More runs fell past ``EXCURSION_SIGMAS`` than a rare excursion explains (5 %)."""
    reach = EXCURSION_SIGMAS * math.sqrt(s2)
    return sum(1 for r in centred if abs(r) > reach) > FREQUENT * len(centred)


def _robust_var(values: Sequence[float]) -> float:
    """Variance from the scaled MAD: whole-run excursions must not inflate it."""
    if len(values) < 2:
        return 0.0
    centre = statistics.median(values)
    mad = statistics.median(abs(v - centre) for v in values)
    return (MAD_TO_SIGMA * mad) ** 2


def _between_var(raw: Mapping[str, tuple[float, float, int, float]]) -> float:
    """The spread of true offsets: the runner means' spread less what their noise explains.

    Method of moments with each runner weighted by its effective runs ``w`` and its mean's
    own variance ``v``: the weighted spread of the means is
    ``tau^2 (1 - sum w^2 / W^2) + sum w v (1 - w / W) / W``. Never negative.
    """
    if len(raw) < 2:
        return 0.0
    weights = [n_eff for _, n_eff, _, _ in raw.values()]
    means = [mean for mean, _, _, _ in raw.values()]
    variances = [var for _, _, _, var in raw.values()]
    total = math.fsum(weights)
    centre = math.fsum(m * w for m, w in zip(means, weights, strict=True)) / total
    spread = math.fsum(w * (m - centre) ** 2 for m, w in zip(means, weights, strict=True)) / total
    noise = math.fsum(w * v * (1.0 - w / total)
                      for w, v in zip(weights, variances, strict=True)) / total  # fmt: skip
    concentration = 1.0 - math.fsum(w * w for w in weights) / (total * total)
    return max(0.0, (spread - noise) / concentration) if concentration > 0 else 0.0


def _excursions(residuals: Sequence[float]) -> Excursions | None:
    """Runs that fell as a whole past ``EXCURSION_SIGMAS`` robust run-level sigmas."""
    if len(residuals) < 10:
        return None
    scale = math.sqrt(_robust_var(residuals))
    if scale <= 0.0:
        return None
    centre = statistics.median(residuals)
    falls = sorted((centre - r for r in residuals if r < centre), reverse=True)
    past = [f for f in falls if f > EXCURSION_SIGMAS * scale]

    return Excursions(falls=tuple(falls), count=len(past), runs=len(residuals))


@dataclass(frozen=True, kw_only=True)
class WindowRunners:
    """Who measured each run of a window (nearest first, None: unknown), and the runner
    model fitted when its samples were stored (None: learn it from the runs given)."""

    names: tuple[str | None, ...]
    fitted: RunnerModel | None = None


@dataclass(frozen=True, kw_only=True)
class WindowView:
    """A window analysed for one run: on its runner's terms when runners are known."""

    model: WindowModel
    fitted: RunnerModel | None
    runner: str | None

    def decide(self, values: Sequence[float], policy: CalibratedPolicy, *, final: bool) -> Decision:
        """The calibrated rule on the run's samples, corrected for its runner when known."""
        corrected = self.fitted.correct(values, self.runner) if self.fitted else list(values)
        return calibrated_decide(self.model, corrected, policy=policy, final=final)


def window_view(
    runs: WindowInput,
    runners: WindowRunners | None,
    runner: str | None,
    *,
    policy: CalibratedPolicy,
    direction: Direction = Direction.HIGHER,
    calibration: Calibration | None = None,
    known_shift: int | None = None,
) -> WindowView:
    """Analyse ``runs`` (nearest first) for a run on ``runner``: runner-aware when every run
    names its runner slot (``runners``) and ``policy.history_runs`` allows; else the plain
    window. With a fitted model the runs are the window alone; without one they are the
    window then older history, which the model is learned from.
    ``known_shift``: as :func:`judge.window.analyse_window` takes it (an accepted change)."""
    if runners is None or policy.history_runs <= 0 or len(runners.names) != len(runs):
        model = analyse_window(runs, policy=policy, direction=direction, calibration=calibration,
                               known_shift=known_shift)  # fmt: skip
        return WindowView(model=model, fitted=None, runner=runner)
    stored = [
        StoredRun(runner=name, values=(float(run),) if isinstance(run, int | float) else
                  tuple(float(v) for v in run))
        for name, run in zip(runners.names, runs, strict=True)
    ]  # fmt: skip
    fitted = runners.fitted or fit_runners(stored[: policy.history_runs], direction)
    # Every window run corrected for its own runner; the run's correction uncertainty and
    # the history's whole-run falls kept for the rule.
    model = analyse_window(
        [fitted.correct(run.values, run.runner) for run in stored[: policy.max_runs]],
        policy=policy,
        direction=direction,
        calibration=calibration,
        known_shift=known_shift,
        run_excursions=fitted.run_excursions,
    )
    history = fitted.history_for(runner)
    return WindowView(model=replace(model, history=history), fitted=fitted, runner=runner)
