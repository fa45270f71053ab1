"""perfgate/config/checks.py: the names R14 makes safe (branches, paths, image references,
placeholders), each refused with the reason and the fix, each valid form let through."""

from __future__ import annotations

import pytest

from perfgate.config.bucket import COMMAND_PLACEHOLDERS
from perfgate.config.checks import (
    branch_problem,
    image_reference_problem,
    path_problem,
    placeholder_problem,
)


@pytest.mark.parametrize("name", ["main", "release/1.2", "feature_x", "a-b/c.d"])
def test_a_branch_name_is_accepted(name: str) -> None:
    assert branch_problem(name, pattern=False) is None


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("-main", "is not a branch name: use letters"),
        ("a..b", "is not a valid git branch name"),
        ("a//b", "is not a valid git branch name"),
        ("x/.hidden", "is not a valid git branch name"),
        ("main.lock", "is not a valid git branch name"),
        ("main/", "is not a valid git branch name"),
        ("main*", "is not a branch name: use letters"),
        ("b" * 256, "git allows at most 255"),
    ],
)
def test_a_bad_branch_name_says_why(name: str, reason: str) -> None:
    problem = branch_problem(name, pattern=False)
    assert problem is not None and reason in problem


@pytest.mark.parametrize("pattern", ["*", "**", "release/*", "release/**", "main"])
def test_a_branch_pattern_may_end_in_one_glob(pattern: str) -> None:
    assert branch_problem(pattern, pattern=True) is None


@pytest.mark.parametrize("pattern", ["rel*ease", "main?", "[ab]", "release/*/x"])
def test_a_glob_anywhere_but_the_end_is_no_pattern(pattern: str) -> None:
    problem = branch_problem(pattern, pattern=True)
    assert problem is not None and "optionally ending in '*' or '**'" in problem


@pytest.mark.parametrize("path", ["docs/**", "ci/noise.json", "src/", "a/b.c"])
def test_a_path_inside_the_repository_is_accepted(path: str) -> None:
    assert path_problem(path, what="a glob") is None


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "must be relative to the repository root"),
        ("./docs", "write 'docs'"),
        ("..", "must be relative to the repository root"),
        ("a/../b", "must name a path inside the repository"),
        ("a//b", "must name a path inside the repository"),
        ("a\\b", "must name a path inside the repository"),
    ],
)
def test_a_path_outside_the_repository_says_why(path: str, reason: str) -> None:
    problem = path_problem(path, what="a glob")
    assert problem is not None and reason in problem


@pytest.mark.parametrize(
    "image",
    [
        "ubuntu",
        "nvcr.io/nvidia/isaac-lab:2.1.0",
        "localhost:5000/ci/lab:sha-0123456",
        "[::1]:5000/lab",
        "lab@sha256:" + "a" * 64,
    ],
)
def test_an_image_reference_is_accepted(image: str) -> None:
    assert image_reference_problem(image) is None


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("--privileged", "is not an image reference: write"),
        ("lab -v /:/host", "is not an image reference: write"),
        ("Lab", "is not an image reference: write"),
        ("lab:" + "t" * 129, "a tag is 1-128"),
        ("lab@md5:00", "a digest is algorithm:hex"),
        ("a/" * 128 + "b", "its name is over 255 characters"),
    ],
)
def test_a_bad_image_reference_says_why(image: str, reason: str) -> None:
    problem = image_reference_problem(image)
    assert problem is not None and reason in problem


def test_placeholders_must_be_known_and_plain() -> None:
    assert placeholder_problem("{output_dir}/r.json", COMMAND_PLACEHOLDERS) is None
    assert placeholder_problem("{{literal}} {seed}", COMMAND_PLACEHOLDERS) is None
    unknown = placeholder_problem("{nope}", ["seed", "task"])
    assert unknown == "placeholder {nope} is unknown; use one of {seed}, {task}"
    # Attribute access, conversions and format specs would reach past the value.
    for template in ("{seed.__class__}", "{seed!r}", "{seed:>9}", "{0}"):
        problem = placeholder_problem(template, ["seed"])
        assert problem is not None and "is unknown" in problem, template
    unbalanced = placeholder_problem("{seed", ["seed"])
    assert unbalanced is not None and "unbalanced brace" in unbalanced
