"""What an adapter reads from a benchmark tool's output: named benchmarks, each with its
unit, direction, samples and error."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config import Direction
from perfgate.run.bundle import MetricStats, OutputError
from perfgate.util import jsonfile
from perfgate.util.jsonfile import finite_number


class SuiteError(OutputError):
    """A tool's output cannot give a bucket's figure; the message names the file, the field
    or benchmark, and the fix."""


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """One named benchmark of a tool's output, in the tool's own unit and direction."""

    name: str
    unit: str
    direction: Direction
    # The tool's per-round or per-repetition figures, finite, in ``unit``.
    samples: tuple[float, ...] = ()
    # The tool's own central figure, for output that keeps no rounds.
    summary: float | None = None
    # Why the tool says this benchmark failed (or what its entry lacks); None when it ran.
    error: str | None = None

    def stats(self) -> MetricStats:
        """The median of the samples with their spread, else the tool's own figure."""
        if not self.samples:
            return MetricStats(value=self.summary)
        several = len(self.samples) > 1
        return MetricStats(
            value=statistics.median(self.samples),
            std=statistics.stdev(self.samples) if several else None,
            min=min(self.samples) if several else None,
            max=max(self.samples) if several else None,
        )


def failure(name: str, unit: str, error: str) -> Benchmark:
    """A lower-is-better benchmark the tool reports failed (or whose entry lacks a figure)."""
    return Benchmark(name=name, unit=unit, direction=Direction.LOWER, error=error)


#: Every benchmark one output file reports, in the tool's order.
Suite = tuple[Benchmark, ...]


def load(path: Path, tool: str) -> Any:
    """The JSON of ``path`` (NaN and Infinity read as floats: tools write them; a reader
    checks each number it uses)."""
    if not path.is_file():
        raise SuiteError(f"{path} was not written; check that {tool} writes to command.output")
    try:
        return jsonfile.read(path, non_finite=True)
    except jsonfile.JsonError as exc:
        raise SuiteError(
            f"{path} is not {tool} output: {exc}; a truncated file means the benchmark was "
            "stopped while writing it (see its log)"
        ) from None


def load_lines(path: Path, tool: str) -> list[Any]:
    """Each non-empty line of ``path`` as JSON (a tool's stream of JSON messages)."""
    if not path.is_file():
        raise SuiteError(f"{path} was not written; check that {tool} writes to command.output")
    try:
        text = jsonfile.read_text(path)
    except jsonfile.JsonError as exc:
        raise SuiteError(f"{path} cannot be read: {exc}") from None
    found = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append(jsonfile.loads(line, non_finite=True))
        except jsonfile.JsonError as exc:
            raise SuiteError(
                f"{path}: line {lineno} is not {tool} output: {exc}; a truncated last line "
                "means the benchmark was stopped while writing it (see its log)"
            ) from None
    return found


class WrongFormat(SuiteError):
    """The file is not the declared tool's output at all."""


def wrong_shape(path: Path, tool: str, expected: str) -> WrongFormat:
    """The error for a file that is not ``tool``'s output at all."""
    return WrongFormat(
        f"{path} is not {tool} output ({expected}); check command.format and command.output"
    )


def finite_samples(values: Any, field: str) -> tuple[tuple[float, ...], str | None]:
    """A list of numbers as finite floats, or the problem naming the first bad entry."""
    if not isinstance(values, Sequence) or isinstance(values, str):
        return (), f"{field} is not a list of numbers"
    found = []
    for index, value in enumerate(values):
        figure = finite_number(value)
        if figure is None:
            return (), f"{field}[{index}] is {value!r}, not a finite number"
        found.append(figure)
    return tuple(found), None
