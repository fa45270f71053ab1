"""Which buckets a change touches, from each bucket's optional ``paths:`` filter.

The filter follows GitHub's path-filter semantics exactly (workflow syntax, "Filter
pattern cheat sheet"): ``*`` matches within one directory, ``**`` matches anything
including ``/``, ``?`` makes the preceding character optional, ``+`` repeats it,
``[...]`` is one character from a class of letters and digits, and a leading ``!``
excludes what earlier patterns included (order matters: a later positive pattern
includes again). perfgate adds one convenience: a pattern ending in ``/`` means
everything below that directory.

A bucket without ``paths`` is always affected. The workflow runs the whole matrix
when any bucket is affected (so the gate's coverage stays complete, R6) and no
GPU job at all when none is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache

from perfgate.config import Bucket

_CLASS = re.compile(r"\[((?:[a-zA-Z0-9](?:-[a-zA-Z0-9])?)+)\]")


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression for one (positive) GitHub path-filter pattern."""
    if pattern.endswith("/"):
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more leading directories
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] in "?+" and out and not out[-1].endswith(("?", "+")):
            out.append(pattern[i])  # a quantifier on the preceding character
            i += 1
        elif (found := _CLASS.match(pattern, i)) is not None:
            out.append(f"[{found.group(1)}]")
            i = found.end()
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def matches(path: str, pattern: str) -> bool:
    """True when the repository-relative ``path`` matches one positive ``pattern``."""
    return _glob_regex(pattern.removeprefix("!")).fullmatch(path) is not None


def selected(path: str, patterns: Sequence[str]) -> bool:
    """GitHub's rule for a pattern list: the last pattern that matches decides."""
    included = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if included == negated and matches(path, pattern):
            included = not negated
    return included


def affected(buckets: Sequence[Bucket], changed: Iterable[str]) -> tuple[Bucket, ...]:
    """Buckets whose ``paths`` select any changed file; a bucket without paths always is."""
    files = [path.strip() for path in changed if path.strip()]
    return tuple(
        bucket
        for bucket in buckets
        if not bucket.paths or any(selected(f, bucket.paths) for f in files)
    )
