"""Seed baselines by replaying historical commits (dry run by default; R9: a trusted writer).

Each commit is checked out in a throwaway worktree and each selected bucket runs that
commit's own benchmark through the normal bench path. A bucket's samples at a commit are
appended in one store commit once all of them ran, so an interrupted seed never leaves a
half-written bucket; sample ids are derived from the seed key, commit, bucket, identity
and sample index, so running the same seed again skips what is already stored, before
spending any runner time on it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from perfgate import context, hardware
from perfgate.bench import BenchSettings, benchmark_identity, launch_identity, run_bucket
from perfgate.config import DEFAULT_CONFIG, Bucket, Config, load_config
from perfgate.console import annotate, format_figure, render_table
from perfgate.context import RunContext
from perfgate.errors import ConfigError, ExitCode, GitError, UsageError
from perfgate.git import git
from perfgate.hardware import Hardware
from perfgate.identity import stable_hash
from perfgate.reseed import load_plan, plan_text
from perfgate.result import Result, write_result
from perfgate.store import (
    BaselineStore,
    Sample,
    fetch_tip,
    resolve,
    sample_from_result,
    sample_path,
    seed_sample_id,
)

K = TypeVar("K")
TRUSTED_SOURCE = "seed"
DEFAULT_SEED_KEY = "seed"
SUMMARY_SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class SeedTarget:
    """One commit to replay and the target branch its samples are kept for."""

    commit: str
    target_branch: str
    branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class Selection:
    """Allowlists: ids and tags select (their union; all when both empty), backends narrow."""

    ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PlanEntry:
    """One bucket at one commit: the sample indices wanted and those already stored."""

    target: SeedTarget
    bucket: Bucket
    indices: tuple[int, ...]
    present: Mapping[int, Sample] = field(default_factory=dict)

    @property
    def missing(self) -> tuple[int, ...]:
        """Sample indices still to run."""
        return tuple(i for i in self.indices if i not in self.present)


@dataclass(frozen=True, kw_only=True)
class SeedPlan:
    """Commits x buckets x samples, with what was dropped on the way and why."""

    entries: tuple[PlanEntry, ...]
    hardware: str
    seed_key: str
    notes: tuple[str, ...] = ()

    @property
    def runs(self) -> int:
        """Benchmark runs still to do."""
        return sum(len(e.missing) for e in self.entries)

    @property
    def present(self) -> int:
        """Planned samples already on the baseline branch."""
        return sum(len(e.present) for e in self.entries)


class RecordStatus(StrEnum):
    """What happened to one planned sample."""

    RECORDED = "recorded"
    PRESENT = "present"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class SeedRecord:
    """One planned sample in the summary."""

    commit: str
    target_branch: str
    bucket: str
    hardware: str
    sample_index: int
    status: RecordStatus
    value: float | None = None
    sample_id: str | None = None
    launch_hash: str | None = None
    benchmark_hash: str | None = None
    runtime_hash: str | None = None
    baseline_epoch: int | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as written into the summary file."""
        return {
            "commit": self.commit,
            "target_branch": self.target_branch,
            "bucket": self.bucket,
            "hardware": self.hardware,
            "sample_index": self.sample_index,
            "status": self.status.value,
            "value": self.value,
            "sample_id": self.sample_id,
            "launch_hash": self.launch_hash,
            "benchmark_hash": self.benchmark_hash,
            "runtime_hash": self.runtime_hash,
            "baseline_epoch": self.baseline_epoch,
            "detail": self.detail,
        }


# ---------------------------------------------------------------- pure decisions


def parse_commit_branch(text: str) -> tuple[str, str]:
    """``SHA:BRANCH`` -> (sha, branch)."""
    sha, sep, branch = text.partition(":")
    if not sep or not sha.strip() or not branch.strip():
        raise UsageError(f"--commit-branch {text!r}: expected SHA:BRANCH, e.g. 1a2b3c4:main")
    return sha.strip(), branch.strip()


