"""The Nox sessions' own decisions (noxfile.py), checked without running a session."""

from __future__ import annotations

from types import ModuleType

import pytest


def test_render_without_a_site_renders_every_site(noxfile: ModuleType) -> None:
    assert noxfile.render_calls(["--check"]) == [
        ["--config", "perfgate.yaml", "--out", ".", "--check"],
        ["--config", "examples/isaaclab/perfgate.yaml", "--out", "examples/isaaclab", "--check"],
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--config", "mine.yaml"],
        ["--config=mine.yaml"],
        ["--out", "site"],
        ["--out=site", "--check"],
        ["--check", "--config=mine.yaml", "--out=site"],
    ],
)
def test_render_of_one_site_renders_that_site_alone(noxfile: ModuleType, args: list[str]) -> None:
    """`-- --config=FILE` names one site as `-- --config FILE` does: rendered once, with the
    user's arguments alone (never into a built-in site's --out)."""
    assert noxfile.render_calls(args) == [args]
