"""Compare two runs of one bucket, asv-compare style, with the gate's own statistics. Pure.

Each side is a set of samples (a run's repeats, or every sample a commit has on the
baseline branch). The change is B against A in log space, so it is relative and one code
path serves both directions. The call is made with the estimators and thresholds the
calibrated rule of ``judge.stats`` uses: a robust, sigma-consistent scale pooled over both
sides, Huber locations, a Student-t threshold at the configured false-alarm rate, a
Mann-Whitney rank test that must agree, the minimum drop, and the noise a whole run shares
(each side is a run of its own, on its own machine state). Too few samples say so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from perfgate.config import Direction
from perfgate.judge.stats import (
    CalibratedPolicy,
    huber_location,
    location_var,
    mann_whitney_u,
    mwu_critical,
    pct_of_g,
    robust_scale,
    t_isf,
    to_g,
)

#: Fewer samples a side cannot make a call: the rank test the gate requires cannot reach
#: its rate (C(10, 5) = 252 orderings is the least that can) and the noise estimate has
#: almost no degrees of freedom, so an interval would only say "anything".
MIN_SIDE_SAMPLES = 5


class Change(StrEnum):
    """What B is, against A."""

    BETTER = "better"
    WORSE = "worse"
    SAME = "same"  # significant neither way, and the interval rules out the minimum drop
    UNCLEAR = "unclear"  # not enough evidence either way
    # Figures so far apart that their ratio or change is past what a float holds.
    NOT_COMPARABLE = "not comparable"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """B against A: the figures, the ratio, the change with its interval, and the call."""

    # Every figure is finite, or None (the call is then NOT_COMPARABLE).
    a: float | None
    b: float | None
    ratio: float | None  # b / a
    change_pct: float | None  # of the metric, as measured (sign as the ratio)
    interval_pct: tuple[float, float] | None
    change: Change
    samples: tuple[int, int]
    detail: str


def compare(
    a: Sequence[float], b: Sequence[float], *, direction: Direction, policy: CalibratedPolicy
) -> Comparison:
    """B's samples against A's: significantly better, worse, the same, or unclear; or not
    comparable when a figure of the comparison is past what a float holds."""
    found = _compare(a, b, direction=direction, policy=policy)
    figures = (found.a, found.b, found.ratio, found.change_pct, *(found.interval_pct or ()))
    if all(f is not None and math.isfinite(f) for f in figures):
        return found
    return Comparison(
        a=_finite(found.a), b=_finite(found.b), ratio=None, change_pct=None, interval_pct=None,
        change=Change.NOT_COMPARABLE, samples=found.samples,
        detail="not comparable: the two sides' figures are too far apart for their ratio to "
        "be a number",
    )  # fmt: skip


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _compare(
    a: Sequence[float], b: Sequence[float], *, direction: Direction, policy: CalibratedPolicy
) -> Comparison:
    if not a or not b or any(not (math.isfinite(v) and v > 0) for v in (*a, *b)):
        raise ValueError("both sides need finite, positive samples")
    ga, gb = [to_g(v, direction) for v in a], [to_g(v, direction) for v in b]
    a_mid, b_mid = statistics.median(a), statistics.median(b)
    ratio = b_mid / a_mid
    samples = (len(a), len(b))
    if min(samples) < MIN_SIDE_SAMPLES:
        return Comparison(
            a=a_mid, b=b_mid, ratio=ratio, change_pct=(ratio - 1.0) * 100.0, interval_pct=None,
            change=Change.UNCLEAR, samples=samples,
            detail=f"{min(samples)} sample(s) on a side; at least {MIN_SIDE_SAMPLES} a side are "
            f"needed to tell (bench --repeats {MIN_SIDE_SAMPLES})",
        )  # fmt: skip
    # One pooled per-sample scale, each side centred on its own median first.
    centred = [g - statistics.median(ga) for g in ga] + [g - statistics.median(gb) for g in gb]
    scale, nu = robust_scale(centred, groups=2)
    floor = math.log1p(policy.noise_floor_pct / 100.0)
    scale = max(scale, floor)
    loc_a, loc_b = huber_location(ga, scale), huber_location(gb, scale)
    delta = loc_b - loc_a
    # Each side is one run: the noise a run shares (machine state) counts once per side.
    run_noise = max(policy.min_run_noise * scale, math.log1p(policy.run_noise_floor_pct / 100))
    se = math.sqrt(scale**2 * (location_var(len(ga)) + location_var(len(gb))) + 2 * run_noise**2)
    change_pct = pct_of_g(delta, direction)
    if se <= 0.0 or nu <= 0.0:
        return Comparison(
            a=a_mid, b=b_mid, ratio=ratio, change_pct=change_pct, interval_pct=None,
            change=Change.UNCLEAR, samples=samples, detail="no spread to judge against",
        )  # fmt: skip
    half = t_isf((1.0 - policy.confidence) / 2.0, nu) * se
    low, high = sorted((pct_of_g(delta - half, direction), pct_of_g(delta + half, direction)))
    t_crit = t_isf(policy.false_alarm_rate / 2.0, nu)  # either way is a finding
    t = delta / se
    # The rank test must agree, whatever the noise's shape (as the gate's BLOCK requires).
    u_crit = mwu_critical(len(gb), len(ga), policy.rank_rate)
    u_up = mann_whitney_u(sorted(ga), gb)
    u_down = len(ga) * len(gb) - u_up
    drop = math.log1p(policy.min_drop_pct / 100.0)
    if t <= -t_crit and u_up <= u_crit and -delta >= drop:
        call, why = Change.WORSE, f"worse beyond noise (t {t:.1f} past -{t_crit:.1f})"
    elif t >= t_crit and u_down <= u_crit and delta >= drop:
        call, why = Change.BETTER, f"better beyond noise (t {t:.1f} past {t_crit:.1f})"
    elif abs(delta) + half < drop:
        call, why = Change.SAME, f"any change is under the {policy.min_drop_pct:g}% minimum"
    else:
        call, why = Change.UNCLEAR, f"cannot tell at this noise (t {t:.1f}, needs {t_crit:.1f})"
    return Comparison(
        a=a_mid, b=b_mid, ratio=ratio, change_pct=change_pct, interval_pct=(low, high),
        change=call, samples=samples, detail=why,
    )  # fmt: skip
