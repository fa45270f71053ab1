"""junit.xml: one test case per expected bucket, parsed back to check its structure."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

from perfgate.report.junit import write_junit
from perfgate.report.surfaces import write_report
from tests.github_support import mixed_report, passing_report


def _suite(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()  # noqa: S314 (our own output, parsed back)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    return suites[0]


def test_block_and_hard_failure_fail_and_a_missing_bucket_skips_and_fails_coverage(
    tmp_path: Path,
) -> None:
    paths = write_report(mixed_report(tmp_path), tmp_path / "report")
    assert sorted(paths) == ["junit", "summary", "verdict"]
    suite = _suite(paths["junit"])
    assert (
        suite.get("tests"),
        suite.get("failures"),
        suite.get("skipped"),
        suite.get("errors"),
    ) == ("5", "3", "1", "0")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    coverage = "coverage: every expected bucket reported"
    assert list(cases) == [
        "cartpole/numpy", "cartpole/python", "pendulum/numpy", "pendulum/python", coverage
    ]  # fmt: skip
    # A partial run never reads as green in a test reporter (R6).
    assert cases[coverage].find("failure").get("type") == "NOT_REPORTED"
    assert cases[coverage].findtext("failure") == "pendulum/python"
    assert cases["cartpole/numpy"].find("failure") is None
    assert cases["cartpole/numpy"].find("skipped") is None
    assert cases["cartpole/python"].findtext("failure") is not None
    assert cases["cartpole/python"].find("failure").get("type") == "BLOCK"
    assert cases["pendulum/numpy"].find("failure").get("type") == "HARD_FAILURE"
    assert cases["pendulum/numpy"].findtext("system-err") == "Traceback: boom"
    assert cases["pendulum/python"].find("skipped") is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["overall_verdict"] == "HARD_FAILURE"
    assert properties["status_state"] == "failure"


def test_all_passing_report_has_no_failures(tmp_path: Path) -> None:
    suite = _suite(write_junit(passing_report(tmp_path), tmp_path / "junit.xml"))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "0", "0")


def test_control_characters_and_markup_in_a_log_tail_still_parse(tmp_path: Path) -> None:
    report = mixed_report(tmp_path, hostile=True)
    failed = report.rows[2]
    assert failed.result is not None
    noisy = dataclasses.replace(
        failed.result, log_tail="\x1b[31mred\x1b[0m\x00 ]]> </system-err> & <x>"
    )
    rows = (*report.rows[:2], dataclasses.replace(failed, result=noisy), report.rows[3])
    suite = _suite(write_junit(dataclasses.replace(report, rows=rows), tmp_path / "junit.xml"))
    err = suite.findall("testcase")[2].findtext("system-err")
    assert err == "\ufffd[31mred\ufffd[0m\ufffd ]]> </system-err> & <x>"
    assert suite.findall("testcase")[2].get("name", "").startswith("<img src=x")
