"""``Config``, the validated perfgate.yaml (perfgate/config/model.py): selecting buckets by
id, tag and backend, where a typo is refused and never narrows a run silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate import cli
from perfgate.config import load_config
from tests.paths import ROOT as REPO
from tests.unit.config.test_load import write


def test_select_by_tag_and_unknown_bucket_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        buckets:
          - task: cartpole
            tags: [fast]
            backends: [{physics: numpy}]
          - task: pendulum
            backends: [{physics: numpy}]
        """,
    )
    config = load_config(path)
    assert [b.id for b in config.select(tags=["fast"])] == ["cartpole/numpy"]
    assert cli.main(["matrix", "--config", str(path), "--bucket", "cartpole/physx"]) == 4
    err = capsys.readouterr().err
    assert "unknown bucket cartpole/physx" in err and "cartpole/numpy" in err


def test_backend_allowlist_narrows_and_an_unknown_key_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = load_config(REPO / "perfgate.yaml")
    assert [b.id for b in config.select(backends=["python"])] == [
        "cartpole/python",
        "pendulum/python",
    ]
    # --bucket/--tag select, --backend narrows what they selected.
    chosen = config.select(ids=["cartpole/numpy", "cartpole/python"], backends=["numpy"])
    assert [b.id for b in chosen] == ["cartpole/numpy"]
    config_path = str(REPO / "perfgate.yaml")
    # A typo never narrows the scope silently: it is refused, naming the known keys.
    assert cli.main(["matrix", "--config", config_path, "--backend", "numpyy"]) == 4
    err = capsys.readouterr().err
    assert "unknown backend key numpyy" in err and "known backend keys: numpy, python" in err
    # A selection that the allowlist empties is refused too, not run as "nothing to do".
    args = ["matrix", "--config", config_path, "--bucket", "cartpole/numpy", "--backend", "python"]
    assert cli.main(args) == 4
    assert "no bucket" in capsys.readouterr().err
