"""asv's results file of one machine (``results/MACHINE/COMMIT-ENV.json``, format 2): each
benchmark's result, or its samples where asv recorded them (``--record-samples``).

A parameterised benchmark is one benchmark per combination, named as asv shows it:
``module.time_x(10, 'a')``. Units come from ``results/benchmarks.json`` where it lies beside
the machine's folder, else from the name (``time_``: seconds, ``mem_``/``peakmem_``: bytes).
asv counts a rise as a regression for every kind, so lower is better. A failed benchmark's
result is null.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from perfgate.config import Direction
from perfgate.run.drivers.adapters.base import (
    Benchmark,
    Suite,
    SuiteError,
    failure,
    finite_samples,
    load,
    wrong_shape,
)
from perfgate.run.drivers.adapters.units import spelled
from perfgate.util.jsonfile import finite_number

TOOL = "asv"
# The unit of a benchmark by the prefix of its name, when benchmarks.json is not at hand.
PREFIX_UNITS = {"time_": "s", "timeraw_": "s", "mem_": "bytes", "peakmem_": "bytes"}


def recognises(data: Any) -> bool:
    """True for an asv results file."""
    return isinstance(data, dict) and "result_columns" in data and "results" in data


def read(path: Path) -> Suite:
    """Every benchmark of the results file at ``path``."""
    declared = path.parent.parent / "benchmarks.json"
    units = declared_units(load(declared, TOOL)) if declared.is_file() else {}
    return parse(load(path, TOOL), path, units)


def declared_units(data: Any) -> dict[str, str]:
    """Each benchmark's unit as ``benchmarks.json`` declares it."""
    if not isinstance(data, dict):
        return {}
    return {
        name: spelled(str(entry["unit"]))
        for name, entry in data.items()
        if isinstance(entry, dict) and isinstance(entry.get("unit"), str)
    }


def parse(data: Any, path: Path, units: dict[str, str] | None = None) -> Suite:
    """Every benchmark of a loaded results file (``units`` from benchmarks.json)."""
    if isinstance(data, dict) and "machine" in data and "results" not in data:
        raise SuiteError(
            f"{path} is asv's machine file, not a results file; point command.output at "
            "results/MACHINE/COMMIT-ENV.json (e.g. '{output_dir}/results/*/*-*.json')"
        )
    if not recognises(data) or not isinstance(data["results"], dict):
        raise wrong_shape(path, TOOL, "no 'result_columns' and 'results' object")
    if data.get("version") != 2:
        raise SuiteError(
            f"{path}: results format version {data.get('version')!r} is not 2; run asv 0.5 "
            "or newer, which writes format 2"
        )
    columns = data["result_columns"]
    found: list[Benchmark] = []
    for name, row in data["results"].items():
        if not isinstance(row, list) or not isinstance(columns, list):
            raise wrong_shape(path, TOOL, f"results[{name!r}] is not a list of columns")
        fields = dict(zip(columns, row, strict=False))
        unit = (units or {}).get(name) or _unit_by_prefix(name)
        found.extend(_combinations(name, fields, unit))
    return tuple(found)


def _unit_by_prefix(name: str) -> str:
    leaf = name.rpartition(".")[2]
    return next((u for prefix, u in PREFIX_UNITS.items() if leaf.startswith(prefix)), "unit")


def _combinations(name: str, fields: dict[str, Any], unit: str) -> list[Benchmark]:
    """One benchmark per parameter combination (one for an unparameterised benchmark)."""
    where = f"results[{name!r}]"
    params = fields.get("params") or []
    combos = [", ".join(map(str, combo)) for combo in itertools.product(*params)] if params else []
    names = [f"{name}({combo})" for combo in combos] or [name]
    results = fields.get("result")
    if results is None:
        return [failure(n, unit, f"{where}.result is null: the benchmark failed") for n in names]
    if not isinstance(results, list) or len(results) != len(names):
        return [
            failure(n, unit, f"{where}.result does not hold one value per parameter combination")
            for n in names
        ]
    samples = fields.get("samples")
    found = []
    for index, benchmark in enumerate(names):
        value = finite_number(results[index])
        if value is None:
            found.append(
                failure(
                    benchmark,
                    unit,
                    f"{where}.result[{index}] is {results[index]!r}: the benchmark failed",
                )
            )
            continue
        recorded = samples[index] if isinstance(samples, list) and index < len(samples) else None
        rounds, problem = finite_samples(recorded or [], f"{where}.samples[{index}]")
        if problem:
            found.append(failure(benchmark, unit, problem))
        elif rounds:
            found.append(
                Benchmark(name=benchmark, unit=unit, direction=Direction.LOWER, samples=rounds)
            )
        else:
            found.append(
                Benchmark(name=benchmark, unit=unit, direction=Direction.LOWER, summary=value)
            )
    return found
