"""Write a GateReport's surfaces: report files, and GitHub's step summary and outputs."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.judge.gate import GateReport
from perfgate.report.junit import write_junit
from perfgate.report.summary import fitted_summary
from perfgate.report.verdict import VerdictDocument, report_json, verdict_document
from perfgate.util.console import write_step_outputs, write_step_summary


def write_report(
    report: GateReport, report_dir: Path, verdict: VerdictDocument | None = None
) -> dict[str, Path]:
    """Write summary.md, verdict.json and junit.xml into ``report_dir``.

    ``verdict`` is the report's verdict.json when the caller has it already: every surface
    renders that one document, built and encoded once.
    """
    verdict = verdict_document(report) if verdict is None else verdict
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": report_dir / "summary.md", "verdict": report_dir / "verdict.json"}
    paths["summary"].write_text(
        fitted_summary(verdict.data, trend_url=report.trend_url), encoding="utf-8"
    )
    paths["verdict"].write_text(verdict.text, encoding="utf-8")
    paths["junit"] = write_junit(report, report_dir / "junit.xml")
    return paths


def write_github_surfaces(report: GateReport, verdict: Mapping[str, Any] | None = None) -> None:
    """Append the summary to $GITHUB_STEP_SUMMARY and the verdict to $GITHUB_OUTPUT."""
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        verdict = report_json(report) if verdict is None else verdict
        write_step_summary(fitted_summary(verdict, trend_url=report.trend_url))
    outputs = {
        "overall_verdict": report.overall.label,
        "status_state": report.status_state,
        "description": report.description,
        "exit_code": str(report.exit_code),
        "underfilled": json.dumps(list(report.underfilled), allow_nan=False),
    }
    write_step_outputs({key: " ".join(value.split()) for key, value in outputs.items()})