def select_buckets(
    configs: Mapping[K, Config], selection: Selection
) -> dict[K, tuple[Bucket, ...]]:
    """Each commit's buckets passing the allowlists.

    A key that matches no bucket of any replayed commit is an error naming the valid
    ones: a typo must never narrow the scope silently. A bucket missing from some
    commits (added later) is simply not seeded there.
    """
    buckets = [b for config in configs.values() for b in config.buckets]
    for flag, wanted, known in (
        ("--bucket", selection.ids, {b.id for b in buckets}),
        ("--tag", selection.tags, {t for b in buckets for t in b.tags}),
        ("--backend", selection.backends, {b.backend_key for b in buckets}),
    ):
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise UsageError(
                f"{flag} {', '.join(unknown)} matches no bucket of the commits to seed; "
                f"valid values: {', '.join(sorted(known)) or '(none)'}"
            )
    chosen: dict[K, tuple[Bucket, ...]] = {}
    for key, config in configs.items():
        chosen[key] = tuple(
            b
            for b in config.buckets
            if (
                (not selection.ids and not selection.tags)
                or b.id in selection.ids
                or any(t in b.tags for t in selection.tags)
            )
            and (not selection.backends or b.backend_key in selection.backends)
        )
    return chosen


def default_samples(min_samples: int, commits: int) -> int:
    """Enough samples per commit that the replayed commits together fill one minimum window."""
    return max(1, math.ceil(min_samples / max(1, commits)))


def bucket_hashes(bucket: Bucket) -> tuple[str, str]:
    """The launch and benchmark hashes a run of ``bucket`` will carry (known before running)."""
    return stable_hash(launch_identity(bucket)), stable_hash(benchmark_identity(bucket))


def present_samples(
    stored: Sequence[Sample],
    *,
    bucket: Bucket,
    target: SeedTarget,
    hardware: str,
    seed_key: str,
    indices: Sequence[int],
) -> dict[int, Sample]:
    """Which wanted sample indices are already stored, by their deterministic seed id.

    The runtime hash is reported by the benchmark itself, so it is only known after a
    run; every runtime hash already present in the file is tried. Seeding again after a
    runtime change therefore needs a new seed key.
    """
    launch_hash, benchmark_hash = bucket_hashes(bucket)
    by_id = {s.sample_id: s for s in stored}
    runtimes = sorted({s.runtime_hash for s in stored})
    found: dict[int, Sample] = {}
    for index in indices:
        for runtime_hash in runtimes:
            sample_id = seed_sample_id(
                seed_key=seed_key,
                commit=target.commit,
                bucket=bucket.id,
                hardware=hardware,
                target_branch=target.target_branch,
                launch_hash=launch_hash,
                benchmark_hash=benchmark_hash,
                runtime_hash=runtime_hash,
                baseline_epoch=bucket.baseline_epoch,
                sample_index=index,
            )
            if sample_id in by_id:
                found[index] = by_id[sample_id]
                break
    return found


def runner_minutes(entries: Sequence[PlanEntry]) -> tuple[float, float]:
    """Upper bounds of runner time for the runs left: by timeouts, and with every retry."""
    plain = sum(len(e.missing) * e.bucket.timeout_minutes for e in entries)
    retried = sum(
        len(e.missing) * e.bucket.timeout_minutes * (1 + e.bucket.retries) for e in entries
    )
    return plain, retried


def format_minutes(minutes: float) -> str:
    """``95`` -> ``1h 35m``."""
    hours, rest = divmod(round(minutes), 60)
    return f"{hours}h {rest:02d}m" if hours else f"{rest}m"


