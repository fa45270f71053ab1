"""The baseline store: append-only NDJSON samples on a git branch (R4, R9).

Layout on the branch: ``samples/<hardware>/<task>/<backend>.ndjson``. Reads come
straight from git objects (no checkout). Writes build the new commit from a
temporary index holding only the files they touch, then push with
fetch-reapply-retry so concurrent publishers lose nothing.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfgate.config import Config
from perfgate.errors import GateMalfunction, GitError
from perfgate.git import git, try_git
from perfgate.identity import stable_hash
from perfgate.result import Result, SampleReading

SAMPLE_SCHEMA_VERSION = 1
AUTHOR = {
    "GIT_AUTHOR_NAME": "perfgate",
    "GIT_AUTHOR_EMAIL": "perfgate@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "perfgate",
    "GIT_COMMITTER_EMAIL": "perfgate@users.noreply.github.com",
}
_REJECTED = re.compile(r"rejected|non-fast-forward|fetch first|failed to update ref|cannot lock")
# Lines always scanned from the end of a bucket's samples, however early the window fills.
RECENT_HORIZON = 200
# A live sample file holding more lines than this is moved, whole, into the bucket's
# archive directory, so reading the newest samples never costs the whole history.
SEGMENT_LINES = 1000
PUSH_BACKOFF_CAP_S = 8.0


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
    # Which sample of its run this is, and the run it came from: samples sharing ``run``
    # were measured one after another on one runner (None: a line from before repeats,
    # a run of its own).
    sample_index: int | None = None
    run: str | None = None
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
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


# One path component each: what perfgate.yaml (task, backend) and hardware detection allow.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def sample_path(hardware: str, task: str, backend_key: str) -> str:
    """``samples/<hardware>/<task>/<backend>.ndjson``; nothing that could leave the store tree."""
    for part in (hardware, task, backend_key):
        if not _COMPONENT.fullmatch(part):
            raise GateMalfunction(
                f"refusing a baseline path from {part!r}: hardware, task and backend must be "
                "plain names (a result artifact naming something else is not trusted)"
            )
    return f"samples/{hardware}/{task}/{backend_key}.ndjson"


def samples_from_result(
    result: Result,
    *,
    trusted_source: str,
    timestamp: datetime | None = None,
    sample_ids: Callable[[SampleReading], str] | None = None,
) -> list[Sample]:
    """One stored sample per sample of a healthy result, each with a stable id.

    Every sample of the run shares its ``run`` key; ``sample_ids`` overrides the derived
    ids (seeding passes :func:`seed_sample_id` so a replay gets the same ids).
    """
    if result.metric.value is None or result.source.commit is None:
        raise GateMalfunction(f"{result.bucket.id}: a sample needs a measured figure and a commit")
    when = (timestamp or datetime.now(UTC)).isoformat()
    identity: dict[str, Any] = {
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
    # One CI run may hold several runs of a bucket at one commit (a seed's replays).
    run = stable_hash(
        {**{k: v for k, v in identity.items() if v is not None},
         "started_at": result.timings.started_at},
        length=24,
    )  # fmt: skip
    readings = result.metric.samples or (SampleReading(sample_index=0, value=result.metric.value),)
    return [
        Sample(
            sample_id=sample_ids(reading)
            if sample_ids is not None
            else stable_hash(
                {
                    **{k: v for k, v in identity.items() if v is not None},
                    "value": reading.value,
                    "sample_index": reading.sample_index,
                },
                length=24,
            ),
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
            benchmark_hash=result.identity.benchmark_hash,
            runtime_hash=result.identity.runtime_hash,
            baseline_epoch=result.bucket.baseline_epoch,
            metric_path=result.metric.path,
            direction=result.metric.direction.value,
            unit=result.metric.unit,
            std=result.metric.std,
            attempts=result.health.attempts,
            retried=result.health.retried,
            sample_index=reading.sample_index,
            run=run,
            ci_run_id=result.ci.run_id,
            ci_run_attempt=result.ci.run_attempt,
            ci_workflow=result.ci.workflow,
            ci_job=result.ci.job,
            ci_runner_name=result.ci.runner_name,
            runtime=result.identity.runtime.get("fields", {}),
        )
        for reading in readings
    ]


def seed_sample_id(
    *,
    seed_key: str,
    commit: str,
    bucket: str,
    hardware: str,
    target_branch: str,
    launch_hash: str,
    benchmark_hash: str,
    runtime_hash: str,
    baseline_epoch: int,
    sample_index: int,
    repeat: int = 0,
) -> str:
    """A seeded sample's id: what was measured and where, never the figure or the clock.

    Replaying the same seed (same key, commit, bucket, hardware, target, identity, replay
    index ``sample_index`` and ``repeat`` within that run) yields the same id, so a
    resumed seed skips what is already stored.
    """
    # The first repeat keeps the id it had before runs took repeats.
    repeated = {"repeat": repeat} if repeat else {}
    return stable_hash(
        {
            **repeated,
            "seed_key": seed_key,
            "commit": commit,
            "bucket": bucket,
            "hardware": hardware,
            "target_branch": target_branch,
            "launch_hash": launch_hash,
            "benchmark_hash": benchmark_hash,
            "runtime_hash": runtime_hash,
            "baseline_epoch": baseline_epoch,
            "sample_index": sample_index,
        },
        length=24,
    )


@dataclass(frozen=True, kw_only=True)
class WindowKey:
    """What a stored sample must match to be comparable with a result (R4)."""

    hardware: str
    task: str
    backend_key: str
    target_branch: str
    launch_hash: str
    benchmark_hash: str
    runtime_hash: str
    baseline_epoch: int

    @property
    def path(self) -> str:
        """The file holding candidate samples."""
        return sample_path(self.hardware, self.task, self.backend_key)

    @classmethod
    def for_result(cls, result: Result) -> WindowKey:
        """The key a result's window is selected by."""
        return cls(
            hardware=result.hardware.slug,
            task=result.bucket.task,
            backend_key=result.bucket.backend_key,
            target_branch=result.source.target_branch or "",
            launch_hash=result.identity.launch_hash,
            benchmark_hash=result.identity.benchmark_hash,
            runtime_hash=result.identity.runtime_hash,
            baseline_epoch=result.bucket.baseline_epoch,
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
class Window:
    """The selected baseline samples, nearest commits first."""

    samples: tuple[Sample, ...]

    @property
    def values(self) -> tuple[float, ...]:
        """The figures of the window."""
        return tuple(s.value for s in self.samples)

    def runs(self) -> list[list[float]]:
        """The figures grouped by the run that took them, nearest run first, in sample order.

        A line written before repeats existed (no ``run``) is a run of its own.
        """
        grouped: dict[str, list[Sample]] = {}
        for sample in self.samples:
            grouped.setdefault(sample.run or sample.sample_id, []).append(sample)
        return [
            [s.value for s in sorted(run, key=lambda s: s.sample_index or 0)]
            for run in grouped.values()
        ]


def select_window(
    samples: Iterable[Sample],
    key: WindowKey,
    distance: Mapping[str, int],
    max_samples: int,
) -> Window:
    """Matching samples whose commit is an ancestor of the base, nearest first, newest first."""
    eligible = [s for s in samples if key.matches(s) and s.commit in distance]
    eligible.sort(key=lambda s: (distance[s.commit], _negated_time(s.timestamp)))
    return Window(samples=tuple(eligible[:max_samples]))


def _negated_time(timestamp: str) -> float:
    try:
        return -datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0


class BaselineStore:
    """The baseline branch of one repository, optionally mirrored on a remote."""

    def __init__(
        self, repo: Path, *, branch: str, remote: str | None = None, push_retries: int = 3
    ) -> None:
        self.repo = repo
        self.branch = branch
        self.remote = remote
        self.push_retries = push_retries
        self.warnings: list[str] = []
        # Lines skipped as corrupt (each also has a warning naming its file and line).
        self.skipped_lines = 0

    @property
    def ref(self) -> str:
        """The ref reads come from: the remote-tracking ref, or the local branch."""
        if self.remote:
            return f"refs/remotes/{self.remote}/{self.branch}"
        return f"refs/heads/{self.branch}"

    def refresh(self) -> str | None:
        """Fetch the branch (when remote) and return its tip, or None when it does not exist."""
        if self.remote:
            # The remote's answer, never a stale remote-tracking ref of a deleted branch.
            return fetch_tip(self.repo, self.branch, self.remote)
        return resolve(self.repo, self.ref)

    def read(self, paths: Iterable[str], tip: str) -> dict[str, list[Sample]]:
        """All samples of each live path at ``tip``, archived segments included, oldest first."""
        wanted = sorted(set(paths))
        archives = list_archives(self.repo, tip)
        files = {p: [*reversed(archives.get(archive_dir(p), [])), p] for p in wanted}
        blobs = read_blobs(self.repo, [f"{tip}:{f}" for fs in files.values() for f in fs])
        return {
            path: [
                sample
                for file in files[path]
                for sample in self._parse(file, blobs.get(f"{tip}:{file}", b""))
            ]
            for path in wanted
        }

    def windows(
        self,
        keys: Mapping[str, WindowKey],
        *,
        tip: str | None,
        base: str | None,
        max_samples: int,
    ) -> dict[str, Window]:
        """Each bucket's window (keyed by bucket id) at ``tip``, against merge base ``base``."""
        if tip is None or base is None:
            return {bucket: Window(samples=()) for bucket in keys}
        distance = {sha.encode(): index for sha, index in ancestry(self.repo, base).items()}
        scans = {bucket: _Scan(key=key, limit=max_samples) for bucket, key in keys.items()}
        for scan in scans.values():
            scan.pending = [scan.key.path]
        archives: dict[str, list[str]] | None = None
        while pending := [scan for scan in scans.values() if scan.pending]:
            blobs = read_blobs(self.repo, sorted({f"{tip}:{s.pending[0]}" for s in pending}))
            for scan in pending:
                path = scan.pending.pop(0)
                scan.feed(self, path, blobs.get(f"{tip}:{path}", b""), distance)
                if scan.wants_more and path == scan.key.path:
                    # Only a bucket whose live file did not fill the window reads its archive.
                    archives = archives if archives is not None else list_archives(self.repo, tip)
                    scan.pending = list(archives.get(archive_dir(scan.key.path), []))
                elif not scan.wants_more:
                    scan.pending = []
        return {bucket: scan.window(self) for bucket, scan in scans.items()}

    def _parse_line(self, path: str, number: int, line: str | bytes) -> Sample | None:
        try:
            return Sample.from_json(json.loads(line))
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            self.skipped_lines += 1
            self.warnings.append(
                f"{self.branch}:{path}:{number}: corrupt baseline line skipped ({exc})"
            )
            return None

    def _parse(self, path: str, data: bytes) -> list[Sample]:
        samples = []
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if line.strip():
                sample = self._parse_line(path, number, line)
                if sample is not None:
                    samples.append(sample)
        return samples

    def append(self, samples: Sequence[Sample], message: str) -> AppendOutcome:
        """Append samples not already present (by sample_id); push with fetch-reapply-retry."""
        by_path: dict[str, list[Sample]] = {}
        for sample in samples:
            if not math.isfinite(sample.value) or sample.value <= 0:
                # R3: nothing non-finite (or no forward progress) is ever stored.
                raise GateMalfunction(
                    f"{sample.path}: refusing to store the figure {sample.value!r}; "
                    "only positive finite figures are baselines"
                )
            by_path.setdefault(sample.path, []).append(sample)
        counts = {"added": 0, "present": 0}

        def apply(tree: Path) -> bool:
            counts["added"] = counts["present"] = 0
            for path, new in by_path.items():
                live, index = tree / path, tree / ids_path(path)
                existing = live.read_text(encoding="utf-8") if live.exists() else ""
                known = index.read_text(encoding="utf-8").split() if index.exists() else []
                ids = set(known) | set(re.findall(r'"sample_id":"([0-9a-f]+)"', existing))
                lines, fresh = [], []
                for sample in new:
                    if sample.sample_id in ids:
                        counts["present"] += 1
                        continue
                    ids.add(sample.sample_id)
                    fresh.append(sample.sample_id)
                    lines.append(sample.to_line())
                if not lines:
                    continue
                live.parent.mkdir(parents=True, exist_ok=True)
                text = (
                    (existing.rstrip("\n") + "\n" if existing.strip() else "")
                    + "\n".join(lines)
                    + "\n"
                )
                if text.count("\n") > SEGMENT_LINES:
                    # Move the full segment aside; its name orders archives by sample count.
                    segment = tree / archive_dir(path) / f"{len(ids):09d}.ndjson"
                    segment.parent.mkdir(parents=True, exist_ok=True)
                    segment.write_text(text, encoding="utf-8")
                    text = ""
                live.write_text(text, encoding="utf-8")
                index.write_text("".join(f"{i}\n" for i in [*known, *fresh]), encoding="utf-8")
                counts["added"] += len(lines)
            return counts["added"] > 0

        commit = commit_to_branch(
            self.repo,
            self.branch,
            self.remote,
            apply,
            message,
            retries=self.push_retries,
            paths=sorted({p for path in by_path for p in (path, ids_path(path))}),
        )
        return AppendOutcome(
            added=counts["added"], already_present=counts["present"], commit=commit
        )


def open_store(config: Config, *, local: bool) -> BaselineStore | None:
    """The baseline store of the current repository; None outside a git repository.

    ``local`` reads and writes the local branch only; otherwise the configured
    remote is used when this repository has it.
    """
    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        return None
    baseline = config.gate.baseline
    remote = None if local else baseline.remote
    if remote is not None and try_git("remote", "get-url", remote, cwd=Path(top)) is None:
        remote = None
    return BaselineStore(
        Path(top), branch=baseline.branch, remote=remote, push_retries=baseline.push_retries
    )


def archive_dir(live_path: str) -> str:
    """``samples/h/t/b.ndjson`` -> ``samples/h/t/b``: where its full segments are kept."""
    return live_path.removesuffix(".ndjson")


def ids_path(live_path: str) -> str:
    """Every sample id ever stored for a bucket, one per line (the dedup index)."""
    return live_path.removesuffix(".ndjson") + ".ids"


def list_archives(repo: Path, tip: str) -> dict[str, list[str]]:
    """Archive segments per bucket directory at ``tip``, newest first."""
    listing = git("ls-tree", "-r", "--name-only", tip, "--", "samples/", cwd=repo)
    found: dict[str, list[str]] = {}
    for name in listing.splitlines():
        directory, _, leaf = name.rpartition("/")
        if leaf.endswith(".ndjson") and leaf[:-7].isdigit():
            found.setdefault(directory, []).append(name)
    return {directory: sorted(names, reverse=True) for directory, names in found.items()}


@dataclass(kw_only=True)
class _Scan:
    """Backward scan of one bucket's samples: live file first, then archives, newest first."""

    key: WindowKey
    limit: int
    pending: list[str] = field(default_factory=list)
    scanned: int = 0
    # (distance, timestamp, file, line number, line) of every eligible line seen.
    ranked: list[tuple[int, bytes, str, int, bytes]] = field(default_factory=list)

    @property
    def wants_more(self) -> bool:
        """True until the horizon is scanned and the window can be filled: read an archive."""
        horizon = max(RECENT_HORIZON, 10 * self.limit)
        return self.scanned < horizon or len(self.ranked) < self.limit

    def feed(
        self, store: BaselineStore, path: str, data: bytes, distance: Mapping[bytes, int]
    ) -> None:
        """Rank every line of one file by its commit's distance; parse none of them yet."""
        # A whole file is ranked (a live file holds at most SEGMENT_LINES), so the order of
        # appends never decides between nearer and farther commits within it. Commit and
        # timestamp are sliced out of the canonical JSON; only the lines that make the
        # window are parsed in full, later.
        launch, runtime, benchmark, epoch, target = (n.encode() for n in self.key.needles())
        lines = data.split(b"\n")
        self.scanned += len(lines)
        for number, line in enumerate(lines, 1):
            if launch not in line:
                if line.strip() and not _looks_like_sample(line):
                    store._parse_line(path, number, line)  # garbage, or a truncated line
                continue
            commit, stamp = _field(line, b'"commit":"'), _field(line, b'"timestamp":"')
            if commit is None or stamp is None:
                store._parse_line(path, number, line)  # reports the corrupt line
                continue
            where = distance.get(commit)
            if (
                where is not None
                and runtime in line
                and benchmark in line
                and epoch in line
                and target in line
            ):
                self.ranked.append((where, stamp, path, number, line))

    def window(self, store: BaselineStore) -> Window:
        """Nearest commits first, newest first among equals; parse only what is kept."""
        self.ranked.sort(key=lambda entry: entry[1], reverse=True)
        self.ranked.sort(key=lambda entry: entry[0])
        chosen: list[Sample] = []
        for _, _, path, number, line in self.ranked:
            sample = store._parse_line(path, number, line)
            if sample is not None and self.key.matches(sample):
                chosen.append(sample)
                if len(chosen) == self.limit:
                    break
        return Window(samples=tuple(chosen))


def _looks_like_sample(line: bytes) -> bool:
    """A whole canonical sample line, by its shape alone (cheap: most lines are not parsed)."""
    line = line.rstrip(b"\r")
    return line.startswith(b'{"') and line.endswith(b"}") and b'"sample_id":"' in line


def _field(line: bytes, prefix: bytes) -> bytes | None:
    """The string value after ``prefix`` in a canonical-JSON line, or None."""
    at = line.find(prefix)
    if at < 0:
        return None
    start = at + len(prefix)
    end = line.find(b'"', start)
    return line[start:end] if end >= 0 else None


@dataclass(frozen=True, kw_only=True)
class AppendOutcome:
    """What an append did."""

    added: int
    already_present: int
    commit: str | None


def resolve(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` points to, or None when it does not exist."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo).strip()
    except GitError:
        return None


def fetch_tip(repo: Path, branch: str, remote: str) -> str | None:
    """Fetch ``branch`` from ``remote`` into its remote-tracking ref; None when absent there."""
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        git("fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}", cwd=repo)
    except GitError as exc:
        if "couldn't find remote ref" in exc.stderr:
            return None
        raise GateMalfunction(
            f"cannot read the baseline branch {branch!r} from {remote!r}: {exc}; "
            "check the remote and the token's read access"
        ) from None
    return resolve(repo, tracking)


def ancestry(repo: Path, base: str) -> dict[str, int]:
    """Every ancestor of ``base`` (itself included) mapped to its distance, nearest first."""
    # A shallow clone walks without error but sees almost no history: every sample would
    # fail the ancestry check and every bucket would silently read NO_BASELINE.
    if git("rev-parse", "--is-shallow-repository", cwd=repo).strip() == "true":
        raise GateMalfunction(
            f"{repo} is a shallow clone, so the baseline ancestry check cannot see history; "
            "check out with full history (actions/checkout: fetch-depth: 0, or "
            "git fetch --unshallow)"
        )
    try:
        listing = git("rev-list", "--topo-order", base, cwd=repo)
    except GitError as exc:
        raise GateMalfunction(
            f"cannot walk the history of {base}: {exc}; CI checkouts need fetch-depth: 0"
        ) from None
    return {sha: index for index, sha in enumerate(listing.split())}


def merge_base(repo: Path, target_branch: str | None, remote: str | None) -> str | None:
    """Where this checkout meets its target branch; HEAD when the target is unknown here."""
    head = resolve(repo, "HEAD")
    if head is None or not target_branch:
        return head
    candidates = [f"refs/remotes/{remote}/{target_branch}"] if remote else []
    candidates.append(f"refs/heads/{target_branch}")
    for ref in candidates:
        if resolve(repo, ref) is not None:
            try:
                return git("merge-base", "HEAD", ref, cwd=repo).strip()
            except GitError:
                continue
    return head


def read_blobs(repo: Path, specs: Sequence[str]) -> dict[str, bytes]:
    """Contents of ``rev:path`` specs through one ``git cat-file --batch``; absent ones omitted."""
    if not specs:
        return {}
    process = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin

    def send() -> None:
        # A thread writes the requests while we read answers, so neither pipe can fill up.
        with stdin:
            stdin.write("".join(f"{spec}\n" for spec in specs).encode())

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    blobs: dict[str, bytes] = {}
    for spec in specs:
        parts = process.stdout.readline().split()
        if len(parts) == 3 and parts[1] == b"blob":
            blobs[spec] = process.stdout.read(int(parts[2]))
            process.stdout.read(1)
        elif not parts:
            break
    writer.join()
    process.stdout.close()
    if process.wait() != 0:
        stderr = process.stderr.read().decode() if process.stderr else ""
        raise GateMalfunction(f"git cat-file failed while reading baselines: {stderr.strip()}")
    return blobs


def commit_to_branch(
    repo: Path,
    branch: str,
    remote: str | None,
    apply: Callable[[Path], bool],
    message: str,
    retries: int,
    paths: Sequence[str] | None = None,
) -> str | None:
    """Commit ``apply``'s edits onto the newest tip of ``branch``; retry when the push loses a race.

    ``apply`` edits files in a temporary work tree holding ``paths`` from the tip (all
    files when None) and says whether it changed anything. Returns the new commit, or
    None when nothing changed.
    """
    last_error = ""
    for attempt in range(retries + 1):
        if attempt:
            # Full-jitter exponential backoff: publishers that lost a race spread out
            # instead of colliding again on the next tip.
            time.sleep(random.uniform(0, min(PUSH_BACKOFF_CAP_S, 0.5 * 2 ** (attempt - 1))))
        base = fetch_tip(repo, branch, remote) if remote else resolve(repo, f"refs/heads/{branch}")
        with tempfile.TemporaryDirectory(prefix="perfgate-store-") as tmp:
            tree = Path(tmp) / "tree"
            tree.mkdir()
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(tree), **AUTHOR}
            git("read-tree", *([base] if base else ["--empty"]), cwd=repo, env=env)
            if base is not None and paths is None:
                git("checkout-index", "-a", "-f", cwd=repo, env=env)
            elif base is not None and paths:
                present = git("ls-tree", "-r", "--name-only", base, "--", *paths, cwd=repo).split()
                if present:
                    git("checkout-index", "-f", "--", *present, cwd=repo, env=env)
            if not apply(tree):
                return None
            if paths is None:
                git("add", "-A", "--", ":/", cwd=repo, env=env)
            else:
                # Only ``paths`` were materialised: the rest of the tree is absent on purpose.
                git("add", "--ignore-removal", "--", ":/", cwd=repo, env=env)
            new_tree = git("write-tree", cwd=repo, env=env).strip()
            parents = ["-p", base] if base else []
            commit = git(
                "commit-tree", new_tree, *parents, "-m", message, cwd=repo, env=env
            ).strip()
        if remote is None:
            try:
                git("update-ref", f"refs/heads/{branch}", commit, base or "0" * 40, cwd=repo)
                return commit
            except GitError as exc:
                last_error = str(exc)
                continue
        try:
            git("push", "--quiet", remote, f"{commit}:refs/heads/{branch}", cwd=repo)
        except GitError as exc:
            last_error = str(exc)
            if _REJECTED.search(exc.stderr):
                continue
            raise GateMalfunction(f"cannot push the baseline branch {branch!r}: {exc}") from None
        git("update-ref", f"refs/remotes/{remote}/{branch}", commit, cwd=repo)
        return commit
    raise GateMalfunction(
        f"gave up writing the baseline branch {branch!r} after {retries + 1} attempts "
        f"(others kept winning the race): {last_error}"
    )
