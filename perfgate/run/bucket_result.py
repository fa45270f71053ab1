"""A bucket run's Result assembled from its samples: health, figures, timings, identity."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from perfgate import __version__
from perfgate.config import Bucket, Metric
from perfgate.identity import runtime_inputs
from perfgate.result import (
    AttemptTiming,
    BucketRef,
    FailurePhase,
    Health,
    IdentityRecord,
    MetricReading,
    PairedRecord,
    Result,
    SampleReading,
    Sampling,
    SamplingStop,
    Source,
    Spend,
    SpendKind,
    SpendLine,
    Timings,
)
from perfgate.run import staleness
from perfgate.run.admission import AdmissionControl
from perfgate.run.bundle import MetricStats
from perfgate.run.launch import BenchSettings, benchmark_identity, launch_identity
from perfgate.run.logs import read_log_excerpt
from perfgate.run.sample import SampleRun, measured_bucket, sample_figure
from perfgate.run.sampling import SamplingPlan

# Crashes whose log may show a stale image (R7); a hang, an OOM or a mismatch cannot.
CRASH_PHASES = frozenset(
    {FailurePhase.IMPORT, FailurePhase.DRIVER, FailurePhase.INIT, FailurePhase.RUNTIME}
)


def _pin_files(bucket: Bucket) -> tuple[str, ...]:
    declared = bucket.isaaclab.pin_files if bucket.isaaclab else None
    return declared if declared is not None else staleness.DEFAULT_PIN_FILES


@dataclass(frozen=True, kw_only=True)
class Taken:
    """A run's samples in the order taken, and the indices of those measured again
    (admission control set them aside, and the next sample replaced them)."""

    samples: Sequence[SampleRun]
    replaced: Sequence[int]


@dataclass(frozen=True, kw_only=True)
class RunTimes:
    """When a bucket run started and last worked, and the time it spent itself."""

    started_at: datetime
    finished_at: datetime
    wall_s: float


def bucket_result(
    bucket: Bucket,
    settings: BenchSettings,
    taken: Taken,
    plan: SamplingPlan,
    stopped: SamplingStop,
    times: RunTimes,
    control: AdmissionControl,
    paired: PairedRecord | None,
) -> Result:
    """The bucket run's Result: health of its last sample, the figures of its healthy ones.

    The figure is the median of the samples admission control kept (of all of them when it
    set every one aside, so the artifact still says what was measured).
    """
    run = settings.context
    samples = taken.samples
    measurement = samples[-1].final.reading
    identity = IdentityRecord.of(
        launch=launch_identity(bucket),
        benchmark=benchmark_identity(bucket),
        runtime=runtime_inputs(measurement.runtime_fields),
    )
    aside = {sample.index for sample in samples if sample.admission.set_aside}
    # Runner time past the plan: confirmation samples that counted, and any paired comparison.
    counted = [sample for sample in samples if sample.index not in taken.replaced]
    confirming = counted[plan.repeats :]
    return Result(
        bucket=BucketRef.of(bucket),
        hardware=settings.hardware,
        source=Source(**run.source_json()),
        ci=run.ci,
        identity=identity,
        metric=replace(
            _reading(bucket.metric, samples, aside, measurement.stats),
            figures=dict(measurement.figures),
        ),
        metrics={
            metric.name: _reading(metric, samples, aside)
            for metric in measured_bucket(bucket, samples).metrics
        },
        health=_health(bucket, settings, samples),
        timings=_timings(samples, times),
        log_tail=samples[-1].final.outcome.log_tail,
        log_path=str(samples[-1].log),
        perfgate_version=__version__,
        sampling=Sampling(
            confirm=plan.confirm.value,
            repeats=plan.repeats,
            max_repeats=plan.max_repeats,
            stopped=stopped,
            confirming_samples=len(confirming),
            confirmation_s=round(
                sum(s.wall_s for s in confirming) + (paired.wall_s if paired else 0.0), 3
            ),
            admission_s=round(control.spent_s, 3),
        ),
        admission=tuple(sample.admission for sample in samples),
        paired=paired,
        spend=run_spend(samples, taken.replaced, plan.repeats, paired),
    )


def _health(bucket: Bucket, settings: BenchSettings, samples: Sequence[SampleRun]) -> Health:
    """How the run's last sample ended (the attempt that counts), and how many attempts the
    run's samples needed; a crash's log is read for a stale image (R7)."""
    last = samples[-1]
    final = last.final
    measurement, outcome = final.reading, final.outcome
    phase = outcome.phase
    if phase is None and measurement.config_mismatch:
        phase = FailurePhase.CONFIG_MISMATCH
    elif phase is None and measurement.error:
        phase = FailurePhase.OUTPUT
    stale_image = None
    if phase in CRASH_PHASES:
        stale_image = staleness.assess(
            read_log_excerpt(last.log),
            measurement.versions,
            settings.checkout,
            _pin_files(bucket),
        )
    return Health(
        exit_code=outcome.exit_code,
        phase=phase,
        timed_out=outcome.timed_out,
        # The sample that needed the most attempts (a retried sample makes a retried run).
        attempts=max(sample.attempts for sample in samples),
        retried=any(sample.attempts > 1 for sample in samples),
        config_mismatch=measurement.config_mismatch,
        # An environment failure says what to do about it; else what the output lacked.
        error=outcome.fix or measurement.error,
        not_retried=final.not_retried,
        stale_image=stale_image,
    )


def _timings(samples: Sequence[SampleRun], times: RunTimes) -> Timings:
    """The run's times, and every launch of every sample."""
    return Timings(
        started_at=times.started_at.isoformat(),
        finished_at=times.finished_at.isoformat(),
        wall_s=times.wall_s,
        attempts=tuple(
            AttemptTiming(
                number=r.number,
                exit_code=r.outcome.exit_code,
                phase=r.outcome.phase,
                timed_out=r.outcome.timed_out,
                wall_s=r.outcome.wall_s,
                sample_index=sample.index,
                cache=r.cache,
                warmup=r.warmup,
            )
            for sample in samples
            for r in sample.records
        ),
    )


