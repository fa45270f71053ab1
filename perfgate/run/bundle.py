"""Read a benchmark's JSON output: the metric at a dotted path and its statistics.

The demo driver and the Isaac Lab driver both write a RuntimeBundle; the command
driver writes whatever JSON its program writes. All of them are read here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config import Metric
from perfgate.util import jsonfile
from perfgate.util.jsonfile import finite_number

_MISSING = object()


class OutputError(Exception):
    """The benchmark's output cannot be read; the message says why."""


@dataclass(frozen=True, kw_only=True)
class MetricStats:
    """The figure and, where the output carries them, its spread over measured steps."""

    value: float | None
    std: float | None = None
    min: float | None = None
    max: float | None = None


def load_json(path: Path) -> Any:
    """Parse a JSON output file within size and depth limits; any problem raises OutputError."""
    if not path.exists():
        raise OutputError(f"result file {path} was not written")
    try:
        return jsonfile.read(path)
    except jsonfile.JsonError as exc:
        raise OutputError(f"result file {path} is not valid JSON: {exc}") from None


def dig(data: Any, dotted: str) -> Any:
    """The value at ``a.b.c``; ``_MISSING`` sentinel is hidden: returns None when absent."""
    value = _dig(data, dotted)
    return None if value is _MISSING else value


def _dig(data: Any, dotted: str) -> Any:
    current = data
    for part in dotted.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def metric_stats(data: Any, dotted: str) -> MetricStats:
    """Read the metric; for a ``...mean`` or ``...median`` path the sibling spread comes along."""
    value = finite_number(dig(data, dotted))
    parent_path, _, leaf = dotted.rpartition(".")
    siblings = dig(data, parent_path) if parent_path and leaf in ("mean", "median") else None
    if not isinstance(siblings, Mapping):
        return MetricStats(value=value)
    return MetricStats(
        value=value,
        std=finite_number(siblings.get("std")),
        min=finite_number(siblings.get("min")),
        max=finite_number(siblings.get("peak", siblings.get("max"))),
    )


def finite_figures(data: Any, paths: tuple[str, ...]) -> dict[str, float]:
    """The finite numbers found at ``paths``, keyed by path (absent or non-finite left out)."""
    found = {path: finite_number(dig(data, path)) for path in paths}
    return {path: value for path, value in found.items() if value is not None}


def metric_values(data: Any, metrics: tuple[Metric, ...]) -> dict[str, float]:
    """Each metric's finite figure by name (a sum needs every part); absent ones left out."""
    found = {}
    for metric in metrics:
        parts = [finite_number(dig(data, path)) for path in metric.paths]
        if all(part is not None for part in parts):
            found[metric.name] = math.fsum(part for part in parts if part is not None)
    return found


def launch_mismatches(data: Any, expected: Mapping[str, Any]) -> list[str]:
    """Each dotted path whose echoed value differs from what was requested."""
    problems = []
    for dotted, want in expected.items():
        got = _dig(data, dotted)
        if got is _MISSING:
            problems.append(f"{dotted} missing (requested {want!r})")
        elif got != want:
            problems.append(f"{dotted}={got!r} (requested {want!r})")
    return problems
