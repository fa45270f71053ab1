"""verdict.json and summary.md stay under their platforms' limits whatever text reaches them.

Artifacts are clipped where they are read (tests/integration/report/test_surface_limits.py);
this holds the writers to their limits on their own, for text from anywhere else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.github.handoff import validate_verdict
from perfgate.judge.gate import ReportContext, build_report
from perfgate.report import summary, verdict
from perfgate.report.summary import (
    MAX_SUMMARY_BYTES,
    fit_markdown,
    summary_from_verdict,
    summary_markdown,
)
from perfgate.report.surfaces import write_github_surfaces, write_report
from perfgate.report.verdict import MAX_VERDICT_BYTES, report_json
from tests.github_support import make_result, write_config

HUGE = "x" * 1_500_000


def test_verdict_json_is_cut_to_its_limit_and_says_so(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    results = [make_result(bucket, None, exit_code=1, error=HUGE) for bucket in config.buckets]
    report = build_report(config=config, expected=config.buckets, results=results, windows={},
                          context=ReportContext(notes=[HUGE]))  # fmt: skip
    document = report_json(report)
    size = len(json.dumps(document, indent=2).encode("utf-8"))
    assert size < MAX_VERDICT_BYTES
    assert document["notes"][0].startswith("truncated: every text of this report was cut")
    assert validate_verdict(document, [b.id for b in config.buckets]) == []
    assert [row["verdict"] for row in document["rows"]] == ["HARD_FAILURE"] * 4
    assert len(summary_markdown(report).encode("utf-8")) < MAX_SUMMARY_BYTES


def test_a_verdict_too_large_by_its_rows_alone_is_not_cut_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path)
    results = [make_result(bucket, 100.0) for bucket in config.buckets]
    report = build_report(config=config, expected=config.buckets, results=results, windows={})
    whole = report_json(report)
    # As if the rows of a matrix far past GitHub's 256 jobs filled the budget.
    monkeypatch.setattr(verdict, "_VERDICT_BUDGET", 1000)
    document = report_json(report)
    assert document["rows"] == whole["rows"]
    assert document["notes"][0].startswith("verdict.json is ")
    assert "its rows alone are that large" in document["notes"][0]
    assert not any(note.startswith("truncated:") for note in document["notes"])


@pytest.mark.parametrize("case", ["fits", "rows alone too large", "cut"])
def test_verdict_text_is_its_document_encoded_whatever_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    # The text is encoded once and its rows reused when only the notes change: it must
    # still be exactly what the document says.
    config = write_config(tmp_path)
    error = HUGE if case == "cut" else None
    results = [
        make_result(bucket, None if error else 100.0, exit_code=1 if error else 0, error=error)
        for bucket in config.buckets
    ]
    report = build_report(config=config, expected=config.buckets, results=results, windows={})
    if case == "rows alone too large":
        monkeypatch.setattr(verdict, "_VERDICT_BUDGET", 1000)
    rows = [verdict.row_json(row) for row in report.rows]
    document = verdict.verdict_document(report, rows)
    assert document.text == verdict.verdict_text(document.data)
    assert json.loads(document.text) == document.data
    assert document.data == report_json(report)
    first = {"fits": None, "rows alone too large": "verdict.json is ", "cut": "truncated:"}[case]
    said = [n for n in document.data["notes"] if n.startswith(("verdict.json is ", "truncated:"))]
    assert said == ([] if first is None else [document.data["notes"][0]])
    assert first is None or said[0].startswith(first)


def test_markdown_is_cut_at_a_line_with_its_details_block_closed() -> None:
    lines = ["## perfgate results", "<details><summary>Technical details</summary>"]
    lines += [f"| row {i} | {'y' * 100} |" for i in range(20_000)]
    cut = fit_markdown("\n".join(lines), 100_000, "_Truncated._",
                       size=lambda text: len(text.encode("utf-8")))  # fmt: skip
    assert len(cut.encode("utf-8")) <= 100_000
    assert cut.endswith("</details>\n\n_Truncated._")
    assert all(line in lines or line in ("", "</details>", "_Truncated._")
               for line in cut.splitlines())  # fmt: skip
    assert fit_markdown("short", 100, "_Truncated._") == "short"


def test_junit_grows_with_the_buckets_only_whatever_the_texts(tmp_path: Path) -> None:
    from xml.etree import ElementTree as ET

    from perfgate.report.junit import junit_tree

    config = write_config(tmp_path)
    results = [make_result(bucket, None, exit_code=1, error=HUGE) for bucket in config.buckets]
    report = build_report(config=config, expected=config.buckets, results=results, windows={},
                          context=ReportContext(notes=[HUGE]))  # fmt: skip
    size = len(ET.tostring(junit_tree(report).getroot(), encoding="utf-8"))
    assert size < 30_000 * len(config.buckets)
    assert "(cut; the whole text is in verdict.json)" in ET.tostring(
        junit_tree(report).getroot(), encoding="unicode"
    )


def test_a_figure_of_1e308_is_a_short_cell(tmp_path: Path) -> None:
    from perfgate.report.terminal import terminal_table

    config = write_config(tmp_path)
    results = [make_result(bucket, 1e308) for bucket in config.buckets]
    report = build_report(config=config, expected=config.buckets, results=results, windows={})
    table = terminal_table(report, width=100)
    assert "1e+308" in table and "000000000" not in table
    assert "000000000" not in summary_markdown(report)


def test_summary_md_and_the_step_summary_are_cut_to_the_step_summary_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A limit small enough for this report stands in for a matrix whose summary passes
    # GitHub's 1 MiB: both writers must cut what they write, not only summary_markdown.
    config = write_config(tmp_path)
    results = [make_result(bucket, 100.0) for bucket in config.buckets]
    report = build_report(config=config, expected=config.buckets, results=results, windows={})
    whole = summary_from_verdict(report_json(report))
    limit = len(whole.encode("utf-8")) // 2
    monkeypatch.setattr(summary, "MAX_SUMMARY_BYTES", limit)
    step_summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))

    written = write_report(report, tmp_path / "report")["summary"].read_text(encoding="utf-8")
    write_github_surfaces(report)

    for text in (written, step_summary.read_text(encoding="utf-8")):
        assert len(text.encode("utf-8")) <= limit
        assert "cut to stay under GitHub's 1 MiB step-summary limit" in text
        assert text.startswith("## perfgate results")
