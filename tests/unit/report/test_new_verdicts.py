"""IMPROVED and INCONCLUSIVE on every surface: report, verdict.json, summary, JUnit, terminal."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema

from perfgate.github.handoff import validate_verdict
from perfgate.github.post import plan_statuses
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.report.summary import summary_from_verdict, summary_markdown
from perfgate.report.surfaces import write_report
from perfgate.report.terminal import terminal_table
from perfgate.report.verdict import report_json, verdict_text
from perfgate.util import jsonfile
from tests.github_support import new_verdicts_report

VERDICTS = ["PASS", "IMPROVED", "INCONCLUSIVE", "BLOCK"]


def test_the_report_carries_the_new_verdicts_and_their_levels(tmp_path: Path) -> None:
    report = new_verdicts_report(tmp_path)
    assert [row.verdict.label for row in report.rows] == VERDICTS
    unsure = report.rows[2].judgement
    assert unsure is not None and unsure.reasons[0] is Reason.UNCONFIRMED
    assert report.overall is Verdict.BLOCK
    # Without the BLOCK: the worst is INCONCLUSIVE, WARN-level, and the status stays green.
    calm = dataclasses.replace(report, rows=report.rows[:3], overall=Verdict.INCONCLUSIVE)
    assert calm.status_state == "success"


def test_verdict_json_is_valid_and_carries_the_test(tmp_path: Path) -> None:
    data = report_json(new_verdicts_report(tmp_path))
    jsonschema.validate(data, jsonfile.schema("verdict"))
    assert validate_verdict(data) == []
    assert [row["verdict"] for row in data["rows"]] == VERDICTS
    blocked = data["rows"][3]["statistics"]
    assert blocked["run_samples"] == 3 and blocked["policy"] == "calibrated"
    low, high = blocked["interval_pct"]
    assert low < blocked["effect_pct"] < high < 0
    assert blocked["t"] < -blocked["t_block"]
    assert data["rows"][1]["statistics"]["effect_pct"] > 3.0


def test_summary_shows_icons_intervals_and_the_rule_in_plain_words(tmp_path: Path) -> None:
    summary = summary_markdown(new_verdicts_report(tmp_path))
    assert "🚀 improved" in summary and "🔍 inconclusive" in summary
    assert "🚀 1 improved" in summary and "🔍 1 inconclusive" in summary
    assert "| 3 / 20 |" in summary  # the run's samples against the window's
    assert "\u2212" in summary and "\u2026" in summary  # '-7.0 % (-8.1 ... -5.9)'
    how = summary.split("### How to read this", 1)[1]
    assert "at most 0.1 % of bucket runs" in how and "at least 3 %" in how
    assert "**inconclusive**" in how and "**improved**" in how


def test_junit_skips_inconclusive_and_passes_improved(tmp_path: Path) -> None:
    paths = write_report(new_verdicts_report(tmp_path), tmp_path / "report")
    root = ET.parse(paths["junit"]).getroot()  # noqa: S314 (our own output, parsed back)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "1")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    skipped = cases["pendulum/numpy"].find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("INCONCLUSIVE: ")
    improved = cases["cartpole/python"]
    assert improved.find("failure") is None and improved.find("skipped") is None
    assert (improved.findtext("system-out") or "").startswith("IMPROVED: ")


def test_statuses_are_green_for_improved_and_inconclusive_and_show_the_interval(
    tmp_path: Path,
) -> None:
    statuses = plan_statuses(report_json(new_verdicts_report(tmp_path)), None)
    assert [s.state for s in statuses] == ["failure", "success", "success", "success", "failure"]
    improved, unsure, blocked = statuses[2], statuses[3], statuses[4]
    assert improved.description.startswith("IMPROVED +")
    assert unsure.description.startswith("INCONCLUSIVE \u2212")
    assert blocked.description.startswith("BLOCK \u2212") and "\u2026" in blocked.description


def test_terminal_table_shows_the_interval_and_samples(tmp_path: Path) -> None:
    table = terminal_table(new_verdicts_report(tmp_path), width=160)
    line = next(row for row in table.splitlines() if row.startswith("pendulum/python"))
    assert "BLOCK" in line and "3 / 20" in line and "\u2026" in line
    assert "IMPROVED" in table and "INCONCLUSIVE" in table


def test_the_terminal_table_fits_100_columns_and_explains_below(tmp_path: Path) -> None:
    """Short reason codes in the table, the full reasons (and the cut interval) below it."""
    report = new_verdicts_report(tmp_path)
    table = terminal_table(report, width=100)
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 100, table
    line = next(row for row in lines if row.startswith("pendulum/python"))
    assert line.split()[1] == "BLOCK" and line.rstrip().endswith("REGRESSION")
    assert "pendulum/python: BLOCK \u22127.0 % (\u22128.2 \u2026 \u22125.8): regression" in table
    # The same report on a wide terminal keeps the interval in the table.
    wide = terminal_table(report, width=200).splitlines()
    assert "\u22127.0 % (\u22128.2 \u2026 \u22125.8)" in next(
        row for row in wide if row.startswith("pendulum/python")
    )


def test_an_older_verdict_json_still_renders(tmp_path: Path) -> None:
    """A report from before IMPROVED and statistics existed (the hand-off may meet one)."""
    data = report_json(new_verdicts_report(tmp_path))
    del data["policy"]
    for row in data["rows"]:
        del row["statistics"]
    summary = summary_from_verdict(json.loads(json.dumps(data)))
    assert "the median of the 20 nearest" in summary  # the reference rule's words
    assert validate_verdict(data) == []


def test_verdict_json_holds_the_document_with_a_row_a_line(tmp_path: Path) -> None:
    report = new_verdicts_report(tmp_path)
    paths = write_report(report, tmp_path / "report")
    text = paths["verdict"].read_text(encoding="utf-8")
    assert json.loads(text) == report_json(report)
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and '  "overall_verdict": "BLOCK",' in lines
    rows = [line for line in lines if line.startswith('    {"bucket": ')]
    assert [json.loads(row.rstrip(","))["verdict"] for row in rows] == VERDICTS
    empty = {**report_json(report), "rows": []}
    assert json.loads(verdict_text(empty)) == empty
