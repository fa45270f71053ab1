"""The segment layout and its sidecar index: pure functions of the write path."""

from __future__ import annotations

from dataclasses import replace

from perfgate.baselines.samples import Sample, samples_from_result
from perfgate.baselines.segments import (
    BLANK,
    CORRUPT,
    RECORD_WIDTH,
    BucketFiles,
    append_to_bucket,
    archive_dir,
    blob_id,
    index_path,
    parse_index,
    runner_name,
    runner_token,
    segment_lines,
)
from tests.factories import make_result

LIVE = "samples/cpu-test/cartpole/numpy.ndjson"


def samples(count: int, start: int = 0) -> list[Sample]:
    return [
        samples_from_result(make_result(value=100.0 + i, run_id=f"r{i}"), trusted_source="t")[0]
        for i in range(start, start + count)
    ]


def apply(
    files: BucketFiles, new: list[Sample], limit: int = 4
) -> tuple[BucketFiles, dict[str, str | None]]:
    """Append as the store does, and the stored files afterwards."""
    update = append_to_bucket(LIVE, files, new, segment_lines_max=limit)
    written = update.files
    archived = [p.rsplit("/", 1)[1] for p in written if p.startswith(archive_dir(LIVE) + "/")]
    archives = tuple(sorted({*files.archives, *(n for n in archived if n.endswith(".ndjson"))}))
    return (
        BucketFiles(
            live=written.get(LIVE, files.live) or "",
            index=written.get(index_path(LIVE), files.index),
            ids=written.get(LIVE.replace(".ndjson", ".ids"), files.ids) or "",
            archives=archives,
        ),
        written,
    )


def test_git_and_the_index_name_a_blob_the_same_way() -> None:
    # `printf 'hello\\n' | git hash-object --stdin`, and its sha256 twin.
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert blob_id(b"hello\n", "sha256") == (
        "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
    )


def test_a_live_segment_never_passes_the_limit_and_archives_hold_exactly_the_limit() -> None:
    files = BucketFiles()
    everything: list[Sample] = []
    archived: dict[str, str] = {}
    for chunk in (samples(3), samples(3, 3), samples(7, 6), samples(1, 13)):
        everything += chunk
        files, written = apply(files, chunk)
        archived |= {p: t for p, t in written.items() if "/numpy/" in p and p.endswith(".ndjson")}
        assert 1 <= len(segment_lines(files.live)) <= 4
    assert sorted(p.rsplit("/", 1)[1] for p in archived) == [
        "000000004.ndjson", "000000008.ndjson", "000000012.ndjson"
    ]  # fmt: skip
    assert all(len(segment_lines(text)) == 4 for text in archived.values())
    # Oldest first across archives, then the live segment: the append order, every sample once.
    lines = [line for p in sorted(archived) for line in segment_lines(archived[p])]
    lines += segment_lines(files.live)
    assert [Sample.from_line(line).sample_id for line in lines] == [s.sample_id for s in everything]


def test_an_archive_never_takes_an_existing_name() -> None:
    # Lines without ids (written by hand) would make the count-based name repeat.
    files = BucketFiles(live="not json\n" * 4, archives=("000000004.ndjson",))
    update = append_to_bucket(LIVE, files, samples(1), segment_lines_max=4)
    assert "samples/cpu-test/cartpole/numpy/000000005.ndjson" in update.files


def test_each_segment_gets_an_index_of_exactly_its_blob() -> None:
    files, written = apply(BucketFiles(), samples(6))
    for path, text in written.items():
        if path.endswith(".ndjson"):
            entries = parse_index(written[index_path(path)] or "", text.encode(), "sha1")
            assert entries is not None
            assert len(entries) == len(segment_lines(text))
            for entry, line in zip(entries, segment_lines(text), strict=True):
                sample = Sample.from_line(line)
                digest = sample.window_digest
                runner = runner_token(sample.ci_runner_name)
                assert entry == (
                    sample.commit,
                    sample.timestamp,
                    digest,
                    str(sample.value),
                    runner,
                    "-" if sample.wall_s is None else str(sample.wall_s),
                )
    # Another blob (one more line, say by an older perfgate) is not what the index names.
    assert parse_index(files.index or "", (files.live + "x\n").encode(), "sha1") is None


