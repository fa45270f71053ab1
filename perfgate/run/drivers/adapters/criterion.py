"""criterion's files of one benchmark (``target/criterion/ID/new/estimates.json`` or
``sample.json``) or cargo-criterion's JSON messages (``--message-format=json``): each
sample's time for one iteration, in nanoseconds (lower is better).

From a benchmark's folder, ``sample.json`` gives the samples (each its time over its
iteration count), ``estimates.json`` the median where there are none, and
``benchmark.json`` the name (``full_id``; else the folder's name). From messages, every
``benchmark-complete`` message is a benchmark named by its ``id``.
"""

from __future__ import annotations

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
    load_lines,
    wrong_shape,
)
from perfgate.run.drivers.adapters.units import is_time, spelled
from perfgate.util.jsonfile import finite_number

TOOL = "criterion"
ESTIMATES, SAMPLE, BENCHMARK = "estimates.json", "sample.json", "benchmark.json"


def recognises(data: Any) -> bool:
    """True for criterion's estimates or sample file, or a list of cargo-criterion messages."""
    if isinstance(data, list):
        return bool(data) and all(isinstance(m, dict) and "reason" in m for m in data)
    if not isinstance(data, dict):
        return False
    median = data.get("median")
    return "sampling_mode" in data or (isinstance(median, dict) and "point_estimate" in median)


def read(path: Path) -> Suite:
    """The benchmark of a criterion folder's file, or every one of a message stream."""
    if path.name in (ESTIMATES, SAMPLE, BENCHMARK):
        return (_from_folder(path.parent),)
    return parse_messages(load_lines(path, "cargo-criterion"), path)


def _from_folder(folder: Path) -> Benchmark:
    """The benchmark whose criterion files lie in ``folder`` (``.../ID/new``)."""
    named = load(folder / BENCHMARK, TOOL) if (folder / BENCHMARK).is_file() else {}
    fallback = folder.parent.name if folder.name in ("new", "base") else folder.name
    name = str(named.get("full_id") or fallback) if isinstance(named, dict) else fallback
    if (folder / SAMPLE).is_file():
        data = load(folder / SAMPLE, TOOL)
        if not isinstance(data, dict) or "times" not in data or "iters" not in data:
            raise wrong_shape(folder / SAMPLE, TOOL, "no 'iters' and 'times' lists")
        return per_iteration(name, data.get("times"), data.get("iters"), "ns", SAMPLE)
    if not (folder / ESTIMATES).is_file():
        raise SuiteError(
            f"{folder} holds neither {SAMPLE} nor {ESTIMATES}; point command.output at "
            "criterion's target/criterion/ID/new/estimates.json"
        )
    data = load(folder / ESTIMATES, TOOL)
    if not recognises(data):
        raise wrong_shape(folder / ESTIMATES, TOOL, "no 'median' with a 'point_estimate'")
    median = finite_number(data["median"].get("point_estimate"))
    if median is None:
        return failure(name, "ns", f"{ESTIMATES}: median.point_estimate is not a finite number")
    return Benchmark(name=name, unit="ns", direction=Direction.LOWER, summary=median)


def parse_messages(messages: list[Any], path: Path) -> Suite:
    """Every ``benchmark-complete`` message of cargo-criterion's stream."""
    if not recognises(messages):
        raise wrong_shape(path, "cargo-criterion", "no JSON messages with a 'reason'")
    return tuple(
        _from_message(message, f"line {number}")
        for number, message in enumerate(messages, start=1)
        if message.get("reason") == "benchmark-complete"
    )


def _from_message(message: dict[str, Any], where: str) -> Benchmark:
    name = str(message.get("id") or where)
    unit = spelled(str(message.get("unit", "")))
    if not is_time(unit):
        return failure(
            name, unit, f"{where}: unit {message.get('unit')!r} is not a time (ns, us, ms, s)"
        )
    return per_iteration(
        name, message.get("measured_values"), message.get("iteration_count"), unit, where
    )


def per_iteration(name: str, times: Any, iterations: Any, unit: str, where: str) -> Benchmark:
    """Each sample's time divided by its iteration count."""
    total, problem = finite_samples(times, f"{where}: times")
    counts, problem = (total, problem) if problem else finite_samples(iterations, f"{where}: iters")
    if problem:
        return failure(name, unit, problem)
    if len(total) != len(counts) or not total or not all(count > 0 for count in counts):
        return failure(name, unit, f"{where}: times and iteration counts do not pair up")
    samples = tuple(t / n for t, n in zip(total, counts, strict=True))
    return Benchmark(name=name, unit=unit, direction=Direction.LOWER, samples=samples)
