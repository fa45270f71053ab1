"""Pure parts of the GitHub surfaces: status plans, descriptions, the comment body, escaping."""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.github.post import MARKER, comment_body, fit_description, footer, plan_statuses
from perfgate.report.summary import summary_from_verdict, summary_markdown
from perfgate.report.untrusted import md_text
from perfgate.report.verdict import report_json
from tests.github_support import HEAD_SHA, HOSTILE, mixed_report, passing_report

RUN_URL = "https://github.com/acme/sim/actions/runs/99"
ALLOWED_TAGS = {"<details>", "<summary>", "</summary>", "</details>", MARKER}


def test_description_fits_githubs_limit_and_keeps_the_advisory_suffix() -> None:
    long = "regression " * 40
    fitted = fit_description(long, advisory=True)
    assert len(fitted) == 140
    assert fitted.endswith("… (advisory)")
    assert fit_description("all clear", advisory=False) == "all clear"
    assert fit_description("line one\nline two", advisory=True) == "line one line two (advisory)"


def test_statuses_aggregate_first_then_one_per_bucket_with_their_states(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    statuses = plan_statuses(verdict, RUN_URL)
    assert [(s.context, s.state) for s in statuses] == [
        ("perfgate", "failure"),
        ("perfgate (cartpole/numpy)", "success"),
        ("perfgate (cartpole/python)", "failure"),
        ("perfgate (pendulum/numpy)", "failure"),
        ("perfgate (pendulum/python)", "failure"),
    ]
    assert all(len(s.description) <= 140 for s in statuses)
    assert all(s.description.endswith(" (advisory)") for s in statuses)
    assert all(s.target_url == RUN_URL for s in statuses)
    assert statuses[0].description.startswith("HARD_FAILURE: ")
    assert statuses[4].description == "HARD_FAILURE: did not report (advisory)"


def test_warn_is_success_and_blocking_mode_has_no_advisory_suffix(tmp_path: Path) -> None:
    verdict = report_json(passing_report(tmp_path, mode="blocking"))
    verdict["rows"][1]["verdict"] = "WARN"
    statuses = plan_statuses(verdict, None)
    assert {s.state for s in statuses} == {"success"}
    assert not any("(advisory)" in s.description for s in statuses)
    assert statuses[0].target_url is None


def test_comment_is_marker_summary_and_footer(tmp_path: Path) -> None:
    report = mixed_report(tmp_path)
    body = comment_body(report_json(report), head_sha=HEAD_SHA, run_url=RUN_URL)
    assert body.startswith(MARKER + "\n" + summary_markdown(report))
    assert body.endswith(f"\n_Updated for {HEAD_SHA[:8]} · [run]({RUN_URL})_\n")


def test_footer_leaves_out_a_link_that_is_not_a_plain_url() -> None:
    assert footer(HEAD_SHA, "javascript:alert(1)") == f"_Updated for {HEAD_SHA[:8]}_"
    assert footer(HEAD_SHA, "https://x/y) [evil](https://z") == f"_Updated for {HEAD_SHA[:8]}_"
    assert footer("not-a-sha", None) == "_Updated for unknown commit_"


def _before_footer(body: str) -> str:
    return body.rsplit("\n_Updated for", 1)[0]


def test_hostile_bucket_name_log_tail_and_notes_render_inert(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path, hostile=True))
    body = _before_footer(comment_body(verdict, head_sha=HEAD_SHA, run_url=RUN_URL))
    assert HOSTILE.split()[0] in verdict["rows"][2]["bucket"]  # the hostile text is present
    # No HTML but perfgate's own <details> block and the marker.
    assert set(re.findall(r"<[^>\n]*>", body)) <= ALLOWED_TAGS
    assert body.count(MARKER) == 1
    assert body.count("<details>") == body.count("</details>") == 1
    # No mention or team ping, no link, no code span or fence from the text.
    assert not re.search(r"@[A-Za-z0-9]", body)
    assert not re.search(r"(?<!\\)\]\(", body)  # an escaped \](  is text, not a link
    assert "```" not in body
    # The newline in the text did not start a heading of its own.
    assert not any(line.startswith("## injected") for line in body.splitlines())
    # Every table row still has exactly its columns: no cell was split by a "|".
    for line in body.splitlines():
        if line.startswith("| ") and "Bucket" not in line:
            cells = re.split(r"(?<!\\)\|", line)  # an escaped \| is text inside a cell
            assert len(cells) - 1 in (10, 15), line


