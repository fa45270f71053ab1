"""The Nox sessions' own decisions (noxfile.py), checked without running a session."""

from __future__ import annotations

from types import ModuleType

import pytest


def test_render_without_a_site_renders_every_site(noxfile: ModuleType) -> None:
    assert noxfile.render_calls(["--check"]) == [
        ["--config", "perfgate.yaml", "--out", ".", "--check"],
        ["--config", "examples/isaaclab/perfgate.yaml", "--out", "examples/isaaclab", "--check"],
        ["--config", "examples/pytest-benchmark/perfgate.yaml", "--out",
         "examples/pytest-benchmark", "--check"],
    ]  # fmt: skip


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


@pytest.mark.parametrize("verb", ["validate", "matrix", "compare"])
def test_the_everyday_verbs_have_a_session_of_their_own(
    noxfile: ModuleType, monkeypatch: pytest.MonkeyPatch, verb: str
) -> None:
    """Set up with nox, a user checks the config, lists the buckets and compares two runs
    without installing perfgate a second time: each session runs its verb, nothing else."""
    import nox.registry

    called: list[str] = []
    monkeypatch.setattr(noxfile, "_perfgate", lambda session, name: called.append(name))
    session = nox.registry.get()[verb]
    session(None)
    assert called == [verb]
    assert len(session.__doc__.strip().splitlines()) == 1
