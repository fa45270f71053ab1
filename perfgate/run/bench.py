"""Run buckets: each bucket run in progress (its samples, its confirmation, its pairs with
the merge base) and the matrix in turn, one Result artifact per bucket."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from perfgate.config import Bucket, ConfirmMode
from perfgate.result import (
    PairedRecord,
    PairedStatus,
    Result,
    SampleAdmission,
    SamplingStop,
    Spend,
    SpendKind,
    SpendLine,
    result_file_name,
    write_result,
)
from perfgate.run.admission import AdmissionControl
from perfgate.run.allowance import Allowance
from perfgate.run.bucket_result import RunTimes, Taken, bucket_result
from perfgate.run.launch import BenchSettings, run_key_of, sample_layout
from perfgate.run.paired import Confirmation, pair_with_base
from perfgate.run.sample import SampleRun, declared_launch_s, grant_remeasure, measure_sample
from perfgate.run.sampling import Sampler, SamplingPlan, Step

#: After the initial repeats, and after every further sample: does the verdict need another?
#: It sees the run so far as a Result (the judge side reads the bucket's window for it).
Confirm = Callable[[Bucket, Result], bool]


class BucketRun:
    """One bucket run in progress: its samples, admission control, its pairs, its Result.

    ``take`` measures the planned repeats (and, under ``gate.confirm: repeat``, more while
    the rule asks); ``confirm`` spends confirmation under ``gate.confirm: paired``. What it
    spends beyond its plan comes out of the run's allowance (``settings.allowance``, shared
    by the matrix): nothing optional starts that cannot finish within what is left.
    """

    def __init__(self, bucket: Bucket, settings: BenchSettings, plan: SamplingPlan) -> None:
        self.bucket, self.settings, self.plan = bucket, settings, plan
        self.run_key = run_key_of(settings.context)
        self.started_at = datetime.now(UTC)
        # The run's own time: waiting while other buckets measure is not this bucket's.
        self.finished_at, self.wall_s = self.started_at, 0.0
        self.control = AdmissionControl(settings.admission, settings.hardware)
        self.paired: PairedRecord | None = None
        self.stopped = SamplingStop.PLANNED
        # The runner job's setup, charged to the first bucket the job runs (None: unknown).
        self.setup_s: float | None = None
        self.out_of_budget = False  # the last sampling stopped for the run's budget
        self.sampler = Sampler(
            self._measure,
            healthy=lambda sample: sample.healthy,
            set_aside=lambda sample: sample.admission.set_aside,
            remeasure=lambda sample: self.remeasure(
                f"sample {sample.index}", sample.wall_s, sample.admission
            ),
        )

    def _measure(self, index: int) -> SampleRun:
        """Sample ``index``: planned while the plan's repeats are not in and it measures
        nothing again; else optional, out of the run's allowance."""
        taken = self.sampler
        again = bool(taken.replaced) and taken.replaced[-1] == index - 1
        planned = not again and taken.counted < self.plan.repeats
        layout = sample_layout(self.bucket, self.settings, self.run_key, index)
        return measure_sample(self.bucket, self.settings, layout, self.control,
                              planned=planned, expected_s=self.launch_s())  # fmt: skip

    def launch_s(self) -> float:
        """One launch as this run measured it (its samples' median), else as declared."""
        walls = [s.final.outcome.wall_s for s in self.sampler.taken if s.final.outcome.wall_s]
        return statistics.median(walls) if walls else declared_launch_s(self.bucket)

    def affords_launch(self) -> bool:
        """True when the run's allowance can afford one more launch of this bucket; when it
        cannot, the run stops for its budget (said, and recorded as TIME_BUDGET)."""
        if self.settings.allowance.affords(self.launch_s()):
            return True
        self.out_of_budget = True
        return False

    def _sample_until(
        self, plan: SamplingPlan, wants_more: Callable[[Sequence[SampleRun]], bool] | None
    ) -> SamplingStop:
        """The sampler's run, a stop for the run's budget said as one."""
        self.out_of_budget = False
        stopped = self.sampler.run(plan, wants_more)
        if stopped is SamplingStop.SETTLED and self.out_of_budget:
            self.settings.say(f"{self.bucket.id}: no further sample: the run's budget cannot "
                              "afford another launch")  # fmt: skip
            return SamplingStop.TIME_BUDGET
        return stopped

    def remeasure(self, what: str, wall_s: float, admission: SampleAdmission | None) -> bool:
        """Whether admission control grants measuring ``what`` again (and the run's allowance
        affords it); says what it does."""
        if not self.affords_launch():
            self.settings.say(
                f"{self.bucket.id}: {what} was taken on an unfit machine; set aside (the "
                "run's budget cannot afford measuring it again)"
            )
            return False
        return grant_remeasure(self.bucket, self.settings, self.control, what, wall_s, admission)

    def result(self, stopped: SamplingStop | None = None) -> Result:
        """The run so far as a Result."""
        taken = Taken(samples=self.sampler.taken, replaced=self.sampler.replaced)
        times = RunTimes(
            started_at=self.started_at, finished_at=self.finished_at, wall_s=self.wall_s
        )
        stopped = stopped or self.stopped
        result = bucket_result(
            self.bucket, self.settings, taken, self.plan, stopped, times, self.control, self.paired
        )
        if self.setup_s is None or result.spend is None:
            return result
        setup = Spend(lines={SpendKind.SETUP: SpendLine(seconds=round(self.setup_s, 3))})
        return replace(result, spend=setup + result.spend)

    def _worked(self, since: float) -> None:
        """Count the time since ``since`` as this run's own, ending now."""
        self.wall_s += time.monotonic() - since
        self.finished_at = datetime.now(UTC)

    def take(self, confirm: Confirm | None = None) -> None:
        """The planned repeats; with ``confirm`` (and not paired) more while it asks."""
        began = time.monotonic()
        paired = self.plan.confirm is ConfirmMode.PAIRED
        if confirm is None or paired:
            self.stopped = self.sampler.run(replace(self.plan, confirm=ConfirmMode.OFF), None)
        else:
            self.stopped = self._sample_until(self.plan, self.asks(confirm))
        self._worked(began)

    def asks(self, confirm: Confirm) -> Callable[[Sequence[SampleRun]], bool]:
        """The question the sampler asks after each sample: does ``confirm`` want more (and
        can the run's allowance afford it)?"""
        return lambda taken: (
            self.affords_launch() and confirm(self.bucket, self.result(SamplingStop.PLANNED))
        )

    def confirm(self, confirmation: Confirmation, confirm: Confirm | None) -> None:
        """``gate.confirm: paired``: more launches here while they may still clear the run,
        then pairs with the merge base when the window still cannot (``run.paired``).
        Without a merge base to measure, by repeats against the window (``confirm``)."""
        if self.stopped is not SamplingStop.PLANNED:
            return  # a failed run is not measured further
        bucket, judge, began = self.bucket, confirmation.judge, time.monotonic()
        # The repeat budget counts this run's own time, not the other buckets' repeats.
        self.sampler.started = began - self.wall_s
        step = judge.step(bucket, self.result())
        if step is Step.REPEAT:
            self.stopped = self._sample_until(
                self.plan,
                lambda taken: (
                    self.affords_launch() and judge.step(bucket, self.result()) is Step.REPEAT
                ),
            )
            if self.stopped is not SamplingStop.FAILED:
                step = judge.step(bucket, self.result())
        elif step is Step.DONE:
            self.stopped = SamplingStop.SETTLED
        if self.stopped is SamplingStop.FAILED or step is Step.DONE:
            self._worked(began)
            return
        self.paired = pair_with_base(self, confirmation)
        unavailable = self.paired.status is PairedStatus.UNAVAILABLE
        if unavailable or (self.paired.status is PairedStatus.FAILED and
                           self.paired.head_failure is None):  # fmt: skip
            # No merge base to measure: confirm against the window by repeats instead.
            self.stopped = self._sample_until(
                self.plan, None if confirm is None else self.asks(confirm)
            )
        self._worked(began)

    def finish(self) -> Result:
        """The Result, with a notice when the run took more than its repeats."""
        counted = self.sampler.counted
        if counted > self.plan.repeats:
            self.settings.say(
                f"{self.bucket.id}: took {counted} samples to confirm ({self.stopped.value})"
            )
        return self.result()