def plan_table(plan: SeedPlan) -> str:
    """Commits x buckets x samples, with what is already stored and the timeout of each."""
    rows = [
        [
            e.target.commit[:12],
            e.target.target_branch,
            e.bucket.id,
            str(len(e.indices)),
            str(len(e.present)),
            str(len(e.missing)),
            f"{e.bucket.timeout_minutes:g}m",
        ]
        for e in plan.entries
    ]
    table = render_table(
        ["commit", "target", "bucket", "samples", "present", "to run", "timeout"], rows
    )
    plain, retried = runner_minutes(plan.entries)
    commits = len({(e.target.commit, e.target.target_branch) for e in plan.entries})
    return (
        f"{table}\n\n{commits} commit(s), {len(plan.entries)} bucket run(s), {plan.runs} sample "
        f"run(s) on {plan.hardware} ({plan.present} already present).\n"
        f"Runner time: at most {format_minutes(plain)} by the buckets' timeouts "
        f"({format_minutes(retried)} if every run needed its retries)."
    )


def records_table(records: Sequence[SeedRecord]) -> str:
    """One row per planned sample: what happened to it."""
    rows = [
        [
            r.commit[:12],
            r.target_branch,
            r.bucket,
            str(r.sample_index),
            r.status.value,
            format_figure(r.value),
            r.detail or "",
        ]
        for r in records
    ]
    return render_table(["commit", "target", "bucket", "index", "status", "figure", "note"], rows)


def summary_json(plan: SeedPlan, records: Sequence[SeedRecord], executed: bool) -> dict[str, Any]:
    """The summary file: every planned sample and what became of it."""
    counts = {status.value: 0 for status in RecordStatus}
    for record in records:
        counts[record.status.value] += 1
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "seed_key": plan.seed_key,
        "hardware": plan.hardware,
        "executed": executed,
        "complete": counts[RecordStatus.RECORDED.value] + counts[RecordStatus.PRESENT.value]
        == sum(len(e.indices) for e in plan.entries),
        "counts": counts,
        "notes": list(plan.notes),
        "records": [r.to_json() for r in records],
    }


def present_records(entry: PlanEntry, hardware: str) -> list[SeedRecord]:
    """Summary records for the samples of ``entry`` that were already stored."""
    return [
        SeedRecord(
            commit=entry.target.commit,
            target_branch=entry.target.target_branch,
            bucket=entry.bucket.id,
            hardware=hardware,
            sample_index=index,
            status=RecordStatus.PRESENT,
            value=sample.value,
            sample_id=sample.sample_id,
            launch_hash=sample.launch_hash,
            benchmark_hash=sample.benchmark_hash,
            runtime_hash=sample.runtime_hash,
            baseline_epoch=sample.baseline_epoch,
            detail="already on the baseline branch",
        )
        for index, sample in sorted(entry.present.items())
    ]


# ---------------------------------------------------------------- git and the store


def resolve_commit(repo: Path, ref: str) -> str:
    """The full sha of ``ref``; an unknown one is a usage error."""
    sha = resolve(repo, ref)
    if sha is None:
        raise UsageError(
            f"unknown commit {ref!r} in {repo}; check the sha, or fetch the full history "
            "(CI checkouts need fetch-depth: 0)"
        )
    return sha


def branch_tip(repo: Path, branch: str, remote: str | None) -> str:
    """The newest known tip of ``branch``: fetched from ``remote`` when there is one."""
    if remote is not None:
        tip = fetch_tip(repo, branch, remote)
        if tip is not None:
            return tip
    tip = resolve(repo, f"refs/heads/{branch}")
    if tip is None:
        tried = f"{remote}/{branch} and {branch}" if remote else branch
        raise UsageError(f"branch {branch!r} not found (tried {tried}); check the name")
    return tip


def branch_commits(repo: Path, branch: str, last: int, remote: str | None) -> list[str]:
    """The newest ``last`` first-parent commits of ``branch``, newest first."""
    if last < 1:
        raise UsageError(f"--last {last}: must be at least 1")
    tip = branch_tip(repo, branch, remote)
    return git("rev-list", "--first-parent", f"--max-count={last}", tip, cwd=repo).split()


