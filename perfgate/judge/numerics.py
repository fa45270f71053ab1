"""The numerical kit of the rules: Student's t and F tails, the Mann-Whitney test, a robust
scale, Huber location. Pure Python (``math``, ``statistics``, ``bisect``), no numpy.

``tests/perf/calibrate_stats.py`` derives and checks the constants here by Monte Carlo.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from functools import lru_cache

NORMAL = statistics.NormalDist()
MAD_TO_SIGMA = 1.482602218505602  # 1 / Phi^-1(3/4): MAD of a normal is 0.6745 sigma
_WINSOR_C = 3.0  # winsorise residuals at 3 robust sigmas for the scale estimate
_HUBER_K = 1.5  # Huber location tuning (96 % efficient at the normal)
_HUBER_VAR = 1.037  # asymptotic var(Huber k=1.5) * n / sigma^2 at the normal
MEDIAN_VAR = math.pi / 2  # asymptotic var(median) * n / sigma^2 at the normal


def _winsor_kappa(c: float) -> float:
    """E[min(Z^2, c^2)] for a standard normal Z: makes the winsorised scale consistent."""
    phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    tail = 1.0 - NORMAL.cdf(c)
    return (1 - 2 * tail) - 2 * c * phi + 2 * c * c * tail


_KAPPA = _winsor_kappa(_WINSOR_C)

# Finite-sample behaviour of ``robust_scale`` on n residuals, from calibrate_stats.py (Monte
# Carlo, 200k normal windows per n): mean of sigma_hat/sigma (divided out), and the degrees
# of freedom nu for which chi2_nu/nu matches var(ln sigma_hat). Interpolated linearly in n.
_SCALE_TABLE: tuple[tuple[int, float, float], ...] = (
    (3, 0.638, 0.5),
    (4, 0.757, 1.5),
    (5, 0.806, 1.9),
    (6, 0.847, 3.1),
    (8, 0.891, 5.0),
    (10, 0.915, 6.8),
    (15, 0.949, 11.5),
    (20, 0.962, 16.7),
    (30, 0.976, 26.6),
    (40, 0.983, 36.3),
    (60, 0.989, 56.6),
    (80, 0.992, 75.7),
)


def _scale_constants(n: float) -> tuple[float, float]:
    """(bias, nu) of the robust scale estimate from n effective residuals."""
    table = _SCALE_TABLE
    if n <= table[0][0]:
        return table[0][1], table[0][2]
    if n >= table[-1][0]:
        # past the table: bias ~ 1 - 0.65/n, nu ~ 0.95 (n - 1), as the tail of the table
        return 1.0 - 0.65 / n, 0.95 * (n - 1) - 0.05
    for (n0, b0, v0), (n1, b1, v1) in itertools.pairwise(table):
        if n0 <= n <= n1:
            w = (n - n0) / (n1 - n0)
            return b0 + w * (b1 - b0), v0 + w * (v1 - v0)
    raise AssertionError("unreachable")


def robust_scale(residuals: Sequence[float], groups: int = 1) -> tuple[float, float]:
    """Sigma-consistent robust scale of centred residuals and its degrees of freedom.

    Start from the scaled MAD (1.4826 * median |r|), then winsorise the residuals at 3 of
    those and take the RMS: about 95 % as efficient as the standard deviation at the normal
    (the MAD alone is 37 %), still bounded against outliers. ``groups`` is how many centres
    were estimated from these residuals; each costs one effective observation.
    """
    n = len(residuals)
    if n == 0:
        return 0.0, 0.0
    s0 = MAD_TO_SIGMA * statistics.median(abs(r) for r in residuals)
    if s0 <= 0.0:
        # more than half the residuals are exactly zero: fall back to the RMS
        rms = math.sqrt(math.fsum(r * r for r in residuals) / n)
        s0 = rms
        if s0 <= 0.0:
            return 0.0, 0.0
    limit = (_WINSOR_C * s0) ** 2
    ms = math.fsum(min(r * r, limit) for r in residuals) / n
    raw = math.sqrt(ms / _KAPPA)
    n_eff = max(n - groups + 1, 2)
    bias, nu = _scale_constants(n_eff)
    return raw / bias, nu


def scale_ceiling(spread: float) -> float:
    """The largest scale ``robust_scale`` can return for residuals none of which is larger
    than ``spread``: their winsorised mean square is at most ``spread**2``, and the
    small-sample bias it divides by is never below the table's least."""
    least_bias = min(bias for _, bias, _ in _SCALE_TABLE)
    return spread / math.sqrt(_KAPPA) / least_bias


