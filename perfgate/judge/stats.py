"""The statistical rule: a bucket run's samples against its baseline window (R4, R5). Pure.

Pure Python (``math``, ``statistics``, ``bisect``) so it is importable without numpy and
callable on plain numbers: any series can be scored (``nox -s quality`` does).

Two policies (``gate.policy`` in perfgate.yaml):

* ``ReferencePolicy``: the seed's rule, reproduced exactly: the mean of the run's samples
  against the median of the window -/+ k x unscaled MAD; WARN past 2.5, BLOCK past 4.0
  with at least a 3 % drop; window 5..20 samples.
* ``CalibratedPolicy`` (the default): a robust, sigma-consistent test between the window
  and the run's samples, thresholds set from a target false-alarm rate per bucket run,
  multimodal and level-shift aware windows, and sequential confirmation on suspicion.

Everything works in log space on a "goodness" scale ``g = +-ln(value)`` (``+`` when higher
is better), so a regression is always ``g`` going down and effects are relative.

The bench loop (the bench step owns the runner)::

    model = analyse_window(window, policy=policy, direction=direction)
    samples = [measure() for _ in range(policy.initial_repeats)]
    while judge(model, samples, policy=policy).need_more and time_left():
        samples.append(measure())

and the verdict, in the bench and again in the gate: ``judge(..., final=True)``, or in
one call ``decide(window, samples, direction=..., policy=..., final=True)``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from perfgate.config import Direction
from perfgate.judge.verdicts import Reason, Verdict

# ----------------------------------------------------------------------------------------
# Policies
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReferencePolicy:
    """The seed's constants (``gate.policy: reference``), reproduced exactly."""

    k_warn: float = 2.5
    k_block: float = 4.0
    min_block_regression_pct: float = 3.0
    noise_floor_pct: float = 0.0
    min_samples: int = 5
    max_samples: int = 20

    @property
    def name(self) -> str:
        """Policy name as written in perfgate.yaml."""
        return "reference"


@dataclass(frozen=True, kw_only=True)
class CalibratedPolicy:
    """The calibrated rule (``gate.policy: calibrated``, the default)."""

    false_alarm_rate: float = 0.001  # P(BLOCK | unchanged code) per bucket-run
    min_drop_pct: float = 3.0  # smallest regression worth a BLOCK (and an IMPROVED)
    history_runs: int = 200  # runs of history runner offsets are learned from (0: none)
    noise_floor_pct: float = 0.0  # per-sample noise is never taken below this
    min_samples: int = 5  # window samples needed to judge at all (R4)
    min_runs: int = 3  # window runs needed to judge at all
    max_runs: int = 20  # nearest runs considered (all their samples)
    initial_repeats: int = 2  # samples every run takes
    max_repeats: int = 10  # budget when the first samples are suspicious
    min_block_samples: int = 3  # never BLOCK on fewer run samples (heavy tails, flukes)
    rank_rate: float = 0.005  # distribution-free cap on the false-alarm rate (rank test)
    last_look_share: float = 0.5  # of both rates, spent at the last look (see look_share)
    warn_rate: float = 0.05  # one-sided rate of the warn line ("suspicion")
    confidence: float = 0.95  # two-sided level of the reported interval
    shift_rate: float = 0.002  # false level-shift rate per window
    run_noise_rate: float = 0.05  # pre-test level for noise shared by a run's samples
    min_run_noise: float = 0.35  # ... assumed at least this fraction of the sample noise
    run_noise_floor_pct: float = 0.0  # ... and at least this % (a shared machine's drift)
    min_shift_pct: float = 1.5  # smaller steps are left to the robust estimators
    min_post_shift_samples: int = 3  # samples after a shift needed to judge against it
    mode_separation: float = 6.0  # modes must be this many sigma apart (+ 15/n)
    min_mode_share: float = 0.1  # ... and each hold this share (and >= 2 samples)
    max_modes: int = 3

    @property
    def name(self) -> str:
        """Policy name as written in perfgate.yaml."""
        return "calibrated"

    @property
    def block_looks(self) -> int:
        """Looks at which a BLOCK is possible; the false-alarm rate is split over them."""
        first = max(self.initial_repeats, min(self.min_block_samples, self.max_repeats))
        return max(1, self.max_repeats - first + 1)

    def look_share(self, last: bool) -> float:
        """Share of the false-alarm budget one look may spend (Bonferroni, sums to 1).

        The last look gets ``last_look_share``; the earlier ones split the rest evenly.
        Early looks only stop clear cases sooner, so they need little of the budget; the
        last look decides the marginal ones, so it gets the most.
        """
        looks = self.block_looks
        if looks == 1:
            return 1.0
        return self.last_look_share if last else (1.0 - self.last_look_share) / (looks - 1)