def is_ancestor(repo: Path, commit: str, tip: str) -> bool:
    """True when ``commit`` is ``tip`` or one of its ancestors."""
    try:
        git("merge-base", "--is-ancestor", commit, tip, cwd=repo)
    except GitError as exc:
        if exc.returncode == 1:
            return False
        raise
    return True


def preflight_ancestry(
    repo: Path, targets: Sequence[SeedTarget], remote: str | None, strict: bool
) -> tuple[list[SeedTarget], list[str]]:
    """Keep commits that are ancestors of their target's tip; drop (or, strict, reject) others.

    A sample is only ever selected for a window when its commit is an ancestor of the
    merge base, so a sample for a commit off the target branch could never be used.
    """
    tips: dict[str, str] = {}
    kept, dropped = [], []
    for target in targets:
        if target.target_branch not in tips:
            tips[target.target_branch] = branch_tip(repo, target.target_branch, remote)
        if is_ancestor(repo, target.commit, tips[target.target_branch]):
            kept.append(target)
        else:
            dropped.append(
                f"{target.commit[:12]} is not an ancestor of {target.target_branch} "
                f"({tips[target.target_branch][:12]}): its samples could never enter a window"
            )
    if dropped and strict:
        raise UsageError("--strict-ancestry: " + "; ".join(dropped))
    return kept, [f"dropped {line}" for line in dropped]


def config_at(repo: Path, commit: str, scratch: Path) -> Config | None:
    """The commit's own perfgate.yaml (its own experiment); None when it has none."""
    try:
        text = git("show", f"{commit}:{DEFAULT_CONFIG.as_posix()}", cwd=repo)
    except GitError:
        return None
    path = scratch / commit[:12] / DEFAULT_CONFIG.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    try:
        return load_config(path)
    except ConfigError as exc:
        raise ConfigError(
            f"{DEFAULT_CONFIG} at commit {commit[:12]}: {exc}; pass --config to seed it "
            "with another file"
        ) from None


@dataclass(frozen=True, kw_only=True)
class PlanRequest:
    """Everything that decides the plan."""

    targets: tuple[SeedTarget, ...]
    selection: Selection
    samples: int | None
    bucket_samples: Mapping[str, int] = field(default_factory=dict)
    seed_key: str = DEFAULT_SEED_KEY
    hardware: str
    override: Config | None = None
    min_samples: int = 5


def build_plan(repo: Path, request: PlanRequest, store: BaselineStore | None) -> SeedPlan:
    """Read each commit's config, apply the allowlists, and look up what is already stored."""
    if request.samples is not None and request.samples < 1:
        raise UsageError(f"--samples {request.samples}: must be at least 1")
    notes: list[str] = []
    configs: dict[SeedTarget, Config] = {}
    with tempfile.TemporaryDirectory(prefix="perfgate-seed-config-") as scratch:
        for target in request.targets:
            config = request.override or config_at(repo, target.commit, Path(scratch))
            if config is None:
                notes.append(
                    f"skipped {target.commit[:12]}: no {DEFAULT_CONFIG} at that commit "
                    "(pass --config to seed it with another file)"
                )
                continue
            configs[target] = config
    if not configs:
        raise UsageError(
            "nothing to seed: no commit left after the ancestry check and the config lookup"
        )
    chosen = select_buckets(configs, request.selection)
    samples = request.samples or default_samples(request.min_samples, len(configs))
    pairs = [(target, bucket) for target, buckets in chosen.items() for bucket in buckets]
    if not pairs:
        raise UsageError("the allowlists together select no bucket at any of the commits")
    for target, buckets in chosen.items():
        if not buckets:
            notes.append(f"{target.commit[:12]}: no bucket of that commit passes the allowlists")
    stored: dict[str, list[Sample]] = {}
    if store is not None:
        tip = store.refresh()
        if tip is not None:
            paths = {sample_path(request.hardware, b.task, b.backend_key) for _, b in pairs}
            stored = store.read(paths, tip)
            notes.extend(store.warnings)
    entries = []
    for target, bucket in pairs:
        count = (
            request.bucket_samples.get(bucket.id, samples) if request.samples is None else samples
        )
        indices = tuple(range(count))
        path = sample_path(request.hardware, bucket.task, bucket.backend_key)
        present = present_samples(
            stored.get(path, []),
            bucket=bucket,
            target=target,
            hardware=request.hardware,
            seed_key=request.seed_key,
            indices=indices,
        )
        entries.append(PlanEntry(target=target, bucket=bucket, indices=indices, present=present))
    return SeedPlan(
        entries=tuple(entries),
        hardware=request.hardware,
        seed_key=request.seed_key,
        notes=tuple(notes),
    )


