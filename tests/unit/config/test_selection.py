"""A suite selected by name pattern (``metrics: [{benchmarks: PATTERN}]``): a metric per
benchmark it matches, read from one launch, with the false-alarm rate split over them (R5)."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from perfgate.config import Bucket, Config, Direction, GatePolicy, load_config
from perfgate.errors import ConfigError
from perfgate.judge.bucket_policy import paired_policy_for, policy_for
from perfgate.judge.policies import CalibratedPolicy
from perfgate.run.drivers import get_driver
from perfgate.run.execution import AttemptDirs, Invocation
from perfgate.run.launch import bucket_hashes, launch_identity


def config(tmp_path: Path, metrics: str, output_format: str = "pytest-benchmark") -> Config:
    """A one-bucket command config reading ``output_format``, primary ``test_main`` (a path
    in the program's own JSON)."""
    primary = (
        "{path: fps, direction: higher}" if output_format == "json" else "{benchmark: test_main}"
    )
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        dedent(f"""\
            version: 1
            defaults:
              driver: command
              metric: {primary}
              metrics: {metrics}
            buckets:
              - task: suite
                backends: [{{physics: cpu}}]
                command:
                  argv: [pytest, --benchmark-json, "{{output_dir}}/bench.json"]
                  output: "{{output_dir}}/bench.json"
                  format: {output_format}
        """),
        encoding="utf-8",
    )
    return load_config(path)


def suite_bucket(tmp_path: Path, metrics: str = "[{name: suite, benchmarks: 'test_*'}]") -> Bucket:
    (bucket,) = config(tmp_path, metrics).buckets
    return bucket


def test_a_selection_is_one_declared_entry_with_its_patterns(tmp_path: Path) -> None:
    bucket = suite_bucket(
        tmp_path, "[{name: suite, benchmarks: ['test_parse*', 'test_render*'], unit: ms}]"
    )
    (selection,) = bucket.selections
    assert selection.select == ("test_parse*", "test_render*")
    assert (selection.direction, selection.unit, selection.gates) == (Direction.LOWER, "ms", True)


def test_each_matched_benchmark_becomes_a_metric_named_by_it(tmp_path: Path) -> None:
    bucket = suite_bucket(
        tmp_path,
        "[{name: suite, benchmarks: 'test_*', min_drop_pct: 5}, "
        "{name: render, benchmark: test_render, required: false}]",
    )
    names = ["test_main", "test_b", "bench_other", "test_render", "test_a", "test_b"]
    selected = bucket.selecting(names)
    # The primary's benchmark and a declared metric's stay theirs; the file's order is kept.
    assert [m.name for m in selected.metrics] == ["test_b", "test_a", "render"]
    test_b = selected.metrics[0]
    assert (test_b.path, test_b.family, test_b.min_drop_pct, test_b.select) == (
        "test_b",
        "suite",
        5.0,
        (),
    )
    assert selected.selecting(["test_c"]) is selected  # nothing left to select
    assert bucket.metric_named("test_zzz") is not None and bucket.metric_named("x") is None


def test_a_benchmark_two_selections_match_is_the_first_ones(tmp_path: Path) -> None:
    bucket = suite_bucket(
        tmp_path,
        "[{name: fast, benchmarks: 'test_f*'}, {name: all, benchmarks: '*', gate: false}]",
    )
    selected = bucket.selecting(["test_fast", "test_slow"])
    assert [(m.name, m.family, m.gates) for m in selected.metrics] == [
        ("test_fast", "fast", True),
        ("test_slow", "all", False),
    ]


def test_the_benchmarks_a_run_measured_never_move_the_launch_hash(tmp_path: Path) -> None:
    bucket = suite_bucket(tmp_path)
    inputs = get_driver("command").launch_inputs(bucket)
    assert inputs["units"] == {"primary": "s", "suite": "s"}
    expanded = bucket.selecting(["test_a", "test_b"])
    assert launch_identity(expanded) == launch_identity(bucket)
    assert bucket_hashes(expanded) == bucket_hashes(bucket)


