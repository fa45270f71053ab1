"""Each bucket's window from the segments at a tip, reading as little as it can (R4).

A window holds the bucket's samples that match the result's key and whose commit is an
ancestor of the merge base: nearest commits first, the newest first among samples of one
commit, at most ``limit``. Candidates are the whole live segment, then archived segments
newest first while fewer than the horizon's lines were looked at or the window is not
full (a later seed of an old commit appends far samples after nearer ones).

A segment is ranked from its sidecar index when the index names the segment's current
blob, otherwise from its own lines; both give the same window. Only candidates that can
still make the window are kept, and only their lines are parsed, so memory and Python
work follow the window, not the segment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfgate.baselines.reading import list_archives, object_ids, stream_blobs
from perfgate.baselines.samples import Sample, Window, WindowKey
from perfgate.baselines.segments import (
    CORRUPT,
    INDEX_MAGIC,
    INDEX_VERSION,
    RECENT_HORIZON,
    archive_dir,
    index_path,
)

# (distance, timestamp, segment, line number, start, end): a line that may make a window.
# ``end`` is -1 for a segment's last line.
Candidate = tuple[int, bytes, str, int, int, int]
# (segment, line number, start, end): a line to report as corrupt.
Suspect = tuple[str, int, int, int]

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
    suspects: list[Suspect] = field(default_factory=list)

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
        commits, stamps, digests, offsets = (tokens[4 + k :: 4] for k in range(4))
        self.scanned += count
        found = [(d, i) for i, d in enumerate(map(distance.get, commits)) if d is not None]
        if digests.count(self.digest) != count:
            found = [(d, i) for d, i in found if digests[i] == self.digest]
        if not self.keep_all and len(found) > self.limit:
            farthest = sorted(d for d, _ in found)[self.limit - 1]
            found = [(d, i) for d, i in found if d <= farthest]
        self.offer([(d, stamps[i], path, i + 1, *_span(offsets, i)) for d, i in found])
        if _CORRUPT in commits:
            self.suspects += [
                (path, i + 1, *_span(offsets, i)) for i, c in enumerate(commits) if c == _CORRUPT
            ]

    def feed_lines(self, path: str, data: bytes, distance: Mapping[bytes, int]) -> None:
        """Rank a segment from its own lines: commit and timestamp sliced out, nothing parsed."""
        launch, runtime, benchmark, epoch, target = self.needles
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        self.scanned += len(lines)
        candidates: list[Candidate] = []
        start = 0
        for number, line in enumerate(lines, 1):
            span = (start, start + len(line))
            start += len(line) + 1
            if launch not in line:
                if line.strip() and not _looks_like_sample(line):
                    self.suspects.append((path, number, *span))
                continue
            commit, stamp = _field(line, _COMMIT), _field(line, _TIMESTAMP)
            if commit is None or stamp is None:
                self.suspects.append((path, number, *span))
                continue
            where = distance.get(commit)
            if (
                where is not None
                and runtime in line
                and benchmark in line
                and epoch in line
                and target in line
            ):
                candidates.append((where, stamp, path, number, *span))
        self.offer(candidates)

    def ordered(self) -> list[Candidate]:
        """Kept candidates in window order: nearest first, newest first, then as stored."""
        ranked = sorted(self.kept, key=lambda c: c[1], reverse=True)
        ranked.sort(key=lambda c: c[0])
        return ranked


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The windows chosen, and a warning per line that could not be read."""

    windows: dict[str, Window]
    warnings: tuple[str, ...]


def choose_windows(
    repo: Path,
    tip: str,
    keys: Mapping[str, WindowKey],
    distance: Mapping[bytes, int],
    limit: int,
    *,
    horizon: int = RECENT_HORIZON,
    label: str,
) -> Outcome:
    """Each bucket's window at ``tip`` (keyed as ``keys``); ``label`` prefixes warnings."""
    selections = {
        bucket: _Selection(key=key, limit=limit, horizon=horizon) for bucket, key in keys.items()
    }
    _rank(repo, tip, selections, distance)
    windows, warnings, retry = _pick(repo, tip, selections, label)
    if retry:
        # A kept line turned out unreadable although farther candidates were dropped: that
        # bucket is chosen again keeping every candidate (rare: an index from another
        # version that judged a line readable).
        again = {
            b: _Selection(key=keys[b], limit=limit, horizon=horizon, keep_all=True) for b in retry
        }
        _rank(repo, tip, again, distance)
        more, _, _ = _pick(repo, tip, again, label)
        windows.update(more)
    return Outcome(windows=windows, warnings=tuple(warnings))


