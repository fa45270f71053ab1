"""A bucket of a selected suite: every surface stays readable at 300 benchmarks, the worst
metrics listed and the rest counted; verdict.json keeps every one (R5)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from perfgate.config import Config, Direction, load_config
from perfgate.judge.gate import GateReport, build_report
from perfgate.judge.judgement import MetricKey, MetricWindow
from perfgate.judge.verdicts import Verdict
from perfgate.report.row_text import SHOWN_METRICS, noted_metrics
from perfgate.report.summary import summary_markdown
from perfgate.report.terminal import terminal_table
from perfgate.report.verdict import report_json
from perfgate.result import Result
from tests.factories import make_result, windows_of, with_metric

BUCKET = "suite/cpu"
NOISE = [(1.005, 0.992), (1.009, 0.998), (0.987, 1.003), (1.012, 1.001), (0.994, 0.999),
         (1.006, 0.989), (0.997, 1.014), (1.002, 0.991), (0.988, 1.007),
         (1.010, 0.996)]  # fmt: skip
WINDOW = [[a, b] for a, b in NOISE]
BENCHMARKS = [f"test_{i:03d}" for i in range(300)]


def config(tmp_path: Path) -> Config:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        dedent("""\
            version: 1
            gate: {mode: blocking, confirm: repeat}
            defaults:
              driver: command
              metric: {benchmark: main}
              metrics: [{name: suite, benchmarks: "test_*"}]
            buckets:
              - task: suite
                backends: [{physics: cpu}]
                command:
                  argv: [pytest, --benchmark-json, "{output_dir}/bench.json"]
                  output: "{output_dir}/bench.json"
                  format: pytest-benchmark
        """),
        encoding="utf-8",
    )
    return load_config(path)


# A run confirmed by repeats: six samples of each benchmark.
RUN = (1.0, 1.001, 0.999, 1.002, 0.998, 1.0)


def suite_result(slower: dict[str, float]) -> Result:
    """Every benchmark at its level (1 s), those in ``slower`` that much slower."""
    result = make_result(BUCKET, samples=RUN, direction=Direction.LOWER)
    for name in BENCHMARKS:
        level = slower.get(name, 1.0)
        result = with_metric(result, name, [level * x for x in RUN], path=name)
    return result


def report(tmp_path: Path, slower: dict[str, float], unseen: int = 0) -> GateReport:
    """The suite judged; the last ``unseen`` benchmarks have no window yet."""
    cfg = config(tmp_path)
    known = BENCHMARKS[: len(BENCHMARKS) - unseen]
    return build_report(
        config=cfg,
        expected=cfg.buckets,
        results=[suite_result(slower)],
        windows={
            **windows_of({BUCKET: WINDOW}),
            **{MetricKey(BUCKET, name): MetricWindow(runs=WINDOW) for name in known},
        },
    )


def test_every_selected_benchmark_is_judged_and_kept_in_verdict_json(tmp_path: Path) -> None:
    gate = report(tmp_path, {"test_042": 1.3})
    row = report_json(gate)["rows"][0]
    assert len(row["metrics"]) == 301 and row["verdict"] == "BLOCK"
    blocked = [m["name"] for m in row["metrics"] if m["verdict"] == "BLOCK"]
    assert blocked == ["test_042"]
    assert "regressed: suite/cpu test_042 +30." in gate.description


def test_a_passing_suite_is_one_line_and_a_count(tmp_path: Path) -> None:
    gate = report(tmp_path, {})
    assert gate.overall is Verdict.PASS
    lines = terminal_table(gate, width=120).splitlines()
    assert [line.strip() for line in lines if line.startswith("  · ")] == ["· … 300 more"]
    assert "  suite/cpu · …: 300 more: 300 within noise (verdict.json lists each)" in lines
    summary = summary_markdown(gate)
    assert "| suite/cpu · … | | | | | | | | 300 more: 300 within noise (verdict.json" in summary
    assert "test_0" not in summary


def test_the_worst_metrics_are_listed_and_the_rest_counted(tmp_path: Path) -> None:
    # One regression, and eight benchmarks without a window: five lines, the BLOCK first.
    gate = report(tmp_path, {"test_007": 1.3}, unseen=8)
    row = report_json(gate)["rows"][0]
    noted, more = noted_metrics(row)
    assert len(noted) == SHOWN_METRICS
    assert noted[0]["name"] == "test_007"
    assert more == "295 more: 291 within noise, 4 WARN"
    text = terminal_table(gate, width=120)
    listed = [line for line in text.splitlines() if line.startswith("  · test_")]
    assert len(listed) == SHOWN_METRICS and listed[0].startswith("  · test_007 ")
    assert "suite/cpu · …: 295 more: 291 within noise, 4 WARN" in text
    assert "4 more in verdict.json" in text  # the bucket's own reasons, a suite's first few
