"""Adapters read a tool's output as named benchmarks: units, direction, rounds, failures.

Inputs are built inline in each tool's own shape (as the real tools, run in
tests/integration/run/test_adapters_real.py, write them) for the cases a healthy run does
not show: errors, missing fields, NaN, a change of unit. criterion's files are recorded
real output (tests/fixtures/criterion/README.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from perfgate.config import PRIMARY, Direction, Metric, OutputFormat
from perfgate.run.drivers import adapters
from perfgate.run.drivers.adapters import figure
from perfgate.run.drivers.adapters.base import Suite, SuiteError
from perfgate.run.drivers.adapters.units import convert, spelled
from tests.paths import FIXTURES


def write(tmp_path: Path, data: Any, name: str = "out.json") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def read(tmp_path: Path, output_format: OutputFormat, data: Any, name: str = "out.json") -> Suite:
    return adapters.read(output_format, write(tmp_path, data, name))


def metric(name: str, unit: str = "s", direction: Direction = Direction.LOWER) -> Metric:
    return Metric(path=name, unit=unit, direction=direction)


def by_name(suite: Suite) -> dict[str, adapters.Benchmark]:
    return {benchmark.name: benchmark for benchmark in suite}


def test_every_format_has_an_adapter() -> None:
    assert set(adapters.ADAPTERS) == set(OutputFormat) - {OutputFormat.JSON}


def test_units_are_spelled_one_way_and_times_convert() -> None:
    assert [spelled(u) for u in ("second", "µs", "nanoseconds", "byte", "ops/s")] == [
        "s",
        "us",
        "ns",
        "bytes",
        "ops/s",
    ]
    assert convert(1500.0, "ns", "us") == pytest.approx(1.5)
    assert convert(2.0, "s", "ms") == pytest.approx(2000.0)
    assert convert(3.0, "items", "items") == 3.0
    assert convert(3.0, "bytes", "s") is None


# -- pytest-benchmark -------------------------------------------------------------------


def pytest_report(*benchmarks: dict[str, Any]) -> dict[str, Any]:
    return {
        "machine_info": {},
        "commit_info": {},
        "benchmarks": list(benchmarks),
        "datetime": "2026-01-01T00:00:00",
        "version": "5.3.1",
    }


def pytest_entry(name: str, data: list[Any] | None = None, **stats: Any) -> dict[str, Any]:
    stats = {"min": 1e-6, "max": 3e-6, "mean": 2e-6, "median": 2e-6, "rounds": 3, **stats}
    if data is not None:
        stats["data"] = data
    return {"group": None, "name": name, "fullname": f"tests/test_x.py::{name}", "stats": stats}


def test_pytest_benchmark_rounds_are_the_samples_in_seconds(tmp_path: Path) -> None:
    suite = read(
        tmp_path,
        OutputFormat.PYTEST_BENCHMARK,
        pytest_report(pytest_entry("test_sort", [1e-6, 3e-6, 2e-6])),
    )
    stats = figure(suite, metric("test_sort", "us"), tmp_path / "out.json")
    assert (stats.value, stats.min, stats.max) == pytest.approx((2.0, 1.0, 3.0))
    assert stats.std == pytest.approx(1.0)


def test_pytest_benchmark_without_rounds_gives_its_median(tmp_path: Path) -> None:
    suite = read(tmp_path, OutputFormat.PYTEST_BENCHMARK, pytest_report(pytest_entry("t")))
    assert figure(suite, metric("t"), tmp_path).value == pytest.approx(2e-6)


def test_pytest_benchmark_tests_sharing_a_name_are_told_apart_by_their_full_name(
    tmp_path: Path,
) -> None:
    other = {**pytest_entry("t"), "fullname": "tests/test_y.py::t"}
    suite = read(tmp_path, OutputFormat.PYTEST_BENCHMARK, pytest_report(pytest_entry("t"), other))
    assert [b.name for b in suite] == ["tests/test_x.py::t", "tests/test_y.py::t"]


def test_a_non_finite_round_is_an_error_naming_the_field(tmp_path: Path) -> None:
    suite = read(
        tmp_path, OutputFormat.PYTEST_BENCHMARK, pytest_report(pytest_entry("t", [1e-6, "NaN"]))
    )
    with pytest.raises(
        SuiteError, match=r"benchmark 't' failed: benchmarks\[0\]\.stats\.data\[1\]"
    ):
        figure(suite, metric("t"), tmp_path / "out.json")
    nan = write(
        tmp_path, '{"machine_info": {}, "benchmarks": [{"name": "t", "stats": {"median": NaN}}]}'
    )
    with pytest.raises(SuiteError, match=r"stats\.median is nan, not a finite number"):
        figure(adapters.read(OutputFormat.PYTEST_BENCHMARK, nan), metric("t"), nan)


def test_a_benchmark_not_in_the_file_lists_the_names_it_has(tmp_path: Path) -> None:
    """pytest-benchmark leaves a test whose benchmark raised out of its report."""
    suite = read(
        tmp_path,
        OutputFormat.PYTEST_BENCHMARK,
        pytest_report(pytest_entry("test_a"), pytest_entry("test_b")),
    )
    path = tmp_path / "out.json"
    with pytest.raises(SuiteError) as raised:
        figure(suite, metric("test_boom"), path)
    assert str(raised.value) == (
        f"{path}: no benchmark named 'test_boom'; the file has 'test_a', 'test_b': set the "
        "metric's benchmark to one of them"
    )


# -- file-level problems ----------------------------------------------------------------


def test_a_truncated_file_names_the_file_and_the_likely_cause(tmp_path: Path) -> None:
    text = json.dumps(pytest_report(pytest_entry("t")))[:-20]
    with pytest.raises(
        SuiteError,
        match=r"out\.json is not pytest-benchmark output: not valid "
        r"JSON.*a truncated file means the benchmark was stopped",
    ):
        read(tmp_path, OutputFormat.PYTEST_BENCHMARK, text)


def test_a_file_of_another_tool_says_which_format_it_looks_like(tmp_path: Path) -> None:
    google = {"context": {"library_version": "v1.9.5"}, "benchmarks": []}
    with pytest.raises(SuiteError) as raised:
        read(tmp_path, OutputFormat.PYPERF, google)
    assert str(raised.value) == (
        f"{tmp_path / 'out.json'} is not pyperf output (no 'version' with a 'benchmarks' "
        "list); check command.format and command.output; it looks like google-benchmark "
        "output: set command.format to match"
    )


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="was not written; check that hyperfine writes"):
        adapters.read(OutputFormat.HYPERFINE, tmp_path / "nothing.json")


# -- Google Benchmark -------------------------------------------------------------------


def google_row(name: str, kind: str = "iteration", **fields: Any) -> dict[str, Any]:
    row = {
        "name": name,
        "run_name": name,
        "run_type": kind,
        "repetitions": 3,
        "threads": 1,
        "iterations": 1000,
        "real_time": 20.0,
        "cpu_time": 19.0,
        "time_unit": "us",
    }
    if kind == "aggregate":
        row["name"] = f"{name}_{fields['aggregate_name']}"
    return {**row, **fields}


def google(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"context": {"library_version": "v1.9.5"}, "benchmarks": list(rows)}


def test_google_benchmark_repetitions_are_samples_and_aggregates_are_not(tmp_path: Path) -> None:
    rows = [
        google_row("BM_Sort/8", repetition_index=i, real_time=t)
        for i, t in enumerate((19.0, 21.0, 20.0))
    ]
    aggregates = [
        google_row("BM_Sort/8", "aggregate", aggregate_name=a, real_time=v)
        for a, v in (("mean", 20.0), ("median", 20.0), ("stddev", 1.0), ("cv", 0.05))
    ]
    (sort,) = read(tmp_path, OutputFormat.GOOGLE_BENCHMARK, google(*rows, *aggregates))
    assert (sort.name, sort.unit, sort.samples) == ("BM_Sort/8", "us", (19.0, 21.0, 20.0))
    assert figure((sort,), metric("BM_Sort/8", "ms"), tmp_path).value == pytest.approx(0.02)


def test_google_benchmark_aggregates_only_give_the_median(tmp_path: Path) -> None:
    rows = [
        google_row("BM_A", "aggregate", aggregate_name=a, real_time=v)
        for a, v in (("mean", 21.0), ("median", 20.0), ("stddev", 1.0))
    ]
    (only,) = read(tmp_path, OutputFormat.GOOGLE_BENCHMARK, google(*rows))
    assert only.samples == (20.0,)


def test_google_benchmark_errors_are_never_a_zero(tmp_path: Path) -> None:
    failed = google_row("BM_Gpu", error_occurred=True, error_message="no device", real_time=0.0)
    suite = read(tmp_path, OutputFormat.GOOGLE_BENCHMARK, google(failed))
    with pytest.raises(
        SuiteError,
        match=r"benchmark 'BM_Gpu' failed: benchmarks\[0\] reports "
        "an error: no device",
    ):
        figure(suite, metric("BM_Gpu"), tmp_path)


def test_an_unknown_time_unit_is_an_error_not_a_guess(tmp_path: Path) -> None:
    suite = read(
        tmp_path, OutputFormat.GOOGLE_BENCHMARK, google(google_row("BM_A", time_unit="ks"))
    )
    with pytest.raises(SuiteError, match="time_unit 'ks' is not one Google Benchmark writes"):
        figure(suite, metric("BM_A"), tmp_path)


# -- hyperfine --------------------------------------------------------------------------


def test_hyperfine_1_times_are_samples_and_a_failed_run_fails_the_command(tmp_path: Path) -> None:
    export = {
        "results": [
            {
                "command": "sleep 0.01",
                "mean": 0.011,
                "times": [0.010, 0.012, 0.011],
                "exit_codes": [0, 0, 0],
            },
            {"command": "false", "mean": 0.001, "times": [0.001, 0.001], "exit_codes": [1, 1]},
        ]
    }
    suite = by_name(read(tmp_path, OutputFormat.HYPERFINE, export))
    assert suite["sleep 0.01"].samples == (0.010, 0.012, 0.011)
    assert suite["false"].error == "results[1].exit_codes: 2 run(s) exited 1"


def test_hyperfine_2_measurements_carry_their_unit_and_exit_code(tmp_path: Path) -> None:
    def run(value: float, code: int = 0) -> dict[str, Any]:
        return {"time_wall_clock": {"value": value, "unit": "second"}, "exit_code": code}

    export = {
        "schema_version": 2,
        "primary_metric": "time_wall_clock",
        "results": [
            {"command": "sleep 0.01", "name": "nap", "measurements": [run(0.01), run(0.02)]},
            {"command": "false", "measurements": [run(0.001), run(0.001, 1)]},
        ],
    }
    suite = by_name(read(tmp_path, OutputFormat.HYPERFINE, export))
    assert (suite["nap"].unit, suite["nap"].samples) == ("s", (0.01, 0.02))
    assert suite["false"].error == "results[1].measurements[1].exit_code: the run exited 1"


# -- pyperf -----------------------------------------------------------------------------


def pyperf_suite(*benchmarks: dict[str, Any], unit: str = "second") -> dict[str, Any]:
    return {
        "version": "1.0",
        "metadata": {"unit": unit, "loops": 8},
        "benchmarks": list(benchmarks),
    }


def test_pyperf_values_are_samples_and_warmups_and_calibration_are_not(tmp_path: Path) -> None:
    calibration = {"metadata": {}, "warmups": [[1, 9.0], [2, 8.0]]}
    runs = [
        calibration,
        {"warmups": [[8, 7.0]], "values": [1.0, 2.0]},
        {"warmups": [[8, 7.0]], "values": [3.0]},
    ]
    (sort,) = read(
        tmp_path, OutputFormat.PYPERF, pyperf_suite({"metadata": {"name": "sort"}, "runs": runs})
    )
    assert (sort.name, sort.unit, sort.samples) == ("sort", "s", (1.0, 2.0, 3.0))


def test_pyperf_memory_in_bytes_is_no_time(tmp_path: Path) -> None:
    """A change of unit (pyperf's --track-memory) is an error naming both units."""
    runs = [{"values": [1000.0, 1200.0]}]
    suite = read(
        tmp_path,
        OutputFormat.PYPERF,
        pyperf_suite({"metadata": {"name": "sort"}, "runs": runs}, unit="byte"),
    )
    with pytest.raises(
        SuiteError,
        match="benchmark 'sort' reports 'bytes', the metric 'primary' "
        "is in 's'; set its unit to 'bytes'",
    ):
        figure(suite, metric("sort"), tmp_path)
    assert figure(suite, metric("sort", "bytes"), tmp_path).value == 1100.0


def test_pyperf_unit_it_does_not_write_is_an_error(tmp_path: Path) -> None:
    suite = read(
        tmp_path,
        OutputFormat.PYPERF,
        pyperf_suite({"metadata": {"name": "x", "unit": "furlong"}, "runs": []}),
    )
    assert by_name(suite)["x"].error == (
        "benchmarks[0].metadata.unit 'furlong' is not one pyperf writes (second, byte, integer)"
    )


# -- asv --------------------------------------------------------------------------------

COLUMNS = [
    "result",
    "params",
    "version",
    "started_at",
    "duration",
    "stats_ci_99_a",
    "stats_ci_99_b",
    "stats_q_25",
    "stats_q_75",
    "stats_number",
    "stats_repeat",
    "samples",
    "profile",
]


def asv_results(results: dict[str, list[Any]], version: int = 2) -> dict[str, Any]:
    return {
        "commit_hash": "ab" * 20,
        "env_name": "existing-py",
        "params": {"machine": "box"},
        "result_columns": COLUMNS,
        "results": results,
        "version": version,
    }


def test_asv_parameter_combinations_are_benchmarks_of_their_own(tmp_path: Path) -> None:
    results = {
        "bench.Suite.time_sort": [
            [3e-6, None],
            [["10", "100"], ["'a'"]],
            "v",
            0,
            0.4,
            [-math.inf, -math.inf],
            [math.inf, math.inf],
            [3e-6, None],
            [3e-6, None],
            [1, 1],
            [1, 1],
            [[3e-6, 4e-6], None],
        ],
        "bench.mem_list": [[8056], [], "v", 0, 0.2],
        "bench.time_broken": [None, [], "v", 0, 0.2],
    }
    text = json.dumps(asv_results(results))  # asv writes Infinity, as Python's json does
    path = write(tmp_path, text, "results/box/abcd-existing-py.json")
    suite = by_name(adapters.read(OutputFormat.ASV, path))
    assert list(suite) == [
        "bench.Suite.time_sort(10, 'a')",
        "bench.Suite.time_sort(100, 'a')",
        "bench.mem_list",
        "bench.time_broken",
    ]
    assert suite["bench.Suite.time_sort(10, 'a')"].samples == (3e-6, 4e-6)
    assert "result[1] is None: the benchmark failed" in str(
        suite["bench.Suite.time_sort(100, 'a')"].error
    )
    assert (suite["bench.mem_list"].unit, suite["bench.mem_list"].summary) == ("bytes", 8056.0)
    assert suite["bench.time_broken"].error == (
        "results['bench.time_broken'].result is null: the benchmark failed"
    )


def test_asv_units_come_from_benchmarks_json_beside_the_machine(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"bench.track_items": {"unit": "items", "type": "track"}, "version": 2},
        "results/benchmarks.json",
    )
    path = write(
        tmp_path,
        asv_results({"bench.track_items": [[42], [], "v", 0, 0.2]}),
        "results/box/abcd-existing-py.json",
    )
    (track,) = adapters.read(OutputFormat.ASV, path)
    assert (track.unit, track.summary) == ("items", 42.0)


