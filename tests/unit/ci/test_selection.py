"""`paths:` follow GitHub's path-filter semantics: the documented cheat-sheet examples.

Each case is a row of "Patterns to match file paths" in GitHub's workflow-syntax
documentation (filter pattern cheat sheet), with its documented matches and, where the
row's description implies them, paths it must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.ci.selection import affected, matches, selected
from perfgate.config import load_config

DOCUMENTED = [
    # pattern, documented matches, paths the description excludes
    ("*", ["README.md", "server.rb"], ["docs/README.md"]),
    ("*.jsx?", ["page.js", "page.jsx"], ["page.jsxx", "src/page.js"]),
    ("**", ["all/the/files.md"], []),
    ("*.js", ["app.js", "index.js"], ["js/index.js"]),
    ("**.js", ["index.js", "js/index.js", "src/js/app.js"], ["index.ts"]),
    ("docs/*", ["docs/README.md", "docs/file.txt"], ["docs/mona/octocat.txt"]),
    ("docs/**", ["docs/README.md", "docs/mona/octocat.txt"], ["README.md"]),
    (
        "docs/**/*.md",
        ["docs/README.md", "docs/mona/hello-world.md", "docs/a/markdown/file.md"],
        ["docs/file.txt"],
    ),
    (
        "**/docs/**",
        ["docs/hello.md", "dir/docs/my-file.txt", "space/docs/plan/space.doc"],
        ["documents/x.md"],
    ),
    ("**/README.md", ["README.md", "js/README.md"], ["README.mdx"]),
    ("**/*src/**", ["a/src/app.js", "my-src/code/js/app.js"], ["a/srcs/app.js"]),
    ("**/*-post.md", ["my-post.md", "path/their-post.md"], ["post.md"]),
    (
        "**/migrate-*.sql",
        ["migrate-10909.sql", "db/migrate-v1.0.sql", "db/sept/migrate-v1.sql"],
        ["db/migrate.sql"],
    ),
    # The special characters' own examples.
    ("Octo*", ["Octocat"], []),
    ("[CB]at", ["Cat", "Bat"], ["Rat"]),
    ("[1-2]00", ["100", "200"], ["300"]),
    ("Oct+ocat", ["Octocat", "Octtocat"], ["Ococat"]),
]


@pytest.mark.parametrize(("pattern", "yes", "no"), DOCUMENTED, ids=[p for p, _, _ in DOCUMENTED])
def test_documented_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    for path in yes:
        assert matches(path, pattern), f"{pattern!r} must match {path!r}"
    for path in no:
        assert not matches(path, pattern), f"{pattern!r} must not match {path!r}"


def test_negation_excludes_what_came_before_and_order_matters() -> None:
    """Documented: `*.md` + `!README.md`; then `README*` after it includes again."""
    assert selected("hello.md", ["*.md", "!README.md"])
    assert not selected("README.md", ["*.md", "!README.md"])
    assert not selected("docs/hello.md", ["*.md", "!README.md"])
    again = ["*.md", "!README.md", "README*"]
    assert all(selected(p, again) for p in ("hello.md", "README.md", "README.doc"))


def test_a_list_of_only_exclusions_selects_nothing() -> None:
    assert not selected("src/a.py", ["!docs/**"])


def test_a_trailing_slash_means_everything_below() -> None:
    assert matches("source/isaaclab/a/b.py", "source/")
    assert not matches("sources/a.py", "source/")


def test_buckets_follow_the_whole_pattern_list(tmp_path: Path) -> None:
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        "version: 1\nbuckets:\n"
        "  - {task: cartpole, backends: [{physics: numpy}], paths: ['src/**', '!src/docs/**']}\n"
        "  - {task: pendulum, backends: [{physics: numpy}]}\n",
        encoding="utf-8",
    )
    sim, always = load_config(config).buckets
    assert affected([sim, always], ["src/docs/guide.md"]) == (always,)
    assert affected([sim, always], ["src/docs/guide.md", "src/core.py"]) == (sim, always)