def test_the_index_keeps_each_samples_runner_and_launch_seconds_whatever_the_name() -> None:
    spaced = replace(samples(1)[0], ci_runner_name="GitHub Actions 2 = gpu-l40s %", wall_s=61.5)
    update = append_to_bucket(LIVE, BucketFiles(), [spaced])
    entries = parse_index(update.files[index_path(LIVE)] or "", (update.files[LIVE] or "").encode(),
                          "sha1")  # fmt: skip
    assert entries is not None and isinstance(entries[0], tuple)
    assert runner_name(entries[0][4]) == "GitHub Actions 2 = gpu-l40s %"
    assert entries[0][5] == "61.5"
    assert runner_name(runner_token(None)) is None


def test_a_version_1_index_is_not_trusted_and_the_lines_are_read_instead() -> None:
    files, _ = apply(BucketFiles(), samples(2))
    old = (files.index or "").replace("perfgate-index 3 ", "perfgate-index 1 ", 1)
    assert parse_index(old, files.live.encode(), "sha1") is None


def test_each_sample_line_has_a_sorted_record_naming_where_it_starts() -> None:
    # Commits that sort otherwise than they were appended, one of them twice, a bad line.
    commits = ["e" * 40, "a" * 40, "e" * 40, "c" * 40]
    stored = [replace(s, commit=c) for s, c in zip(samples(4), commits, strict=True)]
    files = BucketFiles(live="not a sample\n" + "".join(s.to_line() + "\n" for s in stored))
    update = append_to_bucket(LIVE, BucketFiles(live=files.live), samples(1, 9))
    index = update.files[index_path(LIVE)] or ""
    *lines, records = index.splitlines()
    assert len(records) % RECORD_WIDTH == 0
    found = [records[i : i + RECORD_WIDTH] for i in range(0, len(records), RECORD_WIDTH)]
    assert found == sorted(found) and len(found) == 5  # every sample line, not the bad one
    for record in found:
        key, number, start = record[:16], int(record[16:24], 16), int(record[24:], 16)
        assert index[start:].startswith(lines[1 + number]) and lines[1 + number].startswith(key)
    assert [int(r[16:24], 16) for r in found if r.startswith("e")] == [1, 3]


def test_a_commit_no_record_can_name_is_indexed_without_one() -> None:
    # Written by hand: not the 16 hex digits a record keys a commit by.
    update = append_to_bucket(LIVE, BucketFiles(), [replace(samples(1)[0], commit="v1.2-rc")])
    index = update.files[index_path(LIVE)] or ""
    assert index.endswith(" 0\n\n")  # its line, and no record
    assert parse_index(index, (update.files[LIVE] or "").encode(), "sha1") is not None


def test_an_index_of_version_2_is_still_read() -> None:
    files, _ = apply(BucketFiles(), samples(2))
    head, *lines, _records = (files.index or "").splitlines()
    older = "\n".join([head.replace("perfgate-index 3 ", "perfgate-index 2 ", 1), *lines]) + "\n"
    assert parse_index(older, files.live.encode(), "sha1") == parse_index(
        files.index or "", files.live.encode(), "sha1"
    )


def test_an_index_an_older_writer_left_stale_is_rebuilt_from_the_lines() -> None:
    files, _ = apply(BucketFiles(), samples(2))
    behind = replace(files, live=files.live + samples(1, 2)[0].to_line() + "\n")
    files, _ = apply(behind, samples(1, 3))
    entries = parse_index(files.index or "", files.live.encode(), "sha1")
    assert entries is not None and len(entries) == 4


def test_lines_that_are_not_samples_are_marked_and_blank_ones_dropped() -> None:
    files = BucketFiles(live='{"value": "bad"}\n\n' + samples(1)[0].to_line() + "\n")
    files, _ = apply(files, samples(1, 1), limit=10)
    entries = parse_index(files.index or "", files.live.encode(), "sha1")
    assert entries is not None
    assert entries[0] == CORRUPT
    assert BLANK not in entries and len(entries) == 3


def test_a_sample_whose_fields_cannot_be_index_tokens_leaves_its_segment_unindexed() -> None:
    odd = replace(samples(1)[0], timestamp="2026-11-30 12:00:00")
    update = append_to_bucket(LIVE, BucketFiles(), [odd])
    assert update.files[index_path(LIVE)] is None  # readers scan that segment instead
    assert odd.sample_id in (update.files[LIVE] or "")


def test_samples_already_stored_count_as_present_and_write_nothing() -> None:
    files, _ = apply(BucketFiles(), samples(3))
    update = append_to_bucket(LIVE, files, samples(3), segment_lines_max=4)
    assert (update.added, update.present, update.files) == (0, 3, {})
