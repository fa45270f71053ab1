"""A benchmark's output costs bounded memory: markers found while streaming, a bounded tail."""

from __future__ import annotations

import pytest

from perfgate.run.logs import LOG_TAIL_BYTES, LogScan, read_log_excerpt


def test_a_marker_split_across_two_chunks_is_found() -> None:
    scan = LogScan(["AppLauncher initialization complete", "oom-kill"])
    scan.feed(b"x" * 100 + b"AppLauncher initiali")
    scan.feed(b"zation complete\n" + b"y" * 100)
    assert "AppLauncher initialization complete" in scan
    assert "oom-kill" not in scan


def test_memory_stays_bounded_however_much_is_printed() -> None:
    scan = LogScan(["Step Frametimes"])
    chunk = b"z" * 1023 + b"\n"
    for _ in range(64 * 1024):  # 64 MiB of output
        scan.feed(chunk)
    scan.feed(b"last line\n")
    assert scan.size == 64 * 1024 * 1024 + 10
    assert len(scan._tail) <= 2 * LOG_TAIL_BYTES
    tail = scan.tail()
    assert tail.startswith("…") and tail.endswith("last line\n")
    assert len(tail.encode()) <= LOG_TAIL_BYTES + len("…".encode())


def test_the_line_callback_sees_whole_lines_even_across_chunks() -> None:
    lines: list[str] = []
    scan = LogScan([], on_line=lines.append)
    for chunk in (b"one\ntw", b"o\nthr", b"ee\n", b"x" * 70_000):
        scan.feed(chunk)
    assert lines[:3] == ["one", "two", "three"]
    assert lines[3] == "x" * 65536  # an endless line arrives in bounded pieces


def test_asking_for_a_marker_that_was_not_scanned_is_a_bug() -> None:
    with pytest.raises(LookupError):
        "never scanned" in LogScan(["scanned"])  # noqa: B015


def test_a_huge_log_excerpt_keeps_both_ends_within_bounds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "log.txt"
    log.write_bytes(b"Warp 1.8.1 initialized\n" + b"." * 5000 + b"\nImportError: x\n")
    text = read_log_excerpt(log, limit=1000)
    assert text.startswith("Warp 1.8.1 initialized") and text.endswith("ImportError: x\n")
    assert len(text) < 2200
