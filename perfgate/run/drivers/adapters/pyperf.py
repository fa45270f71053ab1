"""pyperf's JSON (``-o FILE``): each run's values after its warmups,
in the benchmark's unit (second, byte or integer; lower is better, as pyperf compares).

Calibration runs hold warmups and no values: they add no sample.
"""

from __future__ import annotations

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

TOOL = "pyperf"
# The units pyperf writes, by perfgate's spelling of them.
UNITS = {"second": "s", "byte": "bytes", "integer": "integer"}


def recognises(data: Any) -> bool:
    """True for a pyperf file (a suite of one benchmark or more)."""
    return isinstance(data, dict) and "version" in data and isinstance(data.get("benchmarks"), list)


def read(path: Path) -> Suite:
    """Every benchmark of the pyperf file at ``path`` (metadata: the suite's, then its own)."""
    data = load(path, TOOL)
    if not recognises(data):
        raise wrong_shape(path, TOOL, "no 'version' with a 'benchmarks' list")
    entries = data["benchmarks"]
    common = _metadata(data)
    return tuple(
        _benchmark(entry, f"benchmarks[{index}]", common) for index, entry in enumerate(entries)
    )


def _benchmark(entry: Any, where: str, common: dict[str, Any]) -> Benchmark:
    if not isinstance(entry, dict):
        return failure(where, "s", f"{where} is not an object")
    metadata = {**common, **_metadata(entry)}
    name = str(metadata.get("name", where))
    unit = str(metadata.get("unit", "second"))
    if unit not in UNITS:
        return failure(
            name,
            unit,
            f"{where}.metadata.unit {unit!r} is not one pyperf writes ({', '.join(UNITS)})",
        )
    runs = entry.get("runs")
    if not isinstance(runs, list):
        return failure(name, UNITS[unit], f"{where}.runs is not a list")
    samples: list[float] = []
    for index, run in enumerate(runs):
        if not isinstance(run, dict) or "values" not in run:
            continue  # a calibration run: warmups only
        values, problem = finite_samples(run["values"], f"{where}.runs[{index}].values")
        if problem:
            return failure(name, UNITS[unit], problem)
        samples.extend(values)
    if not samples:
        return failure(name, UNITS[unit], f"{where}.runs hold no values (calibration only)")
    return Benchmark(name=name, unit=UNITS[unit], direction=Direction.LOWER, samples=tuple(samples))


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    found = data.get("metadata")
    return found if isinstance(found, dict) else {}
