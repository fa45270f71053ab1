"""Put an imported history onto perfgate.yaml's buckets, and write it as baseline samples.

A run's benchmark feeds each metric whose ``benchmark:`` names it, in a bucket whose
``command.format`` reads the figure the history kept, when its unit converts to the
metric's and it is better in the same direction; anything else is said, never guessed. A
sample is one run's figure (sample index 0), stamped with the run's own time, marked
``trusted_source: import``, and recorded under the hardware partition the import names:
the history's own machine unless ``--hardware`` declares it the same as a runner pool's.
Its experiment is the bucket's current one (launch, benchmark and runtime hashes, epoch):
the mapping above is what asserts it. Every sample passes the checks a publish applies
(:func:`~perfgate.baselines.publish.sample_check`) and lands through the store's one
append, so a re-import adds nothing (ids are the run's, never the clock's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baselines.imports.history import TRUSTED_SOURCE, History, HistoryRun
from perfgate.baselines.publish import sample_check
from perfgate.baselines.samples import Sample, WindowIdentity, sample_path
from perfgate.baselines.seed.plan import branch_tip, is_ancestor
from perfgate.baselines.store import AppendOutcome, BaselineStore
from perfgate.config import Bucket, Config, Metric, OutputFormat
from perfgate.errors import GateMalfunction, UsageError
from perfgate.identity import runtime_inputs, stable_hash
from perfgate.run.drivers.adapters import figure
from perfgate.run.drivers.adapters.base import Benchmark, SuiteError
from perfgate.run.drivers.adapters.units import convert
from perfgate.run.launch import benchmark_identity, cache_state, launch_identity
from perfgate.util.git import resolve

# The ``command`` driver reports no runtime fields: every run of its buckets carries this
# runtime hash, which an imported sample must carry to sit in their windows.
COMMAND_RUNTIME_HASH = stable_hash(runtime_inputs({}))


@dataclass(frozen=True, kw_only=True)
class MappedMetric:
    """One metric the history feeds: the benchmark it names, its samples, and how many of
    them the baseline branch holds already."""

    bucket: str
    metric: str
    benchmark: str
    samples: tuple[Sample, ...]
    present: int = 0

    @property
    def new(self) -> int:
        """Samples an import would add."""
        return len(self.samples) - self.present


@dataclass(frozen=True, kw_only=True)
class ImportPlan:
    """What an import writes (per metric) and what it could not map, each said once."""

    history: History
    hardware: str
    target_branch: str
    mapped: tuple[MappedMetric, ...]
    unmapped: tuple[str, ...]

    @property
    def samples(self) -> list[Sample]:
        """Every sample the import would write (those stored already included)."""
        return [sample for entry in self.mapped for sample in entry.samples]

    @property
    def new(self) -> int:
        """Samples not on the branch yet."""
        return sum(entry.new for entry in self.mapped)


@dataclass(frozen=True, kw_only=True)
class _Target:
    """A metric a benchmark name may feed, with the identity of its window."""

    bucket: Bucket
    metric: Metric
    identity: WindowIdentity


def _targets(buckets: Sequence[Bucket], target_branch: str) -> dict[str, list[_Target]]:
    """Each benchmark name, by the metrics of tool-format buckets that name it."""
    found: dict[str, list[_Target]] = {}
    for bucket in buckets:
        if bucket.command is None or bucket.command.format is OutputFormat.JSON:
            continue
        launch = stable_hash(launch_identity(bucket))
        for metric in bucket.all_metrics:
            identity = WindowIdentity(
                target_branch=target_branch,
                launch_hash=launch,
                benchmark_hash=stable_hash(benchmark_identity(bucket, metric)),
                runtime_hash=COMMAND_RUNTIME_HASH,
                baseline_epoch=bucket.baseline_epoch,
            )
            found.setdefault(metric.path, []).append(
                _Target(bucket=bucket, metric=metric, identity=identity)
            )
    return found


class _Notes:
    """What could not be mapped: each problem once, with how many runs had it."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, note: str) -> None:
        self.counts[note] += 1

    def lines(self) -> tuple[str, ...]:
        return tuple(
            note if count == 1 else f"{note} ({count} runs)" for note, count in self.counts.items()
        )


