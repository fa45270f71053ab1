"""Every surface names the metric: verdict.json, summary, statuses, JUnit, terminal, hand-off."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema

from perfgate.baselines.reseed import plan_from_report
from perfgate.github.handoff import validate_verdict
from perfgate.github.post import plan_statuses
from perfgate.report.junit import junit_tree
from perfgate.report.summary import summary_from_verdict, summary_markdown
from perfgate.report.terminal import terminal_table
from perfgate.report.verdict import report_json
from perfgate.util import jsonfile
from tests.unit.judge.test_metrics import config, report, result

SLOW_START = (13.0, 13.1, 12.9)


def test_verdict_json_nests_every_metric_with_its_own_verdict_and_test(tmp_path: Path) -> None:
    data = report_json(report(config(tmp_path), result(startup=SLOW_START)))
    jsonschema.validate(data, jsonfile.schema("verdict"))
    assert validate_verdict(data) == []
    row = data["rows"][0]
    # The row: the worst verdict, the primary's figure and test.
    assert (row["verdict"], row["unit"], row["direction"]) == ("BLOCK", "u", "higher")
    assert 100.0 <= row["value"] <= 100.2
    assert [(m["name"], m["verdict"], m["gates"]) for m in row["metrics"]] == [
        ("primary", "PASS", True),
        ("startup_s", "BLOCK", True),
        ("gpu_mem_gb", "PASS", False),
    ]
    startup = row["metrics"][1]
    assert (startup["value"], startup["unit"], startup["direction"]) == (13.0, "s", "lower")
    assert startup["reasons"] == ["REGRESSION"]
    assert startup["baseline"]["samples"] == 20 and 9.9 < startup["baseline"]["median"] < 10.1
    assert startup["statistics"]["run_samples"] == 3
    assert 29.0 < startup["statistics"]["effect_pct"] < 31.0


def test_the_summary_gives_a_non_passing_metric_a_line_of_its_own(tmp_path: Path) -> None:
    text = summary_markdown(report(config(tmp_path), result(startup=SLOW_START)))
    lines = text.splitlines()
    bucket = next(line for line in lines if line.startswith("| cartpole/numpy | "))
    startup = next(line for line in lines if line.startswith("| cartpole/numpy · startup_s | "))
    assert "🚫 regression" in bucket and "startup_s: regression +30." in bucket
    assert "| 🚫 regression | 13 | s | 10 | +30.0 % (" in startup and "| 3 / 20 |" in startup
    assert "| cartpole/numpy · startup_s | BLOCK | REGRESSION |" in text  # technical details
    assert "gpu_mem_gb" not in text  # a passing metric adds no line
    assert "the bucket takes the worst verdict of those that gate" in text


def test_a_report_only_metric_line_says_so(tmp_path: Path) -> None:
    gate = report(config(tmp_path), result(memory=(9.0, 9.1, 8.9)))
    line = next(
        line
        for line in summary_markdown(gate).splitlines()
        if line.startswith("| cartpole/numpy · gpu_mem_gb | ")
    )
    assert "🚫 regression" in line and "(report only) regression +50." in line
    lines = terminal_table(gate, width=100).splitlines()
    metric = next(i for i, line in enumerate(lines) if line.startswith("  · gpu_mem_gb "))
    assert lines[metric - 1].startswith("cartpole/numpy ")  # under its bucket's line
    assert "BLOCK (report only)" in lines[metric]


def test_statuses_name_every_blocking_metric(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    startup = plan_statuses(report_json(report(cfg, result(startup=SLOW_START))), None)[1]
    assert startup.context == "perfgate (cartpole/numpy)" and startup.state == "failure"
    assert startup.description.startswith("BLOCK: startup_s +30.")
    assert startup.description.endswith("% (BLOCK)")  # blocking mode: no "(advisory)"
    both = report(cfg, result(fps=(80.0, 80.1, 79.9), startup=SLOW_START))
    status = plan_statuses(report_json(both), None)[1]
    assert status.description.startswith("BLOCK: runtime.total_fps.mean \u221220.0 % (BLOCK), ")
    assert "startup_s +30." in status.description
    # The primary alone: the status reads as it did before metrics.
    fps = plan_statuses(report_json(report(cfg, result(fps=(80.0, 80.1, 79.9)))), None)[1]
    assert fps.description.startswith("BLOCK \u221220.0 % (")


def test_junit_fails_with_the_blocking_metrics_reason(tmp_path: Path) -> None:
    tree = junit_tree(report(config(tmp_path), result(startup=SLOW_START)))
    failure = tree.getroot().find("./testsuite/testcase/failure")
    assert isinstance(failure, ET.Element)
    assert failure.get("message", "").startswith("startup_s: regression +30.")


def test_the_terminal_table_has_a_line_per_non_passing_metric(tmp_path: Path) -> None:
    table = terminal_table(report(config(tmp_path), result(startup=SLOW_START)), width=100)
    assert any(line.startswith("  · startup_s ") and "BLOCK" in line for line in table.splitlines())
    assert "cartpole/numpy · startup_s: BLOCK +30." in table  # its reasons in full, below
    assert "gpu_mem_gb" not in table
    assert "regressed: cartpole/numpy startup_s +30." in table


def test_the_hand_off_rejects_a_row_that_hides_a_blocking_metric(tmp_path: Path) -> None:
    data = report_json(report(config(tmp_path), result(startup=SLOW_START)))
    forged = copy.deepcopy(data)
    forged["rows"][0]["verdict"] = forged["overall_verdict"] = "PASS"
    forged["status_state"] = "success"
    assert validate_verdict(forged) == [
        "rows: cartpole/numpy is PASS but its metric startup_s is BLOCK"
    ]
    # A report-only metric may be worse than its row.
    calm = report_json(report(config(tmp_path), result(memory=(9.0, 9.1, 8.9))))
    assert calm["rows"][0]["verdict"] == "PASS" and validate_verdict(calm) == []


def test_an_older_verdict_json_without_metrics_still_renders(tmp_path: Path) -> None:
    data = report_json(report(config(tmp_path), result(startup=SLOW_START)))
    for row in data["rows"]:
        del row["metrics"]
    assert validate_verdict(data) == []
    text = summary_from_verdict(data)
    assert "| cartpole/numpy | " in text and "· startup_s" not in text


def test_a_reseed_plan_fills_the_emptiest_window(tmp_path: Path) -> None:
    data = report_json(report(config(tmp_path), result(), startup=[[10.0, 10.1]]))
    data["commit"], data["target_branch"] = "c" * 40, "main"
    assert data["underfilled"] == ["cartpole/numpy"]
    plan = plan_from_report(data, 5, "verdict.json")
    # The primary's window holds 20 samples, the new metric's 2: three more fill it.
    assert [(b.id, b.have, b.samples) for b in plan.buckets] == [("cartpole/numpy", 2, 3)]
