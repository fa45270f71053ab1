"""Untrusted JSON within limits, strict JSON out (R3, R14), and the compiled schemas in front
of jsonschema."""

from __future__ import annotations

import ast
import contextlib
import datetime
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import ConfigError
from perfgate.result import (
    AdmissionStatus,
    GpuReading,
    MachineState,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    SampleAdmission,
    Sampling,
    SamplingStop,
    StaleImage,
    validate_result,
)
from perfgate.util import jsonfile
from perfgate.util.yamlfile import load_yaml
from tests.factories import make_result, with_metric
from tests.paths import CORPUS, ROOT


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
    # Brackets inside strings are no nesting, though the text opens more than the limit.
    assert jsonfile.loads('{"log": "' + "[{" * 100 + '", "v": [[1]]}') == {
        "log": "[{" * 100,
        "v": [[1]],
    }
    with pytest.raises(jsonfile.JsonError, match="nested 65 levels deep"):
        jsonfile.loads('{"log": "' + "[" * 100 + '", "v": ' + "[" * 64 + "]" * 64 + "}")


def test_a_tools_own_output_may_hold_non_finite_numbers_its_reader_then_checks() -> None:
    """asv writes infinite confidence bounds: its adapter reads them as floats, and keeps
    every other limit."""
    data = jsonfile.loads('{"ci": [-Infinity, Infinity], "v": NaN, "big": 1e999}', non_finite=True)
    assert data["ci"] == [-math.inf, math.inf] and math.isnan(data["v"]) and data["big"] == math.inf
    with pytest.raises(jsonfile.JsonError, match="nested 65 levels deep"):
        jsonfile.loads("[" * 65 + "]" * 65, non_finite=True)
    with pytest.raises(jsonfile.JsonError, match="not valid JSON"):
        jsonfile.loads('{"a": 1', non_finite=True)


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


def test_a_write_interrupted_before_its_rename_leaves_the_old_file_and_no_partial_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM between the temporary's write and its rename (R14)."""
    path = jsonfile.write(tmp_path / "r.json", {"value": 1.0})

    def interrupted(self: Path, target: Path) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        jsonfile.write(path, {"value": 2.0})
    assert jsonfile.read(path) == {"value": 1.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


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


# The compiled schema in front of jsonschema (jsonfile.conforms) must never clear what
# jsonschema refuses: every document below is asked of both.

# Values of every JSON type, and what YAML adds (a date, inf, nan, a key that is no string).
OTHERS: list[Any] = [None, True, 0, -1, 1.0, 2.5, 10**30, "", "x", "a/b\n", [], {}]
YAML_ONLY: list[Any] = [datetime.date(2026, 1, 1), math.inf, math.nan, {1: "x"}]


def mutations(data: Any, others: list[Any]) -> Iterator[Any]:
    """``data`` changed in one place each time: every value swapped for each of ``others``,
    every key dropped, an unknown key added to every object."""
    if isinstance(data, dict):
        yield {**data, "unexpected": 1}
        for key, value in data.items():
            yield {k: v for k, v in data.items() if k != key}
            for other in others:
                yield {**data, key: other}
            for changed in mutations(value, others):
                yield {**data, key: changed}
    elif isinstance(data, list):
        for at, value in enumerate(data):
            for changed in mutations(value, others):
                yield [*data[:at], changed, *data[at + 1 :]]


def disagreements(name: str, documents: list[Any]) -> tuple[list[Any], int, int]:
    """Documents the compiled schema clears and jsonschema refuses; how many each way."""
    full = jsonfile.validator(name)
    verdicts = [(doc, jsonfile.conforms(name, doc), full.is_valid(doc)) for doc in documents]
    cleared = [doc for doc, fast, slow in verdicts if fast and not slow]
    return cleared, sum(fast for _, fast, _ in verdicts), sum(not fast for _, fast, _ in verdicts)


def every_part_set() -> dict[str, Any]:
    """An artifact with every optional part: metrics, sampling, admission, pairs, stale image."""
    state = MachineState(gpus=(GpuReading(index=0, sm_mhz=2520, throttle_reasons=()),),
                         driver_version="550.1", load_1m=0.5, cpus=8)  # fmt: skip
    admitted = SampleAdmission(sample_index=0, status=AdmissionStatus.ADMITTED, before=state,
                               after=state)  # fmt: skip
    result = replace(
        with_metric(make_result(samples=(100.0, 101.0)), "startup_s", (10.0, 10.2)),
        sampling=Sampling(confirm="paired", repeats=2, max_repeats=10,
                          stopped=SamplingStop.SETTLED),
        admission=(admitted,),
        paired=PairedRecord(
            status=PairedStatus.MEASURED, base_commit="e" * 40, max_pairs=4,
            samples=(PairedSample(sample_index=0, pair=0, side=PairedSide.BASE, value=99.0,
                                  metrics={"startup_s": 10.1}, admission=admitted),),
            stopped=PairedStop.SETTLED,
        ),
        health=replace(make_result().health, stale_image=StaleImage(
            package="isaacsim", symbol="X", installed="4.5", pinned="5.0")),
    )  # fmt: skip
    data: dict[str, Any] = result.to_json()
    return data


def test_the_compiled_schema_never_clears_an_artifact_jsonschema_refuses() -> None:
    documents = [every_part_set(), *mutations(every_part_set(), OTHERS)]
    for path in sorted((CORPUS / "artifacts").glob("*.json")):
        with contextlib.suppress(jsonfile.JsonError):
            documents.append(jsonfile.read(path))
    cleared, valid, refused = disagreements("result", documents)
    assert cleared == []
    # Both answers occur often, so the check is exercised both ways.
    assert valid > 100 and refused > 100


def test_the_compiled_schema_never_clears_a_config_jsonschema_refuses() -> None:
    configs = [ROOT / "perfgate.yaml", ROOT / "examples" / "isaaclab" / "perfgate.yaml"]
    documents = []
    for path in configs:
        data = load_yaml(path).data
        documents += [data, *mutations(data, OTHERS + YAML_ONLY)]
    for path in sorted((CORPUS / "configs").glob("*.yaml")):
        with contextlib.suppress(ConfigError):
            documents.append(load_yaml(path).data)
    cleared, valid, refused = disagreements("perfgate", documents)
    assert cleared == []
    assert valid > 100 and refused > 100


def test_what_the_compiled_schema_refuses_jsonschema_judges_with_its_own_words() -> None:
    # A pattern's "$" lets a final newline through in Python's re, not in the compiled
    # schema; a string no UTF-8 can hold (a lone surrogate, as the escape \ud800 makes it)
    # it cannot take at all. Both go to jsonschema, which answers as it always did.
    newline = jsonfile.read(CORPUS / "artifacts" / "hardware-slug-newline.json")
    surrogate = make_result().to_json()
    surrogate["bucket"]["id"] = "a\ud800/b"
    for data in (newline, surrogate):
        assert not jsonfile.conforms("result", data)
        assert validate_result(data) == []
