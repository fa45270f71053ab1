"""Where a baseline window's level shifted: two modes split in time, an accepted change, and
the most recent steps binary segmentation finds in the residuals; then each segment's level (R4)."""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

from perfgate.judge.modes import find_modes, nearest
from perfgate.judge.numerics import huber_location, robust_scale, t_isf
from perfgate.judge.policies import CalibratedPolicy


class Segmentation(NamedTuple):
    """The window's level shifts and the level of each segment between them."""

    boundaries: list[int]  # run indices (oldest first) where a new level starts
    seg_of: list[int]  # each sample's segment
    levels: list[float]  # each segment's level, in mode-relative terms
    accepted_at: int | None  # the run an accepted change starts the level at

    @property
    def starts(self) -> list[int]:
        """The run index each segment starts at."""
        return [0, *self.boundaries]


def policy_modes(values: Sequence[float], policy: CalibratedPolicy) -> list[tuple[float, float]]:
    """The modes of ``values`` as the policy separates them, as (low, high) bounds."""
    return find_modes(
        values,
        separation=policy.mode_separation,
        min_share=policy.min_mode_share,
        max_modes=policy.max_modes,
    )


def find_shifts(
    g: Sequence[float],
    run_of: Sequence[int],
    run_starts: Sequence[int],
    *,
    policy: CalibratedPolicy,
    known_shift: int | None,
    run_excursions: bool,
) -> Segmentation:
    """The level shifts of an oldest-first window, ``g`` its samples in goodness units, and
    the level of each segment.

    ``known_shift`` and ``run_excursions`` as :func:`judge.window.analyse_window` takes them.
    """
    runs = len(run_starts)
    n = len(g)
    # 1. Modes of the raw window. Two clusters that split the window in time (all older
    #    samples in one, all newer in the other) are a level shift, not a mixture.
    bounds0 = policy_modes(g, policy)
    centers0 = [statistics.median([v for v in g if lo <= v <= hi]) for lo, hi in bounds0]
    boundaries: list[int] = []  # run indices where a new level starts
    accepted_at = None
    if known_shift is not None and 0 < known_shift < runs:
        accepted_at = runs - known_shift
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
    resid = [v - centers0[nearest(v, centers0)] for v in g]
    diffs = [(resid[i + 1] - resid[i]) / math.sqrt(2.0) for i in range(n - 1)]
    sigma_d, nu_d = robust_scale(diffs, groups=0) if diffs else (0.0, 0.0)
    min_step = math.log1p(policy.min_shift_pct / 100.0)
    first = boundaries[-1] if boundaries else 0
    while runs - first >= 2:
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

    # 3. Levels per segment, in mode-relative terms.
    # A run's segment: how many level starts (ascending) it is at or after.
    seg_of = [bisect.bisect_right(boundaries, r) for r in run_of]
    scale0 = sigma_d if sigma_d > 0 else 1e-12
    levels = []
    for s in range(len(boundaries) + 1):
        seg_resid = [resid[i] for i in range(n) if seg_of[i] == s]
        levels.append(huber_location(seg_resid, scale0))
    return Segmentation(
        boundaries=boundaries, seg_of=seg_of, levels=levels, accepted_at=accepted_at
    )


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
    prefix = [0.0, *itertools.accumulate(clipped)]
    harmonic = sum(1.0 / k for k in range(1, len(candidates) + 1))
    best: tuple[int, float, float] | None = None
    best_score = 1.0
    for run in candidates:
        k = run_starts[run] - lo
        n1, n2 = k, n - k  # both at least one: runs are never empty
        step = (total - prefix[k]) / n2 - prefix[k] / n1
        if abs(step) < min_step:
            continue
        t = step / (sigma * math.sqrt(1.0 / n1 + 1.0 / n2))
        share = 1.0 / ((newest - run + 1) * harmonic)
        score = abs(t) / t_isf(rate * share / 2.0, round(df))  # two-sided
        if score >= best_score:
            best, best_score = (run, step, t), score
    return best