def test_asv_machine_file_or_old_results_are_named_with_the_fix(tmp_path: Path) -> None:
    machine = write(tmp_path, {"machine": "box", "version": 1}, "machine.json")
    with pytest.raises(SuiteError, match="asv's machine file, not a results file"):
        adapters.read(OutputFormat.ASV, machine)
    with pytest.raises(SuiteError, match=r"results format version 1 is not 2; run asv 0\.5"):
        read(tmp_path, OutputFormat.ASV, asv_results({}, version=1))


# -- criterion --------------------------------------------------------------------------

RECORDED = FIXTURES / "criterion" / "sort_100" / "new"


@pytest.mark.parametrize("file", ["estimates.json", "sample.json", "benchmark.json"])
def test_criterion_recorded_samples_are_per_iteration_times(file: str) -> None:
    (sort,) = adapters.read(OutputFormat.CRITERION, RECORDED / file)
    sample = json.loads((RECORDED / "sample.json").read_text())
    assert (sort.name, sort.unit, sort.direction) == ("sort 100", "ns", Direction.LOWER)
    assert sort.samples == tuple(
        t / n for t, n in zip(sample["times"], sample["iters"], strict=True)
    )
    assert 1 < figure((sort,), metric("sort 100", "ns"), RECORDED).value < 10_000


