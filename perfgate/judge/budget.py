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
* ``suspicion`` / ``unaffordable``: one budget per run shared by the matrix, spent on
  the most suspicious buckets first, the largest possible drops first; what it cannot
  afford is named with what it would have needed.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from perfgate.judge.decision import Decision
from perfgate.judge.numerics import location_var, t_isf
from perfgate.judge.paired import PairedPolicy
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.run.sampling import Step

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
    if decision.drop_bound_pct is None:
        return decision.verdict is Verdict.WARN  # the reference rule: past its warn line
    if decision.verdict is Verdict.IMPROVED:
        return False
    return decision.drop_bound_pct >= confirm_drop_pct


def next_step(decision: Decision, *, confirm_drop_pct: float, samples: int, most: int) -> Step:
    """The cheapest evidence first: another launch here while more samples of this run
    could still clear it (``most`` not yet taken, and the noise its samples share leaves
    room); pairs when it would BLOCK, a whole-run fall could explain it, or no number of
    repeats could clear it; nothing once it cleared the run."""
    if not uncleared(decision, confirm_drop_pct):
        return Step.DONE
    if (
        decision.verdict is Verdict.BLOCK
        or Reason.RUN_STATE in decision.reasons
        or Reason.SLOWER_STATE in decision.reasons
        or decision.repeats_bound_pct is None  # the reference rule takes no more samples
        or decision.repeats_bound_pct >= confirm_drop_pct
        or samples >= most
    ):
        return Step.PAIR
    return Step.REPEAT


def clear_drop(min_drop_pct: float, confirm_drop_pct: float) -> float:
    """The drop a paired comparison must rule out before it stops: halfway between the
    minimum and ``confirm_drop_pct``, so a drop that matters is rarely cleared by the
    pairs' own noise, and unchanged code still stops after two or three pairs."""
    return (min_drop_pct + max(confirm_drop_pct, min_drop_pct)) / 2.0


def suspicion(decision: Decision) -> tuple[int, float]:
    """The order one run's shared budget is spent in, as a key sorted descending: the most
    suspicious verdict first, then the largest drop the window cannot rule out. Each is
    then confirmed within what the budget has left (``unaffordable``), so what a settled
    one did not spend goes on."""
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
    rate = policy.false_block_rate * policy.last_look_share
    return _needed(
        drop_g,
        lambda n: spread / math.sqrt(n),
        lambda n: n - 1 + prior_df,
        rate,
        max(policy.min_pairs, 2),
    )


@dataclass(frozen=True, kw_only=True)
class WindowNoise:
    """The noise a budget is checked against: per sample and shared by one run's samples
    (% of the level), the degrees of freedom behind them, and the window's runs."""

    noise_pct: float
    run_noise_pct: float
    df: float
    window_runs: int


def repeats_to_block(drop_pct: float, noise: WindowNoise, policy: CalibratedPolicy) -> int | None:
    """Samples a run needs to BLOCK a ``drop_pct`` drop against its window with ``POWER``.

    The noise a run's samples share (``run_noise_pct``: runner, machine state) does not
    average out over repeats, so a drop under about four times it never blocks by
    repeats alone: None then.
    """
    drop_g = -math.log1p(-min(drop_pct, 99.0) / 100.0)
    sigma = math.log1p(max(noise.noise_pct, policy.noise_floor_pct) / 100.0)
    run_sigma = math.log1p(max(noise.run_noise_pct, policy.run_noise_floor_pct) / 100.0)
    runs = max(noise.window_runs, 1)
    centre = 1.0 / max(runs * policy.initial_repeats, 1)

    def se(m: int) -> float:
        return math.sqrt(sigma**2 * (location_var(m) + centre) + run_sigma**2 * (1 + 1 / runs))

    rate = policy.false_block_rate * policy.last_look_share
    start = max(policy.min_block_samples, policy.initial_repeats)
    return _needed(drop_g, se, lambda m: noise.df, rate, start)


