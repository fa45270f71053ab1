"""What qualification reads: every sample of the allocations' result artifacts (R15).

Each sample becomes an :class:`Observation` naming its allocation, runner, index and the
fingerprint it carries; a failed run adds one sample without a figure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from perfgate.baselines.samples import WindowIdentity
from perfgate.config import Direction
from perfgate.errors import GateMalfunction
from perfgate.identity import stable_hash
from perfgate.result import ArtifactError, CiInfo, Result, read_result


@dataclass(frozen=True, kw_only=True)
class PoolFingerprint:
    """What every sample of one bucket must share to be pooled: the machine model, the
    commit measured and the window the samples would sit in."""

    hardware: str
    commit: str | None
    window: WindowIdentity

    @classmethod
    def of(cls, result: Result) -> PoolFingerprint:
        """The fingerprint a result carries."""
        return cls(
            hardware=result.hardware.slug,
            commit=result.source.commit,
            window=WindowIdentity.of_result(result),
        )

    def parts(self) -> dict[str, str | int | None]:
        """Every part by name, in the order problems name them; an absent one is None."""
        window = self.window
        return {
            "hardware": self.hardware or None,
            "target_branch": window.target_branch or None,
            "commit": self.commit or None,
            "launch_hash": window.launch_hash or None,
            "benchmark_hash": window.benchmark_hash or None,
            "runtime_hash": window.runtime_hash or None,
            "baseline_epoch": window.baseline_epoch,
        }

    def missing(self) -> list[str]:
        """Names of the parts that are absent."""
        return [name for name, value in self.parts().items() if value is None]


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One sample as qualification sees it: which allocation, runner and index it is."""

    bucket: str
    source: str  # the artifact it came from
    allocation: str | None
    runner: str | None
    sample_index: int | None
    # Derived from what identifies the measurement: one counted twice has the same id.
    sample_id: str
    value: float | None  # None: the run produced no usable figure
    failure: str | None = None
    fingerprint: PoolFingerprint
    direction: Direction = Direction.HIGHER
    started_at: str = ""


def allocation_of(ci: CiInfo) -> str | None:
    """The allocation a run belongs to: its run label, else run id:attempt:job:runner.

    Without a run label, only a CI run id can tell allocations apart; a local run with
    neither belongs to no allocation (and is named as such).
    """
    if ci.run_label:
        return ci.run_label
    if not ci.run_id:
        return None
    return ":".join(part or "-" for part in (ci.run_id, ci.run_attempt, ci.job, ci.runner_name))


def observations_of(result: Result, source: str) -> list[Observation]:
    """The samples one artifact holds, each with its ``sample_index``.

    A run that failed adds one sample without a figure, at the index it was taking. An
    artifact of one figure written before runs took samples is one sample; its index is
    its place among its allocation's runs of that bucket (``index_positionally``). Ids
    are derived from what identifies the run (CI identity, start time) and the sample,
    never the file name, so the same measurement counted twice shows as a duplicate.
    """
    health = result.health
    run = {
        "ci": asdict(result.ci),
        "bucket": result.bucket.id,
        "commit": result.source.commit,
        "started_at": result.timings.started_at,
        "finished_at": result.timings.finished_at,
    }
    readings: list[tuple[int | None, float | None]] = [
        (s.sample_index, s.value) for s in result.metric.samples
    ]
    if not readings and health.healthy:
        readings = [(None, result.metric.value)]
    failure = None
    if not health.healthy:
        phase = health.phase.value if health.phase else "no figure"
        failure = f"{phase}, exit {health.exit_code}" + (
            f": {health.error}" if health.error else ""
        )
        taken = [index for index, _ in readings if index is not None]
        readings.append((max(taken) + 1 if taken else None, None))
    fingerprint, allocation = PoolFingerprint.of(result), allocation_of(result.ci)
    return [
        Observation(
            bucket=result.bucket.id,
            source=source,
            allocation=allocation,
            runner=result.ci.runner_identity,
            sample_index=index,
            sample_id=stable_hash({**run, "sample_index": index, "value": value}, length=24),
            value=value,
            failure=failure if value is None else None,
            fingerprint=fingerprint,
            direction=result.metric.direction,
            started_at=result.timings.started_at,
        )
        for index, value in readings
    ]


def index_positionally(observations: Iterable[Observation]) -> list[Observation]:
    """Give samples without an index their place in their allocation's runs (by start)."""
    items = list(observations)
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for position, obs in enumerate(items):
        if obs.sample_index is None:
            groups[(obs.bucket, obs.allocation)].append(position)
    for (_, allocation), positions in groups.items():
        if allocation is None:
            continue  # no allocation, no place in one: named by the coverage checks
        ordered = sorted(positions, key=lambda p: (items[p].started_at, items[p].source))
        for index, position in enumerate(ordered):
            items[position] = replace(items[position], sample_index=index)
    return items


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the artifacts hold: their samples, and the files that could not be read."""

    observations: tuple[Observation, ...]
    # (path, problem, the bucket it names if any)
    unreadable: tuple[tuple[str, str, str | None], ...] = ()


def evidence_from(
    results: Iterable[tuple[str, Result]],
    unreadable: Iterable[tuple[str, str, str | None]] = (),
) -> Evidence:
    """The samples of ``(source, result)`` pairs, and the unreadable files."""
    observations = [obs for source, result in results for obs in observations_of(result, source)]
    return Evidence(observations=tuple(observations), unreadable=tuple(unreadable))


def load_evidence(directories: Iterable[Path]) -> Evidence:
    """Every result artifact under ``directories`` (recursively), as samples.

    A missing directory, or no artifact at all, is a malfunction (exit 3): the allocations
    did not deliver, so there is nothing to qualify. An unreadable file is named and costs
    the bucket it names (or, naming none, the pool), never the run.
    """
    pairs: list[tuple[str, Result]] = []
    unreadable: list[tuple[str, str, str | None]] = []
    found = 0
    for directory in directories:
        if not directory.is_dir():
            raise GateMalfunction(
                f"results directory {directory} does not exist; did the allocations upload "
                "their artifacts?"
            )
        for path in sorted(directory.rglob("*.json")):
            found += 1
            try:
                pairs.append((str(path), read_result(path)))
            except ArtifactError as exc:
                unreadable.append((str(path), str(exc), exc.bucket))
    if not found:
        raise GateMalfunction(
            "no result artifacts in "
            + ", ".join(str(d) for d in directories)
            + ": the allocations did not run, so there is nothing to qualify"
        )
    return evidence_from(pairs, unreadable)
