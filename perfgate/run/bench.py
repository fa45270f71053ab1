"""Run buckets: driver -> execution -> Result artifact (one bucket, one artifact)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from perfgate import __version__
from perfgate.config import (
    PRIMARY,
    AdmissionMode,
    AdmissionPolicy,
    Bucket,
    ConfirmMode,
    ImageSpec,
    Metric,
)
from perfgate.context import RunContext
from perfgate.identity import (
    BENCHMARK_CONTRACT_VERSION,
    Identity,
    metric_contract,
    runtime_inputs,
    stable_hash,
)
from perfgate.result import (
    AttemptTiming,
    BucketRef,
    CacheState,
    CiInfo,
    FailurePhase,
    Hardware,
    Health,
    IdentityRecord,
    MetricReading,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    Result,
    SampleAdmission,
    SampleReading,
    Sampling,
    SamplingStop,
    Source,
    Timings,
    write_result,
)
from perfgate.run import container, staleness
from perfgate.run.admission import AdmissionControl
from perfgate.run.bundle import MetricStats
from perfgate.run.drivers import CheckoutUnsupported, Measurement, get_driver
from perfgate.run.execution import (
    AttemptDirs,
    AttemptRecord,
    EnvironmentProblem,
    Invocation,
    ProcessOutcome,
    WarmCache,
    attempt_log,
    read_log_excerpt,
    run_with_retry,
    with_cache_env,
)
from perfgate.run.paired import BaseCheckout, PairPlan, measure_pairs
from perfgate.run.sampling import Sampler, SamplingPlan, Step


@dataclass(frozen=True, kw_only=True)
class BenchSettings:
    """Where a bench run works and what it runs on."""

    checkout: Path
    work_root: Path
    out_dir: Path
    hardware: Hardware
    context: RunContext
    # The benchmark's output, line by line, as it runs (None: quiet; the log file has it all).
    echo: Callable[[str], None] | None = None
    # Notices a person should see while it runs: each retry and why.
    say: Callable[[str], None] = lambda message: None
    # Is the machine fit to measure? Checked before and after every sample; the bench and
    # the seed pass perfgate.yaml's policy (off unless given: nothing to read otherwise).
    admission: AdmissionPolicy = field(
        default_factory=lambda: AdmissionPolicy(mode=AdmissionMode.OFF)
    )
    # perfgate.yaml's image block: with ``per_commit``, each checkout runs in its commit's image.
    image: ImageSpec | None = None
    # Where buckets keep their warm caches (None: under the work root, where CI restores them).
    warm_caches: Path | None = None

    @property
    def warm_root(self) -> Path:
        """The directory holding one warm cache per bucket (R16)."""
        return self.warm_caches or self.work_root / WARM_CACHE_DIR


#: Under the work root: one warm cache per bucket (R16), ``<file stem>`` for the change and
#: ``<file stem>.base-<commit>`` for a merge base measured beside it.
WARM_CACHE_DIR = "warm-cache"


@dataclass(frozen=True, kw_only=True)
class WarmCacheKeys:
    """Where CI keeps a bucket's warm cache and the actions-cache keys it is restored by.

    ``restore`` runs from the most specific prefix (the same launch) to the widest (the same
    task), as upstream's restore-keys do; the key saved is the first plus the run's id, so
    each run saves its own (the cache rolls) and the next restores the newest.
    """

    path: str
    restore: tuple[str, str, str]


def warm_cache_keys(bucket: Bucket, checkout: Path, work_dir: Path) -> WarmCacheKeys | None:
    """The bucket's warm-cache keys, following its driver's pins read from ``checkout``
    (ConfigError when one cannot be read); None for a bucket that runs cold."""
    if cache_state(bucket) is not CacheState.WARM:
        return None
    pins = ""
    for file, package in get_driver(bucket.driver).cache_pins:
        version = staleness.required_pin(
            checkout, file, package, needed_by="the warm cache key", fix=file
        )
        pins += f"{package}{version}-"
    task = f"perfgate-warm-{pins}{bucket.task}-"
    backend = f"{task}{bucket.backend_key}-"
    launch = f"{backend}{stable_hash(launch_identity(bucket))}-"
    return WarmCacheKeys(
        path=str(work_dir / WARM_CACHE_DIR / bucket.file_stem), restore=(launch, backend, task)
    )


def cache_state(bucket: Bucket) -> CacheState:
    """WARM when the bucket's launches share a warm cache (its ``cache``, else its driver's)."""
    mode = bucket.cache or ("warm" if get_driver(bucket.driver).warm_cache else "cold")
    return CacheState(mode)


def launch_identity(bucket: Bucket) -> dict[str, object]:
    """Everything that changes the experiment (hashed into ``launch_hash``)."""
    driver = get_driver(bucket.driver)
    threads = bucket.threads if bucket.threads is not None else driver.default_threads
    return {
        "task": bucket.task,
        "backend_key": bucket.backend_key,
        "physics": bucket.physics,
        "render": bucket.render,
        "driver": bucket.driver,
        "num_envs": bucket.num_envs,
        "steps": bucket.steps,
        "warmup_steps": bucket.warmup_steps,
        "seed": bucket.seed,
        # Only when set: buckets that leave threads alone keep the hashes they had.
        **({"threads": threads} if threads is not None else {}),
        # Cache state is part of the experiment (R16); cold buckets keep the hashes they had.
        **({"cache": "warm"} if cache_state(bucket) is CacheState.WARM else {}),
        **driver.launch_inputs(bucket),
    }


def benchmark_identity(bucket: Bucket, metric: Metric | None = None) -> dict[str, object]:
    """The measurement contract of ``metric`` (the primary's by default): ``benchmark_hash``."""
    driver = get_driver(bucket.driver)
    metric = metric or bucket.metric
    contract = {
        "benchmark_contract_version": BENCHMARK_CONTRACT_VERSION,
        "warmup_steps": bucket.warmup_steps,
        "steps": bucket.steps,
        "driver": driver.name,
        "driver_version": driver.version,
    }
    return metric_contract(contract, path=metric.path, direction=metric.direction.value)


#: After the initial repeats, and after every further sample: does the verdict need another?
#: It sees the run so far as a Result (the judge side reads the bucket's window for it).
Confirm = Callable[[Bucket, Result], bool]


class Pairing(Protocol):
    """The judge side of paired confirmation (``gate.confirm: paired``)."""

    def step(self, bucket: Bucket, result: Result) -> Step:
        """What the run should spend next: nothing, another launch here, or pairs."""
        ...

    def pair_plan(self, bucket: Bucket, result: Result, left_minutes: float | None) -> PairPlan:
        """How many pairs to take at most, or why none (they cannot decide, or the run's
        shared budget, ``left_minutes`` of it left, cannot afford them)."""
        ...

    def order(self, runs: Sequence[tuple[Bucket, Result]]) -> list[Bucket]:
        """The buckets in the order the run's shared budget is spent on them."""
        ...

    def base(self, bucket: Bucket, result: Result) -> AbstractContextManager[BaseCheckout | str]:
        """The merge base checked out (removed on exit), or why none can be measured."""
        ...

    def wants_more(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        """After each pair: does the paired test need another one?"""
        ...


#: What numeric libraries read for their thread count.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS")  # fmt: skip

# Crashes whose log may show a stale image (R7); a hang, an OOM or a mismatch cannot.
CRASH_PHASES = frozenset(
    {FailurePhase.IMPORT, FailurePhase.DRIVER, FailurePhase.INIT, FailurePhase.RUNTIME}
)


def bucket_hashes(bucket: Bucket) -> tuple[str, str]:
    """The launch and benchmark hashes a run of ``bucket`` will carry (known before running)."""
    return stable_hash(launch_identity(bucket)), stable_hash(benchmark_identity(bucket))


def _pin_files(bucket: Bucket) -> tuple[str, ...]:
    declared = bucket.isaaclab.pin_files if bucket.isaaclab else None
    return declared if declared is not None else staleness.DEFAULT_PIN_FILES


def container_of(bucket: Bucket, image: ImageSpec | None = None) -> container.Container | None:
    """The bucket's container: its driver's profile with its ``container`` block's overrides
    (an image per commit carries the commit's own source); None when it runs on the host."""
    if bucket.container is None:
        return None
    resolved = container.resolve(bucket.container, get_driver(bucket.driver).container)
    per_commit = image is not None and image.per_commit is not None
    return resolved.for_own_source() if per_commit else resolved


def _container_wrap(
    bucket: Bucket,
    settings: BenchSettings,
    run_key: str,
    *,
    env: Mapping[str, str] = os.environ,
    dry_run: bool = False,
) -> Callable[[Invocation, AttemptDirs], Invocation] | None:
    """The bucket's ``docker run`` wrapper, or None when it runs on the host. A ``dry_run``
    wrapper prepares nothing on the host and pulls nothing (an image per commit is named)."""
    resolved = container_of(bucket, settings.image)
    if resolved is None:
        return None
    image = container.image_for(
        resolved, env, f"bucket {bucket.id}", image=settings.image,
        checkout=settings.checkout, pull=not dry_run,
    )  # fmt: skip

    def wrap(invocation: Invocation, dirs: AttemptDirs) -> Invocation:
        name = container.container_name(
            run_key, str(os.getpid()), bucket.file_stem, str(dirs.number)
        )
        if not dry_run:
            container.prepare(resolved, checkout=settings.checkout, dirs=dirs)
        return container.wrap(
            invocation,
            container=resolved,
            image=image,
            checkout=settings.checkout,
            dirs=dirs,
            name=name,
        )

    return wrap


def thread_env(threads: int | None) -> dict[str, str]:
    """The environment that caps numeric libraries at ``threads`` (nothing when None)."""
    if threads is None:
        return {}
    return {name: str(threads) for name in THREAD_VARIABLES}


@dataclass(frozen=True, kw_only=True)
class SampleRun:
    """One sample: one run of the benchmark, with its retries (R10)."""

    index: int
    records: list[AttemptRecord[Measurement]]
    work_dir: Path
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


class BucketRun:
    """One bucket run in progress: its samples, admission control, its pairs, its Result.

    ``take`` measures the planned repeats (and, under ``gate.confirm: repeat``, more while
    the rule asks); ``confirm`` spends confirmation under ``gate.confirm: paired`` within an
    allowance of runner seconds (the share of a run's budget the matrix gave it).
    """

    def __init__(self, bucket: Bucket, settings: BenchSettings, plan: SamplingPlan) -> None:
        self.bucket, self.settings, self.plan = bucket, settings, plan
        self.run_key = _run_key(settings.context)
        self.started_at, self.started = datetime.now(UTC), time.monotonic()
        # The run's own time: waiting while other buckets measure is not this bucket's.
        self.finished_at, self.wall_s = self.started_at, 0.0
        self.control = AdmissionControl(settings.admission, settings.hardware)
        self.paired: PairedRecord | None = None
        self.stopped = SamplingStop.PLANNED
        self.confirming_s = 0.0  # runner seconds ``confirm`` spent
        self.sampler = Sampler(
            lambda index: _measure(bucket, settings, self.run_key, index, self.control),
            healthy=lambda sample: sample.healthy,
            set_aside=lambda sample: sample.admission.set_aside,
            remeasure=lambda sample: self.remeasure(
                f"sample {sample.index}", sample.wall_s, sample.admission
            ),
        )

    def remeasure(self, what: str, wall_s: float, admission: SampleAdmission | None) -> bool:
        """Whether admission control grants measuring ``what`` again; says what it does."""
        return _remeasure(self.bucket, self.settings, self.control, what, wall_s, admission)

    def result(self, stopped: SamplingStop | None = None) -> Result:
        """The run so far as a Result."""
        timing = (self.started_at, self.started, self.finished_at, self.wall_s)
        return _result(self.bucket, self.settings, self.sampler.taken, self.plan,
                       stopped or self.stopped, timing, self.sampler.replaced, self.control,
                       self.paired)  # fmt: skip

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
            self.stopped = self.sampler.run(self.plan, self.asks(confirm))
        self._worked(began)

    def asks(self, confirm: Confirm) -> Callable[[Sequence[SampleRun]], bool]:
        """The question the sampler asks after each sample: does ``confirm`` want more?"""
        return lambda taken: confirm(self.bucket, self.result(SamplingStop.PLANNED))

    def confirm(
        self, pairing: Pairing, confirm: Confirm | None, allowance_s: float | None = None
    ) -> None:
        """``gate.confirm: paired``: more launches here while they may still clear the run,
        then pairs with the merge base when the window still cannot, within the bucket's
        budgets and ``allowance_s``; none that cannot decide. Without a merge base to
        measure, by repeats against the window (``confirm``)."""
        if self.stopped is not SamplingStop.PLANNED:
            return  # a failed run is not measured further
        bucket, began = self.bucket, time.monotonic()
        # The repeat budget counts this run's own time, not the other buckets' repeats.
        self.sampler.started = began - self.wall_s

        def left() -> float | None:
            return None if allowance_s is None else allowance_s - (time.monotonic() - began)

        def repeat() -> bool:
            room = left()
            return (room is None or room > 0) and pairing.step(bucket, self.result()) is Step.REPEAT

        if pairing.step(bucket, self.result()) is Step.REPEAT:
            self.stopped = self.sampler.run(self.plan, lambda taken: repeat())
        elif pairing.step(bucket, self.result()) is Step.DONE:
            self.stopped = SamplingStop.SETTLED
        if self.stopped is SamplingStop.FAILED or pairing.step(bucket, self.result()) is Step.DONE:
            self.confirming_s += time.monotonic() - began
            self._worked(began)
            return
        room = left()
        plan = pairing.pair_plan(bucket, self.result(), None if room is None else room / 60.0)
        if plan.pairs <= 0:
            self.paired = PairedRecord(
                status=PairedStatus.SKIPPED, reason=plan.skipped, max_pairs=bucket.max_pairs
            )
        else:
            budget = bucket.pair_budget_minutes
            limits = [
                v for v in (budget * 60.0 if budget is not None else None, room) if v is not None
            ]
            self.paired = _pair(self, pairing, max_pairs=min(bucket.max_pairs, plan.pairs),
                                budget_s=min(limits) if limits else None)  # fmt: skip
        self.settings.say(_paired_notice(bucket, self.paired))
        unavailable = self.paired.status is PairedStatus.UNAVAILABLE
        if unavailable or (self.paired.status is PairedStatus.FAILED and
                           self.paired.head_failure is None):  # fmt: skip
            # No merge base to measure: confirm against the window by repeats instead.
            self.stopped = self.sampler.run(
                self.plan, None if confirm is None else self.asks(confirm)
            )
        self.confirming_s += time.monotonic() - began
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
    pairing: Pairing | None = None,
) -> Result:
    """Run one bucket's samples (each with retry) and return its Result (not yet written).

    ``plan`` says how many samples (default: the bucket's repeats, no confirmation);
    ``confirm`` answers, from the samples so far, whether the verdict needs another;
    ``pairing`` (``gate.confirm: paired``) compares a suspicious run with its merge base.
    """
    run = BucketRun(bucket, settings, plan or SamplingPlan.for_bucket(bucket, ConfirmMode.OFF))
    run.take(confirm)
    if run.plan.confirm is ConfirmMode.PAIRED:
        if pairing is not None:
            run.confirm(pairing, confirm)
        elif confirm is not None:
            run.stopped = run.sampler.run(run.plan, run.asks(confirm))
    return run.finish()


def _remeasure(
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


def _paired_notice(bucket: Bucket, paired: PairedRecord) -> str:
    """``cartpole/numpy: paired A/B with abc123def456: 6 pair(s) (settled)``."""
    if paired.status is PairedStatus.UNAVAILABLE:
        return f"{bucket.id}: no paired A/B ({paired.reason}); confirming by repeats"
    if paired.status is PairedStatus.SKIPPED:
        return f"{bucket.id}: no paired A/B: {paired.reason}; the window's verdict stands"
    base = (paired.base_commit or "?")[:12]
    pairs = len(paired.pairs())
    stopped = paired.stopped.value if paired.stopped else "?"
    extra = f"; {paired.reason}" if paired.reason else ""
    return f"{bucket.id}: paired A/B with the merge base {base}: {pairs} pair(s) ({stopped}){extra}"


def _pair(
    run: BucketRun, pairing: Pairing, *, max_pairs: int, budget_s: float | None
) -> PairedRecord:
    """Measure the merge base and the change alternately on this runner (the evidence)."""
    bucket, settings, head = run.bucket, run.settings, run.result()
    started = time.monotonic()
    with pairing.base(bucket, head) as base:
        if isinstance(base, str):
            return PairedRecord(
                status=PairedStatus.UNAVAILABLE,
                reason=base,
                max_pairs=bucket.max_pairs,
                wall_s=round(time.monotonic() - started, 3),
            )
        return measure_alternately(
            bucket,
            {
                PairedSide.BASE: (base.bucket, replace(settings, checkout=base.checkout)),
                PairedSide.HEAD: (bucket, settings),
            },
            base_commit=base.commit,
            run_key=run.run_key,
            control=run.control,
            max_pairs=max_pairs,
            budget_s=budget_s,
            wants_more=lambda record: pairing.wants_more(bucket, head, record),
            started=started,
        )


def measure_alternately(
    bucket: Bucket,
    sides: Mapping[PairedSide, tuple[Bucket, BenchSettings]],
    *,
    base_commit: str,
    run_key: str,
    control: AdmissionControl,
    max_pairs: int,
    budget_s: float | None,
    wants_more: Callable[[PairedRecord], bool],
    started: float | None = None,
) -> PairedRecord:
    """The base side and the head side, alternately on this machine, pair by pair (A B,
    B A, ...), until ``wants_more`` is satisfied, ``max_pairs`` are in or the budget is spent.

    ``sides`` maps each side to the bucket as its checkout declares it and the settings
    that run it there; ``bucket`` names the metrics every pair records. Both sides run the
    same way (R16): the base's own benchmark with the head's container profile and cache
    state, each side warming a cache of its own, so no launch of one side compiles the
    other's kernels.
    """
    started = time.monotonic() if started is None else started
    head_bucket, head_settings = sides[PairedSide.HEAD]
    base_bucket, base_settings = sides[PairedSide.BASE]
    runs = {
        PairedSide.BASE: (
            replace(base_bucket, container=head_bucket.container, cache=head_bucket.cache),
            base_settings,
            f"{bucket.file_stem}.base-{base_commit[:12]}",
        ),
        PairedSide.HEAD: (head_bucket, head_settings, bucket.file_stem),
    }

    def measure(side: PairedSide, pair: int, index: int) -> PairedSample:
        which, where, warm_name = runs[side]
        run = _measure(
            which, where, run_key, index, control, label=f"paired-{index}-{side}",
            warm_name=warm_name,
        )  # fmt: skip
        others = {m.name: _figure(run, m) for m in bucket.metrics} if run.healthy else {}
        return PairedSample(
            sample_index=index,
            pair=pair,
            side=side,
            value=run.value if run.healthy else None,
            metrics={name: value for name, value in others.items() if value is not None},
            wall_s=round(run.wall_s, 3),
            phase=_phase(run),
            admission=run.admission,
        )

    def record(samples: Sequence[PairedSample], stop: PairedStop | None) -> PairedRecord:
        failed = next((s for s in samples if s.failed), None)
        reason = ""
        if failed is not None:
            phase = failed.phase.value if failed.phase else "no figure"
            reason = f"the {failed.side.value} sample {failed.sample_index} failed ({phase})"
        return PairedRecord(
            status=PairedStatus.FAILED if failed else PairedStatus.MEASURED,
            reason=reason,
            base_commit=base_commit,
            max_pairs=max_pairs,
            samples=tuple(samples),
            stopped=stop,
            wall_s=round(time.monotonic() - started, 3),
        )

    samples, stop = measure_pairs(
        max_pairs=max_pairs,
        budget_s=budget_s,
        measure=measure,
        remeasure=lambda s: _remeasure(
            head_bucket,
            head_settings,
            control,
            f"paired {s.side.value} sample {s.sample_index}",
            s.wall_s,
            s.admission,
        ),
        wants_more=lambda taken: wants_more(record(taken, None)),
    )
    return record(samples, stop)


def _phase(run: SampleRun) -> FailurePhase | None:
    """How a sample failed (output or mismatch when the process itself was fine)."""
    final = run.final
    phase = final.outcome.phase
    if phase is None and final.reading.config_mismatch:
        return FailurePhase.CONFIG_MISMATCH
    if phase is None and not run.healthy:
        return FailurePhase.OUTPUT
    return phase


def _measure(
    bucket: Bucket,
    settings: BenchSettings,
    run_key: str,
    index: int,
    control: AdmissionControl,
    label: str | None = None,
    warm_name: str | None = None,
) -> SampleRun:
    """Sample ``index`` of the bucket: its own work directory, with retry, between admission
    control's checks of the machine (``label`` names its directory). Its cache is its own
    per attempt, or the bucket's warm cache (``warm_name`` under the warm root)."""
    driver = get_driver(bucket.driver)
    sample_dir = label or f"sample-{index}"
    work_dir = settings.work_root / "runs" / bucket.file_stem / sample_dir
    invocations: dict[int, Invocation] = {}

    def plan(dirs: AttemptDirs) -> Invocation:
        invocation = _planned(bucket, settings.checkout, dirs)
        invocations[dirs.number] = invocation
        return invocation

    def read(dirs: AttemptDirs, outcome: ProcessOutcome) -> Measurement:
        return _require_metric(bucket, driver.read(bucket, dirs, invocations[dirs.number]))

    cache_root = settings.work_root / "cache" / run_key / bucket.file_stem / sample_dir
    warm = _warm_cache(bucket, settings, warm_name)

    def attempts() -> list[AttemptRecord[Measurement]]:
        try:
            records = run_with_retry(
                plan=plan,
                read=read,
                succeeded=lambda outcome, m: outcome.phase is None and m.error is None,
                retries=bucket.retries,
                timeout_s=bucket.timeout_minutes * 60,
                markers=driver.markers(bucket),
                work_dir=work_dir,
                cache_root=cache_root,
                warm=warm,
                wrap=_container_wrap(bucket, settings, f"{run_key}-{label or index}"),
                # A name the container block passes on is wanted by name: kept for docker to read.
                keep_env=(*bucket.keep_env, *(bucket.container.env if bucket.container else ())),
                on_line=settings.echo,
                on_retry=lambda record: settings.say(_retry_notice(bucket, record)),
            )
        except CheckoutUnsupported as exc:
            return [_not_launched(str(exc), FailurePhase.IMPORT)]
        except EnvironmentProblem as exc:
            settings.say(f"{bucket.id}: cannot launch ({exc})")
            return [_not_launched(str(exc), FailurePhase.ENVIRONMENT)]
        if records[-1].not_retried:
            settings.say(_retry_notice(bucket, records[-1]))
        return records

    records, admission = control.measure(index, attempts)
    return SampleRun(index=index, records=records, work_dir=work_dir, admission=admission)


def _run_key(ci: RunContext) -> str:
    """What keys a run's per-attempt caches: run id, attempt and run label (R10), so two
    allocations of one qualification run (same run id and attempt) never share one."""
    return "-".join(
        part for part in (ci.run_id or "local", ci.run_attempt or "1", ci.run_label) if part
    )


def _planned(bucket: Bucket, checkout: Path, dirs: AttemptDirs) -> Invocation:
    """The driver's command for one launch, with the bucket's thread settings."""
    driver = get_driver(bucket.driver)
    threads = bucket.threads if bucket.threads is not None else driver.default_threads
    invocation = driver.invocation(bucket, dirs, checkout)
    return replace(invocation, env={**thread_env(threads), **invocation.env})


def _warm_cache(bucket: Bucket, settings: BenchSettings, name: str | None) -> WarmCache | None:
    """The bucket's warm cache (``name`` under the warm root), or None when it runs cold."""
    if cache_state(bucket) is not CacheState.WARM:
        return None
    return WarmCache(path=settings.warm_root / (name or bucket.file_stem))


@dataclass(frozen=True, kw_only=True)
class PlannedLaunch:
    """What a bucket's first sample would launch: the exact command, nothing run or made."""

    invocation: Invocation
    # The bucket's resolved container (None: it runs on the host).
    container: container.Container | None
    # The warm cache and its state now (None: each attempt starts from an empty cache).
    warm: WarmCache | None

    @property
    def warmup_first(self) -> bool:
        """True when the cache is cold now, so an unmeasured warm-up launch comes first."""
        return self.warm is not None and self.warm.state is CacheState.COLD


def plan_first_launch(
    bucket: Bucket, settings: BenchSettings, env: Mapping[str, str] = os.environ
) -> PlannedLaunch:
    """The first sample's first launch of ``bucket``, as :func:`run_bucket` would start it.

    Reads the checkout, nothing more: no link is made, no image pulled (an image per
    commit is named, not awaited). Raises what planning raises (CheckoutUnsupported, a
    ConfigError for a container without an image).
    """
    work_dir = settings.work_root / "runs" / bucket.file_stem / "sample-0"
    warm = _warm_cache(bucket, settings, None)
    cache_dir = (
        warm.path
        if warm is not None
        else settings.work_root / "cache" / _run_key(settings.context) / bucket.file_stem
        / "sample-0" / "attempt-1"
    )  # fmt: skip
    dirs = AttemptDirs(number=1, output_dir=work_dir / "attempt-1" / "output", cache_dir=cache_dir)
    invocation = with_cache_env(_planned(bucket, settings.checkout, dirs), cache_dir)
    run_key = f"{_run_key(settings.context)}-0"
    wrap = _container_wrap(bucket, settings, run_key, env=env, dry_run=True)
    return PlannedLaunch(
        invocation=wrap(invocation, dirs) if wrap is not None else invocation,
        container=container_of(bucket, settings.image),
        warm=warm,
    )


def _result(
    bucket: Bucket,
    settings: BenchSettings,
    samples: Sequence[SampleRun],
    plan: SamplingPlan,
    stopped: SamplingStop,
    timing: tuple[datetime, float, datetime, float],
    replaced: Sequence[int],
    control: AdmissionControl,
    paired: PairedRecord | None,
) -> Result:
    """The bucket run's Result: health of its last sample, the figures of its healthy ones.

    The figure is the median of the samples admission control kept (of all of them when it
    set every one aside, so the artifact still says what was measured).
    """
    ci = settings.context
    started_at, _, finished_at, wall_s = timing
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
            read_log_excerpt(attempt_log(last.work_dir, final.number, warmup=final.warmup)),
            measurement.versions,
            settings.checkout,
            _pin_files(bucket),
        )
    identity = Identity(
        launch=launch_identity(bucket),
        benchmark=benchmark_identity(bucket),
        runtime=runtime_inputs(measurement.runtime_fields),
    )
    aside = {sample.index for sample in samples if sample.admission.set_aside}
    # Runner time past the plan: confirmation samples that counted, and any paired comparison.
    counted = [sample for sample in samples if sample.index not in replaced]
    confirming = counted[plan.repeats :]
    return Result(
        bucket=BucketRef.of(bucket),
        hardware=settings.hardware,
        source=Source(**ci.source_json()),
        ci=CiInfo(**ci.ci_json()),
        identity=IdentityRecord(**identity.to_json()),
        metric=replace(
            _reading(bucket.metric, samples, aside, measurement.stats),
            figures=dict(measurement.figures),
        ),
        metrics={metric.name: _reading(metric, samples, aside) for metric in bucket.metrics},
        health=Health(
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
        ),
        timings=Timings(
            started_at=started_at.isoformat(),
            finished_at=finished_at.isoformat(),
            wall_s=wall_s,
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
        ),
        log_tail=outcome.log_tail,
        log_path=str(attempt_log(last.work_dir, final.number, warmup=final.warmup)),
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
    )


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
        if (value := _figure(sample, metric)) is not None
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


def _figure(sample: SampleRun, metric: Metric) -> float | None:
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
    for metric in bucket.metrics:
        value = measurement.metrics.get(metric.name)
        if metric.required and (value is None or value <= 0):
            return replace(
                measurement,
                error=f"metric {metric.name!r} ({metric.path}) is missing or not a positive "
                f"finite number in {where}; if some outputs lack it, declare it required: false",
            )
    return measurement


def run_buckets(
    buckets: Iterable[Bucket],
    settings: BenchSettings,
    on_start: Callable[[Bucket], None] = lambda bucket: None,
    on_done: Callable[[Result], None] = lambda result: None,
    *,
    confirm_mode: ConfirmMode = ConfirmMode.OFF,
    confirm: Confirm | None = None,
    pairing: Pairing | None = None,
    budget_minutes: float | None = None,
) -> list[Result]:
    """Run each bucket in turn, writing its artifact into ``settings.out_dir`` as it finishes.

    Under ``gate.confirm: paired`` every bucket takes its repeats first; then the buckets
    the window cannot clear are confirmed in the order ``pairing.order`` gives (the most
    suspicious first), each within its own budgets and what is left of ``budget_minutes``
    (the run's, shared by the matrix), its artifact rewritten.
    """
    runs: list[BucketRun] = []
    for bucket in buckets:
        on_start(bucket)
        run = BucketRun(bucket, settings, SamplingPlan.for_bucket(bucket, confirm_mode))
        run.take(confirm)
        result = (
            run.finish()
            if pairing is None or confirm_mode is not ConfirmMode.PAIRED
            else (run.result())
        )
        write_result(result, settings.out_dir)
        on_done(result)
        runs.append(run)
    if pairing is None or confirm_mode is not ConfirmMode.PAIRED:
        return [run.result() for run in runs]
    by_bucket = {run.bucket.id: run for run in runs}
    spent_s = 0.0
    for bucket in pairing.order([(run.bucket, run.result()) for run in runs]):
        run = by_bucket[bucket.id]
        left = None if budget_minutes is None else budget_minutes * 60.0 - spent_s
        run.confirm(pairing, confirm, left)
        spent_s += run.confirming_s
        write_result(run.finish(), settings.out_dir)
    return [run.result() for run in runs]