@dataclass(frozen=True, kw_only=True)
class Affordability:
    """Whether a bucket's budget buys a comparison that can BLOCK a drop of ``drop_pct``."""

    what: Step  # PAIR or REPEAT
    budget_minutes: float | None
    launch_minutes: float
    afforded: int  # pairs (or samples) the budget lets the bench take
    most: int  # max_pairs (or max_repeats): the count limit
    needed: int | None  # what a BLOCK needs with POWER (None: more than MOST)
    drop_pct: float
    noise_pct: float

    @property
    def decides(self) -> bool:
        """True when the budget affords what a BLOCK needs."""
        return self.needed is not None and self.needed <= self.afforded

    @property
    def minutes(self) -> float:
        """Runner minutes of a comparison that can decide (of what is afforded otherwise)."""
        launches = (2 if self.what is Step.PAIR else 1) * (self.needed or self.afforded)
        return launches * self.launch_minutes

    def short(self) -> str:
        """'3 pairs cannot confirm a 5 % drop': why a budget that cannot decide takes none."""
        return f"{self.afforded} {self.what}s cannot confirm a {self.drop_pct:g} % drop"

    def text(self) -> str:
        """'pair budget 60 min allows 3 pairs at 14 min a launch; BLOCKing a 5 % drop at
        2 % noise needs 6' (and the same for samples against the window)."""
        plural = f"{self.what}s"
        if self.budget_minutes is None or self.afforded >= self.most:
            limit = f"max_{plural} {self.most} allows {self.afforded} {plural}"
        else:
            limit = (f"{self.what} budget {self.budget_minutes:g} min allows {self.afforded} "
                     f"{plural}")  # fmt: skip
        need = f"needs {self.needed}" if self.needed is not None else f"needs more than {MOST}"
        return (
            f"{limit} at {self.launch_minutes:.3g} min a launch; BLOCKing a {self.drop_pct:g} % "
            f"drop at {self.noise_pct:.2g} % noise {need}"
        )


def pair_affordability(
    *,
    budget_minutes: float | None,
    max_pairs: int,
    launch_minutes: float,
    drop_pct: float,
    noise_pct: float,
    policy: PairedPolicy,
    prior_df: float = 0.0,
) -> Affordability:
    """Can the pairs a budget affords BLOCK a ``drop_pct`` drop at ``noise_pct`` noise?"""
    return Affordability(
        what=Step.PAIR,
        budget_minutes=budget_minutes,
        launch_minutes=launch_minutes,
        afforded=pairs_affordable(budget_minutes, launch_minutes, max_pairs),
        most=max_pairs,
        needed=pairs_to_block(drop_pct, noise_pct, policy, prior_df),
        drop_pct=drop_pct,
        noise_pct=noise_pct,
    )


def repeat_affordability(
    *,
    budget_minutes: float | None,
    repeats: int,
    max_repeats: int,
    launch_minutes: float,
    drop_pct: float,
    noise: WindowNoise,
    policy: CalibratedPolicy,
) -> Affordability:
    """Can the samples a budget affords BLOCK a ``drop_pct`` drop against the window?"""
    return Affordability(
        what=Step.REPEAT,
        budget_minutes=budget_minutes,
        launch_minutes=launch_minutes,
        afforded=samples_affordable(budget_minutes, launch_minutes, repeats, max_repeats),
        most=max_repeats,
        needed=repeats_to_block(drop_pct, noise, policy),
        drop_pct=drop_pct,
        noise_pct=noise.noise_pct,
    )


def pairs_affordable(budget_minutes: float | None, launch_minutes: float, max_pairs: int) -> int:
    """Pairs a budget lets the bench take: a cap, so only the pairs that finish within it
    (0 when not even one does)."""
    if budget_minutes is None or launch_minutes <= 0:
        return max_pairs
    return min(max_pairs, math.floor(budget_minutes / (2.0 * launch_minutes) + 1e-9))


def samples_affordable(
    budget_minutes: float | None, launch_minutes: float, repeats: int, max_repeats: int
) -> int:
    """Samples a run takes at most: its repeats, then only those that finish within the
    budget (a cap)."""
    if budget_minutes is None or launch_minutes <= 0:
        return max_repeats
    return min(max_repeats, max(repeats, math.floor(budget_minutes / launch_minutes + 1e-9)))


def unaffordable(needed_minutes: float, left_minutes: float | None) -> str:
    """Why a comparison that can decide is not started ('' when the budget affords it)."""
    if left_minutes is None or needed_minutes <= left_minutes:
        return ""
    return (
        f"the run's confirmation budget cannot afford them: deciding needed "
        f"{needed_minutes:.0f} runner minutes, {max(left_minutes, 0.0):.0f} were left"
    )