def plan_import(
    history: History,
    config: Config,
    store: BaselineStore,
    *,
    buckets: Sequence[Bucket],
    hardware: str,
    target_branch: str,
) -> ImportPlan:
    """The samples ``history`` gives ``buckets`` on ``hardware`` for ``target_branch``, what
    the branch holds of them already, and everything that could not be mapped."""
    if not config.gate.is_protected(target_branch):
        raise UsageError(
            f"refusing to import for {target_branch!r}: baselines are kept only for protected "
            f"branches ({', '.join(config.gate.protected_branches)} in {config.path}); pass "
            "--target with one of them"
        )
    sample_path(hardware, "task", "backend")  # a hardware slug no store path can hold fails here
    targets = _targets(buckets, target_branch)
    if not targets:
        raise UsageError(
            f"no selected bucket of {config.path} reads a benchmark tool's output (command.format "
            "with metrics naming a benchmark:): an import has nothing to feed"
        )
    tip = branch_tip(store.repo, target_branch, store.remote)
    commits = _Commits(store.repo, tip, target_branch)
    notes = _Notes()
    for line in history.notes:
        notes.add(line)
    by_metric: dict[tuple[str, str], list[Sample]] = {}
    unnamed: Counter[str] = Counter()
    for run in history.runs:
        fed = [(b, targets[b.name]) for b in _unique(run) if b.name in targets]
        unnamed.update(b.name for b in _unique(run) if b.name not in targets)
        if not fed:
            continue
        sha = commits.resolve(run, notes)
        if sha is None:
            continue
        for benchmark, wanted in fed:
            for target in wanted:
                sample = _sample(run, benchmark, target, sha, hardware, history.kind, notes)
                if sample is not None:
                    by_metric.setdefault((target.bucket.id, target.metric.name), []).append(sample)
    for name, runs in sorted(unnamed.items()):
        notes.add(f"{name}: no metric of {config.path} names this benchmark ({runs} runs)")
    mapped = _with_present(store, by_metric, targets)
    return ImportPlan(
        history=history,
        hardware=hardware,
        target_branch=target_branch,
        mapped=mapped,
        unmapped=notes.lines(),
    )


def _unique(run: HistoryRun) -> list[Benchmark]:
    """One benchmark per name (a name twice is said when its figure is read)."""
    return list({b.name: b for b in run.suite}.values())


class _Commits:
    """Each history commit as this repository's full sha, when the target branch holds it."""

    def __init__(self, repo: Path, tip: str, target_branch: str) -> None:
        self.repo, self.tip, self.target_branch = repo, tip, target_branch
        self.known: dict[str, str | None] = {}

    def resolve(self, run: HistoryRun, notes: _Notes) -> str | None:
        if run.commit not in self.known:
            sha = resolve(self.repo, f"{run.commit}^{{commit}}")
            self.known[run.commit] = sha
            if sha is None:
                notes.add(
                    f"commit {run.commit[:12]} is not in this repository (fetch its full history; "
                    "or the history is another repository's): its runs are not imported"
                )
            elif not is_ancestor(self.repo, sha, self.tip):
                self.known[run.commit] = None
                notes.add(
                    f"commit {run.commit[:12]} is not on {self.target_branch} ({self.tip[:12]}): "
                    "no window would ever read its runs, not imported"
                )
        return self.known[run.commit]


