"""What the gate's own verdict rule needs on this pool, and the noise it would read (R5, R15).

``rule_figures`` says, per policy, the drop at which the rule blocks a window that looks
like the pool and the smallest regression it reliably detects; ``measure_noise`` measures
the noise calibration the gate reads (``gate.calibration``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from perfgate.baselines.qualify.observations import Observation
from perfgate.config import Direction
from perfgate.judge.calibrated import calibrated_decide
from perfgate.judge.calibration import BucketNoise
from perfgate.judge.modes import find_modes
from perfgate.judge.numerics import MAD_TO_SIGMA, robust_scale, t_isf
from perfgate.judge.policies import CalibratedPolicy, Calibration, Policy, ReferencePolicy
from perfgate.judge.rule import decide
from perfgate.judge.window import analyse_window


@dataclass(frozen=True, kw_only=True)
class RuleFigures:
    """What the gate's verdict rule needs to block a bucket whose window looks like the pool."""

    policy: str
    # The drop at which the rule blocks (a drop measured exactly this large sits on the line).
    block_band_pct: float | None
    # The drop the rule blocks with probability ``power`` (the smallest it reliably detects).
    detectable_pct: float | None
    power: float
    false_block_rate: float | None  # None for the reference rule, which sets no rate
    detail: str = ""


def _g_of_drop(pct: float, direction: Direction) -> float:
    """A regression of ``pct`` % of the metric as a fall of ln(goodness).

    A throughput cannot drop by 100 % or more: that is an infinite fall.
    """
    if direction is Direction.HIGHER:
        return math.inf if pct >= 100.0 else -math.log1p(-pct / 100.0)
    return math.log1p(pct / 100.0)


def _drop_of_g(g: float, direction: Direction) -> float:
    """The inverse of ``_g_of_drop``; saturates rather than overflows."""
    if direction is Direction.HIGHER:
        return -math.expm1(-g) * 100.0
    return math.expm1(min(g, 700.0)) * 100.0


def _figures(
    policy: Policy,
    band_pct: float | None,
    se: float | None,
    *,
    direction: Direction,
    power: float,
    false_block_rate: float | None,
    detail: str,
) -> RuleFigures:
    """A rule's figures from its block band and the error of a run's effect (neither: it
    cannot judge, and ``detail`` says why): the drop it detects with probability ``power``
    is the band plus ``z(power)`` errors."""
    detectable = None
    if band_pct is not None and se is not None:
        z = statistics.NormalDist().inv_cdf(power)
        detectable = _drop_of_g(_g_of_drop(band_pct, direction) + z * se, direction)
    return RuleFigures(
        policy=policy.name,
        block_band_pct=band_pct,
        detectable_pct=detectable,
        power=power,
        false_block_rate=false_block_rate,
        detail=detail,
    )


def gate_window(
    allocations: Sequence[Sequence[float]], *, runs: int, repeats: int
) -> list[list[float]]:
    """The window the gate will hold on this pool: ``runs`` runs of ``repeats`` samples,
    taken in turn from the allocations (each run from one allocation, as a bucket run
    comes from one runner).

    The calibrated rule's thresholds depend on the window's size as well as its noise: a
    qualification's few allocations would overstate what a full window on the same pool
    needs, a tiny one absurdly so.
    """
    window = []
    for run in range(runs):
        own = allocations[run % len(allocations)]
        first = run // len(allocations) * repeats
        window.append([own[(first + k) % len(own)] for k in range(repeats)])
    return window


def rule_figures(
    runs: Sequence[Sequence[float]],
    *,
    policy: Policy,
    direction: Direction,
    power: float,
    run_noise_pct: float | None = None,
) -> RuleFigures:
    """Block band and smallest detectable regression of ``policy`` on a window of ``runs``.

    ``runs`` are the pool's allocations, each the figures of its samples;
    ``run_noise_pct`` is the runner-to-runner noise they measure (``measure_noise``),
    which only the calibrated rule reads.
    """
    if isinstance(policy, ReferencePolicy):
        return reference_rule_figures(runs, policy=policy, direction=direction, power=power)
    return calibrated_rule_figures(
        runs, policy=policy, direction=direction, power=power, run_noise_pct=run_noise_pct
    )


def reference_rule_figures(
    runs: Sequence[Sequence[float]],
    *,
    policy: ReferencePolicy,
    direction: Direction,
    power: float,
) -> RuleFigures:
    """The reference rule's block band (median - k x MAD, a floor) on a window of ``runs``,
    and the smallest regression it blocks with probability ``power``."""
    level = statistics.median(value for run in runs for value in run)
    decision = decide(runs, [level], policy=policy, direction=direction)
    figures = partial(_figures, policy, direction=direction, power=power, false_block_rate=None)
    if decision.threshold_pct is None or decision.noise_pct is None:
        return figures(None, None, detail=decision.detail)
    band = max(abs(decision.threshold_pct), policy.min_drop_pct)
    # One figure per run: its error is the window's noise, made sigma-consistent (the
    # rule's noise is the unscaled MAD, about 0.67 sigma).
    se = math.log1p(MAD_TO_SIGMA * decision.noise_pct / 100.0)
    floor = policy.min_drop_pct
    return figures(band, se, detail=f"median - {policy.k_block:g} x MAD, at least {floor:g} %")


