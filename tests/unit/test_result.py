"""The result artifact with several metrics: read back as written, older artifacts unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.config import PRIMARY, load_config
from perfgate.identity import stable_hash
from perfgate.result import (
    IdentityRecord,
    Result,
    may_hold_long_text,
    read_result,
    validate_result,
    write_result,
)
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


@pytest.mark.parametrize("name", ["primary", "a\nb", "tab\there", "", "x" * 257])
def test_an_artifact_naming_a_metric_badly_is_not_valid(name: str) -> None:
    data = with_metric(make_result(samples=(100.0,)), "startup_s", (10.0,)).to_json()
    data["metrics"] = {name: data["metrics"]["startup_s"]}
    assert validate_result(data) != []


@pytest.mark.parametrize("name", ["startup_s", "test_sort[100]", "BM_Sort/8", "Startup time"])
def test_a_metric_may_be_named_by_the_benchmark_a_selection_matched(name: str) -> None:
    data = with_metric(make_result(samples=(100.0,)), "startup_s", (10.0,)).to_json()
    data["metrics"] = {name: data["metrics"]["startup_s"]}
    assert validate_result(data) == []


def test_a_metrics_window_hash_is_the_one_the_bench_records(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ndefaults:\n  metrics: [{name: startup_s, path: runtime.startup_s, "
        "direction: lower}]\nbuckets: [{task: cartpole, backends: [{physics: numpy}]}]\n"
    )
    bucket = load_config(path).buckets[0]
    identity = IdentityRecord.of(
        launch=launch_identity(bucket), benchmark=benchmark_identity(bucket), runtime={}
    )
    result = with_metric(
        make_result(identity=identity),
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


@pytest.mark.parametrize(
    ("strings", "may_be_long"),
    [
        (["cpu", "x" * 1000], False),  # every string at most the limit: no walk
        (["x" * 1001], True),
        (['a \\"quoted\\" word'], True),  # an escaped quote: a string may span pieces
        (["\\u00e9" * 300], True),  # 1,800 characters of text for 300 of string: walked
    ],
)
def test_only_text_that_may_hold_a_long_string_is_walked_for_clipping(
    strings: list[str], may_be_long: bool
) -> None:
    text = "{" + ", ".join(f'"k{i}": "{s}"' for i, s in enumerate(strings)) + "}"
    assert may_hold_long_text(text) is may_be_long


def test_a_long_string_an_escaped_quote_splits_is_still_clipped(tmp_path: Path) -> None:
    document = make_result("cartpole/numpy", 100.0).to_json()
    # 1,803 characters, no piece between its escaped quotes over 601.
    document["hardware"]["cpu_name"] = ("y" * 600 + '"') * 3
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert read_result(path).hardware.cpu_name.endswith("characters clipped]")
