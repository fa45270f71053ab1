"""The window model: a baseline window's level shifts, modes and noise, analysed once (R4, R5).

``analyse_window`` turns a nearest-first window of runs into a ``WindowModel``; the
calibrated rule (``judge.calibrated``) then judges each new sample against it cheaply.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from perfgate.config import Direction
from perfgate.judge.goodness import from_g, pct_of_g, signed_pct, to_g
from perfgate.judge.level_shifts import find_shifts, policy_modes
from perfgate.judge.modes import nearest
from perfgate.judge.numerics import MEDIAN_VAR, huber_location, location_var
from perfgate.judge.policies import CalibratedPolicy, Calibration
from perfgate.judge.verdicts import Reason
from perfgate.judge.window_noise import window_noise


@dataclass(frozen=True, kw_only=True)
class WindowMode:
    """One mode of the baseline: its centre (in metric units), sample count and share."""

    center: float
    count: int
    share: float


@dataclass(frozen=True, kw_only=True)
class Shift:
    """A level shift found in the window: the runs after it form the baseline."""

    kept_runs: int  # window[:kept_runs] (nearest-first) are after the shift
    change_pct: float  # size of the step, metric %
    t: float
    # A known shift: an accepted change (``perfgate accept``) starts the level here.
    accepted: bool = False


@dataclass(frozen=True, kw_only=True)
class RunHistory:
    """What a bucket's history says about one run (``judge.runner_offsets`` learns it).

    The run's runner correction leaves ``offset_var`` unknown. ``falls`` are the history's
    runs that fell as a whole below their neighbours (log units, deepest first): unchanged
    code that did so can explain a run's shortfall, so the window alone BLOCKs a run only
    when its drop is past the deepest of them by the block margin. ``excursions`` counts
    the falls past the run-to-run noise (then a level shift needs two runs after it).
    """

    offset_var: float = 0.0
    falls: tuple[float, ...] = ()
    excursions: int = 0
    runs: int = 0

    @property
    def deepest(self) -> float:
        """The deepest whole-run fall of the history, log units (0: none)."""
        return self.falls[0] if self.falls else 0.0

    def as_deep(self, fall: float) -> int:
        """History runs that fell at least ``fall`` as a whole."""
        return sum(1 for f in self.falls if f >= fall)


@dataclass(frozen=True, kw_only=True)
class _ModeFit:
    """Internal: a mode in g-space with the variance factor of its centre."""

    center: float  # g of this mode's centre for a run judged now
    count: int
    var: float  # var(center) / sigma^2
    # A state of whole runs (a clock state, a slower machine for the run's length): the
    # window's runs sit in it with all their samples, so a run's repeats cannot leave it.
    run_level: bool = False


@dataclass(frozen=True, kw_only=True)
class WindowModel:
    """A baseline window analysed once; ``judge`` then costs almost nothing per sample."""

    direction: Direction
    runs_total: int
    samples_total: int
    runs_used: int  # runs after the last level shift
    samples_used: int
    shift: Shift | None
    modes: tuple[_ModeFit, ...]  # ascending g
    sigma: float  # per-sample noise in log units (floors applied)
    run_sigma: float  # noise shared by one run's samples (runner effect), log units
    run_df: float  # degrees of freedom behind run_sigma (inf: calibrated or assumed 0)
    df: float  # degrees of freedom of sigma
    # Noise between the samples of one run (what a paired comparison sees), and its df
    # (0: fewer than three runs of two samples to measure it on).
    within_sigma: float = 0.0
    within_df: float = 0.0
    residuals: tuple[float, ...] = ()  # window residuals (mode/segment relative), sorted
    problem: Reason | None  # why the window cannot judge (then nothing else matters)
    detail: str = ""
    # What the bucket's longer history says about this run (judge.runner_offsets).
    history: RunHistory = field(default_factory=lambda: RunHistory())

    @property
    def multimodal(self) -> bool:
        """More than one mode in the window."""
        return len(self.modes) > 1

    def public_modes(self) -> tuple[WindowMode, ...]:
        """Modes in metric units, best first."""
        total = sum(m.count for m in self.modes) or 1
        return tuple(
            WindowMode(
                center=from_g(m.center, self.direction), count=m.count, share=m.count / total
            )
            for m in reversed(self.modes)
        )


WindowInput = Sequence[float | Sequence[float]]


def runs_of(window: WindowInput) -> list[list[float]]:
    """Window entries (nearest-first) as runs of samples; a bare float is a one-sample run."""
    runs: list[list[float]] = []
    for entry in window:
        if isinstance(entry, (int, float)):
            runs.append([float(entry)])
        else:
            run = [float(v) for v in entry]
            if run:
                runs.append(run)
    for run in runs:
        for v in run:
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"window values must be finite and positive, got {v!r}")
    return runs


def analyse_window(
    window: WindowInput,
    *,
    policy: CalibratedPolicy,
    direction: Direction = Direction.HIGHER,
    calibration: Calibration | None = None,
    known_shift: int | None = None,
    run_excursions: bool = False,
) -> WindowModel:
    """Find the window's level shifts, modes and noise once; ``judge`` then uses the model.

    ``window`` is nearest-first; an entry is one run: a float or a sequence of its samples.
    ``known_shift``: an accepted change starts a new level after the nearest that many runs
    (a shift the rule takes as found; 0: no run at the new level yet).
    ``run_excursions``: the bucket's history shows whole runs falling on their own (a
    machine state), so a level shift needs two runs after it, not one.
    """
    runs_nf = runs_of(window)[: policy.max_runs]
    n_total = sum(len(r) for r in runs_nf)
    empty = WindowModel(
        direction=direction,
        runs_total=len(runs_nf),
        samples_total=n_total,
        runs_used=len(runs_nf),
        samples_used=n_total,
        shift=None,
        modes=(),
        sigma=0.0,
        run_sigma=0.0,
        run_df=math.inf,
        df=0.0,
        problem=None,
    )
    unjudgeable = _unjudgeable(empty, policy, known_shift)
    if unjudgeable is not None:
        return unjudgeable

    # Oldest first from here on: shifts are found in time order.
    runs = [[to_g(v, direction) for v in run] for run in reversed(runs_nf)]
    g = [v for run in runs for v in run]
    run_of = [i for i, run in enumerate(runs) for _ in run]
    run_starts = [0, *itertools.accumulate(len(run) for run in runs[:-1])]
    n = len(g)
    found = find_shifts(g, run_of, run_starts, policy=policy, known_shift=known_shift,
                        run_excursions=run_excursions)  # fmt: skip
    seg_starts, seg_of, levels = found.starts, found.seg_of, found.levels

    # Modes of the level-adjusted window (mode offsets persist across a shift: a regression
    # moves every mode).
    adjusted = [g[i] - levels[seg_of[i]] for i in range(n)]
    bounds = policy_modes(adjusted, policy)
    clusters = [[v for v in adjusted if lo <= v <= hi] for lo, hi in bounds]
    centers = [statistics.median(c) for c in clusters]
    member = [0] * n if len(centers) == 1 else [nearest(v, centers) for v in adjusted]
    resid2 = [adjusted[i] - centers[member[i]] for i in range(n)]
    noise = window_noise(
        resid2, run_of, len(runs), len(seg_starts) + len(centers) - 1, policy, calibration
    )
    sigma = noise.sigma

    # The level a new run is judged against: the last segment, refined on its samples'
    # mode-relative residuals (Huber, with the pooled noise as scale).
    last = len(seg_starts) - 1
    post = [i for i in range(n) if seg_of[i] == last]
    post_runs = len(runs) - seg_starts[last]
    shift = None
    if found.boundaries:
        # Both segments hold runs: a level starts only at a run after the window's first.
        before = [resid2[i] + levels[seg_of[i]] for i in range(n) if seg_of[i] == last - 1]
        after = [resid2[i] + levels[last] for i in post]
        se = sigma * math.sqrt(1.0 / len(before) + 1.0 / len(after))
        step = huber_location(after, sigma) - huber_location(before, sigma)
        shift = Shift(
            kept_runs=post_runs,
            change_pct=pct_of_g(step, direction),
            t=step / se,
            accepted=seg_starts[last] == found.accepted_at,
        )
    base = replace(empty, runs_used=post_runs, samples_used=len(post), shift=shift,
                   residuals=tuple(sorted(resid2)), **noise._asdict())  # fmt: skip
    if len(post) < policy.min_post_shift_samples:
        return _settling(base, policy)
    refine = huber_location([resid2[i] for i in post], sigma, start=0.0)
    level = levels[last] + refine
    main = max(range(len(centers)), key=lambda k: len(clusters[k]))
    counts = [len(c) for c in clusters]
    post_var = location_var(len(post))
    whole = _whole_runs(member, run_of, len(runs), len(centers))
    modes = []
    for k, c in enumerate(centers):
        # the offset of a minor mode from the main one is known from its own samples only
        offset_var = 0.0 if k == main else MEDIAN_VAR * (1.0 / counts[k] + 1.0 / counts[main])
        modes.append(_ModeFit(center=c + level, count=counts[k], var=post_var + offset_var,
                              run_level=whole[k]))  # fmt: skip
    return replace(base, modes=tuple(modes))


def _unjudgeable(
    empty: WindowModel, policy: CalibratedPolicy, known_shift: int | None
) -> WindowModel | None:
    """The model of a window too small to judge with, or one an accepted change just emptied
    (None: the window can judge)."""
    n_total, runs = empty.samples_total, empty.runs_total
    if n_total == 0:
        return replace(
            empty,
            problem=Reason.NO_BASELINE,
            detail="no baseline yet for this experiment on this hardware",
        )
    if known_shift == 0:
        return replace(
            empty,
            problem=Reason.SHIFT_SETTLING,
            detail="an accepted change starts a new level and no run has measured it yet",
            shift=Shift(kept_runs=0, change_pct=0.0, t=0.0, accepted=True),
        )
    if n_total < policy.min_samples or runs < policy.min_runs:
        return replace(
            empty,
            problem=Reason.INSUFFICIENT_WINDOW,
            detail=f"only {n_total} baseline samples in {runs} runs; "
            f"{policy.min_samples} samples in {policy.min_runs} runs are needed to judge",
        )
    return None


def _settling(base: WindowModel, policy: CalibratedPolicy) -> WindowModel:
    """The model of a window whose last level shift has too few samples after it yet."""
    shift = base.shift
    return replace(
        base,
        problem=Reason.SHIFT_SETTLING,
        detail=(
            "an accepted change started a new level"
            if shift is not None and shift.accepted
            else f"a level shift of {signed_pct(shift.change_pct if shift else 0.0)} % landed"
        )
        + f" {base.runs_used} run(s) ago; {base.samples_used} sample(s) since, need "
        f"{policy.min_post_shift_samples}",
    )


def _whole_runs(member: Sequence[int], run_of: Sequence[int], runs: int, modes: int) -> list[bool]:
    """Per mode: do the window's runs sit in it with all their samples?

    Among the runs of two or more samples that touch a mode, most must lie in it entirely.
    A mode of single samples (a bimodal benchmark) mixes within runs; one of whole runs is
    a state the run was in. Without a run of two samples touching it, nothing says it
    mixes: it is taken as a state, the cautious reading.
    """
    by_run: list[set[int]] = [set() for _ in range(runs)]
    sizes = [0] * runs
    for mode, run in zip(member, run_of, strict=True):
        by_run[run].add(mode)
        sizes[run] += 1
    out = []
    for k in range(modes):
        touching = [r for r in range(runs) if sizes[r] >= 2 and k in by_run[r]]
        pure = sum(1 for r in touching if by_run[r] == {k})
        out.append(not touching or 2 * pure >= len(touching))
    return out
