"""The calibrated rule's verdict ladder: a run's samples against an analysed window (R5). Pure.

The bench loop (the bench step owns the runner)::

    model = analyse_window(window, policy=policy, direction=direction)
    samples = [measure() for _ in range(policy.initial_repeats)]
    while calibrated_decide(model, samples, policy=policy).need_more and time_left():
        samples.append(measure())

and the verdict, in the bench and again in the gate: ``calibrated_decide(..., final=True)``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from perfgate.config import Direction
from perfgate.judge.decision import Decision, DecisionBasis
from perfgate.judge.goodness import (
    from_g,
    g_of_regression,
    pct_of_g,
    regression_of_g,
    signed_pct,
    to_g,
)
from perfgate.judge.modes import nearest
from perfgate.judge.numerics import (
    huber_location,
    location_var,
    mann_whitney_u,
    mwu_critical,
    t_isf,
)
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import WindowModel


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
    # How far below the window's best mode the matched modes sit, g units, when every
    # sample matched a slower mode (0: not so). A slower mode of whole runs is a machine
    # state; one of single samples (cold starts, throttling) counts when unchanged code
    # lands every sample in it less often than SLOWER_MODE_CHANCE: a drop can pass for
    # "the other mode" either way, and only pairs can tell.
    state_gap: float = 0.0

    @property
    def t(self) -> float:
        """Studentised change; infinite when a noiseless window meets a different run."""
        if self.se > 0:
            return self.delta / self.se
        return 0.0 if self.delta == 0 else math.copysign(math.inf, self.delta)


#: Below this chance that unchanged code put every sample of a run in the slower modes it
#: matched, the run is sent to pairs rather than cleared (a cost, not an error: pairs
#: decide). A benchmark with two speeds, 30 % of samples in the slower, still clears a run
#: of three slow samples (2.7 %); three cold starts in 24 samples do not clear three (0.2 %).
SLOWER_MODE_CHANCE = 0.01


def _evidence(model: WindowModel, samples_g: Sequence[float]) -> _Evidence:
    """Match each sample to its mode, then the Huber location of the residuals."""
    modes = model.modes
    centers = [m.center for m in modes]
    sigma = model.sigma
    resid: list[float] = []
    var_center = 0.0
    base = 0.0
    ambiguous = 0
    gaps: list[float] = []
    # That unchanged code's samples all land in the sample-level modes they matched.
    chance, sample_level = 1.0, False
    counted = max(sum(mode.count for mode in modes), 1)
    best = len(modes) - 1  # modes ascend in goodness
    # States of whole runs hold a run with all its samples: the run is matched as a whole
    # (its median), or a drop halfway between two states would match half its samples to
    # each and average out.
    whole = len(modes) > 1 and all(m.run_level for m in modes)
    anchor = statistics.median(samples_g) if whole and samples_g else None
    for y in samples_g:
        at = y if anchor is None else anchor
        k = nearest(at, centers)
        state = k  # the state the sample may be in: its mode, or the one below the gap
        if len(modes) > 1:
            # Between two adjacent modes, a sample in the middle third (and > 3 sigma from
            # both) fits neither: it is counted and named in the verdict; its residual
            # against the nearer mode still counts, the Huber location bounds its weight.
            below = max((j for j in range(len(centers)) if centers[j] <= at), default=None)
            above = min((j for j in range(len(centers)) if centers[j] > at), default=None)
            if below is not None and above is not None:
                gap = centers[above] - centers[below]
                near = min(at - centers[below], centers[above] - at)
                if near > max(gap / 3.0, 3.0 * sigma):
                    ambiguous += 1
                    state = below
        gaps.append(centers[best] - centers[state])
        if not modes[state].run_level:
            chance *= modes[state].count / counted
            sample_level = True
        resid.append(y - centers[k])
        var_center += modes[k].var
        base += centers[k]
    m = len(resid)  # every sample: one between two modes counts against the nearer
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
        state_gap=math.fsum(gaps) / m
        if all(g > 0.0 for g in gaps) and (not sample_level or chance < SLOWER_MODE_CHANCE)
        else 0.0,
    )


class _Look(NamedTuple):
    """One look at a run's evidence: its lines (t, rank, size), what they say, and the
    drops the window cannot rule out, in g units unless named otherwise."""

    ev: _Evidence
    samples: int
    t_block: float
    t_improve: float
    t_warn: float
    t_ci: float
    min_drop: float
    min_gain: float
    n_window: int  # window residuals the rank test compares with
    u_improve: int
    may_block: bool  # enough samples for a BLOCK
    significant: bool  # past the block line by t and by rank
    big: bool  # a drop of at least the minimum
    past_warn: bool
    below_window: bool  # every sample of the run below every sample of the window (U = 0)
    # More samples could still make this a BLOCK: not when even the pessimistic end of the
    # warn-level interval is a drop under the minimum.
    could_be_big: bool
    change: float  # the change, metric %
    # the run against the window's best state, and the drop from it the warn line leaves
    # possible (-inf: the run is in the best state, or in a mode of single samples)
    best_drop: float
    state_bound: float
    resolution: float  # the drop the full budget's last look could BLOCK, metric %


def _look(
    model: WindowModel, ev: _Evidence, m: int, policy: CalibratedPolicy, last_look: bool
) -> _Look:
    """The lines of this look (the last look's share of the false-alarm rate when
    ``last_look``) and where the run's evidence lies against them."""
    direction = model.direction
    share = policy.look_share(last_look)
    level = policy.false_block_rate * share
    t_block = t_isf(level, ev.df)
    t_warn = t_isf(policy.warn_rate, ev.df)
    # minimum changes as the metric's own percentages (a 3 % drop of a throughput, a 3 %
    # rise of a latency), like the reference rule's regression_pct
    min_drop = g_of_regression(policy.min_drop_pct, direction)
    n_window = len(model.residuals)
    # With too few samples for the rank test to reach its level at all, the run must at
    # least lie beyond every window sample (U = 0): one-sample buckets can still block.
    u_block = max(mwu_critical(ev.used, n_window, policy.rank_rate * share), 0)
    # resolution: the drop that would sit on the last look's block line with the full budget
    t_last = t_isf(policy.false_block_rate * policy.look_share(True), ev.df)
    se_full = math.sqrt(
        model.sigma**2 * (location_var(policy.max_repeats) + ev.center_var) + ev.run_var
    )
    best_drop = -(ev.delta + ev.baseline_g - model.modes[-1].center) if ev.state_gap else -math.inf
    return _Look(
        ev=ev,
        samples=m,
        t_block=t_block,
        t_improve=t_isf(policy.false_block_rate, ev.df),
        t_warn=t_warn,
        t_ci=t_isf((1.0 - policy.confidence) / 2.0, ev.df),
        min_drop=min_drop,
        min_gain=-g_of_regression(-policy.min_drop_pct, direction),
        n_window=n_window,
        u_improve=max(mwu_critical(ev.used, n_window, policy.rank_rate), 0),
        may_block=ev.used >= min(policy.min_block_samples, policy.max_repeats),
        significant=ev.t <= -t_block and ev.u <= u_block,
        big=-ev.delta >= min_drop,
        past_warn=ev.t <= -t_warn,
        below_window=n_window > 0 and ev.u == 0.0,
        could_be_big=-(ev.delta - t_warn * ev.se) >= min_drop,
        change=pct_of_g(ev.delta, direction),
        best_drop=best_drop,
        state_bound=best_drop + t_warn * ev.se,
        resolution=abs(pct_of_g(-max(t_last * se_full, min_drop), direction)),
    )