@pytest.mark.parametrize(
    ("metrics", "output_format", "message"),
    [
        ("[{name: s, benchmarks: 'test_*'}]", "json",
         r"metrics\[0\]\.benchmarks.*names benchmarks, which only a tool's output has"),
        ("[{name: s, benchmark: test_a, benchmarks: 'test_*'}]", "pytest-benchmark",
         r"metrics\[0\]\.benchmarks.*keep one: a selection is a metric per benchmark"),
        ("[{name: s, benchmarks: []}]", "pytest-benchmark", r"metrics\[0\]\.benchmarks"),
    ],
)  # fmt: skip
def test_a_selection_a_bucket_cannot_read_is_refused_naming_its_key(
    tmp_path: Path, metrics: str, output_format: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config(tmp_path, metrics, output_format)


# -- the command driver ---------------------------------------------------------------------


def entry(name: str, rounds: list[float]) -> dict[str, object]:
    stats = {"min": min(rounds), "max": max(rounds), "mean": 0.0, "median": 0.0, "data": rounds}
    return {"group": None, "name": name, "fullname": f"t.py::{name}", "stats": stats}


def read(tmp_path: Path, bucket: Bucket, names: list[str]) -> tuple[dict[str, float], str | None]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    report = {"benchmarks": [entry(n, [0.001, 0.002, 0.003]) for n in names], "version": "5"}
    (out / "bench.json").write_text(json.dumps(report), encoding="utf-8")
    dirs = AttemptDirs(number=1, output_dir=out, cache_dir=tmp_path / "cache")
    invocation = Invocation(argv=("true",), cwd=tmp_path, outputs=(str(out / "bench.json"),))
    measurement = get_driver("command").read(bucket, dirs, invocation)
    return dict(measurement.metrics), measurement.error


def test_the_driver_reads_every_benchmark_the_pattern_matches(tmp_path: Path) -> None:
    bucket = suite_bucket(tmp_path, "[{name: suite, benchmarks: 'test_p*', unit: ms}]")
    metrics, error = read(tmp_path, bucket, ["test_main", "test_parse", "test_plot", "test_x"])
    assert error is None
    assert metrics == {"test_parse": pytest.approx(2.0), "test_plot": pytest.approx(2.0)}


def test_a_pattern_matching_no_benchmark_is_an_error_listing_the_names(tmp_path: Path) -> None:
    bucket = suite_bucket(tmp_path, "[{name: suite, benchmarks: 'bench_*'}]")
    _, error = read(tmp_path, bucket, ["test_main", "test_parse"])
    assert error is not None
    assert "metric 'suite' selects benchmarks matching 'bench_*', and none does" in error
    assert "the file has 'test_main', 'test_parse': fix the pattern" in error
    optional = suite_bucket(tmp_path, "[{name: suite, benchmarks: 'bench_*', required: false}]")
    assert read(tmp_path, optional, ["test_main"]) == ({}, None)


# -- the false-alarm rate split over a selection --------------------------------------------


def test_the_rate_is_split_over_every_selected_benchmark_that_gates(tmp_path: Path) -> None:
    gate = GatePolicy()
    bucket = suite_bucket(tmp_path).selecting([f"test_{i}" for i in range(299)])
    rule = policy_for(bucket, gate, "cpu")
    assert isinstance(rule, CalibratedPolicy)
    assert rule.false_block_rate == pytest.approx(gate.false_block_rate / 300)
    paired = paired_policy_for(bucket, gate, "cpu", bucket.metrics[5])
    assert paired.false_block_rate == pytest.approx(gate.false_block_rate / 300)


def test_a_single_metric_bucket_keeps_the_whole_rate(tmp_path: Path) -> None:
    gate = GatePolicy()
    (bucket,) = config(tmp_path, "[]").buckets
    rule = policy_for(bucket.selecting(["test_a", "test_b"]), gate, "cpu")
    assert isinstance(rule, CalibratedPolicy)
    assert rule.false_block_rate == gate.false_block_rate
