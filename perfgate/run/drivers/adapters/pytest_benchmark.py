"""pytest-benchmark's ``--benchmark-json``: each test's rounds, in seconds (lower is better).

A test whose benchmark raised is left out of the file by pytest-benchmark (and fails the
run): it is not in the names the file has.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from perfgate.config import Direction
from perfgate.run.drivers.adapters.base import (
    Benchmark,
    Suite,
    failure,
    finite_samples,
    load,
    wrong_shape,
)
from perfgate.util.jsonfile import finite_number

TOOL = "pytest-benchmark"


def recognises(data: Any) -> bool:
    """True for a pytest-benchmark JSON report."""
    return isinstance(data, dict) and "machine_info" in data and "benchmarks" in data


def read(path: Path) -> Suite:
    """Every benchmark of the report at ``path``; a name two tests share is their ``fullname``."""
    data = load(path, TOOL)
    entries = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise wrong_shape(path, TOOL, "no 'benchmarks' list of objects")
    shared = Counter(entry.get("name") for entry in entries)
    return tuple(
        _benchmark(entry, index, shared[entry.get("name")] > 1)
        for index, entry in enumerate(entries)
    )


def _benchmark(entry: dict[str, Any], index: int, ambiguous: bool) -> Benchmark:
    name = str(entry.get("fullname" if ambiguous else "name") or f"benchmarks[{index}]")
    where = f"benchmarks[{index}].stats"
    stats = entry.get("stats")
    if not isinstance(stats, dict):
        return failure(name, "s", f"{where} is missing (the benchmark did not run)")
    if "data" in stats:
        # Each round's time for one iteration (pytest-benchmark divides by iterations).
        samples, problem = finite_samples(stats["data"], f"{where}.data")
        if problem:
            return failure(name, "s", problem)
        if samples:
            return Benchmark(name=name, unit="s", direction=Direction.LOWER, samples=samples)
    median = finite_number(stats.get("median"))
    if median is None:
        return failure(name, "s", f"{where}.median is {stats.get('median')!r}, not a finite number")
    return Benchmark(name=name, unit="s", direction=Direction.LOWER, summary=median)