Policy = ReferencePolicy | CalibratedPolicy


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """A bucket's A/A noise calibration (from ``qualify``): per-sample and per-run noise."""

    noise_pct: float  # per-sample sigma, % of the level
    df: float  # degrees of freedom behind noise_pct
    run_noise_pct: float = 0.0  # extra sigma shared by all samples of one run (runner effect)


# ----------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Mode:
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

    def public_modes(self) -> tuple[Mode, ...]:
        """Modes in metric units, best first."""
        total = sum(m.count for m in self.modes) or 1
        return tuple(
            Mode(center=from_g(m.center, self.direction), count=m.count, share=m.count / total)
            for m in reversed(self.modes)
        )


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The verdict and the statistics behind it (what verdict.json carries)."""

    verdict: Verdict
    reasons: tuple[Reason, ...]
    detail: str
    need_more: bool = False  # the sequential rule asks for another sample
    # A drop of at least the minimum is still inside the warn-level interval: the window
    # cannot clear the run (paired confirmation measures the merge base beside it then).
    drop_possible: bool = False
    # The largest drop still inside the warn-level interval, metric % (negative: even the
    # pessimistic end is a gain). A drop above it is ruled out by the window.
    drop_bound_pct: float | None = None
    drop_pct: float | None = None  # the estimated drop, metric % (negative: a gain)
    # The drop bound more samples of this run could reach at best: the noise its samples
    # share (runner, state, the window's own level) does not average away.
    repeats_bound_pct: float | None = None
    policy: str
    samples: int  # run samples used
    window_samples: int  # window samples used (after the shift cut)
    window_runs: int
    value: float | None = None  # the run's figure (robust location), metric units
    baseline: float | None = None  # the matched baseline level, metric units
    effect_pct: float | None = None  # change of the metric, % (sign as measured)
    interval_pct: tuple[float, float] | None = None
    confidence: float | None = None
    block_line: float | None = None  # metric value past which this run would BLOCK
    warn_line: float | None = None
    threshold_pct: float | None = None  # block line as a change %
    t: float | None = None
    t_block: float | None = None
    df: float | None = None
    noise_pct: float | None = None  # per-sample noise, % of the level
    run_noise_pct: float | None = None  # noise shared by one run's samples, % of the level
    within_noise_pct: float | None = None  # noise between one run's samples, % of the level
    within_df: float | None = None
    resolution_pct: float | None = None  # smallest drop that could BLOCK with the full budget
    modes: tuple[Mode, ...] = ()
    shift: Shift | None = None
    between_modes: int = 0  # run samples that matched no mode

    @property
    def multimodal(self) -> bool:
        """The window has more than one mode."""
        return len(self.modes) > 1

    def effect_text(self) -> str:
        """'-6.1 % (-7.9 ... -4.2)' or '' when there is no effect estimate."""
        return effect_text(self.effect_pct, self.interval_pct)


def effect_text(effect_pct: float | None, interval_pct: tuple[float, float] | None) -> str:
    """A change and its interval, as every surface prints it: '-6.1 % (-7.9 ... -4.2)'.

    The signs are true minus signs and the dots one ellipsis character.
    """
    if effect_pct is None:
        return ""
    text = f"{signed_pct(effect_pct)} %"
    if interval_pct is not None:
        lo, hi = interval_pct
        text += f" ({signed_pct(lo)} \u2026 {signed_pct(hi)})"
    return text


def signed_pct(pct: float) -> str:
    """A change as every surface prints it: one decimal, its sign, a true minus sign."""
    return f"{pct:+.1f}".replace("-", "\u2212")


# ----------------------------------------------------------------------------------------
# Small numerical kit (pure Python)
# ----------------------------------------------------------------------------------------

_NORMAL = statistics.NormalDist()
MAD_TO_SIGMA = 1.482602218505602  # 1 / Phi^-1(3/4): MAD of a normal is 0.6745 sigma
_WINSOR_C = 3.0  # winsorise residuals at 3 robust sigmas for the scale estimate
_HUBER_K = 1.5  # Huber location tuning (96 % efficient at the normal)
_HUBER_VAR = 1.037  # asymptotic var(Huber k=1.5) * n / sigma^2 at the normal
_MEDIAN_VAR = math.pi / 2  # asymptotic var(median) * n / sigma^2 at the normal


def _winsor_kappa(c: float) -> float:
    """E[min(Z^2, c^2)] for a standard normal Z: makes the winsorised scale consistent."""
    phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    tail = 1.0 - _NORMAL.cdf(c)
    return (1 - 2 * tail) - 2 * c * phi + 2 * c * c * tail


_KAPPA = _winsor_kappa(_WINSOR_C)

# Finite-sample behaviour of ``robust_scale`` on n residuals, from calibrate.py (Monte Carlo,
# 200k normal windows per n): mean of sigma_hat/sigma (divided out), and the degrees of
# freedom nu for which chi2_nu/nu matches var(ln sigma_hat). Interpolated linearly in n.
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
    z = _NORMAL.inv_cdf(rate)
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
        return 1.0 - _NORMAL.cdf(t)
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
        return _NORMAL.inv_cdf(1.0 - p)
    # Newton on the tail from the normal quantile (a few steps where bisection takes ~50);
    # bisection below when Newton leaves the bracket or stalls (tiny df, extreme p).
    t = _NORMAL.inv_cdf(1.0 - p)
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


# ----------------------------------------------------------------------------------------
# Window input
# ----------------------------------------------------------------------------------------

WindowInput = Sequence[float | Sequence[float]]


def _runs_of(window: WindowInput) -> list[list[float]]:
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


def past(value: float, line: float, direction: Direction) -> bool:
    """Strictly on the bad side of ``line``; exactly on a line is not past it."""
    return value < line if direction is Direction.HIGHER else value > line


def to_g(value: float, direction: Direction) -> float:
    """A figure on the goodness scale: +ln(value) when higher is better, -ln otherwise."""
    return math.log(value) if direction is Direction.HIGHER else -math.log(value)


def from_g(g: float, direction: Direction) -> float:
    """A goodness back as a figure in the metric's units."""
    return _exp(g if direction is Direction.HIGHER else -g)


