"""A bucket's samples on the branch: segments, the dedup list, and a sidecar index per segment.

Per bucket, beside ``samples/<hardware>/<task>/<backend>.ndjson`` (the live segment, the
newest at most SEGMENT_LINES samples):

- ``<backend>.ids``: every sample id ever stored for the bucket, one a line (dedup);
- ``<backend>/<count>.ndjson``: archived full segments, named by the sample count at
  their end, so names sort oldest first;
- ``<backend>.idx`` and ``<backend>/<count>.idx``: each segment's index;
- ``<backend>.runners``: the bucket's runner models (:mod:`perfgate.baselines.runner_file`).

An index lets a reader choose a window without reading the segment at all. Its first line
names the exact blob it describes (``perfgate-index 3 <blob id> <lines>``); then one line
per segment line: ``<commit> <timestamp> <window digest> <value> <runner> <seconds>
<byte offset>`` for a sample (as the writer validated it; the runner is ``=`` and its
name percent-encoded, or ``-`` when unknown; the seconds its launch took, or ``-``),
``! - - - - - <offset>`` for a line that is not one and ``- - - - - - <offset>`` for a
blank one. A last line finds a commit's lines without reading the others: one record
per sample line whose commit starts with 16 hex digits, 32 hex digits each, sorted: the
commit's first 16 (as a number), the line's number (8, from 0) and where it starts in the
index (8).

A reader trusts an index only when it names the segment's current blob and is of a
version it reads (2: the same, without the records), so a segment written by an older
perfgate (version 1 indexes had no runner), or edited by hand, is read line by line
instead: never a wrong window.

Everything here is pure: the store's write path applies the files it returns.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from perfgate.baselines.samples import Sample

# A live segment holds at most this many lines; older ones move whole into archives, so
# reading the newest samples never costs the whole history.
SEGMENT_LINES = 1000
# Lines always looked at from the end of a bucket's samples, however early its window
# fills: a later seed of an old commit appends far samples after nearer ones.
RECENT_HORIZON = 200
INDEX_MAGIC = "perfgate-index"
INDEX_VERSION = "3"
# Versions read: 2 is 3 without the records of its last line.
INDEX_VERSIONS = ("2", INDEX_VERSION)
INDEX_FIELDS = 7  # per line: commit, timestamp, window digest, value, runner, seconds, offset
# A record of an index's last line, in hex digits: a commit's first 16 (its key), a line
# number and where the line starts (8 each).
RECORD_KEY_DIGITS, RECORD_WIDTH = 16, 32
CORRUPT = "!"
BLANK = "-"

_SAMPLE_ID = re.compile(r'"sample_id":"([0-9a-f]+)"')
_TOKEN = re.compile(r"[!-~]+")  # printable, no whitespace: one index field
# A commit a record can name, by the 16 hex digits it starts with (git's ids always can).
RECORD_KEY = re.compile(f"[0-9a-fA-F]{{{RECORD_KEY_DIGITS}}}")

# (commit, timestamp, window digest, value, runner, seconds) of a sample line; CORRUPT or
# BLANK otherwise.
Entry = tuple[str, str, str, str, str, str] | str


class Unindexable(ValueError):
    """A sample whose commit or timestamp cannot be an index field (hand-written lines)."""


def archive_dir(live_path: str) -> str:
    """``samples/h/t/b.ndjson`` -> ``samples/h/t/b``: where its full segments are kept."""
    return live_path.removesuffix(".ndjson")


def ids_path(live_path: str) -> str:
    """Every sample id ever stored for a bucket, one per line (the dedup index)."""
    return live_path.removesuffix(".ndjson") + ".ids"


def index_path(segment_path: str) -> str:
    """The sidecar index of a segment (live or archived)."""
    return segment_path.removesuffix(".ndjson") + ".idx"


def is_archive(name: str) -> bool:
    """True for an archived segment's file name (``<digits>.ndjson``)."""
    return name.endswith(".ndjson") and name[:-7].isdigit()