def scale_upper(scale: float, df: float, rate: float) -> float:
    """An upper confidence bound of a noise scale estimated with ``df`` degrees of freedom:
    exceeded by the true scale with probability ``rate`` (inf when ``df`` is too small to
    bound it). The chi-square quantile is Wilson and Hilferty's approximation."""
    z = NORMAL.inv_cdf(rate)
    if df <= 0.0:
        return math.inf
    cube = 1.0 - 2.0 / (9.0 * df) + z * math.sqrt(2.0 / (9.0 * df))
    if cube <= 0.0:
        return math.inf
    return scale * math.sqrt(1.0 / cube**3)


def huber_location(values: Sequence[float], scale: float, start: float | None = None) -> float:
    """Huber M-estimate of location with a known scale (k=1.5): mean-like, outlier-proof."""
    if not values:
        raise ValueError("no values")
    if len(values) <= 2 or scale <= 0.0:
        return math.fsum(values) / len(values) if len(values) <= 2 else statistics.median(values)
    mu = statistics.median(values) if start is None else start
    k = _HUBER_K * scale
    for _ in range(50):
        # Newton step on the piecewise-linear estimating equation: exact once the set of
        # clipped values stops changing, so a handful of iterations suffice.
        total, inside = 0.0, 0
        for v in values:
            r = v - mu
            if r > k:
                total += k
            elif r < -k:
                total -= k
            else:
                total += r
                inside += 1
        step = total / max(inside, 1)
        mu += step
        if abs(step) <= 1e-12 * scale:
            break
    return mu


def location_var(n: int) -> float:
    """var(huber_location of n samples) / sigma^2 at the normal (the mean for n <= 2)."""
    if n <= 0:
        return math.inf
    return 1.0 / n if n <= 2 else _HUBER_VAR / n


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (normal when df is huge)."""
    if df > 1e6:
        return 1.0 - NORMAL.cdf(t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def f_sf(f: float, d1: float, d2: float) -> float:
    """P(F > f) for Snedecor's F with (d1, d2) degrees of freedom."""
    if f <= 0.0:
        return 1.0
    return _betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def _t_pdf(t: float, df: float) -> float:
    """Student's t density."""
    log_norm = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(t * t / df))


@lru_cache(maxsize=4096)
def _t_isf_cached(p: float, df: float) -> float:
    if df > 1e6:
        return NORMAL.inv_cdf(1.0 - p)
    # Newton on the tail from the normal quantile (a few steps where bisection takes ~50);
    # bisection below when Newton leaves the bracket or stalls (tiny df, extreme p).
    t = NORMAL.inv_cdf(1.0 - p)
    for _ in range(30):
        density = _t_pdf(t, df)
        if density <= 0.0:
            break
        step = (t_sf(t, df) - p) / density
        if not math.isfinite(step) or t + step <= 0.0 or abs(step) > 4.0 * t:
            break
        t += step
        if abs(step) < 1e-12 * t:
            return t
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if t_sf(mid, df) > p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def t_isf(p: float, df: float) -> float:
    """The t with P(T > t) = p (0 < p < 0.5): a one-sided critical value."""
    if not 0.0 < p < 0.5:
        raise ValueError(f"tail probability {p} outside (0, 0.5)")
    # rounding keeps the cache small; 3 significant digits of df move t by < 0.1 %
    return _t_isf_cached(float(f"{p:.6g}"), float(f"{max(df, 0.5):.3g}"))


@lru_cache(maxsize=4096)
def mwu_critical(m: int, n: int, level: float) -> int:
    """Largest u with P(U <= u) <= level for the Mann-Whitney U of m vs n (-1 if none).

    U counts (window, run) pairs where the window value is below the run's; under
    exchangeability every arrangement is equally likely, whatever the distribution.
    Exact counts by the classic recursion c(u; m, n) = c(u - n; m - 1, n) + c(u; m, n - 1).
    """
    total = math.comb(m + n, m)
    budget = level * total
    if budget < 1.0:
        return -1
    size = 8 * m + 8
    while True:
        # counts[j][u] for j run samples against the first i window values (rolling over i)
        counts = [[1] + [0] * size for _ in range(m + 1)]  # i = 0: only u = 0
        for i in range(1, n + 1):
            for j in range(1, m + 1):
                row, prev = counts[j], counts[j - 1]
                # the largest of the (i + j) values is a run sample (adds i) or a window
                # value (adds 0); iterate j upward so prev is already at i
                new = [row[u] + (prev[u - i] if u >= i else 0) for u in range(size + 1)]
                counts[j] = new
        cumulative = 0
        for u in range(size + 1):
            cumulative += counts[m][u]
            if cumulative > budget:
                return u - 1
        if size > m * n:
            return m * n
        size *= 2


def mann_whitney_u(window_sorted: Sequence[float], values: Sequence[float]) -> float:
    """U = #(window < value) + 0.5 #(window == value), summed over the values."""
    u = 0.0
    for v in values:
        below = bisect.bisect_left(window_sorted, v)
        equal = bisect.bisect_right(window_sorted, v) - below
        u += below + 0.5 * equal
    return u
