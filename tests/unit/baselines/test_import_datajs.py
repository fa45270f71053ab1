"""github-action-benchmark's data.js read as runs: the file the action's ``storeDataJs``
writes (its prefix, then the JSON indented), each tool's figures in its unit and direction,
and every file that is not the action's refused naming the file, the field and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfgate.baselines.imports.datajs import read_data_js
from perfgate.baselines.imports.history import HistoryError
from perfgate.config import Direction, OutputFormat

SHA = "be395fa45085f9d6d7723f39ef4ea4a1e7d2c71b"


def entry(tool: str, benches: list[dict[str, Any]], *, date: int = 1573968123092) -> dict[str, Any]:
    """A run as the action keeps it (``extract.ts``'s Benchmark, ``write.ts`` appends it)."""
    user = {"email": "a@example.invalid", "name": "a", "username": "a"}
    return {
        "commit": {"author": user, "committer": user, "distinct": True, "id": SHA,
                   "message": "m", "timestamp": "2019-11-17T14:11:08+09:00",
                   "tree_id": "445685b855eb924cfabb2480b04918aee14352f5",
                   "url": f"https://github.com/o/r/commit/{SHA}"},
        "date": date,
        "tool": tool,
        "benches": benches,
    }  # fmt: skip


def data_js(
    tmp_path: Path, entries: dict[str, Any], *, prefix: str = "window.BENCHMARK_DATA = "
) -> Path:
    path = tmp_path / "data.js"
    data = {"lastUpdate": 1573968123092, "repoUrl": "https://github.com/o/r", "entries": entries}
    path.write_text(prefix + json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_custom_runs_keep_their_value_unit_and_direction_and_a_run_its_time(tmp_path: Path) -> None:
    path = data_js(tmp_path, {"Bench": [
        entry("customSmallerIsBetter", [{"name": "parse", "value": 12.5, "unit": "ms",
                                         "range": "± 0.3", "extra": "50 samples"}]),
        entry("customBiggerIsBetter", [{"name": "qps", "value": 900, "unit": "req/s"}],
              date=1573968123093),
    ]})  # fmt: skip
    history = read_data_js(path)
    smaller, bigger = history.runs
    assert (history.kind, history.machine, history.notes) == ("github-action-benchmark", None, ())
    assert smaller.commit == SHA
    assert smaller.timestamp == "2019-11-17T05:22:03.092000+00:00"
    assert smaller.formats == (OutputFormat.CUSTOM_SMALLER,)
    (parse,) = smaller.suite
    assert (parse.name, parse.unit, parse.direction, parse.summary) == (
        "parse",
        "ms",
        Direction.LOWER,
        12.5,
    )
    assert bigger.formats == (OutputFormat.CUSTOM_BIGGER,)
    assert bigger.suite[0].direction is Direction.HIGHER
    assert smaller.key != bigger.key  # two runs of one commit stay two runs


def test_google_benchmark_repetitions_are_one_benchmarks_samples_per_iteration(
    tmp_path: Path,
) -> None:
    rows = [{"name": "BM_sort", "value": v, "unit": "ns/iter"} for v in (100.0, 110.0, 105.0)]
    history = read_data_js(data_js(tmp_path, {"cpp": [entry("googlecpp", rows)]}))
    (run,) = history.runs
    assert run.formats == (OutputFormat.GOOGLE_BENCHMARK,)
    (sort,) = run.suite
    assert (sort.unit, sort.samples, sort.stats().value) == ("ns", (100.0, 110.0, 105.0), 105.0)


def test_a_tool_no_perfgate_format_reads_is_said_and_its_bad_values_are_the_benchmarks(
    tmp_path: Path,
) -> None:
    history = read_data_js(data_js(tmp_path, {"Python": [entry("pytest", [
        {"name": "bench.py::test_fib_10", "value": 48347.1, "unit": "iter/sec",
         "range": "stddev: 0.00002", "extra": "mean: 0.0000206 sec\nrounds: 28249"},
        {"name": "bench.py::test_fib_20", "value": None, "unit": "iter/sec"},
    ])]}))  # fmt: skip
    (run,) = history.runs
    assert run.formats == ()
    (note,) = history.notes
    assert "entries['Python']: the 'pytest' tool's runs cannot feed any bucket" in note
    assert "operations per second" in note
    assert run.suite[1].error == "benches[1].value is None, not a finite number"


def test_the_actions_data_json_without_the_script_prefix_reads_too(tmp_path: Path) -> None:
    path = data_js(tmp_path, {"B": [entry("customSmallerIsBetter", [
        {"name": "a", "value": 1.0, "unit": "s"}])]}, prefix="")  # fmt: skip
    assert len(read_data_js(path).runs) == 1


def test_a_truncated_data_js_names_the_file_and_says_to_fetch_it_again(tmp_path: Path) -> None:
    path = data_js(tmp_path, {"B": [entry("customSmallerIsBetter", [
        {"name": "a", "value": 1.0, "unit": "s"}])]})  # fmt: skip
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 40], encoding="utf-8")
    with pytest.raises(HistoryError, match=r"data\.js: the data after 'window\.BENCHMARK_DATA =' "
                       r"is not whole JSON .*truncated or was edited; fetch it again"):  # fmt: skip
        read_data_js(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("var x = 1;\n", "is not github-action-benchmark's data.js: it does not start with "
         "'window.BENCHMARK_DATA = '"),
        ('window.BENCHMARK_DATA = {"lastUpdate": 1}', "no 'entries' object of suites"),
        ('{"entries": {"B": {"commit": 1}}}', r"entries\['B'\] is not a list of runs"),
    ],
)  # fmt: skip
def test_a_file_not_from_the_action_is_refused_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "data.js"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HistoryError, match=message):
        read_data_js(path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda e: e["commit"].pop("id"), r"entries\['B'\]\[0\]\.commit\.id is missing"),
        (lambda e: e.pop("tool"), r"entries\['B'\]\[0\]\.tool is missing"),
        (lambda e: e.update(date="yesterday"), r"entries\['B'\]\[0\]\.date is 'yesterday'"),
        (lambda e: e.update(benches={}), r"entries\['B'\]\[0\]\.benches is not a list"),
        (lambda e: e["benches"][0].pop("name"), r"entries\['B'\]\[0\]\.benches\[0\]\.name"),
    ],
)
def test_a_run_missing_what_the_action_always_writes_names_the_field(
    tmp_path: Path, change: Any, field: str
) -> None:
    run = entry("customSmallerIsBetter", [{"name": "a", "value": 1.0, "unit": "s"}])
    change(run)
    with pytest.raises(HistoryError, match=field):
        read_data_js(data_js(tmp_path, {"B": [run]}))
