"""Reading benchmark output: the metric at a dotted path, its sibling statistics, launch echo."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.config import Direction, Metric
from perfgate.run.bundle import (
    MetricStats,
    OutputError,
    dig,
    launch_mismatches,
    load_json,
    metric_stats,
    metric_values,
)

BUNDLE = {
    "run": {"task": "cartpole", "num_envs": 1024, "config": {"physics_backend": "numpy"}},
    "runtime": {"total_fps": {"mean": 5000.0, "std": 50.0, "min": 4800.0, "peak": 5200.0}},
    "samples": [{"fps": 1.0}, {"fps": 2.0}],
}


def test_mean_path_brings_its_sibling_std_min_and_peak() -> None:
    assert metric_stats(BUNDLE, "runtime.total_fps.mean") == MetricStats(
        value=5000.0, std=50.0, min=4800.0, max=5200.0
    )


def test_sibling_max_is_used_when_there_is_no_peak() -> None:
    data = {"r": {"mean": 3, "max": 4}}
    assert metric_stats(data, "r.mean") == MetricStats(value=3.0, max=4.0)


def test_a_non_mean_path_has_no_spread() -> None:
    assert metric_stats(BUNDLE, "runtime.total_fps.peak") == MetricStats(value=5200.0)


def test_list_indexes_work_in_dotted_paths() -> None:
    assert dig(BUNDLE, "samples.1.fps") == 2.0
    assert dig(BUNDLE, "samples.2.fps") is None


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"runtime": {"total_fps": {"mean": "fast"}}},
        {"runtime": {"total_fps": {"mean": True}}},
        {"runtime": {"total_fps": {"mean": float("nan")}}},
        {"runtime": {"total_fps": {"mean": float("inf")}}},
        {"runtime": {"total_fps": 7}},
    ],
)
def test_missing_or_non_numeric_metric_reads_as_none(data: object) -> None:
    assert metric_stats(data, "runtime.total_fps.mean").value is None


def test_non_positive_metric_is_read_as_is() -> None:
    assert metric_stats({"a": {"mean": 0}}, "a.mean").value == 0.0
    assert metric_stats({"a": {"mean": -1.5}}, "a.mean").value == -1.5


def test_launch_mismatches_name_each_differing_or_missing_echo() -> None:
    problems = launch_mismatches(
        BUNDLE,
        {
            "run.task": "cartpole",
            "run.num_envs": 2048,
            "run.config.physics_backend": "numpy",
            "run.seed": 42,
        },
    )
    assert problems == ["run.num_envs=1024 (requested 2048)", "run.seed missing (requested 42)"]


def test_launch_mismatches_empty_when_everything_echoes() -> None:
    assert launch_mismatches(BUNDLE, {"run.task": "cartpole", "run.num_envs": 1024}) == []


def test_load_json_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="was not written"):
        load_json(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(OutputError, match=r"broken\.json is not valid JSON"):
        load_json(broken)
    with pytest.raises(OutputError, match="cannot be read"):
        load_json(tmp_path)


def test_further_metrics_are_read_by_name_and_a_sum_needs_every_part() -> None:
    bundle = {
        "runtime": {"startup_time_s": {"app_launch": 2.5, "env_creation": 4.0, "first_step": 0.5,
                                       "python_imports": None, "task_config": 0.2}},
        "resources": {"gpu_mem_gb": {"peak": float("nan")}},
    }  # fmt: skip
    startup = ("app_launch", "env_creation", "first_step")
    metrics = (
        Metric(name="startup_s", sum=tuple(f"runtime.startup_time_s.{p}" for p in startup),
               direction=Direction.LOWER),
        Metric(name="imports_s", sum=("runtime.startup_time_s.python_imports",
                                      "runtime.startup_time_s.task_config"),
               direction=Direction.LOWER),
        Metric(name="gpu_mem_gb", path="resources.gpu_mem_gb.peak", direction=Direction.LOWER),
        Metric(name="first_step", path="runtime.startup_time_s.first_step"),
    )  # fmt: skip
    # A part that is null, or a figure that is not finite, leaves its metric out.
    assert metric_values(bundle, metrics) == {"startup_s": 7.0, "first_step": 0.5}
