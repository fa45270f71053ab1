"""hyperfine's ``--export-json``: each run's wall-clock time of a command, in seconds (lower
is better).

hyperfine 1.x keeps them in ``times`` (and ``exit_codes``), 2.x in ``measurements`` with
their units. A command is named by ``--command-name`` where given, else by its text. A run
that exited non-zero (kept with ``--ignore-failure``) is a failed benchmark.
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
from perfgate.run.drivers.adapters.units import is_time, spelled
from perfgate.util.jsonfile import finite_number

TOOL = "hyperfine"


def recognises(data: Any) -> bool:
    """True for a hyperfine JSON export."""
    results = data.get("results") if isinstance(data, dict) else None
    return isinstance(results, list) and all(
        isinstance(r, dict) and "command" in r for r in results
    )


def read(path: Path) -> Suite:
    """Every command of the export at ``path``."""
    data = load(path, TOOL)
    if not recognises(data):
        raise wrong_shape(path, TOOL, "no 'results' list of objects with a 'command'")
    metric = data.get("primary_metric", "time_wall_clock")
    return tuple(
        _benchmark(entry, f"results[{index}]", str(metric))
        for index, entry in enumerate(data["results"])
    )


def _benchmark(entry: dict[str, Any], where: str, metric: str) -> Benchmark:
    name = str(entry.get("name") or entry["command"])
    if "measurements" in entry:
        return _measured(name, entry["measurements"], f"{where}.measurements", metric)
    codes = entry.get("exit_codes") or []
    failed = [code for code in codes if code not in (0, None)]
    if failed:
        return failure(name, "s", f"{where}.exit_codes: {len(failed)} run(s) exited {failed[0]}")
    samples, problem = finite_samples(entry.get("times"), f"{where}.times")
    if problem:
        return failure(name, "s", problem)
    if not samples:
        return failure(name, "s", f"{where}.times is empty")
    return Benchmark(name=name, unit="s", direction=Direction.LOWER, samples=samples)


def _measured(name: str, runs: Any, where: str, metric: str) -> Benchmark:
    if not isinstance(runs, list) or not runs:
        return failure(name, "s", f"{where} is not a list of runs")
    samples, unit = [], None
    for index, run in enumerate(runs):
        here = f"{where}[{index}]"
        if not isinstance(run, dict):
            return failure(name, "s", f"{here} is not an object")
        if run.get("exit_code") not in (0, None):
            return failure(name, "s", f"{here}.exit_code: the run exited {run['exit_code']}")
        figure = run.get(metric)
        value = finite_number(figure.get("value")) if isinstance(figure, dict) else None
        if value is None or not isinstance(figure, dict):
            return failure(name, "s", f"{here}.{metric}.value is missing or not a finite number")
        unit = unit or spelled(str(figure.get("unit", "second")))
        if spelled(str(figure.get("unit", "second"))) != unit or not is_time(unit):
            return failure(
                name,
                unit,
                f"{here}.{metric}.unit {figure.get('unit')!r} is not a time "
                "hyperfine writes (second), or differs between runs",
            )
        samples.append(value)
    return Benchmark(name=name, unit=unit or "s", direction=Direction.LOWER, samples=tuple(samples))
