"""github-action-benchmark's ``data.js`` (its gh-pages file), or the JSON file its
``external-data-json-path`` keeps: ``entries`` maps each suite name to its runs, each
``{commit: {id, timestamp, ...}, date, tool, benches: [{name, value, unit, range?, extra?}]}``.

A run keeps one figure per benchmark, the one the action's ``tool`` extracted: the custom
tools' own ``value``, Google Benchmark's ``real_time`` per iteration (each repetition a row
of the same name). The ``pytest`` tool keeps operations per second (1 / the mean), which no
perfgate format reads (pytest-benchmark buckets read the rounds' median in seconds), and
the text-scraping tools (cargo, go, benchmarkjs, catch2, ...) have no perfgate format: their
runs are read, and said to be importable by no bucket.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.baselines.imports.history import History, HistoryError, HistoryRun, iso_from_millis
from perfgate.config import Direction, OutputFormat
from perfgate.run.drivers.adapters.base import Benchmark
from perfgate.run.drivers.adapters.units import spelled
from perfgate.util import jsonfile
from perfgate.util.jsonfile import finite_number

KIND = "github-action-benchmark"
#: What the action writes before the JSON (``SCRIPT_PREFIX`` in its source).
PREFIX = re.compile(r"\A\ufeff?\s*window\.BENCHMARK_DATA\s*=\s*")
# A long history of many suites is larger than a result artifact.
MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Tool:
    """How a github-action-benchmark tool's figures read: their direction, the bucket
    formats that read the same figure, and whether repeated rows of one name are samples."""

    direction: Direction
    formats: tuple[OutputFormat, ...] = ()
    # Google Benchmark's rows: each repetition a row of the same name, each figure in a unit
    # per iteration ("ns/iter").
    repeated_rows: bool = False


#: Every tool the action knows (``biggerIsBetter`` in its source gives the direction).
TOOLS: Mapping[str, Tool] = {
    "customSmallerIsBetter": Tool(
        direction=Direction.LOWER, formats=(OutputFormat.CUSTOM_SMALLER,)
    ),
    "customBiggerIsBetter": Tool(direction=Direction.HIGHER, formats=(OutputFormat.CUSTOM_BIGGER,)),
    "googlecpp": Tool(
        direction=Direction.LOWER, formats=(OutputFormat.GOOGLE_BENCHMARK,), repeated_rows=True
    ),
    "pytest": Tool(direction=Direction.HIGHER),
    "benchmarkjs": Tool(direction=Direction.HIGHER),
    **{
        name: Tool(direction=Direction.LOWER)
        for name in ("cargo", "go", "catch2", "julia", "jmh", "benchmarkdotnet", "benchmarkluau")
    },
}

# A tool the action does not document (a fork's): read, fed to no bucket.
UNKNOWN = Tool(direction=Direction.LOWER)

# Why a tool's runs can feed no bucket, where that is worth more than "no format reads it".
_WHY_NOT = {
    "pytest": "it kept operations per second (1 / the mean), and pytest-benchmark buckets read "
    "the rounds' median in seconds: not the same figure",
}


def read_data_js(path: Path) -> History:
    """Every run of every suite in the data.js (or data JSON) at ``path``."""
    try:
        text = jsonfile.read_text(path, max_bytes=MAX_BYTES)
    except jsonfile.JsonError as exc:
        raise HistoryError(f"{path}: {exc}; pass the data.js of the benchmark pages") from None
    prefix = PREFIX.match(text)
    body = text[prefix.end() :] if prefix else text
    body = body.rstrip().removesuffix(";")
    try:
        data = jsonfile.loads(body)
    except jsonfile.JsonError as exc:
        if prefix is None and not body.lstrip().startswith("{"):
            raise HistoryError(
                f"{path} is not github-action-benchmark's data.js: it does not start with "
                "'window.BENCHMARK_DATA = ' (nor is it the action's data JSON); pass the data.js "
                "of the benchmark pages branch (e.g. dev/bench/data.js on gh-pages)"
            ) from None
        raise HistoryError(
            f"{path}: the data after 'window.BENCHMARK_DATA =' is not whole JSON ({exc}): the "
            "file is truncated or was edited; fetch it again from the pages branch"
        ) from None
    return parse(data, str(path))


def parse(data: Any, path: str) -> History:
    """The runs of loaded data.js JSON (``path`` names the file in messages)."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise HistoryError(
            f"{path} is not github-action-benchmark data: no 'entries' object of suites; pass "
            "the data.js the action writes (window.BENCHMARK_DATA = {{lastUpdate, repoUrl, "
            "entries}})"
        )
    runs, notes = [], []
    for suite, points in data["entries"].items():
        where = f"{path}: entries[{suite!r}]"
        if not isinstance(points, list):
            raise HistoryError(f"{where} is not a list of runs: not github-action-benchmark data")
        tools = set()
        for index, point in enumerate(points):
            run = _run(point, f"{where}[{index}]", suite)
            tools.add(run.tool)
            runs.append(run)
        for tool in sorted(t for t in tools if not TOOLS.get(t, UNKNOWN).formats):
            why = _WHY_NOT.get(tool) or (
                "no perfgate format reads its figures"
                if tool in TOOLS
                else "it is not a tool github-action-benchmark documents"
            )
            notes.append(f"{where}: the {tool!r} tool's runs cannot feed any bucket: {why}")
    return History(path=path, kind=KIND, runs=tuple(runs), notes=tuple(notes))


