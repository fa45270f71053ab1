"""Benchmark tools' output read as named benchmarks: a ``command`` bucket's
``format`` picks the adapter, each of its metrics one benchmark by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from perfgate.config import Direction, Metric, OutputFormat
from perfgate.run.bundle import MetricStats
from perfgate.run.drivers.adapters import (
    asv,
    criterion,
    custom,
    google_benchmark,
    hyperfine,
    pyperf,
    pytest_benchmark,
)
from perfgate.run.drivers.adapters.base import Suite, SuiteError, WrongFormat, load
from perfgate.run.drivers.adapters.units import convert

# Names listed when a benchmark is not found, at most.
LISTED = 20


@dataclass(frozen=True, kw_only=True)
class Adapter:
    """How one format's files are read, and told apart from other formats' files."""

    read: Callable[[Path], Suite]
    recognises: Callable[[Any], bool]


ADAPTERS: dict[OutputFormat, Adapter] = {
    OutputFormat.PYTEST_BENCHMARK: Adapter(
        read=pytest_benchmark.read, recognises=pytest_benchmark.recognises
    ),
    OutputFormat.GOOGLE_BENCHMARK: Adapter(
        read=google_benchmark.read, recognises=google_benchmark.recognises
    ),
    OutputFormat.HYPERFINE: Adapter(read=hyperfine.read, recognises=hyperfine.recognises),
    OutputFormat.PYPERF: Adapter(read=pyperf.read, recognises=pyperf.recognises),
    OutputFormat.ASV: Adapter(read=asv.read, recognises=asv.recognises),
    OutputFormat.CRITERION: Adapter(read=criterion.read, recognises=criterion.recognises),
    OutputFormat.CUSTOM_SMALLER: Adapter(
        read=partial(custom.read, direction=Direction.LOWER), recognises=custom.recognises
    ),
    OutputFormat.CUSTOM_BIGGER: Adapter(
        read=partial(custom.read, direction=Direction.HIGHER), recognises=custom.recognises
    ),
}


def read(output_format: OutputFormat, path: Path) -> Suite:
    """Every benchmark the ``output_format`` file at ``path`` reports; SuiteError says why
    it cannot be read (and which format the file looks like, when it is another's)."""
    try:
        return ADAPTERS[output_format].read(path)
    except WrongFormat as exc:
        raise SuiteError(f"{exc}{_looks_like(path, output_format)}") from None


def _looks_like(path: Path, declared: OutputFormat) -> str:
    """``; it looks like X output: ...`` when another format recognises the file."""
    try:
        data = load(path, str(declared))
    except SuiteError:
        return ""
    others = [f for f, a in ADAPTERS.items() if f is not declared and a.recognises(data)]
    if not others:
        return ""
    return f"; it looks like {' or '.join(others)} output: set command.format to match"


def figure(suite: Suite, metric: Metric, path: Path) -> MetricStats:
    """``metric``'s figure: its benchmark's, in the metric's unit (SuiteError says why not)."""
    name = metric.path
    found = [benchmark for benchmark in suite if benchmark.name == name]
    if not found:
        names = ", ".join(repr(b.name) for b in suite[:LISTED]) or "none"
        more = f" and {len(suite) - LISTED} more" if len(suite) > LISTED else ""
        raise SuiteError(
            f"{path}: no benchmark named {name!r}; the file has {names}{more}: set the "
            "metric's benchmark to one of them"
        )
    if len(found) > 1:
        raise SuiteError(
            f"{path}: {len(found)} benchmarks are named {name!r}; give them distinct names"
        )
    benchmark = found[0]
    if benchmark.error is not None:
        raise SuiteError(f"{path}: benchmark {name!r} failed: {benchmark.error}")
    if benchmark.direction is not metric.direction:
        raise SuiteError(
            f"{path}: benchmark {name!r} is better {benchmark.direction}, the metric "
            f"{metric.name!r} says {metric.direction}; set its direction to {benchmark.direction}"
        )
    factor = convert(1.0, benchmark.unit, metric.unit)
    if factor is None:
        raise SuiteError(
            f"{path}: benchmark {name!r} reports {benchmark.unit!r}, the metric "
            f"{metric.name!r} is in {metric.unit!r}; set its unit to {benchmark.unit!r} "
            "(a metric in another unit starts new baselines)"
        )
    stats = benchmark.stats()
    if stats.value is None:
        raise SuiteError(f"{path}: benchmark {name!r} has no figure")
    return MetricStats(
        value=stats.value * factor,
        std=_scaled(stats.std, factor),
        min=_scaled(stats.min, factor),
        max=_scaled(stats.max, factor),
    )


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
