"""The baseline store: append-only NDJSON samples on a git branch (R4, R9).

Layout on the branch: ``samples/<hardware>/<task>/<backend>.ndjson``. Reads come
straight from git objects (no checkout). Writes build the new commit from a
temporary index holding only the files they touch, then push with
fetch-reapply-retry so concurrent publishers lose nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfgate.errors import GateMalfunction, GitError
from perfgate.git import git
from perfgate.identity import stable_hash
from perfgate.result import Result

SAMPLE_SCHEMA_VERSION = 1
AUTHOR = {
    "GIT_AUTHOR_NAME": "perfgate",
    "GIT_AUTHOR_EMAIL": "perfgate@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "perfgate",
    "GIT_COMMITTER_EMAIL": "perfgate@users.noreply.github.com",
}
_REJECTED = re.compile(r"rejected|non-fast-forward|fetch first|failed to update ref|cannot lock")
_COMMIT_FIELD = re.compile(r'"commit":"([0-9a-f]{7,64})"')
_TIME_FIELD = re.compile(r'"timestamp":"([^"]*)"')


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
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Sample:
        """Rebuild from a stored line's dict; unknown fields from newer writers are ignored."""
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def sample_path(hardware: str, task: str, backend_key: str) -> str:
    """``samples/<hardware>/<task>/<backend>.ndjson``."""
    return f"samples/{hardware}/{task}/{backend_key}.ndjson"


def sample_from_result(
    result: Result,
    *,
    trusted_source: str,
    sample_index: int | None = None,
    timestamp: datetime | None = None,
) -> Sample:
    """Project a healthy result onto a stored sample with a stable id."""
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
        "value": result.metric.value,
        "attempts": result.health.attempts,
        "sample_index": sample_index,
    }
    if result.ci.run_id is None:
        # Outside CI nothing else tells two runs of the same commit apart.
        identity["started_at"] = result.timings.started_at
    return Sample(
        sample_id=stable_hash({k: v for k, v in identity.items() if v is not None}, length=24),
        trusted_source=trusted_source,
        timestamp=when,
        value=result.metric.value,
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
        sample_index=sample_index,
        ci_run_id=result.ci.run_id,
        ci_run_attempt=result.ci.run_attempt,
        ci_workflow=result.ci.workflow,
        ci_job=result.ci.job,
        ci_runner_name=result.ci.runner_name,
        runtime=result.identity.runtime.get("fields", {}),
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
            f'"target_branch":{json.dumps(self.target_branch)}',
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

    @property
    def ref(self) -> str:
        """The ref reads come from: the remote-tracking ref, or the local branch."""
        if self.remote:
            return f"refs/remotes/{self.remote}/{self.branch}"
        return f"refs/heads/{self.branch}"

    def refresh(self) -> str | None:
        """Fetch the branch (when remote) and return its tip, or None when it does not exist."""
        if self.remote:
            fetch_tip(self.repo, self.branch, self.remote)
        return resolve(self.repo, self.ref)

    def read(self, paths: Iterable[str], tip: str) -> dict[str, list[Sample]]:
        """Samples of each path at ``tip``; a corrupt line is skipped with a warning."""
        wanted = sorted(set(paths))
        blobs = read_blobs(self.repo, [f"{tip}:{p}" for p in wanted])
        return {path: self._parse(path, blobs.get(f"{tip}:{path}", b"")) for path in wanted}

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
        distance = ancestry(self.repo, base)
        blobs = read_blobs(self.repo, sorted({f"{tip}:{k.path}" for k in keys.values()}))
        return {
            bucket: self._select(
                key.path, blobs.get(f"{tip}:{key.path}", b""), key, distance, max_samples
            )
            for bucket, key in keys.items()
        }

    def _select(
        self, path: str, data: bytes, key: WindowKey, distance: Mapping[str, int], limit: int
    ) -> Window:
        # Ranking needs only commit and timestamp, read with regular expressions from the
        # canonical JSON; only the lines that make the window are parsed in full, so the
        # cost per bucket is a fast scan of its history plus ``limit`` JSON parses.
        first, *others = key.needles()
        ranked: list[tuple[int, str, int, str]] = []
        chosen: list[Sample] = []
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if first not in line:
                continue
            commit, stamp = _COMMIT_FIELD.search(line), _TIME_FIELD.search(line)
            if commit is None or stamp is None:
                sample = self._parse_line(path, number, line)  # reports a corrupt line
                if sample is not None and key.matches(sample) and sample.commit in distance:
                    ranked.append((distance[sample.commit], sample.timestamp, number, line))
            elif commit.group(1) in distance and all(needle in line for needle in others):
                ranked.append((distance[commit.group(1)], stamp.group(1), number, line))
        ranked.sort(key=lambda entry: entry[1], reverse=True)  # newest first among equals
        ranked.sort(key=lambda entry: entry[0])  # nearest commit first (stable)
        for _, _, number, line in ranked:
            sample = self._parse_line(path, number, line)
            if sample is not None and key.matches(sample):
                chosen.append(sample)
                if len(chosen) == limit:
                    break
        return Window(samples=tuple(chosen))

    def _parse_line(self, path: str, number: int, line: str) -> Sample | None:
        try:
            return Sample.from_json(json.loads(line))
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
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
            by_path.setdefault(sample.path, []).append(sample)
        counts = {"added": 0, "present": 0}

        def apply(tree: Path) -> bool:
            counts["added"] = counts["present"] = 0
            for path, new in by_path.items():
                file = tree / path
                existing = file.read_text(encoding="utf-8") if file.exists() else ""
                ids = set(re.findall(r'"sample_id":"([0-9a-f]+)"', existing))
                lines = []
                for sample in new:
                    if sample.sample_id in ids:
                        counts["present"] += 1
                        continue
                    ids.add(sample.sample_id)
                    lines.append(sample.to_line())
                if lines:
                    file.parent.mkdir(parents=True, exist_ok=True)
                    prefix = (
                        existing if not existing or existing.endswith("\n") else existing + "\n"
                    )
                    file.write_text(prefix + "\n".join(lines) + "\n", encoding="utf-8")
                    counts["added"] += len(lines)
            return counts["added"] > 0

        commit = commit_to_branch(
            self.repo,
            self.branch,
            self.remote,
            apply,
            message,
            retries=self.push_retries,
            paths=sorted(by_path),
        )
        return AppendOutcome(
            added=counts["added"], already_present=counts["present"], commit=commit
        )


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
    for _attempt in range(retries + 1):
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
            git("add", "-A", "--", *(paths if paths is not None else ["."]), cwd=repo, env=env)
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