def _remove_worktree(repo: Path, path: Path) -> None:
    if path.exists():
        try:
            git("worktree", "remove", "--force", "--force", str(path), cwd=repo)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
    git("worktree", "prune", cwd=repo)


@contextmanager
def replay_checkout(repo: Path, commit: str, root: Path) -> Iterator[Path]:
    """A throwaway detached worktree of ``commit`` (LFS smudge off, cleaned), always removed."""
    path = root / commit[:12]
    # A seed killed outright (SIGKILL) cannot clean up; its leftover goes first.
    _remove_worktree(repo, path)
    root.mkdir(parents=True, exist_ok=True)
    env = {"GIT_LFS_SKIP_SMUDGE": "1"}
    try:
        git("worktree", "add", "--detach", "--force", str(path), commit, cwd=repo, env=env)
        git("clean", "-fdx", cwd=path, env=env)
        yield path
    finally:
        _remove_worktree(repo, path)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (a cancelled CI job) like Ctrl-C, so cleanup runs."""

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass(frozen=True, kw_only=True)
class ExecuteSettings:
    """Where the seed runs and what it writes through."""

    repo: Path
    store: BaselineStore
    work_dir: Path
    hardware: Hardware
    context: RunContext


def _sample_for(
    result: Result, entry: PlanEntry, index: int, seed_key: str
) -> tuple[Sample | None, SeedRecord]:
    record = SeedRecord(
        commit=entry.target.commit,
        target_branch=entry.target.target_branch,
        bucket=entry.bucket.id,
        hardware=result.hardware.slug,
        sample_index=index,
        status=RecordStatus.FAILED,
        value=result.metric.value,
        launch_hash=result.identity.launch_hash,
        benchmark_hash=result.identity.benchmark_hash,
        runtime_hash=result.identity.runtime_hash,
        baseline_epoch=result.bucket.baseline_epoch,
    )
    value = result.metric.value
    if not result.health.healthy:
        phase = result.health.phase.value if result.health.phase else "unknown"
        why = result.health.config_mismatch or result.health.error or "see the log"
        return None, replace(
            record, detail=f"failed ({phase}, exit {result.health.exit_code}): {why}"
        )
    if value is None or value <= 0:
        return None, replace(record, detail="no positive figure")
    sample_id = seed_sample_id(
        seed_key=seed_key,
        commit=entry.target.commit,
        bucket=entry.bucket.id,
        hardware=result.hardware.slug,
        target_branch=entry.target.target_branch,
        launch_hash=result.identity.launch_hash,
        benchmark_hash=result.identity.benchmark_hash,
        runtime_hash=result.identity.runtime_hash,
        baseline_epoch=result.bucket.baseline_epoch,
        sample_index=index,
    )
    sample = sample_from_result(
        result, trusted_source=TRUSTED_SOURCE, sample_index=index, sample_id=sample_id
    )
    return sample, replace(record, status=RecordStatus.RECORDED, sample_id=sample_id)


def _seed_bucket(
    entry: PlanEntry,
    *,
    checkout: Path,
    context: RunContext,
    settings: ExecuteSettings,
    seed_key: str,
    announce: Callable[[PlanEntry, int], None],
) -> list[SeedRecord]:
    """Run the bucket's missing samples at one commit, then append them in one store commit."""
    samples, records = [], []
    for index in entry.missing:
        announce(entry, index)
        # Each sample index gets its own logs and caches, as each CI attempt does (R10).
        scratch = (
            settings.work_dir / entry.target.commit[:12] / entry.target.target_branch
        ) / f"sample-{index}"
        result = run_bucket(
            entry.bucket,
            BenchSettings(
                checkout=checkout,
                work_root=scratch,
                out_dir=scratch / "results",
                hardware=settings.hardware,
                context=context,
            ),
        )
        write_result(result, scratch / "results")
        sample, record = _sample_for(result, entry, index, seed_key)
        if sample is not None:
            samples.append(sample)
        records.append(record)
    if samples:
        settings.store.append(
            samples,
            f"Seed {len(samples)} sample(s) of {entry.bucket.id} "
            f"at {entry.target.commit[:12]} for {entry.target.target_branch}",
        )
    return records


