"""Each bucket's window from the segments at a tip, reading as little as it can (R4).

A window holds the bucket's samples that match the result's key and whose commit is an
ancestor of the merge base: nearest commits first, the newest first among samples of one
commit, at most ``limit`` samples of at most ``max_runs`` runs (a run: the samples of one
commit and timestamp). Candidates are the whole live segment, then archived segments
newest first while the window is not full or fewer lines were looked at than ten windows
hold (at least the horizon): a later seed of an old commit appends far samples after
nearer ones.

A segment whose sidecar index names its current blob is chosen from the index alone, as
the writer validated it, so the segment itself is never read. The index's records give
the lines of each ancestor, nearest first, so a window that fills from its nearest runs
looks at those lines only; past a few dozen commits (or with an index written before
records), every line's commit is looked up in the ancestry instead. Only the nearest
lines, up to the one that fills the window, are split into their fields. A segment
without an index (an older writer, a hand edit) is read and ranked line by line; only the
lines that can make the window are parsed. All three give the same window. Candidates
that can no longer make the window are dropped as they come, so memory follows the
window, not the segment. Over 500 lines on purpose: the three read paths must give the
same window, so they share their ranking here and are read side by side.
"""

from __future__ import annotations

import array
import binascii
import bisect
import functools
import heapq
import itertools
import math
import operator
import re
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from perfgate.baselines.reading import stream_blobs, tree_blobs
from perfgate.baselines.runner_file import parse_runner_file, runners_path
from perfgate.baselines.samples import Sample, Window, WindowEntry, WindowKey
from perfgate.baselines.segments import (
    CORRUPT,
    INDEX_FIELDS,
    INDEX_MAGIC,
    INDEX_VERSIONS,
    RECENT_HORIZON,
    RECORD_KEY,
    RECORD_KEY_DIGITS,
    RECORD_WIDTH,
    archive_dir,
    index_path,
    is_archive,
    runner_name,
)
from perfgate.judge.runner_offsets import RunnerModel


class Candidate(NamedTuple):
    """A line that may make a window; (distance, stamp) names its run."""

    distance: int
    stamp: bytes
    segment: str
    number: int  # the line's number in its segment, from 1
    commit: bytes
    # The entry as the index gives it; None when the line must be parsed.
    indexed: WindowEntry | None


# A candidate as the ranking loops build it, once per matching line: a plain tuple in
# Candidate's field order (a NamedTuple's constructor made ranking measurably slower),
# read through the accessors ``_distance`` and ``_run``; made a Candidate once kept.
_Line = tuple[int, bytes, str, int, bytes, WindowEntry | None]


class _Reach:
    """Each walked commit's distance from the merge base. Once the walk is complete any
    other commit is no ancestor (``_FAR``); while it is partial, any other commit may lie
    just past it, so :meth:`distance` gives each a distance of its own from ``beyond`` on,
    in the order first asked for: a window holding one of those is unsettled (see
    ``choose_windows``)."""

    def __init__(self, walked: Mapping[bytes, int], complete: bool):
        self.complete = complete
        self.beyond = _FAR if complete else max(walked.values(), default=-1) + 1
        self._next = self.beyond
        self._walked = walked
        # The walk's distances, and on a partial walk those given to unwalked commits.
        self._known = dict(walked)

    @functools.cached_property
    def nearest_walked(self) -> list[tuple[int, list[bytes]]]:
        """The walked commits nearest first, those at one distance together: the nearest
        ``PROBES + 1`` distances (more means the walk holds more than indexes are probed for)."""
        groups = itertools.groupby(sorted(self._walked.items(), key=_second), key=_second)
        return [(distance, [commit for commit, _ in group])
                for distance, group in itertools.islice(groups, PROBES + 1)]  # fmt: skip

    def distance(self, commit: bytes) -> int:
        """``commit``'s distance from the merge base (``_FAR``: no ancestor).

        On a partial walk, a commit the walk did not reach is assigned the next fresh
        distance (from ``beyond`` on) the first time it is asked for, and keeps it: commits
        differ, so two of them must never be taken for one run (distance, time).
        """
        found = self._known.get(commit)
        if found is None:
            if self.complete:
                return _FAR
            self._known[commit] = found = self._next
            self._next += 1
        return found

    def of(self, commits: Iterable[bytes]) -> list[int]:
        """The distance of each of ``commits``, assigned as :meth:`distance` does."""
        if self.complete:
            return list(map(self._known.get, commits, itertools.repeat(_FAR)))
        return list(map(self.distance, commits))


