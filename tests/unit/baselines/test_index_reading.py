"""A segment's index read nearest first: from its records, as ranking every line would."""

from __future__ import annotations

import random

import pytest

from perfgate.baselines import windows
from perfgate.baselines.segments import blob_id, encode, render_index, segment_text

WIDTH = 40


def commit(number: int) -> str:
    return f"{number:040x}"


def an_index(chooser: random.Random, lines: int, commits: int) -> tuple[bytes, str]:
    """An index of ``lines`` sample lines over ``commits`` commits (a few lines not samples)."""
    entries: list[tuple[str, str, str, str, str, str] | str] = []
    for number in range(lines):
        if chooser.random() < 0.05:
            entries.append("!")
            continue
        entries.append((commit(chooser.randrange(commits)), f"2026-01-01T00:{number % 60:02d}:00",
                        "d" * 16, str(1.0 + number), "-", "-"))  # fmt: skip
    text = [f"line {number}" for number in range(lines)]
    blob = blob_id(encode(segment_text(text)))
    return encode(render_index(text, entries, "sha1")), blob


def ranked(index: windows._Index) -> list[tuple[int, int, bytes]]:
    distances, order = index.ranked
    return [(distances[n], n, index.lines[n]) for n in order if distances[n] != windows._FAR]


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_lines_from_the_records_come_in_the_order_ranking_gives(
    seed: int, complete: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    chooser = random.Random(seed)
    data, blob = an_index(chooser, lines=chooser.randrange(1, 300), commits=120)
    # Ancestors among the commits, some at one distance, walked nearest first.
    walked = {commit(c).encode(): chooser.randrange(90) for c in chooser.sample(range(120), 100)}
    monkeypatch.setattr(windows, "PROBES", chooser.choice([0, 3, 40, 1000]))
    probed = windows._read_index(data, blob, windows._Reach(walked, complete))
    whole = windows._read_index(data, blob, windows._Reach(walked, complete))
    assert probed is not None and whole is not None
    assert list(probed.nearest()) == ranked(whole)


def test_a_walk_probed_whole_never_ranks_the_index() -> None:
    data, blob = an_index(random.Random(1), lines=1000, commits=50)
    walked = {commit(c).encode(): c for c in range(0, 50, 2)}
    index = windows._read_index(data, blob, windows._Reach(walked, complete=True))
    assert index is not None
    found = list(index.nearest())
    assert found and "ranked" not in vars(index) and "lines" not in vars(index)
    # Its lines nearest first, each of an ancestor: what ranking them all would give.
    assert found == ranked(index)


def test_a_record_leading_past_the_index_ranks_every_line_instead_of_failing() -> None:
    data, blob = an_index(random.Random(2), lines=40, commits=5)
    # A hand edit: the first record's line starts past the end of the index.
    records = data.rindex(b"\n", 0, len(data) - 1) + 1
    edited = data[: records + 24] + b"ffffffff" + data[records + 32 :]
    walked = {commit(c).encode(): c for c in range(5)}
    index = windows._read_index(edited, blob, windows._Reach(walked, complete=True))
    assert index is not None
    assert list(index.nearest()) == ranked(index) != []


def test_walked_names_no_record_can_hold_are_ranked() -> None:
    # Not 16 hex digits at its start (a map of names, not git's ids): no record names it.
    odd = "0x" + "1" * 38
    text = [f"line {n}" for n in range(3)]
    entries = [(name, "2026-01-01T00:00:00", "d" * 16, "1.0", "-", "-")
               for name in (odd, commit(1), odd)]  # fmt: skip
    data = encode(render_index(text, entries, "sha1"))
    blob = blob_id(encode(segment_text(text)))
    for distance in (0, -2):  # any distance, those below zero too
        walked = {odd.encode(): distance, commit(1).encode(): 5}
        index = windows._read_index(data, blob, windows._Reach(walked, complete=True))
        assert index is not None
        assert [n for _, n, _ in index.nearest()] == [0, 2, 1]
