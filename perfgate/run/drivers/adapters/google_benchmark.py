"""Google Benchmark's ``--benchmark_format=json`` / ``--benchmark_out``: each repetition's
real time in the benchmark's ``time_unit`` (lower is better).

Aggregate rows (mean, median, stddev, cv, ...) are read only for a benchmark that has no
repetition rows (``--benchmark_report_aggregates_only``): its median, else its mean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.config import Direction
from perfgate.run.drivers.adapters.base import Benchmark, Suite, failure, load, wrong_shape
from perfgate.run.drivers.adapters.units import SECONDS
from perfgate.util.jsonfile import finite_number

TOOL = "google-benchmark"


def recognises(data: Any) -> bool:
    """True for a Google Benchmark JSON report."""
    return isinstance(data, dict) and "context" in data and "benchmarks" in data


def read(path: Path) -> Suite:
    """Every benchmark of the report at ``path``, its rows grouped by ``run_name``."""
    data = load(path, TOOL)
    entries = data.get("benchmarks") if recognises(data) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise wrong_shape(path, TOOL, "no 'context' and 'benchmarks' list of objects")
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for index, entry in enumerate(entries):
        name = entry.get("run_name", entry.get("name"))
        rows.setdefault(str(name), []).append((index, entry))
    return tuple(_benchmark(name, runs) for name, runs in rows.items())


def _benchmark(name: str, rows: list[tuple[int, dict[str, Any]]]) -> Benchmark:
    failed = [(i, row) for i, row in rows if row.get("error_occurred") or row.get("skipped")]
    if failed:
        index, row = failed[0]
        message = row.get("error_message") or row.get("skip_message") or "no message"
        return failure(name, "s", f"benchmarks[{index}] reports an error: {message}")
    repetitions = [(i, row) for i, row in rows if row.get("run_type", "iteration") == "iteration"]
    if not repetitions:
        by_kind = {row.get("aggregate_name"): (i, row) for i, row in rows}
        chosen = by_kind.get("median") or by_kind.get("mean")
        if chosen is None:
            return failure(name, "s", "has neither repetition rows nor a median or mean row")
        repetitions = [chosen]
    unit = str(repetitions[0][1].get("time_unit", "ns"))
    if unit not in SECONDS:
        return failure(
            name, unit, f"time_unit {unit!r} is not one Google Benchmark writes (ns, us, ms, s)"
        )
    samples = []
    for index, row in repetitions:
        value = finite_number(row.get("real_time"))
        if value is None or row.get("time_unit", "ns") != unit:
            return failure(
                name,
                unit,
                f"benchmarks[{index}].real_time is {row.get('real_time')!r} "
                f"{row.get('time_unit', 'ns')}, not a finite number in {unit}",
            )
        samples.append(value)
    return Benchmark(name=name, unit=unit, direction=Direction.LOWER, samples=tuple(samples))
