"""The paired test: the merge base and the change, pair by pair on one runner (R5). Pure.

Each pair ran the base and the head back to back on the same runner, so the ratio of its
two figures carries the change and the sample noise, not the runner's offset or its state
that day. On the log scale the pairs' differences are near-normal: a paired t-test on them,
with the false-alarm rate of a bucket run split over the looks at which a BLOCK is possible
(Bonferroni, half at the last look, as the window rule does), holds that rate however many
pairs the bench takes before it stops.

After every pair (from ``min_pairs`` on) the test says one of:

* BLOCK (``PAIRED_REGRESSION``): the drop is past the block line and at least the minimum;
* cleared: even the pessimistic end of the interval (one-sided, ``clear_rate``) is a drop
  under ``clear_drop_pct`` (the drop that matters for this PR: the gate's
  ``confirm_drop_pct``; the minimum by default): PASS ``NOT_CONFIRMED`` ("not confirmed on
  the same runner"), or WARN ``SMALL_REGRESSION`` when the drop is significant but small;
* not yet: another pair, while ``max_pairs`` and the time budget allow; after the last,
  INCONCLUSIVE ``PAIRED_UNRESOLVED`` (the pairs cannot separate base and head).

A handful of pairs knows its own spread poorly (two degrees of freedom after three pairs
put the block line past t = 30), yet the window already measured one sample's noise on
many samples, and one pair's ratio has the noise of two samples. With ``prior`` (the
window's noise) the spread is pooled from both, unless the pairs are noisier than the
window says (an F test at ``prior_rate``): then the pairs stand alone. Three pairs can
then decide a clear drop, which is what a launch of several minutes can afford.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.config import Bucket, Direction, GatePolicy, OraclePolicy
from perfgate.judge.goodness import (
    effect_text,
    from_g,
    g_of_regression,
    pct_of_g,
    regression_of_g,
    signed_pct,
    to_g,
)
from perfgate.judge.numerics import MAD_TO_SIGMA, f_sf, t_isf
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Reason, Verdict

# Pairs further than this many sigmas from the pairs' median are set aside (_set_aside).
OUTLIER = 4.0


@dataclass(frozen=True, kw_only=True)
class PairedPolicy:
    """The paired test's settings: the gate's false-alarm rate and minimum drop, the budget
    (built from the config by ``judge.bucket_policy.paired_policy_for``)."""

    false_block_rate: float = GatePolicy.false_block_rate  # P(BLOCK | unchanged) per bucket run
    min_drop_pct: float = OraclePolicy.min_drop_pct
    noise_floor_pct: float = OraclePolicy.noise_floor_pct  # sample noise never taken below this
    # Stop once a drop this large is ruled out (None: min_drop_pct). Pairs are started for
    # drops that matter for this PR; a smaller one is left to post-merge detection.
    clear_drop_pct: float | None = None
    min_pairs: int = 3  # never BLOCK or clear on fewer pairs
    max_pairs: int = Bucket.max_pairs
    clear_rate: float = 0.05  # one-sided: how sure "no blocking drop" must be to stop early
    # Of the false-alarm rate, spent at the last look, and the level of the reported
    # interval: the window rule's.
    last_look_share: float = CalibratedPolicy.last_look_share
    confidence: float = CalibratedPolicy.confidence
    prior_rate: float = 0.01  # pairs noisier than the window's noise at this level stand alone

    @property
    def looks(self) -> int:
        """Looks at which a BLOCK is possible: after each pair from ``min_pairs`` on."""
        return max(1, self.max_pairs - self.min_pairs + 1)

    def look_share(self, last: bool) -> float:
        """Share of the false-alarm rate one look may spend (the shares sum to one)."""
        if self.looks == 1:
            return 1.0
        return self.last_look_share if last else (1.0 - self.last_look_share) / (self.looks - 1)


@dataclass(frozen=True, kw_only=True)
class PairNoise:
    """One sample's noise as the window measured it: the pairs' spread is pooled with it."""

    noise_pct: float  # per-sample sigma, % of the level
    df: float  # its degrees of freedom


@dataclass(frozen=True, kw_only=True)
class PairedDecision:
    """The paired test's verdict and the figures behind it (what verdict.json carries)."""

    verdict: Verdict
    reason: Reason
    detail: str
    need_more: bool = False
    pairs: int
    base: float | None = None  # geometric mean of the base's figures, metric units
    head: float | None = None
    effect_pct: float | None = None  # head against base, % (sign as measured)
    interval_pct: tuple[float, float] | None = None
    confidence: float | None = None
    t: float | None = None
    t_block: float | None = None
    df: float | None = None
    noise_pct: float | None = None  # spread of one pair's ratio, %
    pooled: bool = False  # the spread was pooled with the window's noise

    def effect_text(self) -> str:
        """'-9.8 % (-11.2 ... -8.4)' (true minus signs), or '' before any pair."""
        return effect_text(self.effect_pct, self.interval_pct)


