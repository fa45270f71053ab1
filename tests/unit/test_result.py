"""The result artifact with several metrics: read back as written, older artifacts unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.config import PRIMARY, load_config
from perfgate.identity import Identity, stable_hash
from perfgate.result import IdentityRecord, Result, read_result, validate_result, write_result
from perfgate.run.launch import benchmark_identity, launch_identity
from tests.factories import make_result, with_metric
from tests.paths import ROOT


def test_further_metrics_survive_the_artifact(tmp_path: Path) -> None:
    result = with_metric(make_result(samples=(100.0, 101.0)), "startup_s", (10.0, 10.2))
    data = result.to_json()
    assert validate_result(data) == []
    assert data["metrics"]["startup_s"]["samples"] == [
        {"sample_index": 0, "value": 10.0, "wall_s": 0.0},
        {"sample_index": 1, "value": 10.2, "wall_s": 0.0},
    ]
    again = read_result(write_result(result, tmp_path))
    assert again == result
    assert list(again.all_metrics) == [PRIMARY, "startup_s"]


def test_a_single_metric_artifact_is_written_and_read_as_before(tmp_path: Path) -> None:
    result = make_result(samples=(100.0, 101.0))
    data = result.to_json()
    assert "metrics" not in data  # the artifact an older gate reads
    assert Result.from_json(data).metrics == {}


@pytest.mark.parametrize("name", ["primary", "Startup", "a/b", ""])
def test_an_artifact_naming_a_metric_badly_is_not_valid(name: str) -> None:
    data = with_metric(make_result(samples=(100.0,)), "startup_s", (10.0,)).to_json()
    data["metrics"] = {name: data["metrics"]["startup_s"]}
    assert validate_result(data) != []


def test_a_metrics_window_hash_is_the_one_the_bench_records(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ndefaults:\n  metrics: [{name: startup_s, path: runtime.startup_s, "
        "direction: lower}]\nbuckets: [{task: cartpole, backends: [{physics: numpy}]}]\n"
    )
    bucket = load_config(path).buckets[0]
    identity = Identity(
        launch=launch_identity(bucket), benchmark=benchmark_identity(bucket), runtime={}
    )
    result = with_metric(
        make_result(identity=IdentityRecord(**identity.to_json())),
        "startup_s",
        (10.0,),
        path="runtime.startup_s",
    )
    # The primary's contract is the bucket's as it was; the other's differs by its figure.
    assert result.benchmark_hash() == identity.benchmark_hash
    startup = bucket.metrics[0]
    assert result.benchmark_hash("startup_s") == stable_hash(benchmark_identity(bucket, startup))
    assert result.benchmark_hash("startup_s") != identity.benchmark_hash


def test_declaring_metrics_keeps_the_primarys_window() -> None:
    # The shipped Isaac Lab example gained startup, import and memory metrics; its primary
    # contract hashes as it did before (computed with the perfgate of that time), so every
    # FPS baseline recorded since still gates.
    example = load_config(ROOT / "examples" / "isaaclab" / "perfgate.yaml").buckets[0]
    assert len(example.metrics) == 3
    assert stable_hash(benchmark_identity(example)) == "89436d8c8474c8ce"