def test_criterion_estimates_alone_give_the_median(tmp_path: Path) -> None:
    estimates = json.loads((RECORDED / "estimates.json").read_text())
    path = write(tmp_path, estimates, "sort/new/estimates.json")
    (sort,) = adapters.read(OutputFormat.CRITERION, path)
    assert (sort.name, sort.summary) == ("sort", estimates["median"]["point_estimate"])


def cargo_criterion_message(id_: str, unit: str = "ns", **fields: Any) -> dict[str, Any]:
    """A ``benchmark-complete`` message as cargo-criterion's message_formats/json.rs writes
    it (hand-made: cargo-criterion is not packaged where these tests run)."""
    estimate = {"estimate": 70.0, "lower_bound": 65.0, "upper_bound": 80.0, "unit": unit}
    return {
        "reason": "benchmark-complete",
        "id": id_,
        "report_directory": f"reports/{id_}",
        "iteration_count": [100, 200],
        "measured_values": [7000.0, 15000.0],
        "unit": unit,
        "throughput": [],
        "typical": estimate,
        "mean": estimate,
        "median": estimate,
        "median_abs_dev": estimate,
        "slope": estimate,
        "change": None,
        **fields,
    }


def test_cargo_criterion_messages_are_one_benchmark_each(tmp_path: Path) -> None:
    lines = [
        cargo_criterion_message("sort/100"),
        cargo_criterion_message("sort/1000", unit="us"),
        {
            "reason": "group-complete",
            "group_name": "sort",
            "benchmarks": ["sort/100"],
            "report_directory": "target/criterion/reports/sort",
        },
    ]
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n", "messages.jsonl")
    suite = by_name(adapters.read(OutputFormat.CRITERION, path))
    assert suite["sort/100"].samples == (70.0, 75.0)
    assert suite["sort/1000"].unit == "us"
    truncated = write(tmp_path, path.read_text()[:-30], "cut.jsonl")
    with pytest.raises(SuiteError, match="line 3 is not cargo-criterion output"):
        adapters.read(OutputFormat.CRITERION, truncated)