class _Call(NamedTuple):
    """A verdict, the reason that names it, and its explanation."""

    verdict: Verdict
    reason: Reason
    detail: str


def _ladder(model: WindowModel, look: _Look, policy: CalibratedPolicy) -> _Call:
    """The verdict ladder: the first rung the run's evidence reaches, most severe first."""
    ev, m, change = look.ev, look.samples, look.change
    significant, big, past_warn = look.significant, look.big, look.past_warn
    mode_note = (
        f" ({len(model.modes)} modes, judged against the matching one)" if model.multimodal else ""
    )
    between = f"; {ev.ambiguous} sample(s) between modes not used" if ev.ambiguous else ""
    if significant and big and look.may_block:
        verdict, reason = Verdict.BLOCK, Reason.REGRESSION
        detail = f"regression {signed_pct(change)} %, past the block line{mode_note}{between}"
    elif (
        ev.t >= look.t_improve
        and ev.delta >= look.min_gain
        and ev.u >= ev.used * look.n_window - look.u_improve
    ):
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
    elif big and (past_warn or look.below_window):
        # A blocking drop by its estimate that lies below the whole window is never cleared,
        # even short of the warn line: a window that cannot tell it from noise (a few runs
        # that differ widely) cannot clear it either.
        verdict, reason = Verdict.INCONCLUSIVE, Reason.UNRESOLVED
        detail = (
            f"drop {signed_pct(change)} % cannot be told from noise with {m} sample(s){between}"
        )
        if look.resolution > policy.min_drop_pct:
            detail += f"; this window cannot resolve drops under {look.resolution:.0f} %"
    elif past_warn and look.could_be_big:
        # the budget is spent and a blocking drop is still inside the interval
        verdict, reason = Verdict.WARN, Reason.POSSIBLE_REGRESSION
        detail = f"possible regression {signed_pct(change)} %, past the warn line{between}"
    else:
        # short of the warn line with samples among the window's, or past it but provably
        # under the minimum drop, is noise, not a warning
        verdict, reason = Verdict.PASS, Reason.WITHIN_NOISE
        detail = f"within noise ({signed_pct(change)} %){mode_note}{between}"
        if look.resolution > 2.0 * policy.min_drop_pct:
            detail += f"; this window cannot resolve drops under {look.resolution:.0f} %"
    return _Call(verdict, reason, detail)


