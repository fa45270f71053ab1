"""The bench's questions on a suspicious run: another sample? pairs? can they decide? (R5, R17)

The bench owns the runner, so it confirms a suspicious bucket there, locally and in CI.
It asks this module (pure) on the bucket's windows, which its ``WindowSource``
(``baselines.confirm.StoreWindows``) reads from the baseline branch once (read-only) with
the history runner offsets are learned from;
each is analysed once on the run's runner's terms (``judge.runner_offsets``). Every sample
measures every metric, so a question is answered for the bucket: yes when any metric that
gates asks.

* ``gate.confirm: repeat``: after each sample, ``needs_sample`` (the rule's ``need_more``).
* ``gate.confirm: paired`` (the default): after the repeats, ``step`` says what to spend
  next (``judge.budget.next_step``): nothing when the window rules out a drop of
  ``confirm_drop_pct``; another launch on this runner while more repeats could still rule
  it out; else the merge base beside the change, checked out in a throwaway worktree (as
  seeding does; ``run.paired``) with its own perfgate.yaml and benchmark, pair after
  pair until the paired test (``judge.paired``, the window's within-run noise pooled in)
  says no more (``needs_pair``). ``pair_plan`` first says whether the pairs the budget
  affords can BLOCK a drop that matters at this noise and launch time; when they cannot,
  none is taken and the window's verdict stands. No merge base to measure (not a git
  checkout, no parent, another experiment there): the run confirms by repeats instead.

The gate later judges the recorded samples as the window's last look, and the pairs at
the look where the bench stopped (``paired.settled_decision``), and so reaches the
bench's verdicts.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import Protocol

from perfgate.config import PRIMARY, Bucket, Config, Metric
from perfgate.judge.bucket_policy import confirm_drop_for, pair_noise, paired_policy_for, policy_for
from perfgate.judge.budget import (
    UNJUDGED,
    Affordability,
    next_step,
    pair_affordability,
    suspicion,
    unaffordable,
    uncleared,
)
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.decision import Decision
from perfgate.judge.paired import paired_decide
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.rule import decide
from perfgate.judge.runner_offsets import WindowRunners, WindowView, window_view
from perfgate.judge.verdicts import Reason
from perfgate.result import PairedRecord, Result
from perfgate.run.allowance import MARGIN
from perfgate.run.paired import PairPlan
from perfgate.run.sampling import Step


class RecordedWindow(Protocol):
    """What the confirmer reads of a bucket's stored window (``baselines.samples.Window``)."""

    def runs(self) -> Sequence[Sequence[float]]:
        """The window's runs, nearest first, each the samples it took."""
        ...

    def runners(self) -> WindowRunners:
        """Who measured each run, and the runner model fitted when they were stored."""
        ...

    def launch_seconds(self) -> list[float]:
        """The recorded durations of the window's launches."""
        ...


class WindowSource(Protocol):
    """Where the confirmer's windows come from (``baselines.confirm.StoreWindows`` reads the
    baseline branch): how a metric's window is keyed, the windows, the accepted changes."""

    def key(self, result: Result, metric: str) -> Hashable:
        """What a metric's window is selected by: results with one key share their window."""
        ...

    def read(
        self, bucket: Bucket, keys: Sequence[Hashable]
    ) -> dict[Hashable, RecordedWindow | None]:
        """The windows ``keys`` select, in one read (None each: none to judge against)."""
        ...

    def known_shift(self, bucket: Bucket, metric: str, window: RecordedWindow) -> int | None:
        """After how many of ``window``'s nearest runs an accepted change starts a new level
        (R18), as the gate judges it."""
        ...