class FittedDepth(NamedTuple):
    """What a window whose runner model the store holds (fitted over ``history_runs``
    runs) reads instead of its history: ``samples`` and ``runs``, the window alone."""

    samples: int
    runs: int
    history_runs: int


class WindowDepth(NamedTuple):
    """How far each window reaches: at most ``samples`` samples of at most ``runs`` runs
    (None: any number), candidates looked at to at least ``horizon`` lines; ``fitted``:
    what a window whose runner model the store holds reads instead."""

    samples: int
    runs: int | None = None
    horizon: int = RECENT_HORIZON
    fitted: FittedDepth | None = None


# What a caller names each window by: a bucket id, or (bucket id, metric name).
K = TypeVar("K", bound=Hashable)
# A window's entry, or a candidate for one.
E = TypeVar("E")

_MAGIC, _VERSIONS = INDEX_MAGIC.encode(), tuple(v.encode() for v in INDEX_VERSIONS)
_MARK, _NEWLINE = CORRUPT.encode(), ord("\n")
_RECORD_KEY = re.compile(RECORD_KEY.pattern.encode())
# Commits of the walk whose lines an index's records are asked for before every line of
# it is ranked instead: about what ranking a thousand lines costs.
PROBES = 64
_NOT_A_SAMPLE = CORRUPT.encode() + b" "
_COMMIT, _TIMESTAMP = b'"commit":"', b'"timestamp":"'
# The distance of a line whose commit is no ancestor (or that is no sample): past all.
_FAR = sys.maxsize
_second = operator.itemgetter(1)
# A candidate's (or a line's) distance, its run (distance and timestamp), its timestamp.
_distance, _run, _stamp = operator.itemgetter(0), operator.itemgetter(0, 1), operator.itemgetter(1)
# A line made a Candidate, without a call of NamedTuple's constructor (the fields are in order).
_kept: Callable[[_Line], Candidate] = functools.partial(tuple.__new__, Candidate)