def execute(
    plan: SeedPlan,
    settings: ExecuteSettings,
    on_record: Callable[[SeedRecord], None],
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> None:
    """Run every missing sample; append each bucket's samples at a commit in one store commit."""
    groups: dict[SeedTarget, list[PlanEntry]] = {}
    for entry in plan.entries:
        groups.setdefault(entry.target, []).append(entry)
    counter = iter(range(1, plan.runs + 1))

    def announce(entry: PlanEntry, index: int) -> None:
        log(
            f"perfgate: [{next(counter)}/{plan.runs}] {entry.target.commit[:12]} "
            f"{entry.bucket.id} sample {index}"
        )

    with terminate_as_interrupt():
        for target, entries in groups.items():
            for entry in entries:
                for record in present_records(entry, plan.hardware):
                    on_record(record)
            if not any(e.missing for e in entries):
                log(f"perfgate: {target.commit[:12]}: every sample already present, not replayed")
                continue
            context = replace(
                settings.context,
                commit=target.commit,
                branch=target.branch or target.target_branch,
                target_branch=target.target_branch,
                event="seed",
                pr_number=None,
                head_sha=None,
            )
            worktrees = settings.work_dir / "worktrees"
            with replay_checkout(settings.repo, target.commit, worktrees) as checkout:
                for entry in entries:
                    if not entry.missing:
                        continue
                    records = _seed_bucket(
                        entry,
                        checkout=checkout,
                        context=context,
                        settings=settings,
                        seed_key=plan.seed_key,
                        announce=announce,
                    )
                    for record in records:
                        on_record(record)


def write_summary(path: Path, data: Mapping[str, Any]) -> None:
    """Write the summary JSON atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)


def resolve_targets(
    repo: Path,
    *,
    remote: str | None,
    branch: str | None = None,
    last: int = 5,
    commits: Sequence[str] = (),
    commit_branches: Sequence[str] = (),
    target: str | None = None,
) -> list[SeedTarget]:
    """The commits a seed replays, each with its target branch, deduplicated on (target, sha)."""
    targets: list[SeedTarget] = []
    if branch is not None:
        goal = target or branch
        targets = [
            SeedTarget(commit=sha, target_branch=goal, branch=branch)
            for sha in branch_commits(repo, branch, last, remote)
        ]
    elif commits:
        if not target:
            raise UsageError("--commits needs --target BRANCH (the branch the samples are for)")
        targets = [
            SeedTarget(commit=resolve_commit(repo, ref), target_branch=target) for ref in commits
        ]
    else:
        for text in commit_branches:
            ref, goal = parse_commit_branch(text)
            targets.append(
                SeedTarget(commit=resolve_commit(repo, ref), target_branch=goal, branch=goal)
            )
    unique: dict[tuple[str, str], SeedTarget] = {}
    for item in targets:
        unique.setdefault((item.target_branch, item.commit), item)
    return list(unique.values())


@dataclass(frozen=True, kw_only=True)
class SeedOptions:
    """The seed command line, parsed."""

    branch: str | None = None
    last: int = 5
    commits: tuple[str, ...] = ()
    commit_branches: tuple[str, ...] = ()
    plan: Path | None = None
    target: str | None = None
    selection: Selection = field(default_factory=Selection)
    samples: int | None = None
    strict_ancestry: bool = False
    execute: bool = False
    seed_key: str = DEFAULT_SEED_KEY
    work_dir: Path
    summary: Path
    config_given: bool = False


def command(options: SeedOptions, current: Config, store: BaselineStore) -> int:
    """``perfgate seed``: plan, print, and with ``execute`` run and summarise."""
    repo = store.repo
    plan_file = load_plan(options.plan) if options.plan else None
    if plan_file is not None:
        print(plan_text(plan_file))
        if not plan_file.buckets:
            return ExitCode.OK
        targets = resolve_targets(
            repo,
            remote=store.remote,
            commit_branches=[f"{plan_file.commit}:{plan_file.target_branch}"],
        )
    else:
        targets = resolve_targets(
            repo,
            remote=store.remote,
            branch=options.branch,
            last=options.last,
            commits=options.commits,
            commit_branches=options.commit_branches,
            # --branch X seeds samples for X unless --target says otherwise; bare
            # --commits fall back to the first gated branch.
            target=options.target or (None if options.branch else current.gate.target_branches[0]),
        )
    # A reseed plan names the pushed commit of its target: anything else is a mistake.
    strict = options.strict_ancestry or plan_file is not None
    targets, dropped = preflight_ancestry(repo, targets, store.remote, strict)
    for line in dropped:
        annotate("warning", line)
    for goal in sorted({t.target_branch for t in targets} - set(current.gate.target_branches)):
        annotate(
            "warning",
            f"samples for {goal} are read only by runs targeting {goal}, which "
            f"{current.path} does not gate (target_branches: "
            f"{', '.join(current.gate.target_branches)})",
        )
    machine = hardware.detect()
    if plan_file is not None and plan_file.hardware and machine.slug not in plan_file.hardware:
        raise UsageError(
            f"this runner is {machine.slug}, but the reseed plan is for "
            f"{', '.join(plan_file.hardware)}: its samples would fill another partition. "
            "Run the seed on a runner of that pool"
        )
    selection = options.selection
    if plan_file is not None:
        selection = replace(selection, ids=selection.ids + plan_file.bucket_ids)
    request = PlanRequest(
        targets=tuple(targets),
        selection=selection,
        samples=options.samples,
        bucket_samples={b.id: b.samples for b in plan_file.buckets} if plan_file else {},
        seed_key=options.seed_key,
        hardware=machine.slug,
        override=current if options.config_given else None,
        min_samples=current.gate.baseline.min_samples,
    )
    plan = build_plan(repo, request, store)
    print(plan_table(plan))
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    if not options.execute:
        print("dry run: nothing was run or written; add --execute to run this plan")
        return ExitCode.OK
    records: list[SeedRecord] = []
    settings = ExecuteSettings(
        repo=repo,
        store=store,
        work_dir=options.work_dir,
        hardware=machine,
        context=context.detect(os.environ, cwd=repo),
    )
    try:
        execute(plan, settings, records.append)
    finally:
        write_summary(options.summary, summary_json(plan, records, executed=True))
        print(records_table(records))
        print(f"perfgate: seed summary in {options.summary}", file=sys.stderr)
    failed = [r for r in records if r.status is RecordStatus.FAILED]
    if failed:
        annotate(
            "error",
            f"{len(failed)} seed run(s) failed; the others were recorded. "
            f"See {options.summary} and the logs under {options.work_dir}",
        )
        return ExitCode.HARD_FAILURE
    return ExitCode.OK
