"""Which buckets a change touches, from each bucket's optional ``paths:`` globs.

A bucket without ``paths`` is always affected. The workflow runs the whole matrix
when any bucket is affected (so the gate's coverage stays complete, R6) and no
GPU job at all when none is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache

from perfgate.config import Bucket


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    # GitHub's paths-filter semantics: '*' stays inside one directory, '**' crosses
    # directories, '?' is one character; a trailing '/' means everything below.
    if pattern.endswith("/"):
        pattern += "**"
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
        i += 1
    return re.compile("".join(out))


def matches(path: str, pattern: str) -> bool:
    """True when the repository-relative ``path`` matches the glob ``pattern``."""
    return _glob_regex(pattern).fullmatch(path) is not None


def affected(buckets: Sequence[Bucket], changed: Iterable[str]) -> tuple[Bucket, ...]:
    """Buckets whose ``paths`` match any changed file; a bucket without paths always is."""
    files = [path.strip() for path in changed if path.strip()]
    return tuple(
        bucket
        for bucket in buckets
        if not bucket.paths or any(matches(f, p) for f in files for p in bucket.paths)
    )