class Confirmer:
    """Answers the bench's questions from each bucket's windows, read once per key.

    Pure: the windows come from ``windows``, which the bench reads from the baseline branch.
    """

    def __init__(
        self,
        config: Config,
        windows: WindowSource,
        *,
        calibration: NoiseCalibration | None = None,
    ) -> None:
        self.config = config
        self.windows = windows
        # The gate's calibration (gate.calibration): bench and gate judge with one noise.
        self.calibration = calibration
        self._windows: dict[Hashable, RecordedWindow | None] = {}
        self._views: dict[tuple[Hashable, str | None], WindowView | None] = {}

    # -- gate.confirm: repeat ---------------------------------------------------------------

    def needs_sample(self, bucket: Bucket, result: Result) -> bool:
        """True when a gating metric's samples so far leave its verdict open."""
        return any(
            decision.need_more
            for decision in self.decisions(bucket, result, final=False).values()
            if decision is not None
        )

    # -- gate.confirm: paired ---------------------------------------------------------------

    def step(self, bucket: Bucket, result: Result) -> Step:
        """What the run should spend next: nothing, another launch here, or pairs.

        Pairs when any gating metric needs them; another launch when one could still be
        cleared by repeats (within ``max_repeats``) and none needs pairs.
        """
        counted = len(result.metric.sample_values(result.set_aside))
        steps = {
            next_step(
                decision,
                confirm_drop_pct=self._confirm_drop(bucket, result, name),
                samples=counted,
                most=bucket.max_repeats,
            )
            for name, decision in self.decisions(bucket, result, final=True).items()
            if decision is not None
        }
        if Step.PAIR in steps:
            return Step.PAIR
        return Step.REPEAT if Step.REPEAT in steps else Step.DONE

    def pair_plan(self, bucket: Bucket, result: Result, left_minutes: float | None) -> PairPlan:
        """How many pairs to take, or why none: the pairs the bucket's budgets afford
        cannot BLOCK a drop that matters (``affordability``), or what deciding needs is
        more than ``left_minutes`` of the run's shared budget."""
        plan = self.affordability(bucket, result)
        if plan is None and left_minutes is not None and left_minutes <= 0:
            return PairPlan(pairs=0, skipped="the run's confirmation budget is spent")
        if plan is None:
            return PairPlan(pairs=bucket.max_pairs)
        if not plan.decides:
            return PairPlan(pairs=0, skipped=f"{plan.short()}: {plan.text()}")
        # What deciding needs as the bench spends it: the pairs, the merge base's warm-up
        # (its cache is keyed by its commit) and the margin nothing optional starts without.
        why = unaffordable(plan.minutes * MARGIN + plan.launch_minutes, left_minutes)
        return PairPlan(pairs=0, skipped=why) if why else PairPlan(pairs=plan.afforded)

    def order(self, runs: Sequence[tuple[Bucket, Result]]) -> list[Bucket]:
        """The buckets the window cannot clear, the most suspicious first (the order the
        run's shared budget is spent in), then the others."""
        suspicious = {}
        for bucket, result in runs:
            decisions = [d for d in self.decisions(bucket, result, final=True).values() if d]
            if decisions and self.step(bucket, result) is not Step.DONE:
                suspicious[bucket.id] = suspicion(max(decisions, key=suspicion))
        first = sorted(suspicious, key=suspicious.__getitem__, reverse=True)
        rest = [bucket.id for bucket, _ in runs if bucket.id not in suspicious]
        found = {bucket.id: bucket for bucket, _ in runs}
        return [found[name] for name in (*first, *rest)]

    def affordability(self, bucket: Bucket, result: Result) -> Affordability | None:
        """Can the pairs this bucket's budgets afford BLOCK a drop that matters (the drop
        worth confirming, or the one the window estimates when that is larger)?

        Asked of each gating metric the window cannot clear, with its within-run noise and
        the launch time (this run's own samples, else the history's recorded durations,
        else ``launch_minutes``); the first that can decide is returned, else the first
        that cannot. None: nothing to plan (no launch time known, or nothing uncleared).
        """
        bucket = bucket.selecting(result.metrics)
        launch = self.launch_minutes(bucket, result)
        if launch is None:
            return None
        plans = []
        for name, decision in self.decisions(bucket, result, final=True).items():
            drop = self._confirm_drop(bucket, result, name)
            if decision is None or not uncleared(decision, drop):
                continue
            # Pairs that cannot tell a 5 % drop may still tell the 10 % the window reads:
            # they are planned for the larger, so a deep drop is never left unpaired.
            drop = max(drop, decision.drop_pct or 0.0)
            metric = next(m for m in bucket.all_metrics if m.name == name)
            policy = paired_policy_for(bucket, self.config.gate, result.hardware.slug, metric)
            prior = pair_noise(decision)
            noise = prior.noise_pct if prior else decision.noise_pct or 0.0
            plans.append(
                pair_affordability(
                    budget_minutes=bucket.pair_budget_minutes,
                    max_pairs=bucket.max_pairs,
                    launch_minutes=launch,
                    drop_pct=drop,
                    noise_pct=noise,
                    policy=policy,
                    prior_df=prior.df if prior else 0.0,
                )
            )
        return next((p for p in plans if p.decides), plans[0] if plans else None)

    def launch_minutes(self, bucket: Bucket, result: Result) -> float | None:
        """One launch of this bucket, in runner minutes: this run's samples, else the
        history's recorded durations, else the bucket's ``launch_minutes``."""
        own = [s.wall_s for s in result.metric.samples if s.wall_s > 0]
        if own:
            return statistics.median(own) / 60.0
        window = self._window(bucket, bucket.metric, result)
        recorded = window.launch_seconds() if window is not None else []
        if recorded:
            return statistics.median(recorded) / 60.0
        return bucket.launch_minutes

    def needs_pair(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        """After each pair: is the paired test of any gating metric still undecided?

        Undecided, not "may take another": at the last pair allowed the test is still
        undecided, and the bench then reports the limit, never a settled comparison.
        """
        bucket, hardware = bucket.selecting(result.metrics), result.hardware.slug
        decisions = self.decisions(bucket, result, final=True)
        return any(
            paired_decide(
                paired.pairs(metric.name),
                direction=result.all_metrics[metric.name].direction,
                policy=paired_policy_for(bucket, self.config.gate, hardware, metric),
                prior=pair_noise(decisions.get(metric.name)),
            ).reason
            is Reason.PAIRED_UNRESOLVED
            for metric in bucket.all_metrics
            if metric.gates and metric.name in result.all_metrics
        )

    # -- the windows ------------------------------------------------------------------------

    def _confirm_drop(self, bucket: Bucket, result: Result, name: str) -> float:
        """The drop worth confirming for one metric of the bucket."""
        bucket = bucket.selecting(result.metrics)
        metric = next(m for m in bucket.all_metrics if m.name == name)
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        return confirm_drop_for(self.config.gate, policy.min_drop_pct)

    def decisions(
        self, bucket: Bucket, result: Result, *, final: bool
    ) -> dict[str, Decision | None]:
        """Each gating metric's window decision on the run's samples so far, by metric name
        (None: not measured, nothing to judge against, or the window cannot judge yet).

        A bucket whose selections make many metrics reads their windows at once."""
        bucket = bucket.selecting(result.metrics)
        unread = {
            key: None
            for metric in bucket.all_metrics
            if metric.gates and metric.name in result.all_metrics
            and (key := self.windows.key(result, metric.name)) not in self._windows
        }  # fmt: skip
        if len(unread) > 1:
            self._windows.update(self.windows.read(bucket, list(unread)))
        decisions: dict[str, Decision | None] = {}
        for metric in bucket.all_metrics:
            reading = result.all_metrics.get(metric.name)
            if not metric.gates or reading is None:
                continue
            values = reading.sample_values(result.set_aside)
            if not values:
                # every sample on an unfit machine: more would only cost the runner
                decisions[metric.name] = None
                continue
            decision = self._decide(bucket, metric, result, values, final=final)
            unjudged = decision is not None and decision.reasons[0] in UNJUDGED
            decisions[metric.name] = None if unjudged else decision
        return decisions

    def _decide(
        self,
        bucket: Bucket,
        metric: Metric,
        result: Result,
        values: Sequence[float],
        *,
        final: bool,
    ) -> Decision | None:
        """One metric's window decision (None when the baseline branch cannot be read)."""
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        direction = result.all_metrics[metric.name].direction
        if not isinstance(policy, CalibratedPolicy):
            window = self._window(bucket, metric, result)
            if window is None:
                return None
            shift = self.windows.known_shift(bucket, metric.name, window)
            return decide(
                window.runs(), values, direction=direction, policy=policy, known_shift=shift
            )
        view = self._view(bucket, metric, result, policy)
        return None if view is None else view.decide(values, policy, final=final)

    def _view(
        self, bucket: Bucket, metric: Metric, result: Result, policy: CalibratedPolicy
    ) -> WindowView | None:
        """A metric's window on this run's runner's terms; None when it cannot be read."""
        key = self.windows.key(result, metric.name)
        runner = result.ci.runner_identity
        if (key, runner) not in self._views:
            window = self._window(bucket, metric, result)
            if window is None:
                self._views[(key, runner)] = None
                return None
            # As the gate judges it: an A/A calibration measures the primary metric's noise,
            # unless the window's own noise shows it wrong.
            measured = None
            if self.calibration is not None and metric.name == PRIMARY:
                measured = self.calibration.use_for(result, window.runs(), policy).applied
            self._views[(key, runner)] = window_view(
                window.runs(),
                window.runners(),
                runner,
                policy=policy,
                direction=result.all_metrics[metric.name].direction,
                known_shift=self.windows.known_shift(bucket, metric.name, window),
                calibration=measured.for_rule() if measured is not None else None,
            )
        return self._views[(key, runner)]

    def _window(self, bucket: Bucket, metric: Metric, result: Result) -> RecordedWindow | None:
        """A metric's window and history, read once per key (None: none to judge against)."""
        key = self.windows.key(result, metric.name)
        if key not in self._windows:
            self._windows[key] = self.windows.read(bucket, [key])[key]
        return self._windows[key]