def test_a_criterion_measurement_that_is_no_time_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(cargo_criterion_message("alloc", unit="B")), "m.jsonl")
    with pytest.raises(SuiteError, match="unit 'B' is not a time"):
        figure(adapters.read(OutputFormat.CRITERION, path), metric("alloc"), path)


# -- github-action-benchmark ------------------------------------------------------------


def test_custom_lists_take_their_direction_from_the_format_and_convert_times(
    tmp_path: Path,
) -> None:
    entries = [
        {"name": "parse", "unit": "ms", "value": 12.5, "range": "± 0.3", "extra": "x"},
        {"name": "rate", "unit": "ops/s", "value": 900},
    ]
    smaller = read(tmp_path, OutputFormat.CUSTOM_SMALLER, entries)
    assert figure(smaller, metric("parse", "s"), tmp_path).value == pytest.approx(0.0125)
    bigger = read(tmp_path, OutputFormat.CUSTOM_BIGGER, entries)
    rate = Metric(path="rate", unit="ops/s", direction=Direction.HIGHER, name=PRIMARY)
    assert figure(bigger, rate, tmp_path).value == 900.0
    with pytest.raises(
        SuiteError,
        match="benchmark 'rate' is better higher, the metric "
        "'primary' says lower; set its direction to higher",
    ):
        figure(bigger, metric("rate", "ops/s"), tmp_path)


def test_custom_entries_without_a_number_or_a_unit_fail_by_name(tmp_path: Path) -> None:
    entries = [{"name": "a", "unit": "ms", "value": "fast"}, {"name": "b", "value": 1}]
    suite = by_name(read(tmp_path, OutputFormat.CUSTOM_SMALLER, entries))
    assert suite["a"].error == "[0].value is 'fast', not a finite number"
    assert suite["b"].error == "[1].unit is missing or empty"
    with pytest.raises(SuiteError, match="2 benchmarks are named 'a'"):
        figure(
            read(tmp_path, OutputFormat.CUSTOM_SMALLER, entries + entries[:1]),
            metric("a", "ms"),
            tmp_path,
        )