def encode(text: str) -> bytes:
    """A segment's bytes; undecodable bytes read by :func:`decode` come back unchanged."""
    return text.encode("utf-8", "surrogateescape")


def decode(data: bytes) -> str:
    """A stored file's text, keeping any bytes that are not UTF-8 for :func:`encode`."""
    return data.decode("utf-8", "surrogateescape")


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The id git gives ``data`` as a blob (``git hash-object``), for sha1 or sha256 repos."""
    digest = hashlib.new(object_format)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def sample_entry(sample: Sample) -> Entry:
    """A sample's index fields; Unindexable when a field would not be one token."""
    value = json.dumps(sample.value, allow_nan=False)
    fields = (sample.commit, sample.timestamp, sample.window_digest, value)
    if not all(_TOKEN.fullmatch(part) for part in fields):
        raise Unindexable(f"sample {sample.sample_id}: commit or timestamp is not one token")
    wall = "-" if sample.wall_s is None else json.dumps(sample.wall_s, allow_nan=False)
    return (*fields, runner_token(sample.ci_runner_name), wall)


def runner_token(name: str | None) -> str:
    """A runner's name as one index field: ``=`` and the name percent-encoded, ``-`` if none."""
    return "-" if name is None else "=" + quote(name, safe="")


def runner_name(token: str) -> str | None:
    """The runner name an index field holds (None for ``-``)."""
    return unquote(token[1:]) if token.startswith("=") else None


def line_entry(line: str) -> Entry | None:
    """The index fields of one stored line, parsed in full; None when it cannot be indexed."""
    if not line.strip():
        return BLANK
    try:
        sample = Sample.from_line(line)
    except ValueError:
        return CORRUPT
    try:
        return sample_entry(sample)
    except Unindexable:
        return None


def render_index(lines: Sequence[str], entries: Sequence[Entry], object_format: str) -> str:
    """The index text of the segment whose lines (without newlines) are ``lines``."""
    data = encode(segment_text(lines))
    out = [f"{INDEX_MAGIC} {INDEX_VERSION} {blob_id(data, object_format)} {len(lines)}\n"]
    offset = 0
    for line, entry in zip(lines, entries, strict=True):
        fields = f"{entry} - - - - -" if isinstance(entry, str) else " ".join(entry)
        out.append(f"{fields} {offset}\n")
        offset += len(encode(line)) + 1
    # Every field is ASCII (tokens, digits, percent-encoded names): characters are bytes.
    at = list(itertools.accumulate(map(len, out)))
    if at[-1] >= 1 << 32:
        raise Unindexable(f"{len(lines)} lines of {at[-1]} bytes: past what an index records")
    # Each record as one number (key, number, start: 64, 32 and 32 bits), sorted as such.
    records = sorted(
        int(entry[0][:RECORD_KEY_DIGITS], 16) << 64 | number << 32 | at[number]
        for number, entry in enumerate(entries)
        if not isinstance(entry, str) and RECORD_KEY.match(entry[0])
    )
    out.append("".join(f"{record:0{RECORD_WIDTH}x}" for record in records))
    return "".join(out) + "\n"


def parse_index(text: str, segment: bytes, object_format: str) -> list[Entry | None] | None:
    """The entries of an index that describes exactly ``segment``; None when it does not."""
    head, _, body = text.partition("\n")
    parts = head.split()
    if len(parts) != 4 or parts[0] != INDEX_MAGIC or parts[1] not in INDEX_VERSIONS:
        return None
    if parts[2] != blob_id(segment, object_format):
        return None
    rows = [row.split() for row in body.splitlines()]
    if parts[1] != "2" and rows:
        rows.pop()  # the records: rewritten from the entries
    if len(rows) != int(parts[3]) or any(len(row) != INDEX_FIELDS for row in rows):
        return None
    entries: list[Entry | None] = [
        row[0] if row[0] in (CORRUPT, BLANK) else (row[0], row[1], row[2], row[3], row[4], row[5])
        for row in rows
    ]
    return entries


def segment_lines(text: str) -> list[str]:
    """The lines of a segment (a final newline ends the last line, it does not start one)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def segment_text(lines: Sequence[str]) -> str:
    """A segment's text: every line newline-terminated."""
    return "".join(f"{line}\n" for line in lines)


