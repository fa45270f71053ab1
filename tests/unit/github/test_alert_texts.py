"""Alert texts stay within GitHub's 65 536 characters whatever commits and results say."""

from __future__ import annotations

from perfgate.github.alert_text import BODY_LIMIT, SUSPECT_TITLE_LIMIT, bisect_comment, commit_title

GITHUB_LIMIT = 65_536
GOOD, BAD = "a" * 40, "b" * 40


def test_a_commit_title_is_clipped_before_it_is_escaped() -> None:
    shown = commit_title("<img src=x>|" * 10_000)
    assert shown.endswith("…") and "<img" not in shown
    # Escaping grows each character at most a few times over: the clip bounds the cell.
    assert len(shown) <= 8 * SUSPECT_TITLE_LIMIT
    assert commit_title("exact solver") == "exact solver"


def test_a_bisect_comment_quotes_a_huge_title_clipped() -> None:
    result = {"bucket": "cartpole/numpy", "good": GOOD, "bad": BAD, "candidates": 3,
              "status": "found", "first_bad": BAD, "last_good": GOOD, "change_pct": -6.1,
              "first_bad_step": {"figure": 94.1}, "last_good_step": {"figure": 100.2}}  # fmt: skip
    text = bisect_comment(result, {BAD: "slower solver " + "x" * 100_000}, "env-steps/s")
    assert len(text) < 2_000 and "slower solver" in text and "94.1" in text


def test_a_bisect_comment_past_the_limit_is_cut_with_a_note() -> None:
    many_lines = "\n".join(f"line {n} " + "y" * 80 for n in range(5_000))
    result = {"bucket": "cartpole/numpy", "good": GOOD, "bad": BAD, "candidates": 3,
              "status": "inconclusive", "why": many_lines}  # fmt: skip
    text = bisect_comment(result, {}, "env-steps/s")
    assert len(text) <= BODY_LIMIT < GITHUB_LIMIT
    assert text.startswith("Bisect of") and text.endswith("has the whole text._")
    assert "…truncated" in text
