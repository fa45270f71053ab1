"""The result artifact: one JSON file per bucket run, validated against a shipped schema.

One schema, one module (over 500 lines on purpose): its records mirror
``schemas/result.schema.json`` field for field and are read and written together.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfgate.config import PRIMARY, Bucket, Direction
from perfgate.errors import GateMalfunction
from perfgate.identity import metric_contract, stable_hash
from perfgate.util import jsonfile

SCHEMA_VERSION = 1


class FailurePhase(StrEnum):
    """Where a run failed; absent when it did not."""

    CONFIG_MISMATCH = "config_mismatch"
    OOM = "oom"
    HANG = "hang"
    IMPORT = "import"
    DRIVER = "driver"
    INIT = "init"
    RUNTIME = "runtime"
    OUTPUT = "output"
    # The environment cannot run the benchmark (no interpreter, an unaccepted EULA, an
    # unwritable cache): another attempt would fail the same way, so none is taken.
    ENVIRONMENT = "environment"


class CacheState(StrEnum):
    """Whether a launch found its compile caches (Warp, CUDA, Kit shaders) filled (R16)."""

    COLD = "cold"  # empty: every kernel and shader is compiled during the launch
    WARM = "warm"  # filled by an earlier launch of the bucket


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """What the benchmark ran on. Only ``slug`` partitions the store; the rest is context."""

    slug: str
    gpu_name: str | None = None
    gpu_count: int = 0
    driver_version: str | None = None
    gpu_memory_mib: int | None = None
    compute_capability: str | None = None
    cpu_name: str = ""
    # Current and maximum SM and memory clocks; None when nvidia-smi cannot report them.
    clocks_mhz: Mapping[str, int | None] | None = None
    # Active clock-limiting reasons at detection time; None when unknown, () when none.
    throttle_reasons: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Artifacts store JSON lists; keep the field a tuple however it was built.
        if isinstance(self.throttle_reasons, list):
            object.__setattr__(self, "throttle_reasons", tuple(self.throttle_reasons))

    def describe(self) -> str:
        """One line for a report's run context: slug, GPU, driver, memory, clocks, throttling."""
        if self.gpu_name is None:
            return f"{self.slug} ({self.cpu_name or 'CPU'})"
        parts = [f"{self.gpu_count}x {self.gpu_name}"]
        if self.driver_version:
            parts.append(f"driver {self.driver_version}")
        if self.gpu_memory_mib:
            parts.append(f"{self.gpu_memory_mib} MiB")
        # The maximum, not the live clock: one line per machine, not one per measurement.
        clocks = self.clocks_mhz or {}
        if clocks.get("max_sm") is not None:
            parts.append(f"SM max {clocks['max_sm']} MHz")
        if self.throttle_reasons is not None:
            parts.append(f"throttle: {', '.join(self.throttle_reasons) or 'none'}")
        return f"{self.slug} ({', '.join(parts)})"


@dataclass(frozen=True, kw_only=True)
class BucketRef:
    """Which bucket a result belongs to."""

    id: str
    task: str
    backend_key: str
    physics: str
    render: str | None
    driver: str
    tags: tuple[str, ...]
    baseline_epoch: int

    @classmethod
    def of(cls, bucket: Bucket) -> BucketRef:
        """The identity a result records for ``bucket``."""
        return cls(
            id=bucket.id,
            task=bucket.task,
            backend_key=bucket.backend_key,
            physics=bucket.physics,
            render=bucket.render,
            driver=bucket.driver,
            tags=bucket.tags,
            baseline_epoch=bucket.baseline_epoch,
        )


@dataclass(frozen=True, kw_only=True)
class Source:
    """What code was measured, and which branch it is judged against."""

    commit: str | None
    branch: str | None
    target_branch: str | None
    event: str
    pr_number: int | None = None
    head_sha: str | None = None
    repository: str | None = None


@dataclass(frozen=True, kw_only=True)
class CiInfo:
    """CI identity of the run (all None locally)."""

    run_id: str | None = None
    run_attempt: str | None = None
    workflow: str | None = None
    job: str | None = None
    runner_name: str | None = None
    # The allocation (one runner job of a qualification) this run belongs to.
    run_label: str | None = None
    # The CI artifact holding this job's attempt logs (None: per bucket, as before lanes).
    log_artifact: str | None = None
    # The machine, when gate.runner_identity names it by more than the runner's name.
    machine: str | None = None

    @property
    def runner_identity(self) -> str | None:
        """What the runner model knows this run's machine by: the machine, else the runner."""
        return self.machine or self.runner_name


