"""The bench's questions on a suspicious run: another sample? pairs? can they decide? (R5, R17)

The bench owns the runner, so it confirms a suspicious bucket there, locally and in CI.
It asks this module, which reads the bucket's windows from the baseline branch once
(read-only), with the history runner offsets are learned from, and analyses each once on
the run's runner's terms (``judge.runners``). Every sample measures every metric, so a
question is answered for the bucket: yes when any metric that gates asks.

* ``gate.confirm: repeat``: after each sample, the calibrated rule's ``need_more``.
* ``gate.confirm: paired`` (the default): after the repeats, ``step`` says what to spend
  next (``judge.budget.next_step``): nothing when the window rules out a drop of
  ``confirm_drop_pct``; another launch on this runner while more repeats could still rule
  it out; else the merge base beside the change, checked out in a throwaway worktree (as
  seeding does) with its own perfgate.yaml and benchmark, pair after pair until the
  paired test (``judge.paired``, the window's within-run noise pooled in) says no more.
  ``pair_plan`` first says whether the pairs the budget affords can BLOCK a drop that
  matters at this noise and launch time; when they cannot, none is taken and the window's
  verdict stands. No merge base to measure (not a git checkout, no parent, another
  experiment there): the run confirms by repeats instead.

The gate later judges the recorded samples and pairs with ``final=True`` and so reaches
the verdicts the bench's last look would have.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from perfgate.baselines.samples import Window, sample_path
from perfgate.baselines.seed.plan import bucket_hashes
from perfgate.baselines.seed.replay import replay_checkout
from perfgate.baselines.store import BaselineStore, WindowKey, merge_base
from perfgate.baselines.verify import hardware_partitions
from perfgate.config import PRIMARY, Bucket, Config, Direction, Metric, load_config
from perfgate.errors import GateMalfunction, GitError, PerfgateError
from perfgate.git import try_git
from perfgate.judge.budget import (
    UNJUDGED,
    Affordability,
    Claim,
    by_suspicion,
    next_step,
    pair_affordability,
    repeat_affordability,
    suspicion,
    unaffordable,
    uncleared,
)
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.oracle import (
    confirm_drop_for,
    pair_noise,
    paired_policy_for,
    policy_for,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.paired import paired_decide
from perfgate.judge.runners import WindowView, window_view
from perfgate.judge.stats import (
    CalibratedPolicy,
    Decision,
    WindowModel,
    analyse_window,
    decide,
    pct_of_g,
)
from perfgate.judge.verdicts import Reason
from perfgate.result import PairedRecord, Result
from perfgate.run.drivers import get_driver
from perfgate.run.paired import BaseCheckout, PairPlan
from perfgate.run.sampling import Step


class WindowConfirmer:
    """Answers the bench's questions from each bucket's windows, read once per key."""

    def __init__(
        self,
        config: Config,
        store: BaselineStore | None,
        *,
        say: Callable[[str], None],
        calibration: NoiseCalibration | None = None,
        checkout: Path | None = None,
        work_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.say = say
        # The gate's calibration (gate.calibration): bench and gate judge with one noise.
        self.calibration = calibration
        # Where the bench runs (the change) and where a merge base may be checked out.
        self.checkout = checkout or Path.cwd()
        self.work_dir = work_dir or self.checkout / ".perfgate" / "work"
        self._windows: dict[WindowKey, Window | None] = {}
        self._views: dict[tuple[WindowKey, str | None], WindowView | None] = {}
        self._ends: tuple[str | None, str | None] | None = None
        self._unreadable = False

    # -- gate.confirm: repeat ---------------------------------------------------------------

    def __call__(self, bucket: Bucket, result: Result) -> bool:
        """True when a gating metric's samples so far leave its verdict open."""
        return any(
            decision.need_more
            for decision in self._decisions(bucket, result, final=False).values()
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
            for name, decision in self._decisions(bucket, result, final=True).items()
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
            return PairPlan(pairs=0, skipped=f"the pairs cannot decide: {plan.text()}")
        why = unaffordable(plan.minutes, left_minutes)
        return PairPlan(pairs=0, skipped=why) if why else PairPlan(pairs=plan.afforded)

    def order(self, runs: Sequence[tuple[Bucket, Result]]) -> list[Bucket]:
        """The buckets the window cannot clear, the most suspicious first (the order the
        run's shared budget is spent in), then the others."""
        claims = {}
        for bucket, result in runs:
            decisions = [d for d in self._decisions(bucket, result, final=True).values() if d]
            if decisions and self.step(bucket, result) is not Step.DONE:
                severity, bound = suspicion(max(decisions, key=suspicion))
                claims[bucket.id] = Claim(bucket=bucket.id, severity=severity,
                                          drop_bound_pct=bound, minutes=0.0)  # fmt: skip
        first = [c.bucket for c in by_suspicion(list(claims.values()))]
        rest = [bucket.id for bucket, _ in runs if bucket.id not in claims]
        found = {bucket.id: bucket for bucket, _ in runs}
        return [found[name] for name in (*first, *rest)]

    def affordability(self, bucket: Bucket, result: Result) -> Affordability | None:
        """Can the pairs this bucket's budgets afford BLOCK a drop that matters?

        Asked of each gating metric the window cannot clear, with its within-run noise and
        the launch time (this run's own samples, else the history's recorded durations,
        else ``launch_minutes``); the first that can decide is returned, else the first
        that cannot. None: nothing to plan (no launch time known, or nothing uncleared).
        """
        launch = self.launch_minutes(bucket, result)
        if launch is None:
            return None
        plans = []
        for name, decision in self._decisions(bucket, result, final=True).items():
            drop = self._confirm_drop(bucket, result, name)
            if decision is None or not uncleared(decision, drop):
                continue
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

    @contextmanager
    def base(self, bucket: Bucket, result: Result) -> Iterator[BaseCheckout | str]:
        """The merge base checked out with its own bucket, or why it cannot be measured."""
        repo = try_git("rev-parse", "--show-toplevel", cwd=self.checkout)
        if repo is None:
            yield "not a git checkout, so there is no merge base to measure"
            return
        top = Path(repo).resolve()
        commit, why = self._base_commit(top, result)
        if commit is None:
            yield why
            return
        try:
            where = self.checkout.resolve().relative_to(top)
            config_path: Path | None = (self.checkout / self.config.path).resolve().relative_to(top)
        except ValueError:
            where, config_path = Path(), None
        # The base gets what the change's checkout has: its LFS content (the assets) too.
        lfs = get_driver(bucket.driver).needs_lfs
        with ExitStack() as stack:
            try:
                checkout = replay_checkout(top, commit, self.work_dir / "paired", lfs=lfs)
                worktree = stack.enter_context(checkout)
            except GitError as exc:
                yield f"the merge base {commit[:12]} cannot be checked out like the change: {exc}"
                return
            found = self._base_bucket(bucket, result, worktree, config_path)
            if isinstance(found, str):
                yield found
            else:
                yield BaseCheckout(commit=commit, checkout=worktree / where, bucket=found)

    def wants_more(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        """After each pair: is the paired test of any gating metric still undecided?

        Undecided, not "may take another": at the last pair allowed the test is still
        undecided, and the bench then reports the limit, never a settled comparison.
        """
        hardware = result.hardware.slug
        decisions = self._decisions(bucket, result, final=True)
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

    def _base_commit(self, top: Path, result: Result) -> tuple[str | None, str]:
        """The commit to measure beside the change, or None and why there is none.

        It is the merge base with the target branch; when the change is the merge base
        itself (a push to the target, a clean checkout of it), its first parent; with
        uncommitted changes on the merge base, HEAD.
        """
        head = try_git("rev-parse", "HEAD", cwd=top)
        if head is None:
            return None, "this checkout has no commit yet"
        remote = self.store.remote if self.store is not None else None
        base = merge_base(top, result.source.target_branch or None, remote) or head
        if base != head:
            return base, ""
        if try_git("status", "--porcelain", "--untracked-files=no", cwd=top):
            return head, ""
        parent = try_git("rev-parse", "--verify", "--quiet", "HEAD^1", cwd=top)
        return parent, "" if parent else f"{head[:12]} has no parent commit to compare with"

    def _base_bucket(
        self, bucket: Bucket, result: Result, worktree: Path, config_path: Path | None
    ) -> Bucket | str:
        """The bucket as the merge base declares it, or why it cannot be compared."""
        if config_path is None:
            base_config = self.config  # a config outside the repository: every commit uses it
        else:
            path = worktree / config_path
            if not path.is_file():
                return f"the merge base has no {config_path}"
            try:
                base_config = load_config(path)
            except PerfgateError as exc:
                return f"the merge base's {config_path} is not usable: {exc}"
        found = next((b for b in base_config.buckets if b.id == bucket.id), None)
        if found is None:
            return f"the merge base's perfgate.yaml has no bucket {bucket.id}"
        if bucket_hashes(found) != (result.identity.launch_hash, result.identity.benchmark_hash):
            return "the merge base runs another experiment (its launch or benchmark hash differs)"
        return found

    # -- the windows ------------------------------------------------------------------------

    def _confirm_drop(self, bucket: Bucket, result: Result, name: str) -> float:
        """The drop worth confirming for one metric of the bucket."""
        metric = next(m for m in bucket.all_metrics if m.name == name)
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        minimum = (
            policy.min_drop_pct
            if isinstance(policy, CalibratedPolicy)
            else policy.min_block_regression_pct
        )
        return confirm_drop_for(self.config.gate, minimum)

    def _decisions(
        self, bucket: Bucket, result: Result, *, final: bool
    ) -> dict[str, Decision | None]:
        """Each gating metric's window decision on the run's samples so far, by metric name
        (None: not measured, nothing to judge against, or the window cannot judge yet)."""
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
            return decide(window.runs(), values, direction=direction, policy=policy)
        view = self._view(bucket, metric, result, policy)
        return None if view is None else view.decide(values, policy, final=final)

    def _view(
        self, bucket: Bucket, metric: Metric, result: Result, policy: CalibratedPolicy
    ) -> WindowView | None:
        """A metric's window on this run's runner's terms; None when it cannot be read."""
        key = WindowKey.for_result(result, metric.name)
        runner = result.ci.runner_name
        if (key, runner) not in self._views:
            window = self._window(bucket, metric, result)
            measured = self.calibration.for_result(result) if self.calibration else None
            runs = None if window is None else window.runs()
            if measured is not None and runs is not None and measured.beyond(runs, policy):
                measured = None  # as the gate judges it: by the window's own noise
            self._views[(key, runner)] = (
                None
                if window is None
                else window_view(
                    window.runs(),
                    [run.runner for run in window.stored_runs()],
                    runner,
                    policy=policy,
                    direction=result.all_metrics[metric.name].direction,
                    # An A/A calibration measures the primary metric's noise.
                    calibration=(
                        measured.for_rule()
                        if measured is not None and metric.name == PRIMARY
                        else None
                    ),
                )
            )
        return self._views[(key, runner)]

    def _window(self, bucket: Bucket, metric: Metric, result: Result) -> Window | None:
        """A metric's window and history (None when the baseline branch cannot be read)."""
        key = WindowKey.for_result(result, metric.name)
        if key in self._windows:
            return self._windows[key]
        window = None
        if self.store is not None and not self._unreadable:
            try:
                window = self._read(bucket, key)
            except GateMalfunction as exc:
                # Confirming is worth a lot, but never a lost measurement: say so, go on.
                self._unreadable = True
                self.say(
                    f"cannot read the baseline window to confirm suspicious buckets ({exc}); "
                    "each bucket takes its planned repeats only"
                )
        self._windows[key] = window
        return window

    def _read(self, bucket: Bucket, key: WindowKey) -> Window:
        """A window and its history at the baseline tip, against this checkout's merge base."""
        assert self.store is not None
        if self._ends is None:
            tip = self.store.refresh()
            base = merge_base(self.store.repo, key.target_branch or None, self.store.remote)
            self._ends = (tip, base)
        tip, base = self._ends
        # The gate's limit: both read the same window and history.
        gate = self.config.gate
        found = self.store.windows(
            {bucket.id: key},
            tip=tip,
            base=base,
            max_samples=window_sample_limit(gate, self.config.buckets),
            max_runs=window_run_limit(gate),
        )
        return found[bucket.id]


# -- budgets that can decide (validate, and bench before it spends a minute) --------------

# Recorded runs of a bucket read to learn its noise and launch time.
_RECORDED_RUNS = 100


def budget_warnings(
    config: Config,
    buckets: Sequence[Bucket],
    store: BaselineStore | None,
    calibration: NoiseCalibration | None = None,
) -> list[tuple[str, str]]:
    """Each bucket whose confirmation budget cannot decide, with the numbers (R17).

    Under ``gate.confirm: paired``: can the pairs its budget affords BLOCK a drop of
    ``confirm_drop_pct`` (else none is taken and the window decides), and one of the
    minimum (else smaller drops are left to post-merge detection)? The noise is the
    calibration's, else what the bucket's recorded runs show (the within-run noise a pair
    sees); the launch time its recorded samples' durations, else ``launch_minutes``.
    Under ``gate.confirm: repeat``: the same for samples against the window. Buckets with
    a launch time but no noise known yet are named once; those without either are not
    checked. Each line comes with its level: ``warning`` or ``notice``.
    """
    gate = config.gate
    if gate.confirm.value == "off" or gate.policy.value != "calibrated":
        return []
    recorded = _recorded(store, buckets)
    lines: list[tuple[str, str]] = []
    unknown: list[str] = []
    for bucket in buckets:
        launch, hardware, model = recorded.get(bucket.id, (None, "", None))
        launch = launch or bucket.launch_minutes
        policy = policy_for(bucket, gate, hardware)
        assert isinstance(policy, CalibratedPolicy)
        noise, run_noise, df, runs = _noise(bucket, hardware, model, calibration)
        if launch is None:
            continue  # nothing known of it yet: checked once it declares or records a launch
        if noise is None:
            unknown.append(bucket.id)
            continue
        drops = (confirm_drop_for(gate, policy.min_drop_pct), policy.min_drop_pct)
        if gate.confirm.value == "paired":
            paired = paired_policy_for(bucket, gate, hardware)
            plans = [
                pair_affordability(budget_minutes=bucket.pair_budget_minutes,
                                   max_pairs=bucket.max_pairs, launch_minutes=launch,
                                   drop_pct=drop, noise_pct=noise, policy=paired, prior_df=df)
                for drop in drops
            ]  # fmt: skip
        else:
            plans = [
                repeat_affordability(budget_minutes=bucket.repeat_budget_minutes,
                                     repeats=bucket.repeats, max_repeats=bucket.max_repeats,
                                     launch_minutes=launch, drop_pct=drop, noise_pct=noise,
                                     run_noise_pct=run_noise, policy=policy, window_runs=runs,
                                     df=df)
                for drop in drops
            ]  # fmt: skip
        matters, minimum = plans
        if not matters.decides:
            then = (
                "no pairs are taken: the window decides" if matters.what == "pair"
                else "confirming by repeats cannot block it"
            )  # fmt: skip
            lines.append(("warning", f"{bucket.id}: {matters.text()}; {then}"))
        elif not minimum.decides:
            left = f"drops under {matters.drop_pct:g} % are left to post-merge detection"
            lines.append(("notice", f"{bucket.id}: {minimum.text()}; {left}"))
        shared = gate.budget_minutes
        if shared is not None and matters.decides and matters.minutes > shared:
            more = f"more than gate.budget_minutes ({shared:g}) for the whole run"
            needs = f"confirming it needs {matters.minutes:.0f} runner minutes, {more}"
            lines.append(("warning", f"{bucket.id}: {needs}"))
    if unknown:
        later = "their budgets are checked once they do: " + ", ".join(unknown)
        text = f"{len(unknown)} bucket(s) have no recorded noise yet (record samples or calibrate)"
        lines.append(("notice", f"{text}; {later}"))
    return lines


def _recorded(
    store: BaselineStore | None, buckets: Sequence[Bucket]
) -> dict[str, tuple[float | None, str, WindowModel | None]]:
    """Per bucket: its launch minutes from recorded durations, the hardware they were
    recorded on, and its recorded runs analysed (newest experiment, primary metric)."""
    if store is None:
        return {}
    tip = store.refresh()
    if tip is None:
        return {}
    found: dict[str, tuple[float | None, str, WindowModel | None]] = {}
    for hardware in hardware_partitions(store.repo, tip):
        paths = {sample_path(hardware, b.task, b.backend_key): b for b in buckets}
        for path, samples in store.read(paths, tip).items():
            primary = [s for s in samples if s.metric == PRIMARY]
            if not primary or paths[path].id in found:
                continue
            newest = primary[-1].launch_hash
            mine = [s for s in primary if s.launch_hash == newest]
            runs: dict[tuple[str, str], list[float]] = {}
            for sample in mine:
                runs.setdefault((sample.commit, sample.timestamp), []).append(sample.value)
            nearest = list(runs.values())[::-1][:_RECORDED_RUNS]
            walls = [s.wall_s for s in mine[-10 * _RECORDED_RUNS :] if s.wall_s]
            direction = Direction(mine[-1].direction)
            model = analyse_window(nearest, policy=CalibratedPolicy(max_runs=_RECORDED_RUNS),
                                   direction=direction)  # fmt: skip
            launch = statistics.median(walls) / 60.0 if walls else None
            found[paths[path].id] = (launch, hardware, model)
    return found


def _noise(
    bucket: Bucket,
    hardware: str,
    model: WindowModel | None,
    calibration: NoiseCalibration | None,
) -> tuple[float | None, float, float, int]:
    """(per-sample noise %, run noise %, its df, window runs) a budget is checked against."""
    measured = next(
        (e for e in calibration.buckets if e.bucket == bucket.id and e.hardware == hardware),
        None,
    ) if calibration is not None else None  # fmt: skip
    if measured is not None:
        return measured.noise_pct, measured.run_noise_pct, measured.df, 20
    if model is None or model.problem is not None:
        return None, 0.0, 0.0, 0
    within = model.within_sigma if model.within_df else model.sigma
    df = model.within_df or model.df
    return (
        pct_of_g(within, Direction.HIGHER),
        pct_of_g(model.run_sigma, Direction.HIGHER),
        df,
        model.runs_used,
    )
