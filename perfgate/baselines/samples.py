"""One stored measurement, its place on the baseline branch, and what a window matches (R4).

A sample is one canonical NDJSON line. Readers ignore fields they do not know, so a
newer writer may add fields (repeated samples, more metrics) without breaking an older
reader, and lines written before a field existed still read with its default.

A bucket run stores one line per sample, each with its ``sample_index``; every sample of
one run carries the run's one ``timestamp``, and no two runs of a commit share one, so a
window groups its samples into runs by (commit, timestamp), fields the segment index
already has. A line written before runs took repeats is a run of its own.

A bucket with several metrics stores one line per sample and metric, in the bucket's one
file, each naming its ``metric``. A metric's ``benchmark_hash`` is its own contract
(``Result.benchmark_hash``), so each metric's window holds its own lines and nothing else;
a line written before metrics existed is the primary's.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from perfgate.config import PRIMARY
from perfgate.errors import GateMalfunction
from perfgate.identity import stable_hash
from perfgate.judge.runner_offsets import RunnerModel, WindowRunners
from perfgate.result import Result, SampleReading

SAMPLE_SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class WindowIdentity:
    """What samples must share to sit in one window, besides their file (hardware, bucket):
    the target branch, the three identity hashes and the baseline epoch (R2, R4)."""

    target_branch: str
    launch_hash: str
    benchmark_hash: str
    runtime_hash: str
    baseline_epoch: int

    @classmethod
    def of_result(cls, result: Result, metric: str = PRIMARY) -> WindowIdentity:
        """The identity of the window one of a result's metrics is judged against."""
        return cls(
            target_branch=result.source.target_branch or "",
            launch_hash=result.identity.launch_hash,
            benchmark_hash=result.benchmark_hash(metric),
            runtime_hash=result.identity.runtime_hash,
            baseline_epoch=result.bucket.baseline_epoch,
        )

    def as_json(self) -> dict[str, str | int]:
        """The five fields by name (what the digest hashes, what summaries write)."""
        return {
            "target_branch": self.target_branch,
            "launch_hash": self.launch_hash,
            "benchmark_hash": self.benchmark_hash,
            "runtime_hash": self.runtime_hash,
            "baseline_epoch": self.baseline_epoch,
        }

    def digest(self) -> str:
        """16 hex digits naming the identity: what a segment index records per line, so a
        line is matched without parsing it."""
        return stable_hash(self.as_json())

    def matches(self, sample: Sample) -> bool:
        """True when the sample measured the same experiment for the same target."""
        return (
            sample.target_branch == self.target_branch
            and sample.launch_hash == self.launch_hash
            and sample.benchmark_hash == self.benchmark_hash
            and sample.runtime_hash == self.runtime_hash
            and sample.baseline_epoch == self.baseline_epoch
        )


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One trusted measurement kept on the baseline branch."""

    sample_id: str
    trusted_source: str
    timestamp: str
    value: float
    hardware: str
    task: str
    backend_key: str
    commit: str
    branch: str | None
    target_branch: str
    launch_hash: str
    benchmark_hash: str
    runtime_hash: str
    baseline_epoch: int
    metric_path: str
    direction: str
    unit: str
    std: float | None = None
    attempts: int = 1
    retried: bool = False
    sample_index: int | None = None
    # Runner seconds the sample's launch took, every attempt included (None: not recorded).
    wall_s: float | None = None
    # Which of the bucket's metrics the figure is (lines from before metrics: the primary).
    metric: str = PRIMARY
    # The caches the sample's launch started from, "cold" or "warm" (None: from before R16,
    # when every launch started cold). A warm bucket's launch hash differs, so its window
    # never holds a cold line.
    cache: str | None = None
    ci_run_id: str | None = None
    ci_run_attempt: str | None = None
    ci_workflow: str | None = None
    ci_job: str | None = None
    ci_runner_name: str | None = None
    runtime: Mapping[str, Any] = field(default_factory=dict)
    schema_version: int = SAMPLE_SCHEMA_VERSION

    @property
    def path(self) -> str:
        """The file on the branch that holds this sample."""
        return sample_path(self.hardware, self.task, self.backend_key)

    @property
    def window_identity(self) -> WindowIdentity:
        """The identity of the windows this sample can sit in."""
        return WindowIdentity(
            target_branch=self.target_branch,
            launch_hash=self.launch_hash,
            benchmark_hash=self.benchmark_hash,
            runtime_hash=self.runtime_hash,
            baseline_epoch=self.baseline_epoch,
        )

    @property
    def window_digest(self) -> str:
        """The digest of what a window must match (see :meth:`WindowIdentity.digest`)."""
        return self.window_identity.digest()

    def to_line(self) -> str:
        """One NDJSON line: canonical (sorted keys, compact) so identical samples are identical."""
        data = asdict(self)
        data["runtime"] = dict(self.runtime)
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Sample:
        """Rebuild from a stored line's dict; unknown fields from newer writers are ignored.

        A line of the wrong shape raises ValueError, so it is skipped as corrupt rather than
        reaching the statistics.
        """
        if not isinstance(data, Mapping):
            raise ValueError("not a JSON object")
        value = data.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"value {value!r} is not a number")
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"value {value!r} is not a positive finite number")
        for name in ("commit", "timestamp", "launch_hash", "benchmark_hash", "runtime_hash"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"{name} {data.get(name)!r} is not a string")
        epoch = data.get("baseline_epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise ValueError(f"baseline_epoch {epoch!r} is not an integer")
        for name in ("hardware", "task", "backend_key"):
            part = data.get(name)
            if not isinstance(part, str) or not _COMPONENT.fullmatch(part):
                raise ValueError(f"{name} {part!r} is not a plain name (no store path has it)")
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})

    @classmethod
    def from_line(cls, line: str | bytes) -> Sample:
        """Parse one stored line; ValueError, whatever is wrong with it, when it is no sample."""
        try:
            return cls.from_json(json.loads(line))
        except (TypeError, AttributeError, RecursionError) as exc:
            raise ValueError(f"{type(exc).__name__}: {exc}") from None


# One path component each: what perfgate.yaml (task, backend) and hardware detection allow.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


# The fields a stored line may set; others (from newer writers) are ignored.
_FIELDS = frozenset(Sample.__dataclass_fields__)


def plain_name(part: str) -> str:
    """``part``, when it is a plain name that cannot leave the store tree; else refused."""
    if not _COMPONENT.fullmatch(part):
        raise GateMalfunction(
            f"refusing a baseline path from {part!r}: hardware, task and backend must be "
            "plain names (a result artifact naming something else is not trusted)"
        )
    return part


def sample_path(hardware: str, task: str, backend_key: str) -> str:
    """``samples/<hardware>/<task>/<backend>.ndjson``; nothing that could leave the store tree."""
    return f"samples/{plain_name(hardware)}/{plain_name(task)}/{plain_name(backend_key)}.ndjson"


def samples_from_result(
    result: Result,
    *,
    trusted_source: str,
    timestamp: datetime | None = None,
    sample_ids: Callable[[SampleReading, str], str] | None = None,
) -> list[Sample]:
    """One stored sample per sample and metric of a healthy result, each with a stable id.

    The primary metric's samples come first. Every sample of the run gets the run's one
    timestamp (a window's runs are told apart by commit and timestamp); ``sample_ids``
    overrides the derived ids, given a reading and its metric's name (seeding passes
    :func:`seed_sample_id` so a replay gets the same ids). A metric the run did not report
    (an optional one) stores nothing. A sample admission control set aside is not stored
    at all, in any metric: a window read by any perfgate, older ones included, can then
    never use it (a flag on the line would need every reader to know it).
    """
    if result.metric.value is None or result.source.commit is None:
        raise GateMalfunction(f"{result.bucket.id}: a sample needs a measured figure and a commit")
    when = (timestamp or datetime.now(UTC)).isoformat()
    identity = {
        "run_id": result.ci.run_id,
        "run_attempt": result.ci.run_attempt,
        "commit": result.source.commit,
        "bucket": result.bucket.id,
        "hardware": result.hardware.slug,
        "launch_hash": result.identity.launch_hash,
        "benchmark_hash": result.identity.benchmark_hash,
        "runtime_hash": result.identity.runtime_hash,
        "baseline_epoch": result.bucket.baseline_epoch,
        "attempts": result.health.attempts,
    }
    if result.ci.run_id is None:
        # Outside CI nothing else tells two runs of the same commit apart.
        identity["started_at"] = result.timings.started_at
    known = {k: v for k, v in identity.items() if v is not None}

    def derived_id(reading: SampleReading, metric: str) -> str:
        # The primary's ids are those it had before metrics existed.
        named = {} if metric == PRIMARY else {"metric": metric}
        fields = {**known, **named, "value": reading.value, "sample_index": reading.sample_index}
        return stable_hash(fields, length=24)

    aside = result.set_aside
    stored = []
    for metric, measured in result.all_metrics.items():
        if measured.value is None:
            continue
        # An artifact from before repeats has its one figure.
        readings = measured.samples or (SampleReading(sample_index=0, value=measured.value),)
        stored += [
            Sample(
                sample_id=(sample_ids or derived_id)(reading, metric),
                trusted_source=trusted_source,
                timestamp=when,
                value=reading.value,
                hardware=result.hardware.slug,
                task=result.bucket.task,
                backend_key=result.bucket.backend_key,
                commit=result.source.commit,
                branch=result.source.branch,
                target_branch=result.source.target_branch or result.source.branch or "",
                launch_hash=result.identity.launch_hash,
                benchmark_hash=result.benchmark_hash(metric),
                runtime_hash=result.identity.runtime_hash,
                baseline_epoch=result.bucket.baseline_epoch,
                metric_path=measured.path,
                direction=measured.direction.value,
                unit=measured.unit,
                std=measured.std,
                attempts=result.health.attempts,
                retried=result.health.retried,
                sample_index=reading.sample_index,
                wall_s=reading.wall_s,
                metric=metric,
                cache=reading.cache.value if reading.cache else None,
                ci_run_id=result.ci.run_id,
                ci_run_attempt=result.ci.run_attempt,
                ci_workflow=result.ci.workflow,
                ci_job=result.ci.job,
                ci_runner_name=result.ci.runner_identity,
                runtime=result.identity.runtime.get("fields", {}),
            )
            for reading in readings
            if reading.sample_index not in aside
        ]
    return stored


def seed_sample_id(
    *,
    seed_key: str,
    commit: str,
    bucket: str,
    hardware: str,
    identity: WindowIdentity,
    sample_index: int,
    repeat: int = 0,
    metric: str = PRIMARY,
) -> str:
    """A seeded sample's id: what was measured and where, never the figure or the clock.

    Replaying the same seed (same key, commit, bucket, hardware, window identity, replay
    index ``sample_index``, ``repeat`` within that run and ``metric``) yields the same id,
    so a resumed seed skips what is already stored.
    """
    # The first repeat keeps the id it had before runs took repeats, the primary metric
    # the id it had before metrics existed.
    repeated = {"repeat": repeat} if repeat else {}
    named = {} if metric == PRIMARY else {"metric": metric}
    return stable_hash(
        {
            **repeated,
            **named,
            "seed_key": seed_key,
            "commit": commit,
            "bucket": bucket,
            "hardware": hardware,
            **identity.as_json(),
            "sample_index": sample_index,
        },
        length=24,
    )


@dataclass(frozen=True, kw_only=True)
class WindowKey(WindowIdentity):
    """What a stored sample must match to be comparable with a result (R4): a window's
    identity, and the file its candidates are in (hardware, task, backend)."""

    hardware: str
    task: str
    backend_key: str

    @property
    def path(self) -> str:
        """The file holding candidate samples."""
        return sample_path(self.hardware, self.task, self.backend_key)

    @classmethod
    def for_result(cls, result: Result, metric: str = PRIMARY) -> WindowKey:
        """The key the window of one of a result's metrics is selected by."""
        return cls(
            hardware=result.hardware.slug,
            task=result.bucket.task,
            backend_key=result.bucket.backend_key,
            **vars(WindowIdentity.of_result(result, metric)),
        )

    @classmethod
    def for_sample(cls, sample: Sample) -> WindowKey:
        """The key of the windows a stored sample can sit in."""
        return cls(
            hardware=sample.hardware,
            task=sample.task,
            backend_key=sample.backend_key,
            **vars(sample.window_identity),
        )

    def needles(self) -> tuple[str, ...]:
        """Exact texts every matching canonical-JSON line contains (most selective first)."""
        return (
            f'"launch_hash":"{self.launch_hash}"',
            f'"runtime_hash":"{self.runtime_hash}"',
            f'"benchmark_hash":"{self.benchmark_hash}"',
            f'"baseline_epoch":{self.baseline_epoch},',
            f'"target_branch":{json.dumps(self.target_branch, allow_nan=False)}',
        )