@dataclass(frozen=True, kw_only=True)
class IdentityRecord:
    """The three R2 hashes and the inputs behind them."""

    launch_hash: str
    benchmark_hash: str
    runtime_hash: str
    launch: dict[str, Any]
    benchmark: dict[str, Any]
    runtime: dict[str, Any]

    @classmethod
    def of(
        cls, *, launch: Mapping[str, Any], benchmark: Mapping[str, Any], runtime: Mapping[str, Any]
    ) -> IdentityRecord:
        """The record of these inputs, each hashed: what a window must match (R2)."""
        return cls(
            launch_hash=stable_hash(launch),
            benchmark_hash=stable_hash(benchmark),
            runtime_hash=stable_hash(runtime),
            launch=dict(launch),
            benchmark=dict(benchmark),
            runtime=dict(runtime),
        )


class AdmissionStatus(StrEnum):
    """Was the machine fit to measure, before and after one sample?"""

    ADMITTED = "admitted"  # checked, fit
    CONTAMINATED = "contaminated"  # checked, unfit: set aside (no window, no BLOCK)
    FLAGGED = "flagged"  # checked, unfit, kept (admission.mode: record)
    NOT_CHECKED = "not_checked"  # nothing to check here, or admission.mode: off


@dataclass(frozen=True, kw_only=True)
class GpuReading:
    """One GPU as admission control read it (None: nvidia-smi did not report the field)."""

    index: int | None = None
    sm_mhz: int | None = None
    memory_mhz: int | None = None
    max_sm_mhz: int | None = None
    max_memory_mhz: int | None = None
    # Active clock-event (throttle) reasons; () when none.
    throttle_reasons: tuple[str, ...] | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    ecc_uncorrected: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.throttle_reasons, list):
            object.__setattr__(self, "throttle_reasons", tuple(self.throttle_reasons))


@dataclass(frozen=True, kw_only=True)
class MachineState:
    """What admission control read at one moment: the GPUs, or a CPU-only runner's CPUs."""

    gpus: tuple[GpuReading, ...] = ()
    driver_version: str | None = None
    # Compute processes on the checked GPUs (none is ours: it is not running at a check).
    processes: tuple[str, ...] = ()
    # CPU-only runners: the CPU frequency governors in use and the 1-minute load average.
    governors: tuple[str, ...] | None = None
    load_1m: float | None = None
    cpus: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MachineState:
        """Rebuild from an artifact's dict."""
        return cls(
            gpus=tuple(GpuReading(**gpu) for gpu in data.get("gpus", ())),
            driver_version=data.get("driver_version"),
            processes=tuple(data.get("processes", ())),
            governors=None if data.get("governors") is None else tuple(data["governors"]),
            load_1m=data.get("load_1m"),
            cpus=data.get("cpus"),
        )


@dataclass(frozen=True, kw_only=True)
class SampleAdmission:
    """Admission control's record of one sample, keyed by its ``sample_index``."""

    sample_index: int
    status: AdmissionStatus
    # Why the machine was unfit, as a reader says it: "GPU throttled: HW slowdown".
    reasons: tuple[str, ...] = ()
    # Time spent waiting for a fit machine before the sample started.
    waited_s: float = 0.0
    before: MachineState | None = None
    after: MachineState | None = None

    @property
    def set_aside(self) -> bool:
        """Never in a window, never behind a BLOCK."""
        return self.status is AdmissionStatus.CONTAMINATED

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SampleAdmission:
        """Rebuild from an artifact's dict."""
        before, after = data.get("before"), data.get("after")
        return cls(
            sample_index=data["sample_index"],
            status=AdmissionStatus(data["status"]),
            reasons=tuple(data.get("reasons", ())),
            waited_s=data.get("waited_s", 0.0),
            before=None if before is None else MachineState.from_json(before),
            after=None if after is None else MachineState.from_json(after),
        )