def _run(point: Any, where: str, suite: str) -> HistoryRun:
    """One run; a field the action always writes that is missing or mistyped is an error."""
    if not isinstance(point, dict):
        raise HistoryError(f"{where} is not an object: not github-action-benchmark data")
    commit = point.get("commit")
    if not isinstance(commit, dict) or not isinstance(commit.get("id"), str) or not commit["id"]:
        raise HistoryError(
            f"{where}.commit.id is missing: every run the action writes names its commit; "
            "the file was edited or is not github-action-benchmark data"
        )
    date = finite_number(point.get("date"))
    if date is None:
        raise HistoryError(
            f"{where}.date is {point.get('date')!r}, not milliseconds since the epoch: the "
            "file was edited or is not github-action-benchmark data"
        )
    tool = point.get("tool")
    if not isinstance(tool, str):
        raise HistoryError(
            f"{where}.tool is missing: a run of github-action-benchmark names its tool (a fork "
            "that drops it is not supported; add the tool to each run)"
        )
    benches = point.get("benches")
    if not isinstance(benches, list):
        raise HistoryError(f"{where}.benches is not a list of benchmarks")
    kind = TOOLS.get(tool, UNKNOWN)
    return HistoryRun(
        where=where,
        commit=commit["id"],
        timestamp=iso_from_millis(date),
        key=f"{suite}@{date:.0f}",
        formats=kind.formats,
        tool=tool,
        suite=_benchmarks(benches, where, kind),
    )


def _benchmarks(benches: list[Any], where: str, tool: Tool) -> tuple[Benchmark, ...]:
    """Each entry as a benchmark in its unit and the tool's direction; repeated rows of one
    name are one benchmark's samples where the tool writes repetitions that way."""
    rows: dict[str, list[Benchmark]] = {}
    for index, bench in enumerate(benches):
        here = f"{where}.benches[{index}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("name"), str):
            raise HistoryError(f"{here}.name is missing: not github-action-benchmark data")
        rows.setdefault(bench["name"], []).append(_benchmark(bench, f"benches[{index}]", tool))
    found = []
    for name, same in rows.items():
        figures = [b.summary for b in same if b.summary is not None]
        if tool.repeated_rows and len(same) > 1 and len(figures) == len(same):
            found.append(
                Benchmark(
                    name=name, unit=same[0].unit, direction=tool.direction, samples=tuple(figures)
                )
            )
        else:
            found += same
    return tuple(found)


def _benchmark(bench: dict[str, Any], where: str, tool: Tool) -> Benchmark:
    name, unit, direction = bench["name"], bench.get("unit"), tool.direction
    if not isinstance(unit, str) or not unit.strip():
        return Benchmark(name=name, unit="", direction=direction, error=f"{where}.unit is missing")
    unit = spelled(unit.strip().removesuffix("/iter") if tool.repeated_rows else unit)
    value = finite_number(bench.get("value"))
    if value is None:
        error = f"{where}.value is {bench.get('value')!r}, not a finite number"
        return Benchmark(name=name, unit=unit, direction=direction, error=error)
    return Benchmark(name=name, unit=unit, direction=direction, summary=value)
