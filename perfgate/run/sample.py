"""One sample of a bucket: its launch with retry (R10) between admission control's checks,
its figures, and the notices a person reads while it runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.config import PRIMARY, Bucket, Metric
from perfgate.result import FailurePhase, SampleAdmission
from perfgate.run.admission import AdmissionControl
from perfgate.run.bundle import MetricStats
from perfgate.run.drivers import get_driver
from perfgate.run.drivers.base import CheckoutUnsupported, Measurement
from perfgate.run.execution import (
    AttemptDirs,
    AttemptRecord,
    EnvironmentProblem,
    Invocation,
    ProcessOutcome,
    Retries,
    Watch,
    run_with_retry,
)
from perfgate.run.launch import BenchSettings, container_wrap, launch_invocation
from perfgate.run.layout import SampleLayout


@dataclass(frozen=True, kw_only=True)
class SampleRun:
    """One sample: one run of the benchmark, with its retries (R10)."""

    index: int
    records: list[AttemptRecord[Measurement]]
    layout: SampleLayout
    admission: SampleAdmission

    @property
    def wall_s(self) -> float:
        """Runner time of the sample, every attempt included."""
        return sum(record.outcome.wall_s for record in self.records)

    @property
    def value(self) -> float | None:
        """The sample's figure (None when it has none)."""
        return self.final.reading.stats.value

    @property
    def attempts(self) -> int:
        """Attempts the sample took (a warm-up launch is part of its attempt, not another)."""
        return max(record.number for record in self.records)

    @property
    def log(self) -> Path:
        """Where the attempt that counts kept its whole output."""
        return self.layout.log(self.final.number, warmup=self.final.warmup)

    @property
    def final(self) -> AttemptRecord[Measurement]:
        """The attempt that counts: the first success, else the last failure."""
        return self.records[-1]

    @property
    def healthy(self) -> bool:
        """Ran cleanly and gave a positive figure; anything else ends the bucket run."""
        final = self.final
        value = final.reading.stats.value
        return (
            final.outcome.phase is None and final.reading.usable and value is not None and value > 0
        )


def measure_sample(
    bucket: Bucket,
    settings: BenchSettings,
    layout: SampleLayout,
    control: AdmissionControl,
    *,
    planned: bool = True,
    expected_s: float | None = None,
) -> SampleRun:
    """Sample ``layout.index`` of the bucket, in its own directories (``layout``), with
    retry, between admission control's checks of the machine.

    A ``planned`` sample's first launch (and the warm-up its cold cache needs) is the
    plan; its retries, and every launch of a sample that is not planned, are charged to
    the run's allowance, and a retry it cannot afford at ``expected_s`` is not started.
    """
    driver = get_driver(bucket.driver)
    invocations: dict[int, Invocation] = {}

    def plan(dirs: AttemptDirs) -> Invocation:
        invocation = launch_invocation(bucket, settings.checkout, dirs)
        invocations[dirs.number] = invocation
        return invocation

    def read(dirs: AttemptDirs, outcome: ProcessOutcome) -> Measurement:
        return _require_metric(bucket, driver.read(bucket, dirs, invocations[dirs.number]))

    expected = expected_s if expected_s is not None else declared_launch_s(bucket)

    def attempts() -> list[AttemptRecord[Measurement]]:
        try:
            records = run_with_retry(
                plan=plan,
                read=read,
                succeeded=lambda outcome, m: outcome.phase is None and m.error is None,
                watch=Watch(
                    timeout_s=bucket.timeout_minutes * 60,
                    markers=driver.markers(bucket),
                    # A name the container block passes on is wanted by name: kept for docker.
                    keep_env=(
                        *bucket.keep_env,
                        *(bucket.container.env if bucket.container else ()),
                    ),
                    on_line=settings.echo,
                ),
                layout=layout,
                retry=Retries(
                    retries=bucket.retries,
                    on_retry=lambda record: settings.say(_retry_notice(bucket, record)),
                    # A retry takes as long as a launch of this run, or the attempt it repeats.
                    may_retry=lambda failed: settings.allowance.refusal(
                        "a retry", max(expected, failed.outcome.wall_s)
                    ),
                ),
                wrap=container_wrap(bucket, settings, layout),
            )
        except CheckoutUnsupported as exc:
            return [_not_launched(str(exc), FailurePhase.IMPORT)]
        except EnvironmentProblem as exc:
            settings.say(f"{bucket.id}: cannot launch ({exc})")
            return [_not_launched(str(exc), FailurePhase.ENVIRONMENT)]
        if records[-1].not_retried:
            settings.say(_retry_notice(bucket, records[-1]))
        return records

    records, admission = control.measure(layout.index, attempts)
    settings.allowance.charge(sum(r.outcome.wall_s for r in records if not planned or r.number > 1))
    return SampleRun(index=layout.index, records=records, layout=layout, admission=admission)