def paired_decide(
    pairs: Sequence[tuple[float, float]],
    *,
    direction: Direction = Direction.HIGHER,
    policy: PairedPolicy | None = None,
    final: bool = False,
    prior: PairNoise | None = None,
) -> PairedDecision:
    """Judge (base, head) pairs; ``need_more`` asks the bench for another pair.

    ``final=True`` (the bench stopped: budget spent) turns the evidence into a verdict;
    ``prior`` (the window's per-sample noise) is pooled into the pairs' spread.
    """
    policy = policy or PairedPolicy()
    taken = len(pairs)
    last = final or taken >= policy.max_pairs
    base_g = [to_g(b, direction) for b, _ in pairs]
    head_g = [to_g(h, direction) for _, h in pairs]
    diffs = _set_aside([h - b for b, h in zip(base_g, head_g, strict=True)], prior)
    n = len(diffs)
    aside = f"; {taken - n} pair(s) set aside as outliers" if n < taken else ""
    # With the window's noise known, two pairs (A B, B A) may clear; a BLOCK needs min_pairs.
    early_clear = prior is not None and n >= 2
    if n < policy.min_pairs and not early_clear:
        detail = (
            f"paired A/B: {n} usable pair(s), {policy.min_pairs} are needed to decide{aside}"
            if last
            else f"paired A/B: {n} pair(s) so far{aside}"
        )
        return PairedDecision(
            verdict=Verdict.INCONCLUSIVE,
            reason=Reason.PAIRED_UNRESOLVED,
            detail=detail,
            need_more=not last,
            pairs=n,
        )
    mean = math.fsum(diffs) / n
    # One pair's ratio has the noise of two samples: the per-sample floor, sqrt(2) times.
    floor = math.sqrt(2.0) * math.log1p(policy.noise_floor_pct / 100.0)
    variance, df, pooled = _spread(diffs, prior, policy.prior_rate)
    spread = max(math.sqrt(variance), floor)
    se = spread / math.sqrt(n)
    t = mean / se if se > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    t_block = t_isf(policy.false_block_rate * policy.look_share(last), df)
    t_clear = t_isf(policy.clear_rate, df)
    t_ci = t_isf((1.0 - policy.confidence) / 2.0, df)
    min_drop = g_of_regression(policy.min_drop_pct, direction)
    clear_drop = g_of_regression(
        policy.min_drop_pct if policy.clear_drop_pct is None else policy.clear_drop_pct, direction
    )
    drop = -mean  # a regression is goodness going down
    significant = t <= -t_block and n >= policy.min_pairs
    blocking = significant and drop >= min_drop
    cleared = drop + t_clear * se < max(clear_drop, min_drop)
    if n < policy.min_pairs and not (cleared and pooled):
        cleared = False  # two pairs clear only with the window's noise pooled in
    need_more = not last and not blocking and not cleared
    change = pct_of_g(mean, direction)
    lo, hi = pct_of_g(mean - t_ci * se, direction), pct_of_g(mean + t_ci * se, direction)
    text = effect_text(change, (min(lo, hi), max(lo, hi)))
    if blocking:
        verdict, reason = Verdict.BLOCK, Reason.PAIRED_REGRESSION
        detail = f"confirmed on the same runner: paired A/B {text}, {n} pairs{aside}"
    elif cleared and significant:
        verdict, reason = Verdict.WARN, Reason.SMALL_REGRESSION
        detail = (
            f"paired A/B: significant drop {signed_pct(change)} %, under the "
            f"{policy.min_drop_pct:g} % minimum ({n} pairs{aside})"
        )
    elif cleared:
        verdict, reason = Verdict.PASS, Reason.NOT_CONFIRMED
        detail = f"not confirmed on the same runner: paired A/B {text}, {n} pairs{aside}"
        bound = regression_of_g(drop + t_clear * se, direction)
        if bound >= policy.min_drop_pct:
            detail += (
                f"; a drop below {bound:.1f} % cannot be ruled out at this run's budget; "
                "post-merge alerts watch the target branch for it"
            )
    else:
        verdict, reason = Verdict.INCONCLUSIVE, Reason.PAIRED_UNRESOLVED
        detail = f"paired A/B cannot separate base and head: {text} after {n} pairs{aside}"
    return PairedDecision(
        verdict=verdict,
        reason=reason,
        detail=detail,
        need_more=need_more,
        pairs=n,
        base=from_g(math.fsum(base_g) / taken, direction),
        head=from_g(math.fsum(head_g) / taken, direction),
        effect_pct=change,
        interval_pct=(min(lo, hi), max(lo, hi)),
        confidence=policy.confidence,
        t=t,
        t_block=t_block,
        df=df,
        noise_pct=pct_of_g(spread, Direction.HIGHER),
        pooled=pooled,
    )


