"""Build Result objects inline for tests of the oracle, the gate and the store."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from perfgate.baselines.ledger import SpendRecord
from perfgate.config import PRIMARY, Config, Direction, Metric
from perfgate.identity import stable_hash
from perfgate.judge.judgement import MetricCheck, MetricKey, MetricWindow
from perfgate.result import (
    BucketRef,
    CiInfo,
    FailurePhase,
    Hardware,
    Health,
    IdentityRecord,
    MetricReading,
    Result,
    SampleReading,
    Source,
    Spend,
    SpendKind,
    SpendLine,
    StaleImage,
    Timings,
)
from perfgate.run.launch import benchmark_identity, launch_identity
from tests.paths import FIXTURES


def make_result(
    bucket_id: str = "cartpole/numpy",
    value: float | None = 100.0,
    *,
    samples: Sequence[float] = (),
    direction: Direction = Direction.HIGHER,
    exit_code: int | None = 0,
    phase: FailurePhase | None = None,
    attempts: int = 1,
    error: str | None = None,
    config_mismatch: str | None = None,
    stale_image: StaleImage | None = None,
    commit: str = "c" * 40,
    branch: str = "main",
    target_branch: str = "main",
    event: str = "push",
    hardware: str = "cpu-test",
    run_id: str | None = "1",
    run_attempt: str | None = "1",
    launch_hash: str = "a" * 16,
    epoch: int = 1,
    finished_at: str = "2026-11-30T00:00:01+00:00",
    **overrides: Any,
) -> Result:
    """A healthy result by default; keyword arguments change one aspect at a time.

    ``samples`` gives the run several samples (the figure is then their median); without
    them the result has its one figure, as artifacts from before repeats had.
    """
    task, backend = bucket_id.split("/")
    result = Result(
        bucket=BucketRef(
            id=bucket_id,
            task=task,
            backend_key=backend,
            physics=backend,
            render=None,
            driver="demo",
            tags=("always",),
            baseline_epoch=epoch,
        ),
        hardware=Hardware(slug=hardware, cpu_name="test cpu"),
        source=Source(commit=commit, branch=branch, target_branch=target_branch, event=event),
        ci=CiInfo(run_id=run_id, run_attempt=run_attempt),
        identity=IdentityRecord(
            launch_hash=launch_hash,
            benchmark_hash="b" * 16,
            runtime_hash="d" * 16,
            launch={},
            benchmark={},
            runtime={"fields": {}},
        ),
        metric=MetricReading(
            path="runtime.total_fps.mean",
            direction=direction,
            unit="u",
            value=statistics.median(samples) if samples else value,
            samples=tuple(
                SampleReading(sample_index=index, value=sample)
                for index, sample in enumerate(samples)
            ),
        ),
        health=Health(
            exit_code=exit_code,
            phase=phase,
            timed_out=phase is FailurePhase.HANG,
            attempts=attempts,
            retried=attempts > 1,
            config_mismatch=config_mismatch,
            error=error,
            stale_image=stale_image,
        ),
        timings=Timings(
            started_at="2026-11-30T00:00:00+00:00", finished_at=finished_at, wall_s=1.0
        ),
        perfgate_version="test",
    )
    return replace(result, **overrides)


def windows_of(runs: Mapping[str, Any], metric: str = PRIMARY) -> dict[MetricKey, MetricWindow]:
    """Each bucket's window of ``metric``: its runs (by bucket id), nothing else known."""
    return {MetricKey(bucket, metric): MetricWindow(runs=window) for bucket, window in runs.items()}


def primary_check(runs: Any, **fields: Any) -> MetricCheck:
    """What a result's primary metric is judged with: ``runs``, and ``fields`` (a policy)."""
    window = MetricWindow(runs=runs, runners=fields.pop("runners", None))
    return MetricCheck(metric=Metric(), window=window, **fields)


def with_metric(
    result: Result,
    name: str,
    samples: Sequence[float],
    *,
    direction: Direction = Direction.LOWER,
    path: str = "runtime.startup_time_s.env_creation",
    unit: str = "s",
) -> Result:
    """``result`` with one further metric, measured by the same samples (same indices)."""
    reading = MetricReading(
        path=path,
        direction=direction,
        unit=unit,
        value=statistics.median(samples) if samples else None,
        samples=tuple(
            SampleReading(sample_index=index, value=sample) for index, sample in enumerate(samples)
        ),
    )
    return replace(result, metrics={**result.metrics, name: reading})


def of_experiment(result: Result, config: Config) -> Result:
    """``result`` as a run of its bucket in ``config`` records it: the launch and benchmark
    identity (and so the hashes) and the baseline epoch a bench of that config gives."""
    bucket = next(b for b in config.buckets if b.id == result.bucket.id)
    launch, benchmark = launch_identity(bucket), benchmark_identity(bucket)
    identity = replace(
        result.identity,
        launch=launch,
        benchmark=benchmark,
        launch_hash=stable_hash(launch),
        benchmark_hash=stable_hash(benchmark),
    )
    return replace(
        result,
        identity=identity,
        bucket=replace(result.bucket, baseline_epoch=bucket.baseline_epoch),
    )


def fake_matrix(directory: Path, mode: str, backends: Sequence[str], **defaults: Any) -> Path:
    """A perfgate.yaml in ``directory`` of one command task that runs
    ``tests/fixtures/fake_benchmark.py MODE`` once a sample, a bucket per backend, each
    backend keeping its own state (attempt counter); ``defaults`` join its defaults."""
    document = {
        "version": 1,
        "defaults": {
            "driver": "command",
            "timeout_minutes": 1,
            "repeats": 1,
            **defaults,
            "metric": {"path": "results.throughput.mean", "direction": "higher", "unit": "it/s"},
        },
        "buckets": [
            {
                "task": "fake",
                "backends": [{"physics": name} for name in backends],
                "command": {
                    "argv": [
                        sys.executable,
                        str(FIXTURES / "fake_benchmark.py"),
                        mode,
                        "{output_dir}/result.json",
                        str(directory / "state-{backend}"),
                    ],
                    "output": "{output_dir}/result.json",
                },
            }
        ],
    }
    path = directory / "perfgate.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def make_spend(setup_s: float = 0.0, launches: int = 2, launch_s: float = 600.0,
               **more: float) -> Spend:  # fmt: skip
    """A bucket run's spend: its setup, ``launches`` measured launches of ``launch_s``, and
    one launch of each other kind named (``retry=600.0``)."""
    lines = {SpendKind.MEASURE: SpendLine(launches=launches, seconds=launches * launch_s)}
    if setup_s:
        lines[SpendKind.SETUP] = SpendLine(seconds=setup_s)
    for kind, seconds in more.items():
        lines[SpendKind(kind)] = SpendLine(launches=1, seconds=seconds)
    return Spend(lines=lines)


def make_spend_record(run: str, bucket: str, day: str, spend: Spend) -> SpendRecord:
    """A ledger line of CI run ``run``'s ``bucket`` on an L40S, finished on ``day``."""
    finished_at = f"{day}T10:00:00+00:00"
    return SpendRecord(run=run, bucket=bucket, hardware="l40s", commit="c" * 40,
                       finished_at=finished_at, runner="gpu-1", spend=spend)  # fmt: skip