class _Index:
    """A trusted index, ranked for every window that reads its segment: its lines nearest
    first, as (distance, line number from 0, line).

    A version 3 index finds each walked commit's lines from its records, nearest commits
    first, so a window that fills from its nearest runs never looks at the other lines.
    After ``PROBES`` commits (a bucket that ran on few of them), or once the walk is used
    up, every line is ranked instead, and the lines past the commits looked at follow in
    that order: the same lines in the same order as ranking them all from the start.
    Records are trusted as written, as the lines and the count are (the index names the
    segment's blob): one that leads to no line of its commit (a hand edit) stops the
    probing, and the lines not given yet are ranked.
    """

    def __init__(self, data: bytes, body: int, count: int, width: int, reach: _Reach,
                 records: int | None) -> None:  # fmt: skip
        self.data, self.body, self.count, self.width, self.reach = data, body, count, width, reach
        # Where the records start (None: a version 2 index, ranked whole).
        self.records = records
        # No field of a sample's line holds the mark: one byte search says whether to look.
        self.marked = data.find(_MARK, body, records) >= 0
        self._found: dict[bytes, list[tuple[int, bytes]]] = {}

    @functools.cached_property
    def lines(self) -> list[bytes]:
        """Every line of the index after its head, records left out."""
        lines = self.data[self.body : self.records].split(b"\n")
        lines.pop()
        return lines

    @functools.cached_property
    def ranked(self) -> tuple[list[int], list[int]]:
        """Each line's distance, and the line numbers nearest first (as stored in a tie)."""
        distances = self.reach.of(map(operator.itemgetter(slice(self.width)), self.lines))
        return distances, sorted(range(len(distances)), key=distances.__getitem__)

    def nearest(self) -> Iterator[tuple[int, int, bytes]]:
        """The lines whose commit may be an ancestor, nearest first."""
        looked = -_FAR  # every line of a commit this near was given
        if self.records is not None:
            walk = self.reach.nearest_walked
            try:
                for distance, commits in walk[:PROBES]:
                    # Commits at one distance: their lines as stored.
                    found = sorted(itertools.chain.from_iterable(map(self._lines_of, commits)))
                    looked = distance
                    for number, line in found:
                        yield distance, number, line
            except _Untrusted:
                pass  # records that lead elsewhere than their commit's lines: rank them all
            else:
                if len(walk) <= PROBES and self.reach.complete:
                    return  # every ancestor was looked at: no other line is one
        distances, order = self.ranked
        for number in order:
            distance = distances[number]
            if distance == _FAR:
                return
            if distance > looked:
                yield distance, number, self.lines[number]

    @functools.cached_property
    def _records(self) -> tuple[array.array[int], memoryview]:
        """The records as numbers, two a record (its key, then its line number and where
        the line starts, 32 bits each), and the keys alone, for a binary search."""
        try:
            numbers = array.array("Q", binascii.unhexlify(self.data[self.records : -1]))
        except binascii.Error:
            raise _Untrusted from None
        if sys.byteorder == "little":
            numbers.byteswap()  # written most significant digit first
        return numbers, memoryview(numbers)[::2]

    def _lines_of(self, commit: bytes) -> list[tuple[int, bytes]]:
        """The lines of ``commit`` (number, line), from the records; memoised, as every
        window of the segment asks for the same commits."""
        if commit in self._found:
            return self._found[commit]
        if len(commit) != self.width:
            return []  # not a commit of this repository's hash: ranking matches no line
        if not _RECORD_KEY.match(commit):
            raise _Untrusted  # a commit no record can name: rank every line
        key = int(commit[:RECORD_KEY_DIGITS], 16)
        numbers, keys = self._records
        data, body, end = self.data, self.body, self.records
        assert end is not None  # only an index with records is probed
        found = []
        at = bisect.bisect_left(keys, key)
        while at < len(keys) and keys[at] == key:
            number, begins = divmod(numbers[2 * at + 1], 1 << 32)
            ends = data.find(b"\n", begins, end) if body <= begins < end else -1
            if ends < 0 or data[begins - 1] != _NEWLINE:
                raise _Untrusted
            line = data[begins:ends]
            if line.startswith(commit):  # as ranking matches it (a bad field is reported)
                found.append((number, line))
            elif line[:RECORD_KEY_DIGITS].lower() != commit[:RECORD_KEY_DIGITS]:
                raise _Untrusted  # a record naming another commit's line
            at += 1
        self._found[commit] = found
        return found


class _Untrusted(Exception):
    """An index whose records do not describe its lines (edited by hand)."""