def test_md_text_escapes_once_and_breaks_mentions_and_autolinks() -> None:
    assert md_text("cartpole/numpy (+1.0% vs median 1,000)") == (
        "cartpole/numpy (+1.0% vs median 1,000)"
    )
    assert md_text("[x](y)") == r"\[x\](y)"
    assert md_text("a & <b> 'c'") == "a &amp; &lt;b&gt; 'c'"
    assert md_text("@org/team") == "@&#8203;org/team"
    assert md_text("see https://evil.example") == "see https:&#8203;//evil.example"
    assert md_text("a\n## b") == r"a \#\# b"
    assert md_text("**b** `c` |x| ~~s~~") == r"\*\*b\*\* \`c\` \|x\| \~\~s\~\~"
    assert md_text(r"\*") == r"\\\*"  # a backslash of the text cannot cancel an escape


def test_md_text_leaves_readable_what_markdown_does_not_need_escaped() -> None:
    """An underscore inside a word is never emphasis; only a leading or trailing one is."""
    assert md_text("Isaac-Cartpole/physx_rtx_renderer") == "Isaac-Cartpole/physx_rtx_renderer"
    assert md_text("_x_ a_b") == r"\_x\_ a_b"


def test_a_huge_report_is_cut_to_fit_githubs_comment_limit(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    row = verdict["rows"][2]
    verdict["rows"] = [{**row, "details": ["x" * 3000]} for _ in range(250)]
    body = comment_body(verdict, head_sha=HEAD_SHA, run_url=RUN_URL)
    assert len(body) < 65536
    # Cut at a line: every tag opened is closed, and no table row is left half-written.
    assert body.count("<details>") == body.count("</details>") <= 1
    assert all(line.endswith("|") for line in body.splitlines() if line.startswith("| "))
    assert "_Truncated: the full report is in the job summary and its artifact._" in body
    assert body.endswith(f"[run]({RUN_URL})_\n")


def test_a_failed_bucket_links_its_log_artifact_on_the_run_page(tmp_path: Path) -> None:
    verdict = report_json(mixed_report(tmp_path))
    failed = next(row for row in verdict["rows"] if row["verdict"] == "HARD_FAILURE")
    failed["log"] = {"artifact": "perfgate-log-cartpole__python", "path": "/w/log.txt"}
    verdict["run_url"] = RUN_URL
    summary = summary_from_verdict(verdict)
    assert f"log: [`perfgate-log-cartpole__python`]({RUN_URL}#artifacts)" in summary
    # A fork's verdict.json is untrusted: a run_url that is not a run page is no link.
    verdict["run_url"] = "javascript:alert(1)"
    hostile = summary_from_verdict(verdict)
    assert "log: artifact `perfgate-log-cartpole__python`" in hostile
    assert "javascript" not in hostile
    # Locally there is no artifact: the path of the log file.
    failed["log"] = {"artifact": None, "path": "/w/runs/x/attempt-1/log.txt"}
    assert "log: /w/runs/x/attempt-1/log.txt" in summary_from_verdict(verdict)


def test_buckets_link_to_their_trend_pages_when_the_config_names_the_site(
    tmp_path: Path,
) -> None:
    verdict = report_json(mixed_report(tmp_path))
    site = "https://acme.github.io/lab/"
    assert "/buckets/" not in summary_from_verdict(verdict)
    linked = summary_from_verdict(verdict, trend_url=site)
    for row in verdict["rows"]:
        stem = row["bucket"].replace("/", "__")
        assert f"]({site}buckets/{stem}.html)" in linked
    body = comment_body(verdict, head_sha=HEAD_SHA, run_url=RUN_URL, trend_url=site)
    assert f"({site}buckets/" in body
    # An untrusted bucket id that is not a plain name never becomes part of a link.
    verdict["rows"][0]["bucket"] = "x/../../evil)[a](javascript:alert(1)"
    hostile = summary_from_verdict(verdict, trend_url=site)
    assert "evil" in hostile and not re.search(r"(?<!\\)\]\(javascript", hostile)
    assert hostile.count(f"]({site}buckets/") == len(verdict["rows"]) - 1
