"""A ``command`` bucket's ``format``: a tool's output, each metric one benchmark by name."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from perfgate.config import Direction, Metric, OutputFormat, load_config
from perfgate.errors import ConfigError
from perfgate.run.drivers import get_driver
from perfgate.run.launch import bucket_hashes


def config(
    tmp_path: Path, metric: str, output_format: str = "pytest-benchmark", more: str = ""
) -> Path:
    """A one-bucket command config reading ``output_format`` with ``metric`` (flow YAML)."""
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        dedent(f"""\
            version: 1
            defaults:
              driver: command
              metric: {metric}
            {more}
            buckets:
              - task: sorting
                backends: [{{physics: cpu}}]
                command:
                  argv: [pytest, --benchmark-json, "{{output_dir}}/bench.json"]
                  output: "{{output_dir}}/bench.json"
                  format: {output_format}
        """),
        encoding="utf-8",
    )
    return path


def test_a_timing_tool_defaults_to_lower_is_better_in_seconds(tmp_path: Path) -> None:
    (bucket,) = load_config(config(tmp_path, "{benchmark: 'test_sort[100]'}")).buckets
    assert bucket.command is not None and bucket.command.format is OutputFormat.PYTEST_BENCHMARK
    assert bucket.metric == Metric(path="test_sort[100]", direction=Direction.LOWER, unit="s")


def test_further_metrics_name_their_own_benchmarks_and_may_take_another_unit(
    tmp_path: Path,
) -> None:
    more = "  metrics: [{name: build, benchmark: BM_Build/8, unit: ms, required: false}]"
    path = config(tmp_path, "{benchmark: BM_Sort/8}", "google-benchmark", more)
    (bucket,) = load_config(path).buckets
    (build,) = bucket.metrics
    assert (build.path, build.direction, build.unit, build.required) == (
        "BM_Build/8",
        Direction.LOWER,
        "ms",
        False,
    )


def test_a_bigger_is_better_list_is_higher_and_names_its_unit(tmp_path: Path) -> None:
    path = config(tmp_path, "{benchmark: throughput, unit: ops/s}", "customBiggerIsBetter")
    (bucket,) = load_config(path).buckets
    assert (bucket.metric.direction, bucket.metric.unit) == (Direction.HIGHER, "ops/s")


def test_the_format_and_the_units_are_part_of_the_experiment(tmp_path: Path) -> None:
    """A bucket reading its own JSON keeps its hashes; a tool format, or a metric converted to
    another unit, gets windows of its own."""
    seconds = load_config(config(tmp_path, "{benchmark: test_sort}")).buckets[0]
    millis = load_config(config(tmp_path, "{benchmark: test_sort, unit: ms}")).buckets[0]
    inputs = get_driver("command").launch_inputs(seconds)
    assert (inputs["format"], inputs["units"]) == ("pytest-benchmark", {"primary": "s"})
    assert bucket_hashes(seconds)[0] != bucket_hashes(millis)[0]
    own = load_config(config(tmp_path, "{path: fps}", "json")).buckets[0]
    assert set(get_driver("command").launch_inputs(own)) == {"argv", "output"}


@pytest.mark.parametrize(
    ("metric", "output_format", "more", "where", "message"),
    [
        ("{path: fps}", "hyperfine", "", r"defaults\.metric\.path",
         "format hyperfine selects the primary metric by benchmark name; write 'benchmark: "),
        ("{unit: s}", "pyperf", "", r"defaults\.metric",
         "name the one the primary metric reads with 'benchmark: NAME'"),
        ("{benchmark: a, direction: higher}", "asv", "", r"defaults\.metric\.direction",
         "asv reports figures where lower is better; remove the primary metric's direction"),
        ("{benchmark: a}", "customSmallerIsBetter", "", r"defaults\.metric",
         "each entry of a customSmallerIsBetter file names its own unit"),
        ("{benchmark: a}", "criterion", "  metrics: [{name: b, path: x.y, direction: lower}]",
         r"defaults\.metrics\[0\]\.path", "selects metric 'b' by benchmark name"),
        ("{benchmark: a}", "criterion", "  metrics: [{name: b, benchmark: a}]",
         r"defaults\.metrics\[0\]", "reads 'a', which metric 'primary' reads already"),
        ("{benchmark: a, path: fps}", "json", "", r"defaults\.metric\.benchmark",
         "names a benchmark, which only a tool's output has; set command.format"),
        ("{benchmark: a}", "gbench", "", r"format", "'gbench' is not allowed"),
    ],
)  # fmt: skip
def test_a_metric_a_format_cannot_read_is_refused_naming_its_key(
    tmp_path: Path, metric: str, output_format: str, more: str, where: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"{where}.*{message}"):
        load_config(config(tmp_path, metric, output_format, more))