class PairedSide(StrEnum):
    """Which checkout a paired sample measured."""

    BASE = "base"  # the merge base, in a throwaway worktree, with its own benchmark
    HEAD = "head"  # the change under test


class PairedStatus(StrEnum):
    """What became of the paired comparison a suspicious run asked for."""

    MEASURED = "measured"  # pairs were taken: the paired test decides
    UNAVAILABLE = "unavailable"  # no base could be measured: the run confirmed by repeats
    FAILED = "failed"  # a sample failed during the pairs (its side says whose)
    # None taken on purpose: the budget could not decide, or the run's shared budget went to
    # more suspicious buckets (the reason says which and what it needed): the window decides
    SKIPPED = "skipped"


class PairedStop(StrEnum):
    """Why a paired comparison took no further pair."""

    SETTLED = "settled"  # the paired test decided
    MAX_PAIRS = "max_pairs"
    TIME_BUDGET = "time_budget"  # pair_budget_minutes spent
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class PairedSample:
    """One sample of a paired comparison: its place, its side, its figure (None: it failed)."""

    sample_index: int  # order within the comparison
    pair: int
    side: PairedSide
    # The primary metric's figure; the bucket's other metrics by name (what this side's
    # output had of them).
    value: float | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    # Runner time of the sample, every launch included: its retries and a warm-up launch
    # (``warmup_s`` of it), which the base side's cache needs for every new merge base.
    wall_s: float = 0.0
    launches: int = 1
    warmup_s: float = 0.0
    phase: FailurePhase | None = None
    admission: SampleAdmission | None = None

    @property
    def failed(self) -> bool:
        """The benchmark failed for this sample: no figure, or a failure phase."""
        return self.value is None or self.phase is not None

    @property
    def usable(self) -> bool:
        """A healthy figure from a machine admission control did not set aside."""
        return (
            self.value is not None
            and self.phase is None
            and (self.admission is None or not self.admission.set_aside)
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairedSample:
        """Rebuild from a validated artifact's dict."""
        admission = data.get("admission")
        return cls(
            **{
                **data,
                "side": PairedSide(data["side"]),
                "phase": FailurePhase(data["phase"]) if data.get("phase") else None,
                "admission": None if admission is None else SampleAdmission.from_json(admission),
            }
        )


@dataclass(frozen=True, kw_only=True)
class PairedRecord:
    """The merge base and the change measured alternately on one runner (the evidence)."""

    status: PairedStatus
    # Why it was unavailable or failed; empty when it measured.
    reason: str = ""
    base_commit: str | None = None
    max_pairs: int = 0
    samples: tuple[PairedSample, ...] = ()
    stopped: PairedStop | None = None
    # Runner time of the comparison, the base checkout included.
    wall_s: float = 0.0

    @property
    def head_failure(self) -> PairedSample | None:
        """The first sample of the change itself that failed during the pairs, if any."""
        return next((s for s in self.samples if s.side is PairedSide.HEAD and s.phase), None)

    def measures(self, metric: str) -> bool:
        """Whether any sample of the comparison has a figure of ``metric``."""
        return any(
            (s.value if metric == PRIMARY else s.metrics.get(metric)) is not None
            for s in self.samples
        )

    def pairs(self, metric: str = PRIMARY) -> list[tuple[float, float]]:
        """(base, head) figures of ``metric`` in every pair whose two samples are usable.

        A side measured again after admission control set a sample aside counts with its
        last usable figure; a pair where either side lacks the metric is left out.
        """
        base: dict[int, float] = {}
        head: dict[int, float] = {}
        for sample in self.samples:
            value = sample.value if metric == PRIMARY else sample.metrics.get(metric)
            if sample.usable and value is not None:
                (base if sample.side is PairedSide.BASE else head)[sample.pair] = value
        return [(base[p], head[p]) for p in sorted(base) if p in head]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairedRecord:
        """Rebuild from an artifact's dict."""
        stopped = data.get("stopped")
        return cls(
            **{
                **data,
                "status": PairedStatus(data["status"]),
                "samples": tuple(PairedSample.from_json(raw) for raw in data.get("samples", ())),
                "stopped": PairedStop(stopped) if stopped else None,
            }
        )


class SamplingStop(StrEnum):
    """Why a bucket run took no further sample."""

    PLANNED = "planned"  # the planned repeats; nothing asked for more
    SETTLED = "settled"  # the rule needed no more samples to decide
    MAX_REPEATS = "max_repeats"  # max_repeats reached
    TIME_BUDGET = "time_budget"  # repeat_budget_minutes spent
    FAILED = "failed"  # a sample failed; a failed run is not measured further


class SpendKind(StrEnum):
    """What a bucket run's runner time went to, as a runner bills it (R17)."""

    SETUP = "setup"  # the job's start to its first launch: checkout, image, cache restore
    MEASURE = "measure"  # the planned repeats
    CONFIRM = "confirm"  # further samples against the window
    PAIR = "pair"  # both sides of every pair (their retries included)
    BASE_CHECKOUT = "base_checkout"  # the merge base's worktree and its LFS content
    WARMUP = "warmup"  # unmeasured launches that fill a cold cache (the base's included)
    RETRY = "retry"  # failed attempts that were retried
    REMEASURE = "remeasure"  # samples admission control set aside and measured again
    WAIT = "wait"  # waiting for a fit machine


@dataclass(frozen=True, kw_only=True)
class SpendLine:
    """Launches and runner seconds of one kind of spending."""

    launches: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Spend:
    """What one bucket run cost its runner, by kind (R17): every launch, setup and wait."""

    lines: Mapping[SpendKind, SpendLine] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """Runner seconds in all."""
        return sum(line.seconds for line in self.lines.values())

    @property
    def launches(self) -> int:
        """Launches in all: samples, warm-ups, retries, re-measures, both sides of pairs."""
        return sum(line.launches for line in self.lines.values())

    def of(self, kind: SpendKind) -> SpendLine:
        """One kind's line (empty when nothing went to it)."""
        return self.lines.get(kind, SpendLine())

    def __add__(self, other: Spend) -> Spend:
        kinds = dict.fromkeys([*self.lines, *other.lines])
        return Spend(
            lines={
                kind: SpendLine(
                    launches=self.of(kind).launches + other.of(kind).launches,
                    seconds=round(self.of(kind).seconds + other.of(kind).seconds, 3),
                )
                for kind in SpendKind
                if kind in kinds
            }
        )

    def to_json(self) -> dict[str, Any]:
        """``{"seconds": total, "launches": total, "lines": {kind: {launches, seconds}}}``."""
        return {
            "seconds": round(self.seconds, 3),
            "launches": self.launches,
            "lines": {
                kind.value: {"launches": line.launches, "seconds": round(line.seconds, 3)}
                for kind, line in self.lines.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Spend:
        """Rebuild from an artifact's dict (its totals are derived, not read)."""
        return cls(
            lines={
                SpendKind(kind): SpendLine(launches=raw["launches"], seconds=raw["seconds"])
                for kind, raw in data.get("lines", {}).items()
            }
        )


@dataclass(frozen=True, kw_only=True)
class SampleReading:
    """One sample of a bucket run: one run of its benchmark, in the order taken."""

    sample_index: int
    value: float
    wall_s: float = 0.0
    # The caches the sample's launch started from (None in artifacts from before R16).
    cache: CacheState | None = None


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """How a bucket run was sampled: the plan, and why it stopped."""

    confirm: str
    repeats: int
    max_repeats: int
    stopped: SamplingStop
    # Samples past the repeats that confirmed against the window (set-aside ones replaced
    # by admission control are not among them).
    confirming_samples: int = 0
    # Runner time spent on confirmation: those samples, and any paired comparison.
    confirmation_s: float = 0.0
    # Runner time admission control cost: waiting for a fit machine, re-measured samples.
    admission_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class MetricReading:
    """The measured figure and its spread; ``samples`` are what the verdict uses."""

    path: str
    direction: Direction
    unit: str
    # The run's robust centre (the median of its samples), shown as its figure.
    value: float | None
    # Over the samples when there are several; else the benchmark's own spread.
    std: float | None = None
    min: float | None = None
    max: float | None = None
    # Further finite figures of the same run, keyed by output path (recorded, not gated).
    figures: Mapping[str, float] = field(default_factory=dict)
    # Every healthy sample, in order (empty in artifacts written before repeats existed).
    samples: tuple[SampleReading, ...] = ()

    def sample_values(self, set_aside: Collection[int] = ()) -> tuple[float, ...]:
        """The figures the verdict judges: every sample (but those ``set_aside`` by index),
        or the one figure of an older run."""
        if self.samples:
            return tuple(s.value for s in self.samples if s.sample_index not in set_aside)
        return () if self.value is None else (self.value,)


@dataclass(frozen=True, kw_only=True)
class StaleImage:
    """Evidence that a crash came from a stale CI image, not from the change (R7)."""

    package: str
    symbol: str
    installed: str
    pinned: str


@dataclass(frozen=True, kw_only=True)
class Health:
    """Whether the run itself went well, independent of its figure (R3)."""

    exit_code: int | None
    phase: FailurePhase | None
    timed_out: bool
    attempts: int
    retried: bool
    config_mismatch: str | None = None
    error: str | None = None
    # Why the failed attempt was not retried although retries were left (it would repeat).
    not_retried: str | None = None
    # Set only with evidence: installed version of the package differs from the source pin.
    stale_image: StaleImage | None = None

    @property
    def healthy(self) -> bool:
        """Exit 0, no failure phase, no mismatch, output read."""
        return (
            self.exit_code == 0
            and self.phase is None
            and self.config_mismatch is None
            and self.error is None
        )


@dataclass(frozen=True, kw_only=True)
class AttemptTiming:
    """One attempt's exit and wall time (of one sample: its ``sample_index``)."""

    number: int
    exit_code: int | None
    phase: FailurePhase | None
    timed_out: bool
    wall_s: float
    sample_index: int = 0
    # The caches the launch started from; a warm-up launch fills a cold cache unmeasured.
    cache: CacheState | None = None
    warmup: bool = False


@dataclass(frozen=True, kw_only=True)
class Timings:
    """When the bucket ran and how long each attempt took."""

    started_at: str
    finished_at: str
    wall_s: float
    attempts: tuple[AttemptTiming, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class Result:
    """Everything one bucket run produced: the unit the gate judges and the store keeps."""

    bucket: BucketRef
    hardware: Hardware
    source: Source
    ci: CiInfo
    identity: IdentityRecord
    # The primary metric: what every reader that knows one figure per run reads.
    metric: MetricReading
    health: Health
    timings: Timings
    log_tail: str = ""
    # The final attempt's whole log on the machine that ran it (CI uploads it as an artifact).
    log_path: str | None = None
    perfgate_version: str = ""
    sampling: Sampling | None = None
    # The bucket's further metrics by name, from the same samples (none before metrics existed).
    metrics: Mapping[str, MetricReading] = field(default_factory=dict)
    # Admission control, one record per sample of the run (by sample_index), any metric.
    admission: tuple[SampleAdmission, ...] = ()
    # The paired comparison with the merge base, when the run asked for one.
    paired: PairedRecord | None = None
    # What the run cost its runner (None in artifacts from before it was recorded).
    spend: Spend | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def all_metrics(self) -> dict[str, MetricReading]:
        """Every metric of the run by name, the primary first."""
        return {PRIMARY: self.metric, **self.metrics}

    @property
    def set_aside(self) -> frozenset[int]:
        """Indexes of the samples admission control set aside (never judged, never stored)."""
        return frozenset(a.sample_index for a in self.admission if a.set_aside)

    def benchmark_hash(self, metric: str = PRIMARY) -> str:
        """The measurement contract of one metric: a window holds only samples that share it.

        The primary's is the bucket's own, so declaring more metrics never moves its window;
        another metric's is the same contract with that metric's figure and direction.
        """
        if metric == PRIMARY:
            return self.identity.benchmark_hash
        reading = self.metrics[metric]
        contract = metric_contract(
            self.identity.benchmark, path=reading.path, direction=reading.direction.value
        )
        return stable_hash(contract)

    def to_json(self) -> dict[str, Any]:
        """The artifact as a JSON-ready dict."""
        data = asdict(self)
        # What a run without cache states records reads as it did before they existed.
        data["timings"]["attempts"] = [_recorded(asdict(a)) for a in self.timings.attempts]
        for name, reading in self.all_metrics.items():
            into = data["metric"] if name == PRIMARY else data["metrics"][name]
            into["samples"] = [_recorded(asdict(s)) for s in reading.samples]
        if not self.metrics:
            del data["metrics"]  # a single-metric artifact reads as it did before
        for name in ("sampling", "paired", "spend"):
            if data[name] is None:
                del data[name]
        if self.spend is not None:
            data["spend"] = self.spend.to_json()
        # Enums to values; allow_nan=False: a non-finite number never becomes "JSON" (R3).
        converted: dict[str, Any] = json.loads(json.dumps(data, default=str, allow_nan=False))
        return converted

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        """Rebuild a Result from a validated artifact dict."""
        health = dict(data["health"])
        health["phase"] = FailurePhase(health["phase"]) if health["phase"] else None
        stale = health.get("stale_image")
        health["stale_image"] = StaleImage(**stale) if stale else None
        sampling = data.get("sampling")
        timings = dict(data["timings"])
        timings["attempts"] = tuple(
            AttemptTiming(
                **{
                    **a,
                    "phase": FailurePhase(a["phase"]) if a["phase"] else None,
                    "cache": CacheState(a["cache"]) if a.get("cache") else None,
                }
            )
            for a in timings["attempts"]
        )
        bucket = dict(data["bucket"])
        bucket["tags"] = tuple(bucket["tags"])
        return cls(
            bucket=BucketRef(**bucket),
            hardware=Hardware(**data["hardware"]),
            source=Source(**data["source"]),
            ci=CiInfo(**data["ci"]),
            identity=IdentityRecord(**data["identity"]),
            metric=_metric_reading(data["metric"]),
            metrics={name: _metric_reading(raw) for name, raw in data.get("metrics", {}).items()},
            health=Health(**health),
            timings=Timings(**timings),
            log_tail=data["log_tail"],
            log_path=data.get("log_path"),
            perfgate_version=data["perfgate_version"],
            sampling=(
                Sampling(**{**sampling, "stopped": SamplingStop(sampling["stopped"])})
                if sampling
                else None
            ),
            admission=tuple(SampleAdmission.from_json(a) for a in data.get("admission", ())),
            paired=PairedRecord.from_json(data["paired"]) if data.get("paired") else None,
            spend=Spend.from_json(data["spend"]) if data.get("spend") else None,
            schema_version=data["schema_version"],
        )


def _recorded(fields: dict[str, Any]) -> dict[str, Any]:
    """A sample's or attempt's fields without an unknown cache state or a False warm-up."""
    return {
        key: value
        for key, value in fields.items()
        if not (key == "cache" and value is None) and not (key == "warmup" and value is False)
    }


def _metric_reading(data: Mapping[str, Any]) -> MetricReading:
    """One metric of a validated artifact."""
    return MetricReading(
        **{
            **data,
            "direction": Direction(data["direction"]),
            "samples": tuple(
                SampleReading(**{**s, "cache": CacheState(s["cache"]) if s.get("cache") else None})
                for s in data.get("samples", ())
            ),
        }
    )


def validate_result(data: Any) -> list[str]:
    """Schema violations of an artifact dict, each as ``path: message``; empty when valid.

    The compiled schema clears a valid artifact; jsonschema reads only one it refuses, so
    the messages are jsonschema's own.
    """
    if jsonfile.conforms("result", data):
        return []
    return [jsonfile.problem(error) for error in jsonfile.validator("result").iter_errors(data)]


#: CI uploads each bucket's attempt logs as this artifact (the bench action, the summary).
LOG_ARTIFACT_PREFIX = "perfgate-log-"
#: The artifact a failed publish keeps its samples in; the next publish gathers it.
PENDING_ARTIFACT = "perfgate-pending-samples"


def log_artifact_name(bucket_id: str) -> str:
    """The name of the artifact holding a bucket's attempt logs in CI."""
    return LOG_ARTIFACT_PREFIX + re.sub(r"[^A-Za-z0-9._-]", "-", bucket_id.replace("/", "__"))


def result_file_name(bucket_id: str) -> str:
    """``task/backend`` -> ``task__backend.json``."""
    return bucket_id.replace("/", "__") + ".json"


def write_result(result: Result, out_dir: Path) -> Path:
    """Write the artifact (validated first) atomically into ``out_dir``."""
    try:
        data = result.to_json()
    except ValueError as exc:
        raise GateMalfunction(
            f"internal error: result for {result.bucket.id} is not JSON: {exc}"
        ) from None
    problems = validate_result(data) or identity_problems(data)
    if problems:
        raise GateMalfunction(
            f"internal error: result for {result.bucket.id} is invalid: {problems[0]}"
        )
    return jsonfile.write(out_dir / result_file_name(result.bucket.id), data, sort_keys=True)


# The names perfgate.yaml allows (perfgate/config) and hardware detection produces: an artifact
# naming anything else could steer a store path or a report line (R14).
_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_BACKEND = re.compile(r"[a-z0-9][a-z0-9_]{0,80}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,127}")
# A result artifact is a few kilobytes; its log tail is capped at 8 KiB.
MAX_ARTIFACT_BYTES = 4 * 1024 * 1024


def identity_problems(data: Any) -> list[str]:
    """Identity fields of a schema-valid artifact dict that are not plain, consistent names."""
    bucket, slug = data["bucket"], data["hardware"]["slug"]
    problems = []
    if not _TASK.fullmatch(bucket["task"]):
        problems.append(f"bucket.task: {bucket['task']!r} is not a task name")
    if not _BACKEND.fullmatch(bucket["backend_key"]):
        problems.append(f"bucket.backend_key: {bucket['backend_key']!r} is not a backend name")
    if bucket["id"] != f"{bucket['task']}/{bucket['backend_key']}":
        problems.append(f"bucket.id: {bucket['id']!r} is not bucket.task/bucket.backend_key")
    if not _SLUG.fullmatch(slug):
        problems.append(f"hardware.slug: {slug!r} is not a hardware slug")
    return problems


# Free text an artifact carries (a CPU name, an error, a runtime version) is shown on every
# surface: beyond this it says nothing more, and 256 buckets of it would overflow them.
MAX_TEXT_CHARS = 1000
# Bounded by the schema already, and shown in part: the log's last lines, where it is.
_UNCLIPPED = frozenset({"log_tail", "log_path"})


def clip_text(value: Any, key: str = "") -> Any:
    """``value`` (an artifact's document) with every string over MAX_TEXT_CHARS cut, saying so.

    Identity fields are plain names far shorter than that (identity_problems), so only free
    text is ever cut.
    """
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS and key not in _UNCLIPPED:
        return f"{value[:MAX_TEXT_CHARS]}… [{len(value) - MAX_TEXT_CHARS} characters clipped]"
    if isinstance(value, dict):
        return {name: clip_text(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [clip_text(item, key) for item in value]
    return value


class ArtifactError(GateMalfunction):
    """A result artifact that cannot be used; ``bucket`` is its id when it names one."""

    def __init__(self, message: str, bucket: str | None = None) -> None:
        super().__init__(message)
        self.bucket = bucket


def read_result(path: Path) -> Result:
    """Load and validate one artifact; an unusable one raises ArtifactError naming the file.

    Artifacts are untrusted (R14): size and nesting are limited before they are parsed,
    NaN and Infinity are not JSON, and identity fields must be plain names.
    """
    try:
        text = jsonfile.read_text(path, max_bytes=MAX_ARTIFACT_BYTES)
        data = jsonfile.loads(text)
    except jsonfile.JsonError as exc:
        raise ArtifactError(f"{path}: not a readable result artifact: {exc}") from None
    problems = validate_result(data) or identity_problems(data)
    if problems:
        raise ArtifactError(f"{path}: not a valid result artifact: {problems[0]}", _bucket_id(data))
    return Result.from_json(clip_text(data) if may_hold_long_text(text) else data)


def may_hold_long_text(text: str) -> bool:
    """False when no string of the JSON ``text`` can be over MAX_TEXT_CHARS: without an
    escaped quote, each string's text lies whole between two quotes, and is never shorter
    than the string it encodes. Most artifacts are settled so, without a walk."""
    return '\\"' in text or max(map(len, text.split('"'))) > MAX_TEXT_CHARS


def _bucket_id(data: Any) -> str | None:
    """The bucket id an artifact names, if it names one at all."""
    bucket = data.get("bucket") if isinstance(data, dict) else None
    named = bucket.get("id") if isinstance(bucket, dict) else None
    return named if isinstance(named, str) else None