def _whole_run_states(model: WindowModel, look: _Look, call: _Call) -> _Call:
    """The call once the window's states of whole runs are taken into account.

    A run that matches a slower state of whole runs may be that state, or a drop from the
    best one: the window cannot tell them apart, and the run's repeats share its state.
    Never cleared or called an improvement on the window alone: pairs on one runner, in
    one state, decide. Nor BLOCKed for a drop unchanged code has shown as a whole run.
    """
    ev, direction, history = look.ev, model.direction, model.history
    slower_state = ev.state_gap > 0.0 and call.verdict in (Verdict.PASS, Verdict.IMPROVED,
                                                          Verdict.WARN)  # fmt: skip
    if slower_state and look.state_bound >= look.min_drop:
        gap = regression_of_g(ev.state_gap, direction)
        kind = "state" if all(mode.run_level for mode in model.modes) else "mode"
        detail = (
            f"matches the window's slower {kind} ({gap:.1f} % below its best); a drop of "
            f"up to {regression_of_g(look.state_bound, direction):.1f} % from the best state "
            "cannot be told from it without a paired comparison on the same runner"
        )
        return _Call(Verdict.WARN, Reason.SLOWER_STATE, detail)
    if slower_state and call.verdict is Verdict.IMPROVED:
        detail = f"within noise ({signed_pct(look.change)} % against the window's slower state)"
        return _Call(Verdict.PASS, Reason.WITHIN_NOISE, detail)
    if call.verdict is Verdict.BLOCK and -ev.delta - look.t_block * ev.se < history.deepest:
        # Unchanged code has fallen about this far as a whole run on this pool (a slower
        # machine state for a run's length): the window cannot tell this run from one.
        deepest = regression_of_g(history.deepest, direction)
        near = history.as_deep(-ev.delta - look.t_block * ev.se)
        detail = (
            f"drop {signed_pct(look.change)} %, but {near} of the last {history.runs} runs of "
            f"unchanged code fell as a whole nearly as far (up to {deepest:.1f} %); only a "
            "paired comparison on the same runner can tell this run from one of them"
        )
        return _Call(Verdict.INCONCLUSIVE, Reason.RUN_STATE, detail)
    return call