def pct_of_g(delta_g: float, direction: Direction) -> float:
    """A change in g as a change of the metric, in %."""
    return (_exp(delta_g if direction is Direction.HIGHER else -delta_g) - 1.0) * 100.0


def _exp(x: float) -> float:
    """exp that saturates: figures ~1e308 apart give an infinite change, never an error."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def g_of_regression(pct: float, direction: Direction) -> float:
    """The fall in g of a regression of ``pct`` % of the metric (negative pct: a gain)."""
    if direction is Direction.HIGHER:
        return -math.log1p(-pct / 100.0)
    return math.log1p(pct / 100.0)


def regression_of_g(fall: float, direction: Direction) -> float:
    """The regression, % of the metric, of a fall of ``fall`` in g (g_of_regression's inverse)."""
    change = pct_of_g(-fall, direction)
    return -change if direction is Direction.HIGHER else change


# ----------------------------------------------------------------------------------------
# Modes (1-D clustering of the window)
# ----------------------------------------------------------------------------------------


def _best_split(xs: Sequence[float], lo: int, hi: int, min_size: int) -> int | None:
    """Two-means split of sorted xs[lo:hi] (exact in 1-D: scan the boundaries)."""
    n = hi - lo
    if n < 2 * min_size:
        return None
    prefix = [0.0]
    prefix_sq = [0.0]
    for v in xs[lo:hi]:
        prefix.append(prefix[-1] + v)
        prefix_sq.append(prefix_sq[-1] + v * v)
    best, best_k = math.inf, None
    for k in range(min_size, n - min_size + 1):
        s1, q1 = prefix[k], prefix_sq[k]
        s2, q2 = prefix[n] - s1, prefix_sq[n] - q1
        within = (q1 - s1 * s1 / k) + (q2 - s2 * s2 / (n - k))
        if within < best:
            best, best_k = within, k
    return None if best_k is None else lo + best_k


def _separation(xs: Sequence[float], lo: int, k: int, hi: int) -> float:
    """Distance of the two clusters' medians in pooled within-cluster robust sigmas."""
    left, right = xs[lo:k], xs[k:hi]
    m1, m2 = statistics.median(left), statistics.median(right)
    resid = [v - m1 for v in left] + [v - m2 for v in right]
    sigma, _ = robust_scale(resid, groups=2)
    if sigma <= 0.0:
        return math.inf if m2 > m1 else 0.0
    return (m2 - m1) / sigma


def find_modes(
    values: Sequence[float], *, separation: float, min_share: float, max_modes: int
) -> list[tuple[float, float]]:
    """Clusters of a sample as (low, high) value bounds, ascending; one cluster if unimodal.

    A cluster is split in two (two-means boundary) when both parts hold at least
    ``min_share`` of the window (and 2 samples) and their medians are at least
    ``separation + 15 / n`` pooled robust sigmas apart: the best split of a small normal
    sample can look far apart by chance, so small windows need a wider gap. A normal or
    Student-t(3) window is then called multimodal in 1-2 % of 10-sample windows and
    almost never from 40 samples on (calibrate.py).
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return []
    separation += 15.0 / n
    min_size = max(2, math.ceil(min_share * n))
    clusters = [(0, n)]
    while len(clusters) < max_modes:
        best: tuple[float, int, int] | None = None
        for index, (lo, hi) in enumerate(clusters):
            k = _best_split(xs, lo, hi, min_size)
            if k is None:
                continue
            d = _separation(xs, lo, k, hi)
            if d >= separation and (best is None or d > best[0]):
                best = (d, index, k)
        if best is None:
            break
        _, index, k = best
        lo, hi = clusters[index]
        clusters[index : index + 1] = [(lo, k), (k, hi)]
    return [(xs[lo], xs[hi - 1]) for lo, hi in clusters]


def _nearest(value: float, centers: Sequence[float]) -> int:
    best, best_d = 0, math.inf
    for index, c in enumerate(centers):
        d = abs(value - c)
        if d < best_d:
            best, best_d = index, d
    return best


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
            mean = math.fsum(values) / k
            inflate = math.sqrt(k / (k - 1.0))
            within.extend((v - mean) * inflate for v in values)
    if multi < 3:
        return 0.0, math.inf, 0.0, 0.0
    sigma_w, nu_w = robust_scale(within, groups=multi + 1)
    if sigma_w <= 0.0:
        return 0.0, math.inf, 0.0, 0.0
    # run means standardised by their within-run error: variance 1 + m*sigma_b^2/sigma_w^2
    z = [
        (math.fsum(values) / len(values)) / (sigma_w / math.sqrt(len(values)))
        for values in by_run
        if values
    ]
    inv_m = [1.0 / len(values) for values in by_run if values]
    s_z, nu_z = robust_scale(z, groups=groups)
    if nu_z <= 0.0 or nu_w <= 0.0:
        return 0.0, math.inf, sigma_w, nu_w
    ratio = s_z * s_z
    # ln of a ratio of two chi2/nu variances is ~ normal with variance 2/nu_z + 2/nu_w
    critical = math.exp(_NORMAL.inv_cdf(1.0 - rate) * math.sqrt(2.0 / nu_z + 2.0 / nu_w))
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
    runs_nf = _runs_of(window)[: policy.max_runs]
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
        return _replace(
            empty,
            problem=Reason.NO_BASELINE,
            detail="no baseline yet for this experiment on this hardware",
        )
    if known_shift == 0:
        return _replace(
            empty,
            problem=Reason.SHIFT_SETTLING,
            detail="an accepted change starts a new level and no run has measured it yet",
            shift=Shift(kept_runs=0, change_pct=0.0, t=0.0, accepted=True),
        )
    if n_total < policy.min_samples or len(runs_nf) < policy.min_runs:
        return _replace(
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
        labels = [_nearest(v, centers0) for v in g]
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
        resid = [v - centers0[_nearest(v, centers0)] for v in g]
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
    member = [0] * n if len(centers) == 1 else [_nearest(v, centers) for v in adjusted]
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
    base = _replace(
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
        return _replace(
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
    modes = []
    for k, c in enumerate(centers):
        # the offset of a minor mode from the main one is known from its own samples only
        offset_var = 0.0 if k == main else _MEDIAN_VAR * (1.0 / counts[k] + 1.0 / counts[main])
        modes.append(_ModeFit(center=c + level, count=counts[k], var=post_var + offset_var))
    return _replace(base, modes=tuple(modes))


def _replace(model: WindowModel, **changes: object) -> WindowModel:
    return replace(model, **changes)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------
# Judging a run against an analysed window (calibrated policy)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Evidence:
    """The run's location against the matched modes, standardised."""

    delta: float  # robust location of the run minus its baseline, g units
    se: float  # standard error of delta
    df: float  # degrees of freedom of se
    baseline_g: float
    used: int  # samples judged
    ambiguous: int  # of which between two modes
    u: float  # Mann-Whitney U of the used residuals against the window residuals
    center_var: float  # var(matched centre) / sigma^2, averaged over the samples
    run_var: float  # variance of the noise the run's samples share (not averaged away)

    @property
    def t(self) -> float:
        """Studentised change; infinite when a noiseless window meets a different run."""
        if self.se > 0:
            return self.delta / self.se
        return 0.0 if self.delta == 0 else math.copysign(math.inf, self.delta)


def _evidence(model: WindowModel, samples_g: Sequence[float]) -> _Evidence:
    """Match each sample to its mode, then the Huber location of the residuals."""
    modes = model.modes
    centers = [m.center for m in modes]
    sigma = model.sigma
    resid: list[float] = []
    var_center = 0.0
    base = 0.0
    ambiguous = 0
    for y in samples_g:
        k = _nearest(y, centers)
        if len(modes) > 1:
            # Between two adjacent modes, a sample in the middle third (and > 3 sigma from
            # both) fits neither: it is counted and named in the verdict; its residual
            # against the nearer mode still counts, the Huber location bounds its weight.
            below = max((j for j in range(len(centers)) if centers[j] <= y), default=None)
            above = min((j for j in range(len(centers)) if centers[j] > y), default=None)
            if below is not None and above is not None:
                gap = centers[above] - centers[below]
                near = min(y - centers[below], centers[above] - y)
                if near > max(gap / 3.0, 3.0 * sigma):
                    ambiguous += 1
        resid.append(y - centers[k])
        var_center += modes[k].var
        base += centers[k]
    m = len(resid)
    if m == 0:
        return _Evidence(delta=0.0, se=math.inf, df=model.df, baseline_g=centers[0], used=0,
                         ambiguous=ambiguous, u=0.0, center_var=0.0, run_var=0.0)  # fmt: skip
    delta = huber_location(resid, sigma, start=statistics.median(resid))
    # centre uncertainty: average over the samples' modes (exact when they share one mode,
    # conservative otherwise)
    sample_part = sigma * sigma * (location_var(m) + var_center / m)
    # noise shared by the run's samples does not average out over repeats; the window's
    # level carries it too, averaged over its runs; the runner correction adds its own
    run_part = model.run_sigma**2 * (1.0 + 1.0 / max(model.runs_used, 1))
    run_part += model.history.offset_var
    se = math.sqrt(sample_part + run_part)
    df = model.df
    if run_part > 0.0 and math.isfinite(model.run_df):
        # Welch-Satterthwaite: the run part is known with the run-level degrees of freedom
        df = (sample_part + run_part) ** 2 / (
            sample_part**2 / model.df + run_part**2 / model.run_df
        )
    return _Evidence(
        delta=delta,
        se=se,
        df=df,
        baseline_g=base / m,
        used=m,
        ambiguous=ambiguous,
        u=mann_whitney_u(model.residuals, resid),
        center_var=var_center / m,
        run_var=run_part,
    )


def judge(
    model: WindowModel, samples: Sequence[float], *, policy: CalibratedPolicy, final: bool = False
) -> Decision:
    """Verdict for the run's samples so far; ``need_more`` asks the bench for another one.

    Sequential rule: every run takes ``initial_repeats`` samples; while the run is
    suspicious (past the warn line, or a drop of ``min_drop_pct`` not yet confirmed) and
    could still turn out to be a blocking drop, it takes more, up to ``max_repeats``.

    A BLOCK needs, at one look, all of: the robust t below ``-t_block``, the t critical
    value at ``false_alarm_rate * share``; the rank test (Mann-Whitney of the run's
    residuals against the window's) at ``rank_rate * share``; a drop of at least
    ``min_drop_pct``; ``min_block_samples`` samples. The shares of the looks at which a
    BLOCK is possible sum to one (Bonferroni, ``CalibratedPolicy.look_share``), so the
    rates hold per bucket-run however many samples the run takes. The t test holds the
    rate for near-normal noise; the rank test caps it at ``rank_rate`` for any noise
    distribution of an exchangeable window.
    ``final=True`` (time budget spent) turns the current evidence into a verdict.
    """
    direction = model.direction
    common = {
        "policy": policy.name,
        "samples": len(samples),
        "window_samples": model.samples_used,
        "window_runs": model.runs_used,
        "modes": model.public_modes(),
        "shift": model.shift,
    }
    info: list[Reason] = []
    if model.shift is not None:
        info.append(Reason.LEVEL_SHIFT)
    if model.problem is not None:
        verdict = Verdict.INCONCLUSIVE if model.problem is Reason.SHIFT_SETTLING else Verdict.WARN
        return Decision(
            verdict=verdict,
            reasons=(model.problem, *info),
            detail=model.detail,
            noise_pct=pct_of_g(model.sigma, Direction.HIGHER) if model.sigma else None,
            **common,  # type: ignore[arg-type]
        )
    if not samples:
        return Decision(
            verdict=Verdict.WARN,
            reasons=(Reason.NO_SAMPLES,),
            detail="no samples",
            need_more=not final,
            **common,  # type: ignore[arg-type]
        )
    if model.multimodal:
        info.append(Reason.MULTIMODAL)
    m = len(samples)
    ev = _evidence(model, [to_g(v, direction) for v in samples])
    if ev.used == 0:
        return Decision(
            verdict=Verdict.INCONCLUSIVE,
            reasons=(Reason.BETWEEN_MODES, *info),
            detail=f"all {m} samples fall between the window's {len(model.modes)} modes",
            need_more=False,
            between_modes=ev.ambiguous,
            noise_pct=pct_of_g(model.sigma, Direction.HIGHER),
            **common,  # type: ignore[arg-type]
        )
    last_look = final or m >= policy.max_repeats
    share = policy.look_share(last_look)
    level = policy.false_alarm_rate * share
    t_block = t_isf(level, ev.df)
    t_improve = t_isf(policy.false_alarm_rate, ev.df)
    t_warn = t_isf(policy.warn_rate, ev.df)
    t_ci = t_isf((1.0 - policy.confidence) / 2.0, ev.df)
    # minimum changes as the metric's own percentages (a 3 % drop of a throughput, a 3 %
    # rise of a latency), like the reference rule's regression_pct
    min_drop = g_of_regression(policy.min_drop_pct, direction)
    min_gain = -g_of_regression(-policy.min_drop_pct, direction)
    n_window = len(model.residuals)
    # With too few samples for the rank test to reach its level at all, the run must at
    # least lie beyond every window sample (U = 0): one-sample buckets can still block.
    u_block = max(mwu_critical(ev.used, n_window, policy.rank_rate * share), 0)
    u_improve = max(mwu_critical(ev.used, n_window, policy.rank_rate), 0)
    may_block = ev.used >= min(policy.min_block_samples, policy.max_repeats)

    significant = ev.t <= -t_block and ev.u <= u_block
    big = -ev.delta >= min_drop
    past_warn = ev.t <= -t_warn
    # Could more samples still make this a BLOCK? Not when even the pessimistic end of
    # the warn-level interval is a drop under the minimum.
    could_be_big = -(ev.delta - t_warn * ev.se) >= min_drop
    budget_left = not final and m < policy.max_repeats

    need_more = False
    if not final and m < policy.initial_repeats:
        need_more = True
    elif budget_left and not (significant and big and may_block):
        # suspicious: past the warn line with a blocking drop still possible, or samples
        # that fit no mode of the window (more samples show which mode the run is in)
        need_more = (past_warn and could_be_big) or ev.ambiguous * 2 >= m

    mode_note = (
        f" ({len(model.modes)} modes, judged against the matching one)" if model.multimodal else ""
    )
    between = f"; {ev.ambiguous} sample(s) between modes not used" if ev.ambiguous else ""
    change = pct_of_g(ev.delta, direction)
    if significant and big and may_block:
        verdict, reason = Verdict.BLOCK, Reason.REGRESSION
        detail = f"regression {signed_pct(change)} %, past the block line{mode_note}{between}"
    elif ev.t >= t_improve and ev.delta >= min_gain and ev.u >= ev.used * n_window - u_improve:
        verdict, reason = Verdict.IMPROVED, Reason.IMPROVEMENT
        detail = (
            f"improvement {signed_pct(change)} %{mode_note}; baselines follow once pushes record it"
        )
    elif ev.ambiguous * 2 >= m:
        verdict, reason = Verdict.INCONCLUSIVE, Reason.BETWEEN_MODES
        modes = len(model.modes)
        detail = f"{ev.ambiguous} of {m} samples fall between the window's {modes} modes"
    elif significant and big:
        verdict, reason = Verdict.INCONCLUSIVE, Reason.UNCONFIRMED
        need = policy.min_block_samples
        detail = f"drop {signed_pct(change)} % on {ev.used} sample(s); {need} needed to block"
    elif significant:
        verdict, reason = Verdict.WARN, Reason.SMALL_REGRESSION
        detail = (
            f"significant drop {signed_pct(change)} %, under the {policy.min_drop_pct:g} % minimum"
        )
    elif past_warn and big:
        verdict, reason = Verdict.INCONCLUSIVE, Reason.UNRESOLVED
        detail = (
            f"drop {signed_pct(change)} % cannot be told from noise with {m} sample(s){between}"
        )
    elif past_warn and could_be_big:
        # the budget is spent and a blocking drop is still inside the interval
        verdict, reason = Verdict.WARN, Reason.POSSIBLE_REGRESSION
        detail = f"possible regression {signed_pct(change)} %, past the warn line{between}"
    else:
        # past the warn line but provably under the minimum drop is noise, not a warning
        verdict, reason = Verdict.PASS, Reason.WITHIN_NOISE
        detail = f"within noise ({signed_pct(change)} %){mode_note}{between}"

    # resolution: the drop that would sit on the last look's block line with the full budget
    t_last = t_isf(policy.false_alarm_rate * policy.look_share(True), ev.df)
    se_full = math.sqrt(
        model.sigma**2 * (location_var(policy.max_repeats) + ev.center_var) + ev.run_var
    )
    resolution = abs(pct_of_g(-max(t_last * se_full, min_drop), direction))
    if verdict is Verdict.PASS and resolution > 2.0 * policy.min_drop_pct:
        detail += f"; this window cannot resolve drops under {resolution:.0f} %"
    history = model.history
    if verdict is Verdict.BLOCK and -ev.delta - t_block * ev.se < history.deepest:
        # Unchanged code has fallen about this far as a whole run on this pool (a slower
        # machine state for a run's length): the window cannot tell this run from one.
        deepest = regression_of_g(history.deepest, direction)
        near = history.as_deep(-ev.delta - t_block * ev.se)
        verdict, reason = Verdict.INCONCLUSIVE, Reason.RUN_STATE
        detail = (
            f"drop {signed_pct(change)} %, but {near} of the last {history.runs} runs of "
            f"unchanged code fell as a whole nearly as far (up to {deepest:.1f} %); only a "
            "paired comparison on the same runner can tell this run from one of them"
        )
    lo = pct_of_g(ev.delta - t_ci * ev.se, direction)
    hi = pct_of_g(ev.delta + t_ci * ev.se, direction)
    block_g = ev.baseline_g - max(t_block * ev.se, min_drop)
    warn_g = ev.baseline_g - t_warn * ev.se
    return Decision(
        verdict=verdict,
        reasons=(reason, *info),
        detail=detail,
        need_more=need_more,
        drop_possible=could_be_big,
        drop_bound_pct=regression_of_g(-(ev.delta - t_warn * ev.se), direction),
        drop_pct=regression_of_g(-ev.delta, direction),
        repeats_bound_pct=regression_of_g(-(ev.delta - t_warn * math.sqrt(ev.run_var)), direction),
        value=from_g(ev.baseline_g + ev.delta, direction),
        baseline=from_g(ev.baseline_g, direction),
        effect_pct=change,
        interval_pct=(min(lo, hi), max(lo, hi)),
        confidence=policy.confidence,
        block_line=from_g(block_g, direction),
        warn_line=from_g(warn_g, direction),
        threshold_pct=pct_of_g(block_g - ev.baseline_g, direction),
        t=ev.t,
        t_block=t_block,
        df=ev.df,
        noise_pct=pct_of_g(model.sigma, Direction.HIGHER),
        run_noise_pct=pct_of_g(model.run_sigma, Direction.HIGHER),
        within_noise_pct=pct_of_g(model.within_sigma, Direction.HIGHER)
        if model.within_df
        else None,
        within_df=model.within_df or None,
        resolution_pct=resolution,
        between_modes=ev.ambiguous,
        **common,  # type: ignore[arg-type]
    )


# ----------------------------------------------------------------------------------------
# The reference policy (the seed's rule, exactly)
# ----------------------------------------------------------------------------------------


def reference_decide(
    window: WindowInput,
    samples: Sequence[float],
    *,
    policy: ReferencePolicy,
    direction: Direction = Direction.HIGHER,
) -> Decision:
    """The seed's verdict: the mean of the samples against median -/+ k x unscaled MAD.

    The window is every sample, nearest first, capped at ``max_samples``; the lines, the
    reasons and the texts are the seed's (exactly on a line is not past it).
    """
    flat = [v for run in _runs_of(window) for v in run][: policy.max_samples]
    common = {"policy": policy.name, "samples": len(samples), "window_samples": len(flat)}
    if not samples:
        return Decision(
            verdict=Verdict.WARN, reasons=(Reason.NO_SAMPLES,), detail="no samples",
            window_runs=len(flat), **common,  # type: ignore[arg-type]
        )  # fmt: skip
    value = math.fsum(samples) / len(samples)
    if not flat:
        return Decision(
            verdict=Verdict.WARN,
            reasons=(Reason.NO_BASELINE,),
            detail="no baseline yet for this experiment on this hardware",
            window_runs=0,
            value=value,
            **common,  # type: ignore[arg-type]
        )
    median = statistics.median(flat)
    mad = statistics.median(abs(v - median) for v in flat)
    noise = max(mad, policy.noise_floor_pct / 100.0 * median)
    sign = -1.0 if direction is Direction.HIGHER else 1.0
    warn_line = median + sign * policy.k_warn * noise
    block_line = median + sign * policy.k_block * noise
    change_pct = (value - median) / median * 100.0
    stats = {
        "window_runs": len(flat),
        "value": value,
        "baseline": median,
        "effect_pct": change_pct,
        "block_line": block_line,
        "warn_line": warn_line,
        "threshold_pct": (block_line - median) / median * 100.0,
        "noise_pct": noise / median * 100.0,
    }
    if len(flat) < policy.min_samples:
        return Decision(
            verdict=Verdict.WARN,
            reasons=(Reason.INSUFFICIENT_WINDOW,),
            detail=f"only {len(flat)} of {policy.min_samples} baseline samples; cannot judge yet",
            **common,  # type: ignore[arg-type]
            **stats,  # type: ignore[arg-type]
        )

    regression_pct = -change_pct if direction is Direction.HIGHER else change_pct
    change = f"{change_pct:+.1f}% vs median {figure_text(median)}"
    if past(value, block_line, direction) and regression_pct >= policy.min_block_regression_pct:
        verdict, reason = Verdict.BLOCK, Reason.ROLLING_WINDOW
        detail = f"regression {change}, past the block line"
    elif past(value, block_line, direction):
        verdict, reason = Verdict.WARN, Reason.BELOW_BLOCK_INSIDE_REGRESSION_FLOOR
        detail = (
            f"past the block line but {change} is under the "
            f"{policy.min_block_regression_pct:g}% minimum for a block"
        )
    elif past(value, warn_line, direction):
        verdict, reason = Verdict.WARN, Reason.ROLLING_WINDOW
        detail = f"possible regression {change}"
    else:
        verdict, reason, detail = Verdict.PASS, Reason.ROLLING_WINDOW, f"within noise ({change})"
    return Decision(
        verdict=verdict,
        reasons=(reason,),
        detail=detail,
        **common,  # type: ignore[arg-type]
        **stats,  # type: ignore[arg-type]
    )


def figure_text(value: float) -> str:
    """A figure as the reports print it: thousands grouped, else 4 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


# ----------------------------------------------------------------------------------------
# One entry point for both policies
# ----------------------------------------------------------------------------------------


def decide(
    window: WindowInput | WindowModel,
    samples: Sequence[float],
    *,
    direction: Direction = Direction.HIGHER,
    policy: Policy | None = None,
    calibration: Calibration | None = None,
    final: bool = False,
    known_shift: int | None = None,
) -> Decision:
    """Judge a run's samples against a window (nearest-first runs, or an analysed model).

    ``known_shift``: an accepted change starts the level after the nearest that many runs;
    the reference rule's window is those runs alone.
    """
    policy = CalibratedPolicy() if policy is None else policy
    if isinstance(policy, ReferencePolicy):
        if isinstance(window, WindowModel):
            raise TypeError("the reference policy judges raw windows")
        kept = window if known_shift is None else window[:known_shift]
        return reference_decide(kept, samples, policy=policy, direction=direction)
    model = (
        window
        if isinstance(window, WindowModel)
        else analyse_window(
            window,
            policy=policy,
            direction=direction,
            calibration=calibration,
            known_shift=known_shift,
        )
    )
    return judge(model, samples, policy=policy, final=final)


def needs_more(
    window: WindowInput | WindowModel,
    samples: Sequence[float],
    *,
    direction: Direction = Direction.HIGHER,
    policy: Policy | None = None,
    calibration: Calibration | None = None,
) -> bool:
    """Should the bench measure this bucket once more before the verdict is final?"""
    if isinstance(policy, ReferencePolicy):
        return False
    return decide(
        window, samples, direction=direction, policy=policy, calibration=calibration
    ).need_more


__all__ = [
    "CalibratedPolicy",
    "Calibration",
    "Decision",
    "Mode",
    "Policy",
    "ReferencePolicy",
    "RunHistory",
    "Shift",
    "WindowModel",
    "analyse_window",
    "decide",
    "effect_text",
    "f_sf",
    "find_modes",
    "from_g",
    "g_of_regression",
    "huber_location",
    "judge",
    "needs_more",
    "pct_of_g",
    "reference_decide",
    "regression_of_g",
    "robust_scale",
    "signed_pct",
    "t_isf",
    "t_sf",
    "to_g",
]
