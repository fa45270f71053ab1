"""github-action-benchmark's ``customSmallerIsBetter`` / ``customBiggerIsBetter`` JSON: a list
of ``{name, unit, value, range?, extra?}``, one figure each, the direction the format's name
says. ``range`` and ``extra`` are text for people: not read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.config import Direction
from perfgate.run.drivers.adapters.base import Benchmark, Suite, load, wrong_shape
from perfgate.run.drivers.adapters.units import spelled
from perfgate.util.jsonfile import finite_number


def recognises(data: Any) -> bool:
    """True for a list of ``{name, value, ...}`` entries."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(e, dict) and "name" in e and "value" in e for e in data)
    )


def read(path: Path, direction: Direction) -> Suite:
    """Every entry of the file at ``path``, better in ``direction``."""
    tool = "customBiggerIsBetter" if direction is Direction.HIGHER else "customSmallerIsBetter"
    data = load(path, tool)
    if not recognises(data):
        raise wrong_shape(path, tool, "not a list of objects with 'name', 'unit' and 'value'")
    return tuple(_benchmark(entry, f"[{index}]", direction) for index, entry in enumerate(data))


def _benchmark(entry: dict[str, Any], where: str, direction: Direction) -> Benchmark:
    name, unit = str(entry["name"]), entry.get("unit")
    if not isinstance(unit, str) or not unit.strip():
        return Benchmark(
            name=name, unit="", direction=direction, error=f"{where}.unit is missing or empty"
        )
    value = finite_number(entry["value"])
    if value is None:
        return Benchmark(
            name=name,
            unit=spelled(unit),
            direction=direction,
            error=f"{where}.value is {entry['value']!r}, not a finite number",
        )
    return Benchmark(name=name, unit=spelled(unit), direction=direction, summary=value)
