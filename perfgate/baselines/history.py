"""A bucket's stored history along its target branch: every run, in commit order (R4, R9).

Read through the store's own read path (``BaselineStore.read``); a run is the samples one
bucket run recorded, grouped as a window groups them: by commit and the run's one
timestamp (``Window.runs``). Runs are ordered by their commit's place in the target
branch's history (``git rev-list --topo-order``); samples of commits that are not on the
target branch can never enter a window and are counted, not drawn.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baselines.samples import Sample, Window, WindowKey, sample_path, select_window
from perfgate.baselines.seed.plan import branch_tip
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import BucketReadiness, classify, hardware_partitions
from perfgate.config import Bucket
from perfgate.util.git import git


@dataclass(frozen=True, kw_only=True)
class BranchCommit:
    """One commit of the target branch: its place (0 = oldest), short SHA and date."""

    sha: str
    position: int
    date: str

    @property
    def short(self) -> str:
        """The 7-character SHA people read."""
        return self.sha[:7]


@dataclass(frozen=True, kw_only=True)
class Run:
    """The samples one bucket run recorded at one commit, in sample order."""

    commit: BranchCommit
    samples: tuple[Sample, ...]

    @property
    def values(self) -> tuple[float, ...]:
        """The run's figures (its repeats)."""
        return tuple(s.value for s in self.samples)

    @property
    def recorded(self) -> str:
        """When the run was recorded (UTC ISO): its samples share one timestamp."""
        return self.samples[0].timestamp

    @property
    def key(self) -> WindowKey:
        """What a window for this run must match (R4)."""
        return WindowKey.for_sample(self.samples[0])

    @property
    def runner(self) -> str:
        """Where it ran: the CI runner's name, else how it was recorded (seed, local)."""
        first = self.samples[0]
        return first.ci_runner_name or f"({first.trusted_source})"

    @property
    def retried(self) -> bool:
        """True when any of its samples needed a retry (a retried PASS is WARN, R5)."""
        return any(s.retried for s in self.samples)


@dataclass(frozen=True, kw_only=True)
class Series:
    """One bucket's runs on one hardware for one metric, oldest first."""

    bucket: Bucket
    hardware: str
    # The bucket's name for the metric (the primary, or one of its ``metrics``) and its path.
    metric: str
    metric_path: str
    unit: str
    direction: str
    runs: tuple[Run, ...]
    readiness: BucketReadiness
    # Samples of this series whose commit is not on the target branch (never in a window).
    off_branch: int = 0

    @property
    def samples(self) -> int:
        """How many samples the runs hold."""
        return sum(len(run.samples) for run in self.runs)


#: Buckets read from the store at once: memory follows this, not the whole matrix.
READ_BATCH = 50


@dataclass(frozen=True, kw_only=True)
class History:
    """The selected buckets' history on the baseline branch, read a batch at a time."""

    store: BaselineStore
    buckets: tuple[Bucket, ...]
    target_branch: str
    target_tip: str
    baseline_tip: str | None
    hardware: tuple[str, ...]
    commits: Mapping[str, BranchCommit]
    min_samples: int

    @property
    def notes(self) -> tuple[str, ...]:
        """What a reader should know: a missing branch, corrupt lines skipped so far."""
        missing = () if self.baseline_tip else (
            f"the baseline branch {self.store.branch} does not exist yet",
        )  # fmt: skip
        return (*missing, *self.store.warnings)

    def series(self, batch: int = READ_BATCH) -> Iterator[Series]:
        """Every series, bucket by bucket (each bucket's hardware and metrics together)."""
        for start in range(0, len(self.buckets), batch):
            yield from self._read(self.buckets[start : start + batch])

    def _read(self, buckets: Sequence[Bucket]) -> Iterator[Series]:
        tip = self.baseline_tip
        paths = {(h, b.id): sample_path(h, b.task, b.backend_key)
                 for h in self.hardware for b in buckets}  # fmt: skip
        stored = self.store.read(paths.values(), tip) if tip and paths else {}
        ancestors = frozenset(self.commits)
        for bucket in buckets:
            for slug in self.hardware:
                samples = [s for s in stored.get(paths[slug, bucket.id], [])
                           if s.target_branch == self.target_branch]  # fmt: skip
                yield from _series(bucket, slug, samples, self, ancestors)


