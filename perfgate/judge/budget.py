"""What confirming a suspicious run costs, what it can buy, and who gets the budget (R17). Pure.

On a GPU pool every sample is a launch of several minutes, so confirmation is spent only
where it changes a decision, and never on a comparison that cannot decide:

* ``uncleared``: the window cannot clear the run. It would BLOCK, it is INCONCLUSIVE, or
  a drop of ``confirm_drop_pct`` is still inside its warn-level interval. Smaller drops
  that one run cannot afford to rule out are left to post-merge detection;
* ``pairs_to_block`` / ``repeats_to_block``: how many pairs (or samples against the
  window) a BLOCK of a given drop needs at a given noise, with ``POWER``;
* ``pairs_affordable`` / ``samples_affordable``: what a budget in minutes allows at a
  launch time, as the bench spends it (no pair or sample starts once it is spent);
* ``allocate``: one budget per run shared by the matrix, the most suspicious buckets
  first, the largest possible drops first; what it cannot afford is named with what it
  would have needed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.judge.paired import PairedPolicy
from perfgate.judge.stats import CalibratedPolicy, Decision, location_var, t_isf
from perfgate.judge.verdicts import Reason, Verdict

# A budget "can decide" when a drop of the minimum is BLOCKed with this probability.
POWER = 0.8
# Beyond this many pairs or samples a comparison is called undecidable outright.
MOST = 64
# Window verdicts that say nothing about a change: nothing to confirm.
UNJUDGED = frozenset({Reason.NO_BASELINE, Reason.INSUFFICIENT_WINDOW, Reason.NO_SAMPLES})

_Z_POWER = statistics.NormalDist().inv_cdf(POWER)


def uncleared(decision: Decision, confirm_drop_pct: float) -> bool:
    """True when the window cannot clear the run of a drop that matters for this PR.

    It would BLOCK or it is INCONCLUSIVE, or a drop of ``confirm_drop_pct`` or more is
    still inside its warn-level interval. A window without a baseline asks for nothing.
    """
    if decision.reasons and decision.reasons[0] in UNJUDGED:
        return False
    if decision.verdict in (Verdict.BLOCK, Verdict.INCONCLUSIVE):
        return True
    if decision.verdict is Verdict.IMPROVED or decision.drop_bound_pct is None:
        return False
    return decision.drop_bound_pct >= confirm_drop_pct


def suspicion(decision: Decision) -> tuple[int, float]:
    """Sort key, most suspicious first when sorted descending: the verdict, then the
    largest drop the window cannot rule out."""
    return (decision.verdict.severity, decision.drop_bound_pct or 0.0)


def _needed(drop_g: float, se_of: object, df_of: object, rate: float, start: int) -> int | None:
    """Smallest n from ``start`` whose expected t reaches the block line plus the power margin."""
    assert callable(se_of) and callable(df_of)
    for n in range(start, MOST + 1):
        se = se_of(n)
        if se <= 0.0:
            return n
        if drop_g / se >= t_isf(rate, df_of(n)) + _Z_POWER:
            return n
    return None


def pairs_to_block(
    drop_pct: float, noise_pct: float, policy: PairedPolicy, prior_df: float = 0.0
) -> int | None:
    """Pairs a paired test needs to BLOCK a ``drop_pct`` drop with ``POWER``, at the last look.

    ``noise_pct`` is one sample's noise; a pair's ratio has twice its variance. With
    ``prior_df`` (the window's noise known that well) the spread's degrees of freedom
    grow by it, as ``paired_decide`` pools it. None: not within ``MOST`` pairs.
    """
    drop_g = -math.log1p(-min(drop_pct, 99.0) / 100.0)
    spread = math.sqrt(2.0) * math.log1p(max(noise_pct, policy.noise_floor_pct) / 100.0)
    rate = policy.false_alarm_rate * policy.last_look_share
    return _needed(
        drop_g,
        lambda n: spread / math.sqrt(n),
        lambda n: n - 1 + prior_df,
        rate,
        max(policy.min_pairs, 2),
    )


def repeats_to_block(
    drop_pct: float,
    noise_pct: float,
    run_noise_pct: float,
    policy: CalibratedPolicy,
    window_runs: int,
    df: float,
) -> int | None:
    """Samples a run needs to BLOCK a ``drop_pct`` drop against its window with ``POWER``.

    The noise a run's samples share (``run_noise_pct``: runner, machine state) does not
    average out over repeats, so a drop under about four times it never blocks by
    repeats alone: None then.
    """
    drop_g = -math.log1p(-min(drop_pct, 99.0) / 100.0)
    sigma = math.log1p(max(noise_pct, policy.noise_floor_pct) / 100.0)
    run_sigma = math.log1p(max(run_noise_pct, policy.run_noise_floor_pct) / 100.0)
    runs = max(window_runs, 1)
    centre = 1.0 / max(runs * policy.initial_repeats, 1)

    def se(m: int) -> float:
        return math.sqrt(sigma**2 * (location_var(m) + centre) + run_sigma**2 * (1 + 1 / runs))

    rate = policy.false_alarm_rate * policy.last_look_share
    start = max(policy.min_block_samples, policy.initial_repeats)
    return _needed(drop_g, se, lambda m: df, rate, start)


def pairs_affordable(budget_minutes: float | None, launch_minutes: float, max_pairs: int) -> int:
    """Pairs a budget lets the bench take: no pair starts once the pairs took the budget."""
    if budget_minutes is None or launch_minutes <= 0:
        return max_pairs
    return min(max_pairs, max(1, math.ceil(budget_minutes / (2.0 * launch_minutes))))


def samples_affordable(
    budget_minutes: float | None, launch_minutes: float, repeats: int, max_repeats: int
) -> int:
    """Samples a run takes at most: its repeats, then none starts once they took the budget."""
    if budget_minutes is None or launch_minutes <= 0:
        return max_repeats
    return min(max_repeats, max(repeats, math.ceil(budget_minutes / launch_minutes)))


@dataclass(frozen=True, kw_only=True)
class Claim:
    """A bucket the window could not clear: how suspicious, and what deciding costs."""

    bucket: str
    severity: int  # the window's verdict severity
    drop_bound_pct: float  # the largest drop the window cannot rule out
    minutes: float  # runner minutes a comparison that can decide needs
    ceiling: float | None = None  # the bucket's own budget (None: no limit)


@dataclass(frozen=True, kw_only=True)
class Grant:
    """What the shared budget gives one claim (0 minutes: not afforded, and why)."""

    bucket: str
    minutes: float
    note: str = ""

    @property
    def afforded(self) -> bool:
        """True when the claim got the minutes it needs."""
        return self.minutes > 0


def allocate(claims: Sequence[Claim], budget_minutes: float | None) -> list[Grant]:
    """Share one run's confirmation budget: the most suspicious first, then the largest
    possible drop; each claim gets what deciding needs (within its own ceiling) or nothing.

    Grants come back in the order they are served. Without a shared budget every claim
    gets its own ceiling.
    """
    order = sorted(claims, key=lambda c: (c.severity, c.drop_bound_pct), reverse=True)
    if budget_minutes is None:
        return [Grant(bucket=c.bucket, minutes=c.ceiling or c.minutes) for c in order]
    left = budget_minutes
    grants = []
    for claim in order:
        need = claim.minutes if claim.ceiling is None else min(claim.minutes, claim.ceiling)
        if need <= left:
            grants.append(Grant(bucket=claim.bucket, minutes=need))
            left -= need
        else:
            grants.append(
                Grant(
                    bucket=claim.bucket,
                    minutes=0.0,
                    note=f"confirming it needed {need:.0f} runner minutes; "
                    f"{max(left, 0.0):.0f} of the run's {budget_minutes:g} were left",
                )
            )
    return grants