def declared_launch_s(bucket: Bucket) -> float:
    """One launch of ``bucket`` before any was measured: its ``launch_minutes``, else the
    longest it may take (its timeout)."""
    return 60.0 * (bucket.launch_minutes or bucket.timeout_minutes)


def grant_remeasure(
    bucket: Bucket,
    settings: BenchSettings,
    control: AdmissionControl,
    what: str,
    wall_s: float,
    admission: SampleAdmission | None,
) -> bool:
    """Whether a sample taken on an unfit machine is measured again; says which."""
    granted = control.may_remeasure(wall_s)
    why = "; ".join(admission.reasons) if admission else "unfit machine"
    then = "measuring again" if granted else "set aside (the re-measure budget is spent)"
    settings.say(f"{bucket.id}: {what} was taken on an unfit machine ({why}); {then}")
    return granted


def measured_bucket(bucket: Bucket, samples: Iterable[SampleRun]) -> Bucket:
    """``bucket`` with each selection made a metric per benchmark its samples measured (R5)."""
    return bucket.selecting(name for s in samples for name in s.final.reading.metrics)


def sample_figure(sample: SampleRun, metric: Metric) -> float | None:
    """A sample's figure of ``metric``.

    Another metric than the primary counts only where it is positive (an optional one may
    be absent) and only in samples with a primary figure, so every metric of a run lists
    the same sample indices.
    """
    reading = sample.final.reading
    if metric.name == PRIMARY or reading.stats.value is None:
        return reading.stats.value
    value = reading.metrics.get(metric.name)
    return value if value is not None and value > 0 else None


def _retry_notice(bucket: Bucket, record: AttemptRecord[Measurement]) -> str:
    """``cartpole/numpy: attempt 1 of 2 failed (runtime, exit 1: RuntimeError: boom); retrying``,
    or the one line that says why it was not retried."""
    outcome, measurement = record.outcome, record.reading
    what = outcome.phase.value if outcome.phase else "output"
    exit_text = f", exit {outcome.exit_code}" if outcome.exit_code not in (0, None) else ""
    last = last_lines(outcome.log_tail, 1)
    cause = (
        last[0]
        if outcome.phase is not None and last
        else (measurement.config_mismatch or measurement.error or "see its log")
    )
    then = record.not_retried or "retrying with fresh outputs and caches"
    attempt = f"attempt {record.number} of {bucket.retries + 1}"
    return f"{bucket.id}: {attempt} failed ({what}{exit_text}: {cause}); {then}"


def last_lines(text: str, count: int) -> list[str]:
    """The last ``count`` non-empty lines of a log tail."""
    return [line for line in text.splitlines() if line.strip()][-count:]


def _not_launched(message: str, phase: FailurePhase) -> AttemptRecord[Measurement]:
    """The attempt that never launched: the checkout cannot load the benchmark (``import``),
    or the environment cannot run it (``environment``: the message is the fix)."""
    return AttemptRecord(
        number=1,
        outcome=ProcessOutcome(
            exit_code=None,
            timed_out=False,
            wall_s=0.0,
            log_tail=f"perfgate: {message}\n",
            phase=phase,
            fix=message if phase is FailurePhase.ENVIRONMENT else None,
        ),
        reading=Measurement(stats=MetricStats(value=None), error=message),
    )


def _require_metric(bucket: Bucket, measurement: Measurement) -> Measurement:
    """An output without the primary figure, or a required metric, is unreadable (R3)."""
    if measurement.error is not None:
        return measurement
    where = measurement.output_file or "the output"
    if measurement.stats.value is None:
        return replace(
            measurement,
            error=f"metric {bucket.metric.path!r} is missing or not a finite number in {where}",
        )
    for metric in bucket.selecting(measurement.metrics).metrics:
        value = measurement.metrics.get(metric.name)
        if metric.required and (value is None or value <= 0):
            return replace(
                measurement,
                error=f"metric {metric.name!r} ({metric.path}) is missing or not a positive "
                f"finite number in {where}; if some outputs lack it, declare it required: false",
            )
    return measurement