@dataclass(frozen=True, kw_only=True)
class BucketFiles:
    """The stored files of one bucket that an append reads."""

    live: str = ""
    index: str | None = None
    ids: str = ""
    # Names of the bucket's archived segments, so a new one never takes an existing name.
    archives: tuple[str, ...] = ()


def stored_ids(stored: BucketFiles) -> set[str]:
    """The ids of every sample a bucket holds: its id list and its live segment's lines."""
    return set(stored.ids.split()) | set(_SAMPLE_ID.findall(stored.live))


@dataclass(frozen=True, kw_only=True)
class BucketUpdate:
    """What appending to one bucket writes (path -> text), and how many samples were new."""

    files: dict[str, str | None]
    added: int
    present: int
    # The index entries of every line written (archives made, then the live segment),
    # oldest first; None for a line that cannot be indexed.
    entries: tuple[Entry | None, ...] = ()


def append_to_bucket(
    live_path: str,
    stored: BucketFiles,
    new: Sequence[Sample],
    *,
    object_format: str = "sha1",
    segment_lines_max: int = SEGMENT_LINES,
) -> BucketUpdate:
    """Append the samples not stored yet (by sample_id); archive full segments; index each.

    A live segment never holds more than ``segment_lines_max`` lines: when an append would
    pass that, its oldest lines move into archives of exactly that many lines, so the live
    segment always keeps the newest samples. A file value of None deletes the file.
    """
    known = stored.ids.split()
    ids = stored_ids(stored)
    fresh: list[Sample] = []
    for sample in new:
        if sample.sample_id not in ids:
            ids.add(sample.sample_id)
            fresh.append(sample)
    present = len(new) - len(fresh)
    if not fresh:
        return BucketUpdate(files={}, added=0, present=present)
    old_lines = segment_lines(stored.live)
    data = encode(stored.live)
    old_entries = parse_index(stored.index, data, object_format) if stored.index else None
    if old_entries is None:
        # No index, or one that describes another blob (an older writer appended): rebuild.
        old_entries = [line_entry(line) for line in old_lines]
    kept = [(line, entry) for line, entry in zip(old_lines, old_entries, strict=True)
            if entry != BLANK]  # fmt: skip
    lines = [line for line, _ in kept] + [sample.to_line() for sample in fresh]
    entries: list[Entry | None] = [entry for _, entry in kept]
    for sample in fresh:
        try:
            entries.append(sample_entry(sample))
        except Unindexable:
            entries.append(None)
    files: dict[str, str | None] = {ids_path(live_path): segment_text([*known, *(
        s.sample_id for s in fresh)])}  # fmt: skip
    full = (len(lines) - 1) // segment_lines_max
    last = max((int(name.removesuffix(".ndjson")) for name in stored.archives), default=0)
    for chunk in range(full):
        # Named by the number of samples stored up to its end, so names sort oldest first;
        # never an existing name (lines without an id would make the count repeat).
        last = max(last + 1, len(ids) - (len(lines) - (chunk + 1) * segment_lines_max))
        path = f"{archive_dir(live_path)}/{last:09d}.ndjson"
        window = slice(chunk * segment_lines_max, (chunk + 1) * segment_lines_max)
        files.update(_segment_files(path, lines[window], entries[window], object_format))
    rest = slice(full * segment_lines_max, None)
    files.update(_segment_files(live_path, lines[rest], entries[rest], object_format))
    return BucketUpdate(files=files, added=len(fresh), present=present, entries=tuple(entries))


def _segment_files(
    path: str, lines: Sequence[str], entries: Sequence[Entry | None], object_format: str
) -> dict[str, str | None]:
    """A segment and its index; no index when a line cannot be indexed (readers scan it)."""
    index = None
    if all(entry is not None for entry in entries):
        with contextlib.suppress(Unindexable):
            index = render_index(lines, [e for e in entries if e is not None], object_format)
    return {path: segment_text(lines), index_path(path): index}
