"""Untrusted JSON within limits, and strict JSON out (R3, R14)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from perfgate import jsonfile
from tests.paths import ROOT


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[NaN]", "NaN is not a JSON number"),
        ('{"v": Infinity}', "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e999", "overflows to inf"),
        ("9" * 400, "integer of 400 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than the limit"),
        ("[" * 65 + "]" * 65, "nested 65 levels deep"),
        ('{"a": 1', "not valid JSON"),
        ("\ufeff{}", "not valid JSON"),
    ],
)
def test_what_is_not_acceptable_json_is_one_clean_error(text: str, problem: str) -> None:
    with pytest.raises(jsonfile.JsonError, match=problem.replace("[", r"\[")):
        jsonfile.loads(text)


def test_ordinary_json_within_the_limits_loads() -> None:
    assert jsonfile.loads('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert jsonfile.depth(jsonfile.loads("[" * 64 + "]" * 64)) == 64


def test_the_size_is_refused_before_the_file_is_read(tmp_path: Path) -> None:
    """A sparse 64 GiB file: reading it would exhaust memory; the size check answers first."""
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(64 * 1024**3)
    with pytest.raises(jsonfile.JsonError, match="over the limit"):
        jsonfile.read(huge)


def test_a_file_that_is_not_utf_8_is_one_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"cpu": "caf\xe9"}')
    with pytest.raises(jsonfile.JsonError, match=r"not UTF-8 text \(byte 12\)"):
        jsonfile.read(path)


def _json_writes(path: Path) -> list[tuple[int, bool]]:
    """(line, passes allow_nan=False) of every json.dump/json.dumps call in ``path``."""
    calls = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        func = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("dump", "dumps")
            and isinstance(func.value, ast.Name)
            and func.value.id == "json"
        ):
            assert isinstance(node, ast.Call)
            strict = any(
                k.arg == "allow_nan"
                and isinstance(k.value, ast.Constant)
                and k.value.value is False
                for k in node.keywords
            )
            calls.append((node.lineno, strict))
    return calls


def test_every_json_perfgate_writes_is_strict() -> None:
    """Python writes NaN and Infinity, which are not JSON, unless told not to (R3)."""
    loose = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "perfgate").rglob("*.py"))
        for line, strict in _json_writes(path)
        if not strict
    ]
    assert loose == [], "json.dumps without allow_nan=False: " + ", ".join(loose)
