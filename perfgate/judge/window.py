"""The window model: a baseline window's level shifts, modes and noise, analysed once (R4, R5).

``analyse_window`` turns a nearest-first window of runs into a ``WindowModel``; the
calibrated rule (``judge.calibrated``) then judges each new sample against it cheaply.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from perfgate.config import Direction
from perfgate.judge.goodness import from_g, pct_of_g, signed_pct, to_g
from perfgate.judge.modes import find_modes, nearest
from perfgate.judge.numerics import (
    MEDIAN_VAR,
    NORMAL,
    huber_location,
    location_var,
    robust_scale,
    t_isf,
)
from perfgate.judge.policies import CalibratedPolicy, Calibration
from perfgate.judge.verdicts import Reason


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
    """What a bucket's history says about one run (``judge.runners`` learns it).

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
    # What the bucket's longer history says about this run (judge.runners).
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


# ----------------------------------------------------------------------------------------
# Level shifts
# ----------------------------------------------------------------------------------------


def _scan_shift(
    resid: Sequence[float],
    run_starts: Sequence[int],
    first_run: int,
    sigma: float,
    rate: float,
    df: float,
    min_step: float,
    runs_after: int = 1,
) -> tuple[int, float, float] | None:
    """Most convincing step in runs[first_run:] at a run boundary: (run index, step, t).

    The false-shift ``rate`` is spent over the boundaries with weights 1/k, k the number of
    runs after the boundary: a just-merged change shows first in the newest runs, and a
    wrong cut there costs the most, so they get the largest share. A step needs
    ``runs_after`` runs after it (two, where one run alone can fall as a whole).
    """
    lo = run_starts[first_run]
    n = len(resid) - lo
    newest = len(run_starts) - 1
    candidates = range(first_run + 1, newest + 2 - runs_after)
    if n < 2 or not candidates or sigma <= 0.0:
        return None
    clip = 3.0 * sigma  # one wild sample must not fake a step
    clipped = [min(max(r, -clip), clip) for r in resid[lo:]]
    total = math.fsum(clipped)
    prefix = [0.0]
    for v in clipped:
        prefix.append(prefix[-1] + v)
    harmonic = sum(1.0 / k for k in range(1, len(candidates) + 1))
    best: tuple[int, float, float] | None = None
    best_score = 1.0
    for run in candidates:
        k = run_starts[run] - lo
        n1, n2 = k, n - k
        if n1 < 1 or n2 < 1:
            continue
        step = (total - prefix[k]) / n2 - prefix[k] / n1
        if abs(step) < min_step:
            continue
        t = step / (sigma * math.sqrt(1.0 / n1 + 1.0 / n2))
        share = 1.0 / ((newest - run + 1) * harmonic)
        score = abs(t) / t_isf(rate * share / 2.0, round(df))  # two-sided
        if score >= best_score:
            best, best_score = (run, step, t), score
    return best


def _run_noise(
    resid: Sequence[float], run_of: Sequence[int], runs: int, groups: int, rate: float
) -> tuple[float, float, float, float]:
    """Noise shared by the samples of one run (runner, thermal state), and its df; then
    the noise within a run and its df (0, 0 with fewer than three runs of two samples).

    Repeats of one run are not independent when runs differ by more than their samples
    do; the test must then not shrink the run's error as 1/m. Compare the spread of run
    means with what the within-run spread predicts; only when the excess is significant
    (one-sided, ``rate``) is it used, so i.i.d. noise keeps its full power.
    """
    by_run: list[list[float]] = [[] for _ in range(runs)]
    for r, run in zip(resid, run_of, strict=True):
        by_run[run].append(r)
    within: list[float] = []
    multi = 0
    for values in by_run:
        k = len(values)
        if k >= 2:
            multi += 1
            # Centred on the run's median from three samples: one sample throttled unseen
            # would move the run's mean, and with it every residual of the run. A sample
            # less its run's median has variance sigma^2 (1 + (pi/2 - 2) / k); less the
            # mean, sigma^2 (1 - 1/k): the factors put both back on sigma.
            if k >= 3:
                centre = statistics.median(values)
                inflate = 1.0 / math.sqrt(1.0 + (MEDIAN_VAR - 2.0) / k)
            else:
                centre = math.fsum(values) / k
                inflate = math.sqrt(k / (k - 1.0))
            within.extend((v - centre) * inflate for v in values)
    if multi < 3:
        return 0.0, math.inf, 0.0, 0.0
    sigma_w, nu_w = robust_scale(within, groups=multi + 1)
    if sigma_w <= 0.0:
        return 0.0, math.inf, 0.0, 0.0
    # run levels standardised by their within-run error: variance 1 + sigma_b^2 / (sigma_w^2
    # v(m)). A run's level is its samples' Huber location (their mean up to two), so one
    # sample throttled unseen does not move a run of six by a sixth of its excursion.
    z = [
        huber_location(values, sigma_w) / (sigma_w * math.sqrt(location_var(len(values))))
        for values in by_run
        if values
    ]
    inv_m = [location_var(len(values)) for values in by_run if values]
    s_z, nu_z = robust_scale(z, groups=groups)
    if nu_z <= 0.0 or nu_w <= 0.0:
        return 0.0, math.inf, sigma_w, nu_w
    ratio = s_z * s_z
    # ln of a ratio of two chi2/nu variances is ~ normal with variance 2/nu_z + 2/nu_w
    critical = math.exp(NORMAL.inv_cdf(1.0 - rate) * math.sqrt(2.0 / nu_z + 2.0 / nu_w))
    if ratio <= critical:
        return 0.0, math.inf, sigma_w, nu_w
    mean_inv_m = math.fsum(inv_m) / len(inv_m)
    sigma_b2 = (ratio - 1.0) * sigma_w * sigma_w * mean_inv_m
    return math.sqrt(max(sigma_b2, 0.0)), nu_z, sigma_w, nu_w