def _series(
    bucket: Bucket,
    hardware: str,
    samples: Sequence[Sample],
    history: History,
    ancestors: frozenset[str],
) -> Iterator[Series]:
    """One bucket's series on one hardware: one per metric its samples measured."""
    readiness = classify(
        bucket,
        samples,
        target_branch=history.target_branch,
        min_samples=history.min_samples,
        ancestors=ancestors,
    )
    by_metric: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_metric[sample.metric].append(sample)
    if not by_metric:
        by_metric[bucket.metric.name] = []
    # A selection's metrics are the benchmarks stored: the rate is split over them (R5).
    bucket = bucket.selecting(by_metric)
    for metric, chosen in by_metric.items():
        first = chosen[0] if chosen else None
        yield Series(
            bucket=bucket,
            hardware=hardware,
            metric=metric,
            metric_path=first.metric_path if first else bucket.metric.path,
            unit=first.unit if first else bucket.metric.unit,
            direction=first.direction if first else bucket.metric.direction.value,
            runs=tuple(group_runs(chosen, history.commits)),
            readiness=readiness,
            off_branch=sum(1 for s in chosen if s.commit not in ancestors),
        )


def branch_history(repo: Path, tip: str) -> dict[str, BranchCommit]:
    """Every commit reachable from ``tip`` with its place in topological order (0 = oldest)."""
    listing = git("log", "--topo-order", "--format=%H %cI", tip, cwd=repo).split("\n")
    lines = [line.split(" ", 1) for line in reversed(listing) if line.strip()]
    return {
        sha: BranchCommit(sha=sha, position=index, date=date)
        for index, (sha, date) in enumerate(lines)
    }


def _run_key(sample: Sample) -> tuple[str, str, str]:
    # A run's samples share one timestamp, which no other run of the commit has, so a
    # window groups them by (commit, timestamp) (Window.runs); the experiment's digest
    # keeps a run's key whole should two experiments ever share both.
    return (sample.commit, sample.timestamp, sample.window_digest)


def group_runs(samples: Iterable[Sample], commits: Mapping[str, BranchCommit]) -> list[Run]:
    """The samples on the branch grouped into runs: oldest commit first, then as they ran."""
    grouped: dict[tuple[str, str, str], list[Sample]] = defaultdict(list)
    for sample in samples:
        if sample.commit in commits:
            grouped[_run_key(sample)].append(sample)
    runs = [
        Run(
            commit=commits[members[0].commit],
            samples=tuple(sorted(members, key=lambda s: s.sample_index or 0)),
        )
        for members in grouped.values()
    ]
    # Timestamps are UTC ISO strings of one format: they sort as they happened.
    runs.sort(key=lambda run: (run.commit.position, run.samples[0].timestamp))
    return runs


def windows_before(runs: Sequence[Run], limit: int, most_runs: int | None = None) -> list[Window]:
    """For each run (oldest first), the window the gate judged it against (R4), nearest first.

    The window of a run holds up to ``limit`` samples of the same experiment recorded
    before it, at its commit or at commits before it on the branch, chosen by the store's
    own :func:`~perfgate.baselines.samples.select_window`. Earlier runs come oldest commit
    first and, at one commit, in the order they ran, so the nearest are the last ones: only
    those are offered, until they hold ``limit`` samples or ``most_runs`` runs (a rule that
    judges with the nearest runs only needs those). Linear in history, not quadratic.
    """
    earlier: dict[WindowKey, list[Run]] = defaultdict(list)
    windows = []
    for run in runs:
        key, here = run.key, run.commit.position
        seen = earlier[key]
        offered: list[Run] = []
        samples = 0
        for past in reversed(seen):
            if samples >= limit or (most_runs is not None and len(offered) >= most_runs):
                break
            offered.append(past)
            samples += len(past.samples)
        distance = {past.commit.sha: here - past.commit.position for past in offered}
        candidates = [sample for past in offered for sample in past.samples]
        windows.append(select_window(candidates, key, distance, limit))
        seen.append(run)
    return windows


def read_history(
    store: BaselineStore,
    buckets: Sequence[Bucket],
    *,
    target_branch: str,
    min_samples: int,
    hardware: Sequence[str] = (),
) -> History:
    """The history of ``buckets`` on each hardware partition (all when none named)."""
    target_tip = branch_tip(store.repo, target_branch, store.remote)
    tip = store.refresh()
    return History(
        store=store,
        buckets=tuple(buckets),
        target_branch=target_branch,
        target_tip=target_tip,
        baseline_tip=tip,
        hardware=tuple(hardware) or (hardware_partitions(store.repo, tip) if tip else ()),
        commits=branch_history(store.repo, target_tip),
        min_samples=min_samples,
    )
