"""Store lines of a bucket with several metrics: one per sample and metric, each in its window."""

from __future__ import annotations

import json
from dataclasses import replace

from perfgate.baselines.samples import (
    Sample,
    WindowIdentity,
    WindowKey,
    samples_from_result,
    seed_sample_id,
)
from perfgate.config import PRIMARY
from tests.factories import make_result, with_metric

# Ids perfgate gave these samples before metrics existed (computed with that version):
# a store's primary lines keep deduplicating against re-published artifacts.
PRE_METRIC_IDS = ["be3754dc815ee7c5ed3411a3", "27f7d9b7b42b5b702c90c8d5"]
PRE_METRIC_SEED_ID = "f81724cd0d0c4a76a0beaa7d"
SEED = {
    "seed_key": "seed",
    "commit": "c" * 40,
    "bucket": "cartpole/numpy",
    "hardware": "cpu-test",
    "identity": WindowIdentity(
        target_branch="main",
        launch_hash="a" * 16,
        benchmark_hash="b" * 16,
        runtime_hash="d" * 16,
        baseline_epoch=1,
    ),
    "sample_index": 0,
    "repeat": 1,
}


def test_each_sample_of_each_metric_is_a_line_naming_its_metric() -> None:
    result = with_metric(make_result(samples=(100.0, 101.0)), "startup_s", (10.0, 10.2))
    samples = samples_from_result(result, trusted_source="protected_branch")
    assert [(s.metric, s.sample_index, s.value) for s in samples] == [
        (PRIMARY, 0, 100.0),
        (PRIMARY, 1, 101.0),
        ("startup_s", 0, 10.0),
        ("startup_s", 1, 10.2),
    ]
    primary, startup = samples[0], samples[2]
    assert primary.benchmark_hash == result.identity.benchmark_hash == "b" * 16
    assert startup.benchmark_hash == result.benchmark_hash("startup_s") != primary.benchmark_hash
    assert (startup.metric_path, startup.direction, startup.unit) == (
        "runtime.startup_time_s.env_creation",
        "lower",
        "s",
    )
    # A run's lines share its timestamp, whatever their metric; every id is distinct.
    assert len({s.timestamp for s in samples}) == 1
    assert len({s.sample_id for s in samples}) == 4
    assert json.loads(startup.to_line())["metric"] == "startup_s"


def test_the_primary_keeps_the_ids_it_had_before_metrics() -> None:
    result = make_result(samples=(100.0, 101.0))
    ids = [s.sample_id for s in samples_from_result(result, trusted_source="protected_branch")]
    assert ids == PRE_METRIC_IDS
    with_startup = with_metric(result, "startup_s", (10.0, 10.2))
    derived = samples_from_result(with_startup, trusted_source="protected_branch")
    assert [s.sample_id for s in derived[:2]] == PRE_METRIC_IDS
    assert seed_sample_id(**SEED) == PRE_METRIC_SEED_ID
    assert seed_sample_id(**SEED, metric="startup_s") != PRE_METRIC_SEED_ID


def test_a_metric_the_run_did_not_report_stores_nothing() -> None:
    result = with_metric(make_result(samples=(100.0, 101.0)), "gpu_mem_gb", ())
    samples = samples_from_result(result, trusted_source="protected_branch")
    assert {s.metric for s in samples} == {PRIMARY}


def test_a_line_written_before_metrics_reads_as_the_primarys() -> None:
    result = with_metric(make_result(samples=(100.0,)), "startup_s", (10.0,))
    line = json.loads(samples_from_result(result, trusted_source="protected_branch")[0].to_line())
    del line["metric"]  # what an older perfgate wrote
    assert Sample.from_json(line).metric == PRIMARY


def test_each_metric_has_a_window_key_of_its_own() -> None:
    result = with_metric(make_result(samples=(100.0,)), "startup_s", (10.0,))
    primary, startup = WindowKey.for_result(result), WindowKey.for_result(result, "startup_s")
    assert primary == replace(startup, benchmark_hash=primary.benchmark_hash)
    assert primary.digest() != startup.digest()
    lines = samples_from_result(result, trusted_source="protected_branch")
    assert [primary.matches(s) for s in lines] == [True, False]
    assert [startup.matches(s) for s in lines] == [False, True]
