"""A baseline window's noise: per sample, shared by one run's samples, and within a run (R5)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

from perfgate.judge.numerics import MEDIAN_VAR, NORMAL, huber_location, location_var, robust_scale
from perfgate.judge.policies import CalibratedPolicy, Calibration


class WindowNoise(NamedTuple):
    """The noise a window's residuals show, in log units, floors and calibration applied."""

    sigma: float  # per sample
    df: float
    run_sigma: float  # shared by one run's samples (runner effect)
    run_df: float  # inf: calibrated or assumed
    within_sigma: float  # between the samples of one run
    within_df: float  # 0: fewer than three runs of two samples to measure it on


def window_noise(
    resid: Sequence[float],
    run_of: Sequence[int],
    runs: int,
    groups: int,
    policy: CalibratedPolicy,
    calibration: Calibration | None,
) -> WindowNoise:
    """Pooled noise of the residuals of every segment and mode (more degrees of freedom than
    the post-shift segment alone), floors and calibration applied."""
    sigma, df = robust_scale(resid, groups=groups)
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
            resid, run_of, runs, groups, policy.run_noise_rate
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
    return WindowNoise(
        sigma=sigma,
        df=df,
        run_sigma=run_sigma,
        run_df=run_df,
        within_sigma=max(within, math.log1p(policy.noise_floor_pct / 100.0)),
        within_df=within_df,
    )


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
