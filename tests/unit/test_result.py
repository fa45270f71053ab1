"""The result artifact: several metrics read back as written, older artifacts unchanged, and
the compiled schema in front of jsonschema."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate import jsonfile
from perfgate.config import PRIMARY, load_config
from perfgate.identity import Identity, stable_hash
from perfgate.result import (
    AdmissionStatus,
    GpuReading,
    IdentityRecord,
    MachineState,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    Result,
    SampleAdmission,
    Sampling,
    SamplingStop,
    StaleImage,
    read_result,
    validate_result,
    write_result,
)
from perfgate.run.bench import benchmark_identity, launch_identity
from tests.factories import make_result, with_metric
from tests.paths import CORPUS, ROOT


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


def _every_part_set() -> dict[str, Any]:
    """An artifact with every optional part: metrics, sampling, admission, pairs, stale image."""
    state = MachineState(gpus=(GpuReading(index=0, sm_mhz=2520, throttle_reasons=()),),
                         driver_version="550.1", load_1m=0.5, cpus=8)  # fmt: skip
    admitted = SampleAdmission(sample_index=0, status=AdmissionStatus.ADMITTED, before=state,
                               after=state)  # fmt: skip
    result = replace(
        with_metric(make_result(samples=(100.0, 101.0)), "startup_s", (10.0, 10.2)),
        sampling=Sampling(confirm="paired", repeats=2, max_repeats=10,
                          stopped=SamplingStop.SETTLED),
        admission=(admitted,),
        paired=PairedRecord(
            status=PairedStatus.MEASURED, base_commit="e" * 40, max_pairs=4,
            samples=(PairedSample(sample_index=0, pair=0, side=PairedSide.BASE, value=99.0,
                                  metrics={"startup_s": 10.1}, admission=admitted),),
            stopped=PairedStop.SETTLED,
        ),
        health=replace(make_result().health, stale_image=StaleImage(
            package="isaacsim", symbol="X", installed="4.5", pinned="5.0")),
    )  # fmt: skip
    data: dict[str, Any] = result.to_json()
    return data


def _mutations(data: Any) -> Iterator[Any]:
    """``data`` changed in one place each time: every value swapped for values of every
    JSON type, every key dropped, an unknown key added to every object."""
    others: list[Any] = [None, True, 0, -1, 1.0, 2.5, 10**30, "", "x", "a/b\n", [], {}]
    if isinstance(data, dict):
        yield {**data, "unexpected": 1}
        for key, value in data.items():
            yield {k: v for k, v in data.items() if k != key}
            for other in others:
                yield {**data, key: other}
            for changed in _mutations(value):
                yield {**data, key: changed}
    elif isinstance(data, list):
        for at, value in enumerate(data):
            for changed in _mutations(value):
                yield [*data[:at], changed, *data[at + 1 :]]


def test_the_compiled_schema_never_clears_an_artifact_jsonschema_refuses() -> None:
    """The fast check in front of jsonschema lets through only what jsonschema accepts."""
    full = jsonfile.validator("result")
    documents = [_every_part_set(), *_mutations(_every_part_set())]
    for path in sorted((CORPUS / "artifacts").glob("*.json")):
        with contextlib.suppress(jsonfile.JsonError):
            documents.append(jsonfile.read(path))
    verdicts = [(jsonfile.conforms("result", doc), full.is_valid(doc)) for doc in documents]
    assert [slow for fast, slow in verdicts if fast and not slow] == []
    # Both answers occur, so the check is exercised both ways.
    assert sum(fast for fast, _ in verdicts) > 100
    assert sum(not fast for fast, _ in verdicts) > 100


def test_what_the_compiled_schema_refuses_jsonschema_judges_with_its_own_words() -> None:
    # A pattern's "$" lets a final newline through in Python's re, not in the compiled
    # schema; a string no UTF-8 can hold (a lone surrogate, as the escape \ud800 makes it)
    # it cannot take at all. Both go to jsonschema, which answers as it always did.
    newline = jsonfile.read(CORPUS / "artifacts" / "hardware-slug-newline.json")
    surrogate = make_result().to_json()
    surrogate["bucket"]["id"] = "a\ud800/b"
    for data in (newline, surrogate):
        assert not jsonfile.conforms("result", data)
        assert validate_result(data) == []