def _sample(
    run: HistoryRun,
    benchmark: Benchmark,
    target: _Target,
    sha: str,
    hardware: str,
    kind: str,
    notes: _Notes,
) -> Sample | None:
    """The run's sample for one metric, or None with the reason noted."""
    bucket, metric, name = target.bucket, target.metric, benchmark.name
    what = f"{name} -> {bucket.id} {metric.name}"
    assert bucket.command is not None
    if bucket.command.format not in run.formats:
        notes.add(
            f"{what}: the bucket reads {bucket.command.format} output, and the history's "
            f"{run.tool!r} runs kept another figure: not imported"
        )
        return None
    if benchmark.error is not None:
        notes.add(f"{run.where}: {name}: {benchmark.error}: not imported")
        return None
    if benchmark.direction is not metric.direction:
        notes.add(
            f"{what}: better {benchmark.direction} in the history, the metric says "
            f"{metric.direction}: not imported"
        )
        return None
    if convert(1.0, benchmark.unit, metric.unit) is None:
        notes.add(
            f"{what}: the history's figures are in {benchmark.unit!r}, the metric is in "
            f"{metric.unit!r}: a unit mismatch, not imported"
        )
        return None
    try:
        stats = figure(run.suite, metric, Path(run.where))
    except SuiteError as exc:
        notes.add(f"{exc}: not imported")
        return None
    if stats.value is None or not stats.value > 0:
        notes.add(f"{run.where}: {name}: the figure {stats.value!r} is not positive: not imported")
        return None
    identity = target.identity
    return Sample(
        sample_id=stable_hash(
            {
                "import": kind,
                "run": run.key,
                "commit": sha,
                "bucket": bucket.id,
                "metric": metric.name,
                "hardware": hardware,
                **identity.as_json(),
            },
            length=24,
        ),
        trusted_source=TRUSTED_SOURCE,
        timestamp=run.timestamp,
        value=stats.value,
        hardware=hardware,
        task=bucket.task,
        backend_key=bucket.backend_key,
        commit=sha,
        branch=identity.target_branch,
        target_branch=identity.target_branch,
        launch_hash=identity.launch_hash,
        benchmark_hash=identity.benchmark_hash,
        runtime_hash=identity.runtime_hash,
        baseline_epoch=identity.baseline_epoch,
        metric_path=metric.path,
        direction=metric.direction.value,
        unit=metric.unit,
        std=stats.std,
        sample_index=0,
        metric=metric.name,
        cache=cache_state(bucket).value,
    )


def _with_present(
    store: BaselineStore,
    by_metric: dict[tuple[str, str], list[Sample]],
    targets: dict[str, list[_Target]],
) -> tuple[MappedMetric, ...]:
    """Each metric's samples (one per run and id), with how many the branch holds."""
    tip = store.refresh()
    paths = {s.path for samples in by_metric.values() for s in samples}
    stored = store.read(paths, tip) if tip is not None and paths else {}
    ids = {s.sample_id for samples in stored.values() for s in samples}
    names = {(t.bucket.id, t.metric.name): name for name, ts in targets.items() for t in ts}
    mapped = []
    for key, samples in sorted(by_metric.items()):
        unique = tuple({s.sample_id: s for s in samples}.values())
        mapped.append(
            MappedMetric(
                bucket=key[0],
                metric=key[1],
                benchmark=names[key],
                samples=unique,
                present=sum(s.sample_id in ids for s in unique),
            )
        )
    return tuple(mapped)


def record(plan: ImportPlan, store: BaselineStore, config: Config) -> AppendOutcome:
    """Append the plan's samples through the store's one write path, each checked as a
    publish checks a sample; a refused one stops the import before anything is written."""
    check = sample_check(config)
    refused = [
        f"{s.task}/{s.backend_key} {s.metric}: {why}" for s in plan.samples if (why := check(s))
    ]
    if refused:
        raise GateMalfunction(
            "refusing to import (nothing was written): " + "; ".join(dict.fromkeys(refused))
        )
    buckets = sorted({entry.bucket for entry in plan.mapped})
    return store.append(
        plan.samples,
        f"Import {len(plan.samples)} sample(s) of {', '.join(buckets)} from "
        f"{plan.history.kind} ({Path(plan.history.path).name}) for {plan.target_branch} "
        f"on {plan.hardware}",
    )
