"""The units benchmark tools write, spelled one way each, and conversion between times."""

from __future__ import annotations

#: A time unit's length in seconds.
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

# How tools spell the units perfgate knows, by perfgate's spelling.
_SPELLINGS = {
    "ns": ("ns", "nanosecond", "nanoseconds"),
    "us": ("us", "µs", "μs", "microsecond", "microseconds"),
    "ms": ("ms", "millisecond", "milliseconds"),
    "s": ("s", "sec", "second", "seconds"),
    "bytes": ("bytes", "byte", "B"),
}
_CANONICAL = {spelling: unit for unit, spellings in _SPELLINGS.items() for spelling in spellings}


def spelled(unit: str) -> str:
    """perfgate's spelling of ``unit`` (``second`` -> ``s``); another unit as written."""
    return _CANONICAL.get(unit.strip(), unit.strip())


def is_time(unit: str) -> bool:
    """True for a unit of time perfgate can convert."""
    return spelled(unit) in SECONDS


def convert(value: float, unit: str, to: str) -> float | None:
    """``value`` in ``unit`` expressed in ``to``; None unless both are the same or both times."""
    source, target = spelled(unit), spelled(to)
    if source == target:
        return value
    if source in SECONDS and target in SECONDS:
        return value * SECONDS[source] / SECONDS[target]
    return None
