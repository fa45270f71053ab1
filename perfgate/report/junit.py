"""junit.xml: one test case per expected bucket, so native test reporting shows the verdict."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from perfgate.judge.gate import GateReport, Row
from perfgate.judge.verdicts import Verdict

# XML 1.0 forbids most control characters; a log tail can carry any of them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# Each text of a case is cut to these many characters (a message, the reasons, the log
# tail), so junit.xml grows with the bucket count only: about 25 KB a bucket at most. Test
# reporters load the whole file; the whole texts are in verdict.json and the logs.
MESSAGE_CHARS = 1_000
DETAILS_CHARS = 8_000
LOG_CHARS = 16_000


def _clean(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as XML 1.0 may carry it, cut to ``limit`` characters (and said so)."""
    text = _NOT_XML.sub("\ufffd", text)
    if len(text) <= limit:
        return text
    return text[: limit - 40] + " … (cut; the whole text is in verdict.json)"


def _case(row: Row) -> ET.Element:
    case = ET.Element(
        "testcase",
        {
            "classname": f"perfgate.{_clean(row.bucket.task)}",
            "name": _clean(row.bucket.id),
            "time": f"{row.result.timings.wall_s:.3f}" if row.result else "0",
        },
    )
    details = _clean("\n".join(row.details), DETAILS_CHARS)
    if not row.reported:
        ET.SubElement(case, "skipped", {"message": "no result artifact arrived for this bucket"})
    elif row.verdict is Verdict.INCONCLUSIVE:
        # Neither passed nor failed: the evidence could not decide (WARN-level, R5).
        ET.SubElement(case, "skipped", {"message": _clean(f"INCONCLUSIVE: {row.headline}")})
        ET.SubElement(case, "system-out").text = f"{row.verdict.label}: {details}"
    elif row.verdict in (Verdict.BLOCK, Verdict.HARD_FAILURE):
        # The reason that set the verdict: a blocked startup time, not the primary's pass.
        failure = ET.SubElement(
            case, "failure", {"type": row.verdict.label, "message": _clean(row.headline)}
        )
        failure.text = details
        if row.result is not None and row.result.log_tail:
            ET.SubElement(case, "system-err").text = _clean(row.result.log_tail, LOG_CHARS)
    elif details:
        ET.SubElement(case, "system-out").text = f"{row.verdict.label}: {details}"
    return case


def _coverage_case(missing: tuple[str, ...]) -> ET.Element:
    # A skipped case alone would let a test reporter show green over a partial run (R6).
    case = ET.Element(
        "testcase", {"classname": "perfgate", "name": "coverage: every expected bucket reported"}
    )
    failure = ET.SubElement(
        case,
        "failure",
        {"type": "NOT_REPORTED", "message": f"{len(missing)} bucket(s) did not report"},
    )
    failure.text = _clean("\n".join(missing), DETAILS_CHARS)
    return case


def junit_tree(report: GateReport) -> ET.ElementTree[ET.Element]:
    """The report as JUnit: BLOCK and HARD_FAILURE fail; INCONCLUSIVE and a missing bucket skip.

    A missing bucket also fails the coverage case; PASS, IMPROVED and WARN pass with their
    reasons as output.
    """
    missing = report.coverage.missing
    failures = sum(
        1 for r in report.rows if r.reported and r.verdict in (Verdict.BLOCK, Verdict.HARD_FAILURE)
    ) + (1 if missing else 0)
    skipped = sum(1 for r in report.rows if not r.reported or r.verdict is Verdict.INCONCLUSIVE)
    suites = ET.Element("testsuites", {"name": "perfgate"})
    suite = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": "perfgate",
            "tests": str(len(report.rows) + (1 if missing else 0)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
        },
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("overall_verdict", report.overall.label),
        ("status_state", report.status_state),
        ("mode", report.mode.value),
        ("description", report.description),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    suite.extend(_case(row) for row in report.rows)
    if missing:
        suite.append(_coverage_case(missing))
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(report: GateReport, path: Path) -> Path:
    """Write junit.xml (UTF-8, with an XML declaration)."""
    junit_tree(report).write(path, encoding="utf-8", xml_declaration=True)
    return path