class WindowEntry(NamedTuple):
    """One sample of a window: its commit, when it was stored, its figure, its runner and
    the seconds its launch took (None: not recorded). A tuple: the gate builds one for every
    sample of every window, and a frozen dataclass costs several times more to build."""

    commit: str
    timestamp: str
    value: float
    runner: str | None = None
    wall_s: float | None = None

    @classmethod
    def of(cls, sample: Sample) -> WindowEntry:
        """The entry of a parsed sample."""
        return cls(commit=sample.commit, timestamp=sample.timestamp, value=sample.value,
                   runner=sample.ci_runner_name, wall_s=sample.wall_s)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Window:
    """The selected baseline samples, nearest commits first, and the runner model fitted
    when they were stored (None: none trusted; learn it from older runs read with them)."""

    entries: tuple[WindowEntry, ...]
    fitted: RunnerModel | None = None

    @property
    def values(self) -> tuple[float, ...]:
        """The figures of the window."""
        return tuple(e.value for e in self.entries)

    def runs(self) -> list[tuple[float, ...]]:
        """The figures grouped by the run that took them (commit and timestamp), nearest first."""
        return [values for _, values in self._by_run.values()]

    def run_commits(self) -> list[str]:
        """The commit of each of :meth:`runs`, in the same order."""
        return [commit for commit, _ in self._by_run]

    def runners(self) -> WindowRunners:
        """Who measured each run (as :meth:`runs` orders them), with the fitted model."""
        return WindowRunners(names=tuple(runner for runner, _ in self._by_run.values()),
                             fitted=self.fitted)  # fmt: skip

    def launch_seconds(self) -> list[float]:
        """The recorded launch durations of the window's samples (what a launch costs)."""
        return [e.wall_s for e in self.entries if e.wall_s is not None and e.wall_s > 0]

    @functools.cached_property
    def _by_run(self) -> Mapping[tuple[str, str], tuple[str | None, tuple[float, ...]]]:
        # Grouped once (the gate asks for runs, commits and runners of every window): each
        # run's runner (its first sample's) and figures.
        grouped: dict[tuple[str, str], tuple[str | None, list[float]]] = {}
        for entry in self.entries:
            key = (entry.commit, entry.timestamp)
            grouped.setdefault(key, (entry.runner, []))[1].append(entry.value)
        return {key: (runner, tuple(values)) for key, (runner, values) in grouped.items()}


def select_window(
    samples: Iterable[Sample],
    key: WindowKey,
    distance: Mapping[str, int],
    max_samples: int,
) -> Window:
    """Matching samples whose commit is an ancestor of the base, nearest first, newest first."""
    eligible = [s for s in samples if key.matches(s) and s.commit in distance]
    eligible.sort(key=lambda s: (distance[s.commit], _negated_time(s.timestamp)))
    return Window(entries=tuple(WindowEntry.of(s) for s in eligible[:max_samples]))


def _negated_time(timestamp: str) -> float:
    try:
        return -datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0