def run_spend(
    samples: Sequence[SampleRun],
    replaced: Collection[int],
    repeats: int,
    paired: PairedRecord | None,
) -> Spend:
    """What the run's launches and waits cost, by kind (R17); the job's setup is the
    caller's to add. Every launch counts once: a sample's first attempt (and the warm-up
    its cold cache needed) as the sample, every later attempt as a retry, a sample taken
    again for one admission control set aside as a re-measure, both sides of every pair
    (and the time spent on a merge base that could not be measured)."""
    launches: dict[SpendKind, list[float]] = {}
    waited = 0.0
    counted = 0
    for position, sample in enumerate(samples):
        waited += sample.admission.waited_s
        # A sample taken again for one admission control set aside is the re-measure; the
        # one set aside was the plan's (or confirmation's) launch.
        kind: SpendKind = SpendKind.REMEASURE
        if position - 1 not in replaced:
            kind = SpendKind.MEASURE if counted < repeats else SpendKind.CONFIRM
            counted += 1
        for record in sample.records:
            what = kind
            if kind is not SpendKind.REMEASURE and record.number > 1:
                what = SpendKind.RETRY
            elif kind is not SpendKind.REMEASURE and record.warmup:
                what = SpendKind.WARMUP
            launches.setdefault(what, []).append(record.outcome.wall_s)
    lines = {kind: SpendLine(launches=len(walls), seconds=round(sum(walls), 3))
             for kind, walls in launches.items()}  # fmt: skip
    spend = Spend(lines=lines)
    if paired is not None and paired.wall_s > 0:
        spend = spend + paired_spend(paired)
    if waited > 0:
        spend = spend + Spend(lines={SpendKind.WAIT: SpendLine(seconds=round(waited, 3))})
    return spend


def paired_spend(paired: PairedRecord) -> Spend:
    """A paired comparison's cost: both sides' launches (their warm-ups apart), the waits
    for a fit machine, and the rest of its time: the merge base's worktree and LFS pull."""
    warmups = [s for s in paired.samples if s.warmup_s > 0]
    waited = sum(s.admission.waited_s for s in paired.samples if s.admission is not None)
    launched = sum(s.wall_s for s in paired.samples)
    lines = {
        SpendKind.PAIR: SpendLine(
            launches=sum(s.launches for s in paired.samples) - len(warmups),
            seconds=round(launched - sum(s.warmup_s for s in warmups), 3),
        ),
        SpendKind.BASE_CHECKOUT: SpendLine(
            seconds=round(max(0.0, paired.wall_s - launched - waited), 3)
        ),
    }
    if warmups:
        lines[SpendKind.WARMUP] = SpendLine(
            launches=len(warmups), seconds=round(sum(s.warmup_s for s in warmups), 3)
        )
    if waited > 0:
        lines[SpendKind.WAIT] = SpendLine(seconds=round(waited, 3))
    return Spend(lines={k: line for k, line in lines.items() if line.seconds or line.launches})


def _reading(
    metric: Metric,
    samples: Sequence[SampleRun],
    aside: Collection[int],
    spread: MetricStats | None = None,
) -> MetricReading:
    """One metric over the run's samples: each sample's figure, their median and spread.

    The median and spread are of the samples admission control kept (of all of them when
    it set every one aside, so the artifact still says what was measured). ``spread`` is
    the benchmark's own (the primary's siblings), shown for a single sample.
    """
    readings = tuple(
        SampleReading(
            sample_index=sample.index,
            value=value,
            wall_s=sample.final.outcome.wall_s,
            cache=sample.final.cache,
        )
        for sample in samples
        if (value := sample_figure(sample, metric)) is not None
    )
    values = [r.value for r in readings if r.sample_index not in aside] or [
        r.value for r in readings
    ]
    several = len(values) > 1
    own = spread or MetricStats(value=None)
    return MetricReading(
        path=metric.path,
        direction=metric.direction,
        unit=metric.unit,
        value=statistics.median(values) if values else None,
        std=statistics.stdev(values) if several else own.std,
        min=min(values) if several else own.min,
        max=max(values) if several else own.max,
        samples=readings,
    )