def calibrated_rule_figures(
    runs: Sequence[Sequence[float]],
    *,
    policy: CalibratedPolicy,
    direction: Direction,
    power: float,
    run_noise_pct: float | None = None,
) -> RuleFigures:
    """The calibrated rule's resolution on a full window drawn from ``runs``, and the
    smallest regression it blocks with probability ``power``.

    Allocations ran side by side, so their order means nothing: level-shift detection is
    switched off, as the rule otherwise reads a window in time order. ``run_noise_pct``
    is taken as known, as the rule does once the gate reads the calibration, rather than
    estimated again from a handful of runs (a gate's window holds up to 20).
    """
    level = statistics.median(value for run in runs for value in run)
    no_shifts = replace(policy, min_shift_pct=math.inf)
    # df 0: the per-sample noise is the window's own (the same samples must not count twice).
    measured = (
        None
        if run_noise_pct is None
        else Calibration(noise_pct=0.0, df=0.0, run_noise_pct=run_noise_pct)
    )
    model = analyse_window(
        gate_window(runs, runs=policy.max_runs, repeats=policy.initial_repeats),
        policy=no_shifts,
        direction=direction,
        calibration=measured,
    )
    decision = calibrated_decide(model, [level] * policy.max_repeats, policy=no_shifts, final=True)
    resolution, interval = decision.resolution_pct, decision.interval_pct
    figures = partial(
        _figures,
        policy,
        direction=direction,
        power=power,
        false_block_rate=policy.false_block_rate,
    )
    if (
        resolution is None
        or not math.isfinite(resolution)
        or interval is None
        or decision.df is None
        or decision.confidence is None
    ):
        why = decision.detail or "the pool's noise leaves no regression it could resolve"
        return figures(None, None, detail=why)
    # The standard error of the run's effect with the full budget, from its interval
    # (a saturated end, -100 % of a throughput, means no bound at all).
    lo, hi = (math.log1p(p / 100.0) if p > -100.0 else -math.inf for p in interval)
    se = (hi - lo) / (2.0 * t_isf((1.0 - decision.confidence) / 2.0, decision.df))
    return figures(
        resolution,
        se,
        detail=f"false-alarm rate {policy.false_block_rate:g} per bucket run, "
        f"{policy.max_repeats} samples, at least {policy.min_drop_pct:g} %",
    )


def measure_noise(
    observations: Sequence[Observation], *, policy: CalibratedPolicy | None = None
) -> BucketNoise | None:
    """The noise calibration these samples measure (allocations x samples, one experiment).

    Per-sample noise is the robust spread within allocations; run noise is what the
    spread of allocation means shows beyond it (the runner-to-runner part); the noise
    floor is the pool's unscaled MAD, what the reference rule's noise should not fall
    below. None when there is too little to measure (fewer than 2 allocations of 2).
    """
    healthy = [o for o in observations if o.value is not None and o.allocation is not None]
    groups: dict[str, list[float]] = defaultdict(list)
    for obs in healthy:
        if obs.value is not None and obs.allocation is not None:
            groups[obs.allocation].append(math.log(obs.value))
    multi = {label: g for label, g in groups.items() if len(g) >= 2}
    if len(multi) < 2 or not healthy:
        return None
    within = []
    for values in multi.values():
        centre, inflate = statistics.fmean(values), math.sqrt(len(values) / (len(values) - 1))
        within += [(v - centre) * inflate for v in values]
    sigma, df = robust_scale(within, groups=len(multi) + 1)
    means = [statistics.fmean(values) for values in multi.values()]
    centre = statistics.fmean(means)
    spread, run_df = robust_scale([m - centre for m in means], groups=1)
    mean_inverse_k = statistics.fmean(1.0 / len(values) for values in multi.values())
    run_sigma = math.sqrt(max(spread**2 - sigma**2 * mean_inverse_k, 0.0))
    rule = policy or CalibratedPolicy()
    pooled = [math.log(o.value) for o in healthy if o.value is not None]
    modes = find_modes(
        pooled,
        separation=rule.mode_separation,
        min_share=rule.min_mode_share,
        max_modes=rule.max_modes,
    )
    figures = [o.value for o in healthy if o.value is not None]
    level = statistics.median(figures)
    first = healthy[0].fingerprint
    return BucketNoise(
        bucket=healthy[0].bucket,
        hardware=first.hardware,
        launch_hash=first.window.launch_hash,
        benchmark_hash=first.window.benchmark_hash,
        noise_pct=math.expm1(sigma) * 100.0,
        df=df,
        run_noise_pct=math.expm1(run_sigma) * 100.0,
        run_df=run_df,
        modes=max(len(modes), 1),
        noise_floor_pct=statistics.median(abs(v - level) for v in figures) / level * 100.0,
        samples=len(figures),
        allocations=len(groups),
        runners=len({o.runner for o in healthy if o.runner}),
        commit=first.commit,
        target_branch=first.window.target_branch or None,
    )