def _rank(
    repo: Path, tip: str, selections: Mapping[str, _Selection], distance: Mapping[bytes, int]
) -> None:
    """Look at segments round by round (live ones, then archives) until each window is known."""
    archives: dict[str, list[str]] | None = None
    while pending := [s for s in selections.values() if s.queue]:
        by_path: dict[str, list[_Selection]] = {}
        for selection in pending:
            by_path.setdefault(selection.queue[0], []).append(selection)
        paths = sorted(by_path)
        blobs = object_ids(repo, [f"{tip}:{path}" for path in paths])
        present = [path for path in paths if f"{tip}:{path}" in blobs]
        unindexed = []
        specs = [f"{tip}:{index_path(path)}" for path in present]
        for path, (_, index) in zip(present, stream_blobs(repo, specs), strict=True):
            tokens = _index_tokens(index, blobs[f"{tip}:{path}"])
            if tokens is None:
                unindexed.append(path)
                continue
            for selection in by_path[path]:
                selection.feed_index(path, tokens, distance)
        scans = [blobs[f"{tip}:{path}"] for path in unindexed]
        for path, (_, data) in zip(unindexed, stream_blobs(repo, scans), strict=True):
            for selection in by_path[path]:
                selection.feed_lines(path, data or b"", distance)
        for selection in pending:
            path = selection.queue.pop(0)
            if not selection.wants_more:
                selection.queue = []
            elif path == selection.key.path:
                # Only a bucket whose live segment did not settle its window reads archives.
                archives = archives if archives is not None else list_archives(repo, tip)
                selection.queue = list(archives.get(archive_dir(path), []))


def _pick(
    repo: Path, tip: str, selections: Mapping[str, _Selection], label: str
) -> tuple[dict[str, Window], list[str], list[str]]:
    """Parse the kept lines, segment by segment; the windows, warnings, buckets to redo."""
    wanted: dict[str, list[tuple[int, int, int]]] = {}
    for selection in selections.values():
        for _, _, path, number, start, end in selection.kept:
            wanted.setdefault(path, []).append((number, start, end))
        for path, number, start, end in selection.suspects:
            wanted.setdefault(path, []).append((number, start, end))
    paths = sorted(wanted)
    parsed: dict[tuple[str, int], Sample | str] = {}
    for path, (_, data) in zip(
        paths, stream_blobs(repo, [f"{tip}:{p}" for p in paths]), strict=True
    ):
        for number, start, end in wanted[path]:
            line = (data or b"")[start : None if end < 0 else end].rstrip(b"\n")
            try:
                parsed[(path, number)] = Sample.from_line(line)
            except (ValueError, TypeError, AttributeError, RecursionError) as exc:
                parsed[(path, number)] = (
                    f"{label}:{path}:{number}: corrupt baseline line skipped ({exc})"
                )
    warnings: dict[str, None] = {}
    windows: dict[str, Window] = {}
    retry: list[str] = []
    for bucket, selection in selections.items():
        chosen: list[Sample] = []
        dropped = False
        for _, _, path, number, _, _ in selection.ordered():
            sample = parsed[(path, number)]
            if isinstance(sample, str) or not selection.key.matches(sample):
                dropped = True
                continue
            chosen.append(sample)
            if len(chosen) == selection.limit:
                break
        if dropped and len(chosen) < selection.limit and selection.eligible > len(selection.kept):
            retry.append(bucket)
        windows[bucket] = Window(samples=tuple(chosen))
        for path, number, _, _ in [*selection.suspects, *(c[2:6] for c in selection.kept)]:
            outcome = parsed[(path, number)]
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
    if not tokens[3].isdigit() or len(tokens) != 4 + 4 * int(tokens[3]):
        return None
    return tokens


def _span(offsets: Sequence[bytes], i: int) -> tuple[int, int]:
    """Byte range of line ``i`` from the index offsets (-1: to the end of the segment)."""
    return int(offsets[i]), (int(offsets[i + 1]) - 1 if i + 1 < len(offsets) else -1)


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
