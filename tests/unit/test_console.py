"""GitHub step outputs and summaries: one writer keeps the file formats whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from perfgate.util.console import inert, write_step_outputs, write_step_summary


def test_step_outputs_append_one_line_each_and_refuse_a_value_spanning_lines(
    tmp_path: Path,
) -> None:
    output = tmp_path / "output"
    output.write_text("earlier=1\n", encoding="utf-8")
    env = {"GITHUB_OUTPUT": str(output)}
    write_step_outputs({"run": "true", "buckets": '["a/b"]'}, env)
    assert output.read_text(encoding="utf-8") == 'earlier=1\nrun=true\nbuckets=["a/b"]\n'
    # A second line would be read as another output (or break the file): nothing is written.
    with pytest.raises(ValueError, match="step output description spans lines"):
        write_step_outputs({"ok": "1", "description": "one\nexit_code=0"}, env)
    assert output.read_text(encoding="utf-8").count("\n") == 3


def test_without_the_files_nothing_is_written(tmp_path: Path) -> None:
    write_step_outputs({"run": "true"}, {})
    write_step_summary("# summary", {})
    summary = tmp_path / "summary.md"
    write_step_summary("# summary", {"GITHUB_STEP_SUMMARY": str(summary)})
    write_step_summary("more", {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text(encoding="utf-8") == "# summary\nmore\n"
    assert list(tmp_path.iterdir()) == [summary]


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("step 3 of 10", "step 3 of 10"),  # ordinary output is untouched
        ("done\r", "done"),  # a CRLF line ending
        ("10%\r20%\r30%", "30%"),  # a progress bar: what the terminal shows last
        ("x\r::add-mask::w", ": :add-mask::w"),
        ("  ::error::x", "  : :error::x"),
        ("a ##[set-output name=x;]y", "a ## [set-output name=x;]y"),
        ("a::b", "a::b"),  # '::' inside a line is no command
    ],
)
def test_benchmark_text_is_inert_for_the_runner(line: str, shown: str) -> None:
    assert inert(line) == shown


def test_a_judged_runs_progress_line_leaves_the_figure_to_the_table() -> None:
    """The line printed the first samples' median beside a table deciding on another."""
    from perfgate.util.console import Progress
    from tests.factories import make_result

    result = make_result(samples=(17_000_000.0, 18_000_000.0, 19_000_000.0))
    for figures, expected in ((True, "18,000,000 "), (False, "3 sample(s), judged below, ok")):
        stream = io.StringIO()
        Progress(1, stream, figures=figures).finish(result)
        assert expected in stream.getvalue(), stream.getvalue()
    assert "18,000,000" not in stream.getvalue()