# ----------------------------------------------------------------------------------------
# Window analysis
# ----------------------------------------------------------------------------------------


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
    if n_total < policy.min_samples or len(runs_nf) < policy.min_runs:
        return replace(
            empty,
            problem=Reason.INSUFFICIENT_WINDOW,
            detail=f"only {n_total} baseline samples in {len(runs_nf)} runs; "
            f"{policy.min_samples} samples in {policy.min_runs} runs are needed to judge",
        )

    # Oldest first from here on: shifts are found in time order.
    runs = [[to_g(v, direction) for v in run] for run in reversed(runs_nf)]
    g = [v for run in runs for v in run]
    run_of = [i for i, run in enumerate(runs) for _ in run]
    run_starts = []
    at = 0
    for run in runs:
        run_starts.append(at)
        at += len(run)
    n = len(g)

    def modes_of(values: Sequence[float]) -> list[tuple[float, float]]:
        return find_modes(
            values,
            separation=policy.mode_separation,
            min_share=policy.min_mode_share,
            max_modes=policy.max_modes,
        )

    # 1. Modes of the raw window. Two clusters that split the window in time (all older
    #    samples in one, all newer in the other) are a level shift, not a mixture.
    bounds0 = modes_of(g)
    centers0 = [statistics.median([v for v in g if lo <= v <= hi]) for lo, hi in bounds0]
    boundaries: list[int] = []  # run indices where a new level starts
    accepted_at = None
    if known_shift is not None and 0 < known_shift < len(runs):
        accepted_at = len(runs) - known_shift
    if len(bounds0) == 2:
        labels = [nearest(v, centers0) for v in g]
        changes = [i for i in range(1, n) if labels[i] != labels[i - 1]]
        if len(changes) == 1 and changes[0] in run_starts:
            boundaries.append(run_of[changes[0]])
            centers0 = [statistics.median(g)]
    if accepted_at is not None:
        boundaries = sorted({*boundaries, accepted_at})

    # 2. Residuals against the nearest mode, then binary segmentation for the most recent
    #    level shift. Noise for the scan comes from successive differences, which a step
    #    barely touches.
    if len(centers0) == 1:
        resid = [v - centers0[0] for v in g]
    else:
        resid = [v - centers0[nearest(v, centers0)] for v in g]
    diffs = [(resid[i + 1] - resid[i]) / math.sqrt(2.0) for i in range(n - 1)]
    sigma_d, nu_d = robust_scale(diffs, groups=0) if diffs else (0.0, 0.0)
    min_step = math.log1p(policy.min_shift_pct / 100.0)
    first = boundaries[-1] if boundaries else 0
    while len(runs) - first >= 2:
        found = _scan_shift(
            resid,
            run_starts,
            first,
            sigma_d,
            policy.shift_rate,
            max(nu_d, 1.0),
            min_step,
            runs_after=2 if run_excursions else 1,
        )
        if found is None:
            break
        boundaries.append(found[0])
        first = found[0]

    # 3. Levels per segment, in mode-relative terms, then modes of the level-adjusted
    #    window (mode offsets persist across a shift: a regression moves every mode).
    seg_starts = [0, *boundaries]
    seg_of_run = [0] * len(runs)
    for s, start in enumerate(seg_starts):
        for r in range(start, len(runs)):
            seg_of_run[r] = s
    seg_of = [seg_of_run[r] for r in run_of]
    scale0 = sigma_d if sigma_d > 0 else 1e-12
    levels = []
    for s in range(len(seg_starts)):
        seg_resid = [resid[i] for i in range(n) if seg_of[i] == s]
        levels.append(huber_location(seg_resid, scale0))
    adjusted = [g[i] - levels[seg_of[i]] for i in range(n)]
    bounds = modes_of(adjusted)
    clusters = [[v for v in adjusted if lo <= v <= hi] for lo, hi in bounds]
    centers = [statistics.median(c) for c in clusters]
    member = [0] * n if len(centers) == 1 else [nearest(v, centers) for v in adjusted]
    resid2 = [adjusted[i] - centers[member[i]] for i in range(n)]

    # 4. Noise: pooled residuals of every segment and mode (more degrees of freedom than
    #    the post-shift segment alone), floors and calibration applied.
    groups = len(seg_starts) + len(centers) - 1
    sigma, df = robust_scale(resid2, groups=groups)
    if calibration is not None and calibration.df > 0:
        cal = math.log1p(calibration.noise_pct / 100.0)
        sigma = math.sqrt((df * sigma * sigma + calibration.df * cal * cal) / (df + calibration.df))
        df += calibration.df
    sigma = max(sigma, math.log1p(policy.noise_floor_pct / 100.0))
    if calibration is not None:
        run_sigma, run_df = math.log1p(calibration.run_noise_pct / 100.0), math.inf
        within, within_df = math.log1p(calibration.noise_pct / 100.0), calibration.df
    else:
        run_sigma, run_df, within, within_df = _run_noise(
            resid2, run_of, len(runs), groups, policy.run_noise_rate
        )
        # Repeats of one run share its runner, build and thermal state; 20 runs cannot show
        # a small shared part, so a floor is assumed unless an A/A calibration measured it.
        if run_sigma < policy.min_run_noise * sigma:
            run_sigma, run_df = policy.min_run_noise * sigma, math.inf
    # A runner shared with other work moves whole runs (minutes of contention) by more than
    # a young window shows: a floor set from an A/A measurement of such runners.
    floor = math.log1p(policy.run_noise_floor_pct / 100.0)
    if run_sigma < floor:
        run_sigma, run_df = floor, math.inf

    # 5. The level a new run is judged against: the last segment, refined on its samples'
    #    mode-relative residuals (Huber, with the pooled noise as scale).
    last = len(seg_starts) - 1
    post = [i for i in range(n) if seg_of[i] == last]
    post_runs = len(runs) - seg_starts[last]
    shift = None
    if boundaries:
        step = levels[last] - levels[last - 1] if last >= 1 else 0.0
        before = [resid2[i] + levels[seg_of[i]] for i in range(n) if seg_of[i] == last - 1]
        after = [resid2[i] + levels[last] for i in post]
        se = sigma * math.sqrt(1.0 / max(len(before), 1) + 1.0 / len(after))
        step = huber_location(after, sigma) - huber_location(before, sigma) if before else step
        shift = Shift(
            kept_runs=post_runs,
            change_pct=pct_of_g(step, direction),
            t=step / se,
            accepted=seg_starts[last] == accepted_at,
        )
    base = replace(
        empty,
        runs_used=post_runs,
        samples_used=len(post),
        shift=shift,
        sigma=sigma,
        run_sigma=run_sigma,
        run_df=run_df,
        df=df,
        within_sigma=max(within, math.log1p(policy.noise_floor_pct / 100.0)),
        within_df=within_df,
        residuals=tuple(sorted(resid2)),
    )
    if len(post) < policy.min_post_shift_samples:
        return replace(
            base,
            problem=Reason.SHIFT_SETTLING,
            detail=(
                "an accepted change started a new level"
                if shift is not None and shift.accepted
                else f"a level shift of {signed_pct(shift.change_pct if shift else 0.0)} % landed"
            )
            + f" {post_runs} run(s) ago; {len(post)} sample(s) since, need "
            f"{policy.min_post_shift_samples}",
        )
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