def run_bucket(
    bucket: Bucket,
    settings: BenchSettings,
    *,
    plan: SamplingPlan | None = None,
    confirm: Confirm | None = None,
    confirmation: Confirmation | None = None,
) -> Result:
    """Run one bucket's samples (each with retry) and return its Result (not yet written).

    ``plan`` says how many samples (default: the bucket's repeats, no confirmation);
    ``confirm`` answers, from the samples so far, whether the verdict needs another;
    ``confirmation`` (``gate.confirm: paired``) compares a suspicious run with its merge base.
    """
    run = BucketRun(bucket, settings, plan or SamplingPlan.for_bucket(bucket, ConfirmMode.OFF))
    run.take(confirm)
    if run.plan.confirm is ConfirmMode.PAIRED:
        if confirmation is not None:
            run.confirm(confirmation, confirm)
        elif confirm is not None:
            run.stopped = run.sampler.run(run.plan, run.asks(confirm))
    return run.finish()


def run_buckets(
    buckets: Iterable[Bucket],
    settings: BenchSettings,
    on_start: Callable[[Bucket], None] = lambda bucket: None,
    on_done: Callable[[Result], None] = lambda result: None,
    *,
    confirm_mode: ConfirmMode = ConfirmMode.OFF,
    confirmation: Confirmation | None = None,
    budget_minutes: float | None = None,
) -> list[Result]:
    """Run each bucket in turn, writing its artifact into ``settings.out_dir`` as it finishes.

    Under ``gate.confirm: paired`` every bucket takes its repeats first; then the buckets
    the window cannot clear are confirmed in the order ``confirmation.judge.order`` gives (the
    most suspicious first), each within its own budgets, its artifact rewritten; a run that
    ends before a bucket's turn is done removes that bucket's unconfirmed artifact. Whatever the
    buckets spend beyond their plans (retries, re-measures, confirmation) comes out of one
    allowance of ``budget_minutes`` (the run's, or this job's share of it; None: unlimited).
    """
    settings = replace(settings, allowance=Allowance(budget_minutes))
    confirm = confirmation.judge.needs_sample if confirmation is not None else None
    paired = confirmation is not None and confirm_mode is ConfirmMode.PAIRED
    runs: list[BucketRun] = []
    for bucket in buckets:
        on_start(bucket)
        run = BucketRun(bucket, settings, SamplingPlan.for_bucket(bucket, confirm_mode))
        if not runs and settings.job_started_at is not None:
            run.setup_s = max(0.0, time.time() - settings.job_started_at)
        run.take(confirm)
        result = run.result() if paired else run.finish()
        write_result(result, settings.out_dir)
        on_done(result)
        runs.append(run)
    if confirmation is None or not paired:
        return [run.result() for run in runs]
    by_bucket = {run.bucket.id: run for run in runs}
    unconfirmed = set(by_bucket)
    try:
        for bucket in confirmation.judge.order([(run.bucket, run.result()) for run in runs]):
            run = by_bucket[bucket.id]
            run.confirm(confirmation, confirm)
            write_result(run.finish(), settings.out_dir)
            unconfirmed.discard(bucket.id)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) or failed while confirming: an artifact written
        # before its bucket was confirmed is no finished result, and gate or publish would
        # take it for one. It goes, as a bucket interrupted mid-sample leaves none.
        for bucket_id in unconfirmed:
            (settings.out_dir / result_file_name(bucket_id)).unlink(missing_ok=True)
        raise
    return [run.result() for run in runs]
