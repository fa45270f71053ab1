"""Each bucket's window from the segments at a tip, reading as little as it can (R4).

A window holds the bucket's samples that match the result's key and whose commit is an
ancestor of the merge base: nearest commits first, the newest first among samples of one
commit, at most ``limit``. Candidates are the whole live segment, then archived segments
newest first while fewer than the horizon's lines were looked at or the window is not
full (a later seed of an old commit appends far samples after nearer ones).

A segment whose sidecar index names its current blob is chosen from the index alone:
commit, timestamp, window digest and figure of every line, as the writer validated them,
so the segment itself is never read. A segment without one (an older writer, a hand edit)
is read and ranked line by line; only the lines that can make the window are parsed. Both
give the same window. Candidates that can no longer make the window are dropped as they
come, so memory follows the window, not the segment.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from perfgate.baselines.reading import list_archives, object_ids, stream_blobs
from perfgate.baselines.samples import Sample, Window, WindowEntry, WindowKey
from perfgate.baselines.segments import (
    CORRUPT,
    INDEX_FIELDS,
    INDEX_MAGIC,
    INDEX_VERSION,
    RECENT_HORIZON,
    archive_dir,
    index_path,
    runner_name,
)

# (distance, timestamp, segment, line number, commit, (figure, runner, seconds)): a line
# that may make a window. The last part comes from the index; None when the line must be
# parsed.
Candidate = tuple[int, bytes, str, int, bytes, tuple[float, bytes, bytes] | None]

# What a caller names each window by: a bucket id, or (bucket id, metric name).
K = TypeVar("K", bound=Hashable)

_INDEX_HEAD = (INDEX_MAGIC.encode(), INDEX_VERSION.encode())
_CORRUPT = CORRUPT.encode()
_COMMIT, _TIMESTAMP = b'"commit":"', b'"timestamp":"'


@dataclass(kw_only=True)
class _Selection:
    """One bucket's window being chosen: segments left to look at, candidates kept."""

    key: WindowKey
    limit: int
    horizon: int = RECENT_HORIZON
    keep_all: bool = False
    queue: list[str] = field(default_factory=list)
    scanned: int = 0
    eligible: int = 0
    kept: list[Candidate] = field(default_factory=list)
    # Lines to report as not being samples, as (segment, line number).
    suspects: list[tuple[str, int]] = field(default_factory=list)
    # The bytes of lines that must be parsed, cut out while their segment was in hand.
    lines: dict[tuple[str, int], bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.digest = self.key.digest().encode()
        self.needles = tuple(needle.encode() for needle in self.key.needles())
        self.queue = [self.key.path]

    @property
    def wants_more(self) -> bool:
        """True until the horizon is looked at and the window can be filled."""
        horizon = max(self.horizon, 10 * self.limit)
        return self.scanned < horizon or self.eligible < self.limit

    def offer(self, candidates: list[Candidate]) -> None:
        """Keep the candidates that can still be among the ``limit`` nearest."""
        self.eligible += len(candidates)
        kept = self.kept + candidates
        if not self.keep_all and len(kept) > self.limit:
            # Every candidate farther than the limit-th nearest is ranked after at least
            # ``limit`` others; ties at that distance stay for the timestamp to decide.
            farthest = sorted(c[0] for c in kept)[self.limit - 1]
            kept = [c for c in kept if c[0] <= farthest]
        self.kept = kept

    def feed_index(self, path: str, tokens: list[bytes], distance: Mapping[bytes, int]) -> None:
        """Rank a segment from its index tokens (header already checked)."""
        count = int(tokens[3])
        commits, stamps, digests, values, runners, walls = (
            tokens[4 + k :: INDEX_FIELDS] for k in range(6)
        )
        self.scanned += count
        found = [(d, i) for i, d in enumerate(map(distance.get, commits)) if d is not None]
        if digests.count(self.digest) != count:
            found = [(d, i) for d, i in found if digests[i] == self.digest]
        if not self.keep_all and len(found) > self.limit:
            farthest = sorted(d for d, _ in found)[self.limit - 1]
            found = [(d, i) for d, i in found if d <= farthest]
        self.offer(
            [
                (d, stamps[i], path, i + 1, commits[i], (float(values[i]), runners[i], walls[i]))
                for d, i in found
            ]
        )
        if _CORRUPT in commits:
            self.suspects += [(path, i + 1) for i, c in enumerate(commits) if c == _CORRUPT]

    def feed_lines(self, path: str, data: bytes, distance: Mapping[bytes, int]) -> None:
        """Rank a segment from its own lines: commit and timestamp sliced out, nothing parsed."""
        launch, runtime, benchmark, epoch, target = self.needles
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        self.scanned += len(lines)
        candidates: list[Candidate] = []
        for number, line in enumerate(lines, 1):
            if launch not in line:
                if line.strip() and not _looks_like_sample(line):
                    self.suspects.append((path, number))
                continue
            commit, stamp = _field(line, _COMMIT), _field(line, _TIMESTAMP)
            if commit is None or stamp is None:
                self.suspects.append((path, number))
                continue
            where = distance.get(commit)
            if (
                where is not None
                and runtime in line
                and benchmark in line
                and epoch in line
                and target in line
            ):
                candidates.append((where, stamp, path, number, commit, None))
        self.offer(candidates)
        # The segment goes once ranked: keep the lines that must still be parsed.
        wanted = {c[3] for c in self.kept if c[2] == path}
        wanted.update(number for where, number in self.suspects if where == path)
        self.lines.update({(path, n): lines[n - 1] for n in wanted})

    def ordered(self) -> list[Candidate]:
        """Kept candidates in window order: nearest first, newest first, then as stored."""
        ranked = sorted(self.kept, key=lambda c: c[1], reverse=True)
        ranked.sort(key=lambda c: c[0])
        return ranked


@dataclass(frozen=True, kw_only=True)
class Outcome(Generic[K]):
    """The windows chosen, and a warning per line that could not be read."""

    windows: dict[K, Window]
    warnings: tuple[str, ...]


def choose_windows(
    repo: Path,
    tip: str,
    keys: Mapping[K, WindowKey],
    distance: Mapping[bytes, int],
    limit: int,
    *,
    horizon: int = RECENT_HORIZON,
    label: str,
) -> Outcome[K]:
    """Each bucket's window at ``tip`` (keyed as ``keys``); ``label`` prefixes warnings."""
    selections = {
        bucket: _Selection(key=key, limit=limit, horizon=horizon) for bucket, key in keys.items()
    }
    _rank(repo, tip, selections, distance)
    windows, warnings, retry = _pick(repo, tip, selections, label)
    if retry:
        # A kept line turned out unreadable although farther candidates were dropped:
        # that bucket is chosen again keeping every candidate.
        again = {
            b: _Selection(key=keys[b], limit=limit, horizon=horizon, keep_all=True) for b in retry
        }
        _rank(repo, tip, again, distance)
        more, _, _ = _pick(repo, tip, again, label)
        windows.update(more)
    return Outcome(windows=windows, warnings=tuple(warnings))


def _rank(
    repo: Path, tip: str, selections: Mapping[K, _Selection], distance: Mapping[bytes, int]
) -> None:
    """Look at segments round by round (live ones, then archives) until each window is known."""
    archives: dict[str, list[str]] | None = None
    while pending := [s for s in selections.values() if s.queue]:
        by_path: dict[str, list[_Selection]] = {}
        for selection in pending:
            by_path.setdefault(selection.queue[0], []).append(selection)
        paths = sorted(by_path)
        oids = object_ids(repo, [f"{tip}:{path}" for path in paths])
        present = [path for path in paths if f"{tip}:{path}" in oids]
        unindexed = []
        indexes = stream_blobs(repo, [f"{tip}:{index_path(path)}" for path in present])
        for path, index in zip(present, indexes, strict=True):
            tokens = _index_tokens(index.data, oids[f"{tip}:{path}"])
            if tokens is None:
                unindexed.append(path)
                continue
            for selection in by_path[path]:
                selection.feed_index(path, tokens, distance)
        segments = stream_blobs(repo, [f"{tip}:{path}" for path in unindexed])
        for path, segment in zip(unindexed, segments, strict=True):
            for selection in by_path[path]:
                selection.feed_lines(path, segment.data or b"", distance)
        for selection in pending:
            path = selection.queue.pop(0)
            if not selection.wants_more:
                selection.queue = []
            elif path == selection.key.path:
                # Only a bucket whose live segment did not settle its window reads archives.
                archives = archives if archives is not None else list_archives(repo, tip)
                selection.queue = list(archives.get(archive_dir(path), []))


def _pick(
    repo: Path, tip: str, selections: Mapping[K, _Selection], label: str
) -> tuple[dict[K, Window], list[str], list[K]]:
    """The windows, a warning per unreadable line, and the buckets to choose again."""
    lines: dict[tuple[str, int], bytes] = {}
    owed: set[tuple[str, int]] = set()
    for selection in selections.values():
        lines.update(selection.lines)
        owed.update(where for where in selection.suspects if where not in selection.lines)
    # Lines an index marked as not samples: read their segment once, to say what is wrong.
    paths = sorted({path for path, _ in owed})
    for path, segment in zip(paths, stream_blobs(repo, [f"{tip}:{p}" for p in paths]), strict=True):
        text = (segment.data or b"").split(b"\n")
        lines.update({(path, n): text[n - 1] for p, n in owed if p == path and n <= len(text)})
    parsed: dict[tuple[str, int], Sample | str] = {}
    for (path, number), line in lines.items():
        try:
            parsed[(path, number)] = Sample.from_line(line)
        except ValueError as exc:
            parsed[(path, number)] = (
                f"{label}:{path}:{number}: corrupt baseline line skipped ({exc})"
            )
    warnings: dict[str, None] = {}
    windows: dict[K, Window] = {}
    retry: list[K] = []
    for bucket, selection in selections.items():
        chosen: list[WindowEntry] = []
        dropped = False
        for _, stamp, path, number, commit, indexed in selection.ordered():
            if indexed is not None:
                # From an index naming this very blob: the writer validated the line.
                value, runner, wall = indexed
                chosen.append(
                    WindowEntry(
                        commit=commit.decode(),
                        timestamp=stamp.decode(),
                        value=value,
                        runner=runner_name(runner.decode()),
                        wall_s=None if wall == b"-" else float(wall),
                    )
                )
            else:
                sample = parsed[(path, number)]
                if isinstance(sample, str) or not selection.key.matches(sample):
                    dropped = True
                    continue
                chosen.append(WindowEntry.of(sample))
            if len(chosen) == selection.limit:
                break
        if dropped and len(chosen) < selection.limit and selection.eligible > len(selection.kept):
            retry.append(bucket)
        windows[bucket] = Window(entries=tuple(chosen))
        for where in [*selection.suspects, *((c[2], c[3]) for c in selection.kept)]:
            outcome = parsed.get(where)
            if isinstance(outcome, str):
                warnings[outcome] = None
    return windows, list(warnings), retry


def _index_tokens(index: bytes | None, blob: str) -> list[bytes] | None:
    """An index's tokens when it describes exactly the segment blob ``blob``; else None."""
    if not index:
        return None
    tokens = index.split()
    if len(tokens) < 4 or tuple(tokens[:2]) != _INDEX_HEAD or tokens[2] != blob.encode():
        return None
    if not tokens[3].isdigit() or len(tokens) != 4 + INDEX_FIELDS * int(tokens[3]):
        return None
    return tokens


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
