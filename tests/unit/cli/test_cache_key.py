"""`perfgate cache-key`: what the rendered bench job's actions/cache step is given (R16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate import cli
from tests.paths import ROOT

ISAACLAB = ROOT / "examples" / "isaaclab" / "perfgate.yaml"


def cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[dict[str, object], str]:
    """Run cache-key in ``tmp_path`` as a CI step would: its JSON and its step outputs."""
    monkeypatch.chdir(tmp_path)
    outputs = tmp_path / "github_output"
    outputs.touch()
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    assert cli.main(["cache-key", *argv]) == 0
    return json.loads(capsys.readouterr().out), outputs.read_text()


@pytest.mark.slow  # the run context reads git
def test_buckets_that_all_run_cold_get_null_keys_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo keeps no cache: every key is null, the reason names the cold buckets, and the
    step's path output is empty, which skips the bench job's actions/cache step."""
    args = ["--config", str(ROOT / "perfgate.yaml"),
            "--bucket", "cartpole/numpy", "--bucket", "pendulum/python"]  # fmt: skip
    document, step = cache_key(tmp_path, monkeypatch, capsys, *args)
    assert {k: v for k, v in document.items() if k != "reason"} == {
        "path": None,
        "key": None,
        "restore-launches": None,
        "restore-lane": None,
    }
    assert "every bucket of the lane runs cold (cartpole/numpy, pendulum/python)" in str(
        document["reason"]
    )
    assert "path=\n" in step.splitlines(keepends=True)
    assert step.startswith("path=\nkey=\n")


@pytest.mark.slow  # the run context reads git
def test_a_warm_bucket_gets_its_cache_path_and_keys_and_no_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["warp-lang==1.2.3"]\n'
    )
    args = ["--config", str(ISAACLAB), "--bucket", "Isaac-Cartpole-Direct/physx"]
    document, step = cache_key(tmp_path, monkeypatch, capsys, *args)
    assert document["path"] == ".perfgate/work/warm-cache"
    assert str(document["restore-lane"]) == "perfgate-warm-warp-lang1.2.3-lane-1-"
    assert str(document["key"]).startswith(str(document["restore-launches"]))
    assert document["reason"] is None
    assert "path=.perfgate/work/warm-cache\n" in step and "reason=\n" in step