@dataclass(kw_only=True)
class _Selection:
    """One bucket's window being chosen: segments left to look at, candidates kept."""

    key: WindowKey
    limit: int
    max_runs: int | None = None
    horizon: int = RECENT_HORIZON
    keep_all: bool = False
    # (samples, runs) read instead when the bucket's runner model is trusted: the window
    # alone, the history it was fitted over no longer needed (None: always read the history).
    fitted_depth: tuple[int, int] | None = None
    fitted: RunnerModel | None = None
    # Distances from here on are commits a partial walk did not reach (_FAR: it was
    # complete); True once the window held one when deciding what to read next.
    beyond: int = _FAR
    reached_past: bool = False
    queue: list[str] = field(default_factory=list)
    scanned: int = 0
    # Candidates that can still make the window, nearest first (ties in the order seen).
    kept: list[Candidate] = field(default_factory=list)
    # True once a candidate was dropped for being farther than the window reaches.
    pruned: bool = False
    # Lines to report as not being samples, as (segment, line number).
    suspects: list[tuple[str, int]] = field(default_factory=list)
    # The bytes of lines that must be parsed, cut out while their segment was in hand.
    lines: dict[tuple[str, int], bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.digest = self.key.digest().encode()
        self.queue = [self.key.path]

    @functools.cached_property
    def needles(self) -> tuple[bytes, ...]:
        """What each of the window's lines holds, for segments read without an index."""
        return tuple(needle.encode() for needle in self.key.needles())

    def use_fitted(self, models: Mapping[str, RunnerModel]) -> None:
        """Read only the window when ``models`` (trusted) holds this window's runner model."""
        model = models.get(self.digest.decode())
        if model is not None and self.fitted_depth is not None:
            self.fitted = model
            self.limit, self.max_runs = self.fitted_depth

    def record_reach(self, window: Sequence[Candidate]) -> None:
        """Record in ``reached_past`` whether ``window`` (as it stands when deciding what to
        read next) holds a commit past a partial walk: its length sets how much is read, so
        the whole walk may read otherwise."""
        self.reached_past |= bool(window) and window[-1].distance >= self.beyond

    def wants_more(self, window: Sequence[Candidate], full: bool) -> bool:
        """True until the horizon is looked at and ``window`` (as it stands) is ``full``.

        The horizon is ten windows' worth of lines: of ``limit`` lines each, or of the
        lines the window holds when it counts runs (runs of one sample fill it early).
        """
        lines = self.limit if self.max_runs is None else len(window)
        return self.scanned < max(self.horizon, 10 * lines) or not full

    def window(self) -> tuple[list[Candidate], bool]:
        """The candidates the window would hold now, in order, and whether it is full."""
        return _window_of(self.ordered(), _run, self.limit, self.max_runs)

    def offer(self, candidates: Iterable[_Line]) -> None:
        """Keep the candidates (nearest first) that can still be in the window.

        Every candidate farther than the one that fills the window is ranked after a whole
        window; ties at that distance stay for the timestamp to decide.
        """
        # Most windows are chosen from their live segment alone: nothing kept to merge with.
        merged = heapq.merge(candidates, self.kept, key=_distance) if self.kept else candidates
        if self.keep_all:
            self.kept = list(map(_kept, merged))
            return
        kept: list[Candidate] = []
        runs: set[tuple[int, bytes]] = set()
        reach = _FAR
        for candidate in merged:
            if _distance(candidate) > reach:
                self.pruned = True
                break
            kept.append(_kept(candidate))
            runs.add(_run(candidate))
            if reach == _FAR and (len(kept) >= self.limit or len(runs) == self.max_runs):
                reach = _distance(candidate)
        self.kept = kept

    def feed_index(self, path: str, index: _Index) -> None:
        """Rank a segment from its index: only its nearest lines are split into fields."""
        self.scanned += index.count
        self.offer(self._from_index(path, index))
        if index.marked:
            self.suspects += [(path, number) for number, line in enumerate(index.lines, 1)
                              if line.startswith(_NOT_A_SAMPLE)]  # fmt: skip

    def _from_index(self, path: str, index: _Index) -> Iterator[_Line]:
        """The index's lines that match this window, nearest first, split as they are asked."""
        for distance, number, line in index.nearest():
            fields = line.split(b" ")
            if len(fields) != INDEX_FIELDS or len(fields[0]) != index.width:
                # An index edited by hand: the segment's own line says what it is.
                self.suspects.append((path, number + 1))
                continue
            if fields[2] != self.digest:
                continue
            entry = _indexed_entry(fields)
            if entry is None:
                self.suspects.append((path, number + 1))
            yield (distance, fields[1], path, number + 1, fields[0], entry)

    def feed_lines(self, path: str, data: bytes, reach: _Reach) -> None:
        """Rank a segment from its own lines: commit and timestamp sliced out, nothing parsed."""
        launch, runtime, benchmark, epoch, target = self.needles
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        self.scanned += len(lines)
        distance = reach.distance
        candidates: list[_Line] = []
        for number, line in enumerate(lines, 1):
            if launch not in line:
                if line.strip() and not _looks_like_sample(line):
                    self.suspects.append((path, number))
                continue
            commit, stamp = _field(line, _COMMIT), _field(line, _TIMESTAMP)
            if commit is None or stamp is None:
                self.suspects.append((path, number))
                continue
            where = distance(commit)
            if (
                where != _FAR
                and runtime in line
                and benchmark in line
                and epoch in line
                and target in line
            ):
                candidates.append((where, stamp, path, number, commit, None))
        candidates.sort(key=_distance)
        self.offer(candidates)
        # The segment goes once ranked: keep the lines that must still be parsed.
        wanted = {c.number for c in self.kept if c.segment == path}
        wanted.update(number for where, number in self.suspects if where == path)
        self.lines.update({(path, n): lines[n - 1] for n in wanted})

    def ordered(self) -> list[Candidate]:
        """Kept candidates in window order: nearest first, newest first, then as stored."""
        ranked = sorted(self.kept, key=_stamp, reverse=True)
        ranked.sort(key=_distance)
        return ranked


@dataclass(frozen=True, kw_only=True)
class Outcome(Generic[K]):
    """The windows chosen, and a warning per line that could not be read (each bucket's).

    ``unsettled``: read against part of the ancestry, the buckets whose window the rest
    could change (not full, or holding a sample of a commit it did not reach).
    """

    windows: dict[K, Window]
    warned: dict[K, tuple[str, ...]]
    unsettled: tuple[K, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning once, bucket by bucket."""
        return tuple(dict.fromkeys(w for found in self.warned.values() for w in found))


def choose_windows(
    repo: Path,
    tip: str,
    keys: Mapping[K, WindowKey],
    distance: Mapping[bytes, int],
    depth: WindowDepth,
    *,
    label: str,
    complete: bool = True,
) -> Outcome[K]:
    """Each bucket's window at ``tip`` (keyed as ``keys``), as deep as ``depth`` says;
    ``label`` prefixes warnings.

    A bucket whose runner model the store holds (``depth.fitted``) reads only the window,
    and carries the model (:mod:`perfgate.baselines.runner_file`). Not ``complete``,
    ``distance`` is the nearest part of the ancestry only: a commit it lacks may be just
    past the walk (or no ancestor at all). A window that is not full, or that held such a
    commit's sample at any point, is ``unsettled`` (the whole ancestry may change it).
    Every other window is the one the whole ancestry gives: at each step it held the same
    nearest samples as a whole walk would, so the same segments were read.
    """
    reach = _Reach(distance, complete)
    fitted = depth.fitted

    def selection(key: WindowKey, keep_all: bool = False) -> _Selection:
        read = (fitted.samples, fitted.runs) if fitted else None
        return _Selection(key=key, limit=depth.samples, max_runs=depth.runs,
                          horizon=depth.horizon, keep_all=keep_all, fitted_depth=read,
                          beyond=reach.beyond)  # fmt: skip

    history_runs = fitted.history_runs if fitted else None
    selections = {bucket: selection(key) for bucket, key in keys.items()}
    _rank(repo, tip, selections, reach, history_runs)
    picked = _pick(repo, tip, selections, label, reach.beyond)
    if picked.retry:
        # A kept line turned out unreadable although farther candidates were dropped:
        # that bucket is chosen again keeping every candidate.
        again = {bucket: selection(keys[bucket], keep_all=True) for bucket in picked.retry}
        _rank(repo, tip, again, reach, history_runs)
        more = _pick(repo, tip, again, label, reach.beyond)
        picked.windows.update(more.windows)
        picked.unsettled.difference_update(again)
        picked.unsettled.update(more.unsettled)
    unsettled = tuple(bucket for bucket in keys if bucket in picked.unsettled)
    return Outcome(windows=picked.windows, warned=picked.warned, unsettled=unsettled)


def _rank(
    repo: Path,
    tip: str,
    selections: Mapping[K, _Selection],
    reach: _Reach,
    history_runs: int | None = None,
) -> None:
    """Look at segments round by round (live ones, then archives) until each window is known.

    Segments and indexes are read by blob id, from listings of their directories; with
    ``history_runs``, the live segments' runner models first (fitted over that many runs).
    """
    blobs: dict[str, str] = {}
    archives: dict[str, list[str]] = {}
    listed: set[str] = set()

    def look(directories: Iterable[str]) -> None:
        new = set(directories) - listed
        listed.update(new)
        for path, blob in tree_blobs(repo, tip, new).items():
            blobs[path] = blob
            directory, _, leaf = path.rpartition("/")
            if is_archive(leaf):
                archives.setdefault(directory, []).append(path)

    while pending := [s for s in selections.values() if s.queue]:
        by_path: dict[str, list[_Selection]] = {}
        for selection in pending:
            by_path.setdefault(selection.queue[0], []).append(selection)
        paths = sorted(by_path)
        look(path.rpartition("/")[0] for path in paths)
        present = [path for path in paths if path in blobs]
        indexed = [path for path in present if index_path(path) in blobs]
        unindexed = [path for path in present if index_path(path) not in blobs]
        if history_runs is not None:
            modelled = [path for path in present if runners_path(path) in blobs]
            files = stream_blobs(repo, [blobs[runners_path(path)] for path in modelled])
            for path, found in zip(modelled, files, strict=True):
                models = parse_runner_file(found.data, blobs[path], history_runs)
                for selection in by_path[path]:
                    selection.use_fitted(models)
            # Only live segments have models: archives are looked at in later rounds.
            history_runs = None
        indexes = stream_blobs(repo, [blobs[index_path(path)] for path in indexed])
        for path, blob in zip(indexed, indexes, strict=True):
            index = _read_index(blob.data, blobs[path], reach)
            if index is None:
                unindexed.append(path)
                continue
            for selection in by_path[path]:
                selection.feed_index(path, index)
        segments = stream_blobs(repo, [blobs[path] for path in unindexed])
        for path, segment in zip(unindexed, segments, strict=True):
            for selection in by_path[path]:
                selection.feed_lines(path, segment.data or b"", reach)
        unsettled = []
        for selection in pending:
            path = selection.queue.pop(0)
            window, full = selection.window()
            selection.record_reach(window)
            if not selection.wants_more(window, full):
                selection.queue = []
            elif path == selection.key.path:
                # Only a bucket whose live segment did not settle its window reads archives.
                unsettled.append(selection)
        look(archive_dir(selection.key.path) for selection in unsettled)
        for selection in unsettled:
            selection.queue = sorted(archives.get(archive_dir(selection.key.path), []),
                                     reverse=True)  # fmt: skip


@dataclass(kw_only=True)
class _Picked(Generic[K]):
    """What ``_pick`` chose: the windows, each bucket's warnings (one per unreadable
    line), the buckets to choose again and those an unwalked commit may change."""

    windows: dict[K, Window]
    warned: dict[K, tuple[str, ...]]
    retry: list[K]
    unsettled: set[K]


def _pick(
    repo: Path, tip: str, selections: Mapping[K, _Selection], label: str, beyond: int = _FAR
) -> _Picked[K]:
    """The windows, a warning per unreadable line, the buckets to choose again, and those
    a commit past a partial walk (``beyond`` on) may have changed."""
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
    picked: _Picked[K] = _Picked(windows={}, warned={}, retry=[], unsettled=set())
    for bucket, selection in selections.items():
        dropped: list[Candidate] = []
        chosen, full = _window_of(_readable(selection, parsed, dropped), _run_of_ranked,
                                  selection.limit, selection.max_runs)  # fmt: skip
        if dropped and not full and selection.pruned:
            picked.retry.append(bucket)
        if beyond != _FAR and (
            not full or selection.reached_past or any(d >= beyond for d, _ in chosen)
        ):
            picked.unsettled.add(bucket)
        picked.windows[bucket] = Window(entries=tuple(e for _, e in chosen),
                                        fitted=selection.fitted)  # fmt: skip
        places = [*selection.suspects, *((c.segment, c.number) for c in selection.kept)]
        found = (parsed.get(where) for where in places)
        picked.warned[bucket] = tuple(dict.fromkeys(o for o in found if isinstance(o, str)))
    return picked


def _readable(
    selection: _Selection,
    parsed: Mapping[tuple[str, int], Sample | str],
    dropped: list[Candidate],
) -> Iterator[tuple[int, WindowEntry]]:
    """The kept candidates as window entries (with their distance), in window order; those
    that turned out unreadable or another experiment's go to ``dropped``."""
    for candidate in selection.ordered():
        if candidate.indexed is not None:
            # From an index naming this very blob: the writer validated the line.
            yield candidate.distance, candidate.indexed
            continue
        sample = parsed.get((candidate.segment, candidate.number))
        if isinstance(sample, Sample) and selection.key.matches(sample):
            yield candidate.distance, WindowEntry.of(sample)
        else:
            dropped.append(candidate)


def _window_of(
    ranked: Iterable[E], run: Callable[[E], Hashable], limit: int, max_runs: int | None
) -> tuple[list[E], bool]:
    """What a window holds of ``ranked`` (in window order), and whether that fills it: at
    most ``limit`` entries, of at most ``max_runs`` runs (``run`` names an entry's run)."""
    runs: set[Hashable] = set()
    taken: list[E] = []
    for entry in ranked:
        name = run(entry)
        if name not in runs and len(runs) == max_runs:
            return taken, True
        runs.add(name)
        taken.append(entry)
        if len(taken) == limit:
            return taken, True
    return taken, len(runs) == max_runs


def _run_of_ranked(ranked: tuple[int, WindowEntry]) -> tuple[str, str]:
    """The run a window entry (with its distance) belongs to: its commit and timestamp."""
    _, entry = ranked
    return entry.commit, entry.timestamp


def _read_index(data: bytes | None, blob: str, reach: _Reach) -> _Index | None:
    """The index ``data``, ranked by ``reach``, when it describes exactly the segment blob
    ``blob``.

    None when it does not (an older writer, a hand edit): the segment is read instead.
    """
    if not data:
        return None
    head = data.find(b"\n")
    tokens = data[:head].split()
    if len(tokens) != 4 or tokens[0] != _MAGIC or tokens[1] not in _VERSIONS:
        return None
    if tokens[2] != blob.encode() or not tokens[3].isdigit():
        return None
    count = int(tokens[3])
    if not data.endswith(b"\n"):
        return None
    if tokens[1] == b"2":
        # Without records every line is ranked: split now, they must be as many as it says.
        whole = _Index(data, head + 1, count, len(blob), reach, None)
        return whole if len(whole.lines) == count else None
    # The records are its last line; each of the lines they lead to is checked as read.
    records = data.rfind(b"\n", 0, len(data) - 1) + 1
    if records <= head or (len(data) - 1 - records) % RECORD_WIDTH:
        return None
    return _Index(data, head + 1, count, len(blob), reach, records)


def _indexed_entry(fields: list[bytes]) -> WindowEntry | None:
    """The window entry an index line gives, or None when a field was edited (the figure
    not a positive finite number, the seconds not ``-`` or a non-negative one)."""
    commit, stamp, _, figure, runner, wall = fields[:6]
    value, seconds = _number(figure), None if wall == b"-" else _number(wall)
    if value is None or value <= 0 or (wall != b"-" and seconds is None):
        return None
    return WindowEntry(commit=commit.decode(), timestamp=stamp.decode(), value=value,
                       runner=runner_name(runner.decode()), wall_s=seconds)  # fmt: skip


def _number(token: bytes) -> float | None:
    """A non-negative finite number from an index field, or None."""
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


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
