"""Read untrusted JSON within size and depth limits, strictly (R3, R14); write it atomically;
check it against perfgate's own schemas (``perfgate/schemas/<name>.schema.json``).

Python's ``json`` accepts ``NaN`` and ``Infinity`` (which are not JSON) and recurses once
per nesting level, so a small hostile file can end in a RecursionError. Untrusted JSON
(result artifacts, benchmark output, fork reports, GitHub API answers) comes through
:func:`loads` or :func:`read`: the size is checked before anything is read, the nesting
depth while parsing, and no non-finite number gets through.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    import jsonschema

# A result artifact is a few kilobytes (its log tail is capped at 8 KiB).
MAX_BYTES = 16 * 1024 * 1024
# Real documents nest a handful of levels; Python's parser would recurse ~1000 deep.
MAX_DEPTH = 64


class JsonError(ValueError):
    """Not acceptable JSON; the message names the problem (the caller adds the location)."""


def finite_number(value: object) -> float | None:
    """``value`` as a finite float; None for anything else (a bool, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def depth(value: Any) -> int:
    """How many lists and objects deep ``value`` nests (a scalar is 0); no recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _refuse_constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON number; write finite numbers only")


def _finite_float(text: str) -> float:
    # float("1e999") is inf: a literal too large is as non-finite as Infinity itself.
    value = float(text)
    if not math.isfinite(value):
        raise JsonError(f"{text} overflows to {value}; write finite numbers only")
    return value


def _bounded_int(text: str) -> int:
    # An integer past any float cannot be compared with one (OverflowError), nor is it data.
    if len(text.lstrip("-")) > 300:
        raise JsonError(f"an integer of {len(text)} digits is out of range")
    return int(text)


def loads(text: str, *, max_depth: int = MAX_DEPTH, non_finite: bool = False) -> Any:
    """Parse strict JSON: no NaN or Infinity, nesting at most ``max_depth`` levels.

    ``non_finite`` lets NaN and Infinity through as floats, for a benchmark tool's own
    output (asv writes infinite confidence bounds): its reader checks every number it uses.
    """
    try:
        value = json.loads(
            text,
            parse_constant=float if non_finite else _refuse_constant,
            parse_float=float if non_finite else _finite_float,
            parse_int=_bounded_int,
        )
    except JsonError:
        raise
    except ValueError as exc:  # JSONDecodeError, and the parser's own limits
        raise JsonError(f"not valid JSON: {exc}") from None
    except RecursionError:
        # The C parser stops at the interpreter's recursion limit, long before memory runs out.
        raise JsonError(f"nested deeper than the limit of {max_depth} levels") from None
    # A document nests no deeper than the brackets its text opens (those in strings
    # included): most never need the walk.
    if text.count("{") + text.count("[") <= max_depth:
        return value
    deepest = depth(value)
    if deepest > max_depth:
        raise JsonError(f"nested {deepest} levels deep, over the limit of {max_depth}")
    return value


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``perfgate/schemas/<name>.schema.json``, read once."""
    text = resources.files("perfgate.schemas").joinpath(f"{name}.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    """One validator per schema and process: building one per document costs ~0.5 ms.

    jsonschema is imported here, not above: a run whose documents :func:`conforms` clears
    never needs it, and importing it costs more than checking a thousand artifacts.
    """
    import jsonschema

    return jsonschema.Draft202012Validator(schema(name))


@cache
def compiled(name: str) -> jsonschema_rs.Draft202012Validator:
    """The same schema compiled (jsonschema-rs): it only says whether a document is valid,
    at a small fraction of :func:`validator`'s cost."""
    return jsonschema_rs.Draft202012Validator(schema(name))


def conforms(name: str, data: Any) -> bool:
    """True when ``data``, as :func:`loads` builds it, is valid against schema ``name``.

    False means only "ask :func:`validator`", which names each problem: the compiled
    schema refuses what it cannot take (a string no UTF-8 can hold) rather than judge it.
    It reads a tuple as an array, which jsonschema does not: JSON parsing makes none.
    """
    try:
        return compiled(name).is_valid(data)
    except Exception:  # any document it cannot take is for the full validator to judge
        return False


def problem(error: jsonschema.ValidationError, *, limit: int | None = None) -> str:
    """``key.path: message`` for one schema violation (the message cut at ``limit``)."""
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {error.message[:limit]}"


def write(path: Path, data: Any, *, sort_keys: bool = False) -> Path:
    """Write ``data`` as indented, strictly finite JSON to ``path``, atomically: a kill
    mid-write leaves the previous file whole (its parent is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, sort_keys=sort_keys, allow_nan=False) + "\n"
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) or failed: no partial file is left beside the whole one.
        temporary.unlink(missing_ok=True)
        raise
    return path


def read(
    path: Path, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, non_finite: bool = False
) -> Any:
    """Load ``path`` as strict UTF-8 JSON; its size is checked before it is read."""
    return loads(read_text(path, max_bytes=max_bytes), max_depth=max_depth, non_finite=non_finite)


def read_text(path: Path, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of ``path``; its size is checked before it is read."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise JsonError(f"{size} bytes, over the limit of {max_bytes}")
        with path.open("rb") as handle:
            # A file still growing (or a FIFO) cannot slip past the limit. Its size is read
            # first: asking for the limit at once allocates it for every small file.
            data = handle.read(min(size, max_bytes) + 1)
            if len(data) > size:
                data += handle.read(max_bytes + 1 - len(data))
    except OSError as exc:
        raise JsonError(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise JsonError(f"over the limit of {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonError(f"not UTF-8 text (byte {exc.start})") from None
