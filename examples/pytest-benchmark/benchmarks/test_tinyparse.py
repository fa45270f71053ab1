"""tinyparse's benchmarks, timed by pytest-benchmark; perfgate reads its JSON."""

from __future__ import annotations

import tinyparse

# A config of 200 sections of 10 keys, with comments and blank lines.
TEXT = "\n".join(
    f"[section{s}]  # part {s}\n" + "\n".join(f"key{k} = value {s}.{k}" for k in range(10)) + "\n"
    for s in range(200)
)


def test_tokenize(benchmark) -> None:  # type: ignore[no-untyped-def]
    tokens = benchmark(tinyparse.tokenize, TEXT)
    assert len(tokens) == 200 * 11


def test_parse(benchmark) -> None:  # type: ignore[no-untyped-def]
    sections = benchmark(tinyparse.parse, TEXT)
    assert len(sections) == 201


def test_round_trip(benchmark) -> None:  # type: ignore[no-untyped-def]
    parsed = tinyparse.parse(TEXT)
    assert benchmark(lambda: tinyparse.parse(tinyparse.dump(parsed))) == parsed