def calibrated_decide(
    model: WindowModel, samples: Sequence[float], *, policy: CalibratedPolicy, final: bool = False
) -> Decision:
    """Verdict for the run's samples so far; ``need_more`` asks the bench for another one.

    Sequential rule: every run takes ``initial_repeats`` samples; while the run is
    suspicious (past the warn line, or a drop of ``min_drop_pct`` not yet confirmed) and
    could still turn out to be a blocking drop, it takes more, up to ``max_repeats``.

    A BLOCK needs, at one look, all of: the robust t below ``-t_block``, the t critical
    value at ``false_block_rate * share``; the rank test (Mann-Whitney of the run's
    residuals against the window's) at ``rank_rate * share``; a drop of at least
    ``min_drop_pct``; ``min_block_samples`` samples. The shares of the looks at which a
    BLOCK is possible sum to one (Bonferroni, ``CalibratedPolicy.look_share``), so the
    rates hold per bucket-run however many samples the run takes. The t test holds the
    rate for near-normal noise; the rank test caps it at ``rank_rate`` for any noise
    distribution of an exchangeable window.
    ``final=True`` (time budget spent) turns the current evidence into a verdict.
    """
    direction = model.direction
    basis = DecisionBasis(
        policy=policy.name,
        samples=len(samples),
        window_samples=model.samples_used,
        window_runs=model.runs_used,
        modes=model.public_modes(),
        shift=model.shift,
    )
    info: list[Reason] = []
    if model.shift is not None:
        info.append(Reason.LEVEL_SHIFT)
    if model.problem is not None:
        verdict = Verdict.INCONCLUSIVE if model.problem is Reason.SHIFT_SETTLING else Verdict.WARN
        return replace(
            Decision.on(
                basis, verdict=verdict, reasons=(model.problem, *info), detail=model.detail
            ),
            noise_pct=pct_of_g(model.sigma, Direction.HIGHER) if model.sigma else None,
        )
    if not samples:
        return replace(
            Decision.on(
                basis, verdict=Verdict.WARN, reasons=(Reason.NO_SAMPLES,), detail="no samples"
            ),
            need_more=not final,
        )
    if model.multimodal:
        info.append(Reason.MULTIMODAL)
    m = len(samples)
    ev = _evidence(model, [to_g(v, direction) for v in samples])
    look = _look(model, ev, m, policy, last_look=final or m >= policy.max_repeats)
    need_more = False
    if not final and m < policy.initial_repeats:
        need_more = True
    elif (
        not final
        and m < policy.max_repeats
        and not (look.significant and look.big and look.may_block)
    ):
        # suspicious: past the warn line, or a blocking drop below the whole window, with a
        # blocking drop still possible; or samples that fit no mode of the window (more
        # samples show which mode the run is in)
        suspect = look.past_warn or (look.big and look.below_window)
        need_more = (suspect and look.could_be_big) or ev.ambiguous * 2 >= m
    call = _whole_run_states(model, look, _ladder(model, look, policy))
    return _with_statistics(
        Decision.on(basis, verdict=call.verdict, reasons=(call.reason, *info), detail=call.detail),
        model,
        look,
        policy,
        need_more=need_more,
    )


def _with_statistics(
    decision: Decision,
    model: WindowModel,
    look: _Look,
    policy: CalibratedPolicy,
    *,
    need_more: bool,
) -> Decision:
    """``decision`` with the statistics behind it, as verdict.json carries them."""
    ev, direction = look.ev, model.direction
    lo = pct_of_g(ev.delta - look.t_ci * ev.se, direction)
    hi = pct_of_g(ev.delta + look.t_ci * ev.se, direction)
    block_g = ev.baseline_g - max(look.t_block * ev.se, look.min_drop)
    warn_g = ev.baseline_g - look.t_warn * ev.se
    return replace(
        decision,
        need_more=need_more,
        drop_possible=look.could_be_big,
        drop_bound_pct=regression_of_g(
            max(-(ev.delta - look.t_warn * ev.se), look.state_bound),
            direction,
        ),
        drop_pct=regression_of_g(-ev.delta, direction),
        # what no number of repeats can rule out: the noise the run shares, its state
        repeats_bound_pct=regression_of_g(
            max(-(ev.delta - look.t_warn * math.sqrt(ev.run_var)), look.best_drop),
            direction,
        ),
        value=from_g(ev.baseline_g + ev.delta, direction),
        baseline=from_g(ev.baseline_g, direction),
        effect_pct=look.change,
        interval_pct=(min(lo, hi), max(lo, hi)),
        confidence=policy.confidence,
        block_line=from_g(block_g, direction),
        warn_line=from_g(warn_g, direction),
        threshold_pct=pct_of_g(block_g - ev.baseline_g, direction),
        t=ev.t,
        t_block=look.t_block,
        df=ev.df,
        noise_pct=pct_of_g(model.sigma, Direction.HIGHER),
        run_noise_pct=pct_of_g(model.run_sigma, Direction.HIGHER),
        within_noise_pct=pct_of_g(model.within_sigma, Direction.HIGHER)
        if model.within_df
        else None,
        within_df=model.within_df or None,
        resolution_pct=look.resolution,
        between_modes=ev.ambiguous,
    )
