"""Seed planning: which commits, which buckets, how many samples, and what is already stored.

Sample ids are derived from the seed key, commit, bucket, identity and sample index, so
running the same seed again skips what is already stored, before spending any runner
time on it. A commit that is not an ancestor of its target's tip is dropped (or, strict,
rejected): its samples could never enter a window (R4).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from perfgate.baselines.reading import fetch_tip
from perfgate.baselines.samples import Sample, WindowIdentity, sample_path, seed_sample_id
from perfgate.baselines.store import BaselineStore
from perfgate.config import DEFAULT_CONFIG, PRIMARY, Bucket, Config, load_config
from perfgate.errors import ConfigError, GitError, UsageError
from perfgate.run.launch import bucket_hashes
from perfgate.util.git import git, resolve

K = TypeVar("K")
DEFAULT_SEED_KEY = "seed"


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
    # Samples of the same experiment already stored at the commit by any writer (a local
    # `bench --record`, a push's publish, another seed key): they fill windows too, but a
    # seed replays its own sample ids, so only ``present`` is skipped.
    stored: int = 0

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

    @property
    def stored(self) -> int:
        """Samples of the planned experiments the commits already hold, by any writer."""
        return sum(e.stored for e in self.entries)


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
    # None: the reseed plan's key when it names one, else DEFAULT_SEED_KEY.
    seed_key: str | None = None
    work_dir: Path
    summary: Path
    config_given: bool = False


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


def stored_samples(stored: Sequence[Sample], *, bucket: Bucket, target: SeedTarget) -> int:
    """Primary samples of ``bucket``'s experiment (launch and benchmark hash, epoch) stored
    at the target commit for its target branch, whoever wrote them."""
    launch_hash, benchmark_hash = bucket_hashes(bucket)
    return sum(
        1
        for s in stored
        if s.commit == target.commit
        and s.target_branch == target.target_branch
        and s.metric == PRIMARY
        and (s.launch_hash, s.benchmark_hash) == (launch_hash, benchmark_hash)
        and s.baseline_epoch == bucket.baseline_epoch
    )


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
    identities = [
        WindowIdentity(
            target_branch=target.target_branch,
            launch_hash=launch_hash,
            benchmark_hash=benchmark_hash,
            runtime_hash=runtime_hash,
            baseline_epoch=bucket.baseline_epoch,
        )
        for runtime_hash in sorted({s.runtime_hash for s in stored})
    ]
    found: dict[int, Sample] = {}
    for index in indices:
        for identity in identities:
            sample_id = seed_sample_id(
                seed_key=seed_key,
                commit=target.commit,
                bucket=bucket.id,
                hardware=hardware,
                identity=identity,
                sample_index=index,
            )
            if sample_id in by_id:
                found[index] = by_id[sample_id]
                break
    return found


def runner_minutes(runs: Iterable[tuple[Bucket, int]]) -> tuple[float, float]:
    """Upper bounds of runner time for seeding ``runs`` (a bucket, and how many seeded runs
    of it): by the buckets' timeouts, and with every retry.

    Each run takes its bucket's ``repeats`` samples (a seed never confirms).
    """
    plain = retried = 0.0
    for bucket, count in runs:
        bound = count * bucket.repeats * bucket.timeout_minutes
        plain += bound
        retried += bound * (1 + bucket.retries)
    return plain, retried


def format_minutes(minutes: float) -> str:
    """``95`` -> ``1h 35m``."""
    hours, rest = divmod(round(minutes), 60)
    return f"{hours}h {rest:02d}m" if hours else f"{rest}m"


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
    min_samples: int  # gate.baseline.min_samples of the config


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
        entries.append(
            PlanEntry(
                target=target,
                bucket=bucket,
                indices=indices,
                present=present,
                stored=stored_samples(stored.get(path, []), bucket=bucket, target=target),
            )
        )
    return SeedPlan(
        entries=tuple(entries),
        hardware=request.hardware,
        seed_key=request.seed_key,
        notes=tuple(notes),
    )


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