def settled_decision(
    pairs: Sequence[tuple[float, float]],
    *,
    direction: Direction = Direction.HIGHER,
    policy: PairedPolicy | None = None,
    prior: PairNoise | None = None,
) -> PairedDecision:
    """The verdict of the look at which the bench stopped taking pairs: one rule for both.

    The bench stops at the first look that decides, or when it may take no more (the
    limit, the budget). The decision at a deciding look stands; only pairs that never
    decided are judged as a last look. Re-judging a decided look as the last would move
    the block line, and the gate would not reach the bench's verdict.
    """
    step = paired_decide(pairs, direction=direction, policy=policy, prior=prior)
    if not step.need_more:
        return step
    return paired_decide(pairs, direction=direction, policy=policy, prior=prior, final=True)


def _pair_noise(prior: PairNoise) -> float:
    """One pair's log-ratio noise from one sample's: a pair carries two samples' noise."""
    return math.sqrt(2.0) * math.log1p(prior.noise_pct / 100.0)


def _set_aside(diffs: Sequence[float], prior: PairNoise | None) -> list[float]:
    """The pairs' log ratios without those further than ``OUTLIER`` sigmas from their median.

    A GPU that throttles unseen for one launch puts one pair far out: its whole excursion
    would move the mean by 1/n of it and inflate the variance past the window's noise, so
    one sample could decide the test or keep it from ever deciding. Such a pair is set
    aside, as admission control sets aside a sample it saw throttle. The sigma is the
    window's noise when it is known (a pair carries two samples' noise), else the pairs'
    scaled MAD from five pairs on (fewer cannot tell an outlier); never the pairs'
    variance, which the outlier itself inflates. At the normal a pair is set aside about
    once in 16,000, so clean pairs are judged as before.
    """
    if not diffs:
        return []
    centre = statistics.median(diffs)
    if prior is not None and prior.df > 0 and prior.noise_pct > 0:
        sigma = max(_pair_noise(prior),
                    MAD_TO_SIGMA * statistics.median(abs(d - centre) for d in diffs))  # fmt: skip
    elif len(diffs) >= 5:
        sigma = MAD_TO_SIGMA * statistics.median(abs(d - centre) for d in diffs)
    else:
        return list(diffs)
    if sigma <= 0.0:
        return list(diffs)
    return [d for d in diffs if abs(d - centre) <= OUTLIER * sigma]


def _spread(
    diffs: Sequence[float], prior: PairNoise | None, rate: float
) -> tuple[float, float, bool]:
    """Variance of one pair's log ratio, its degrees of freedom, and whether it was pooled."""
    own = statistics.variance(diffs)
    df = float(len(diffs) - 1)
    if prior is None or prior.df <= 0 or prior.noise_pct <= 0:
        return own, df, False
    known = _pair_noise(prior) ** 2
    if f_sf(own / known, df, prior.df) < rate:
        return own, df, False  # the pairs are noisier than the window says: they stand alone
    return (df * own + prior.df * known) / (df + prior.df), df + prior.df, True
