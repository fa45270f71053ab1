"""Where a sample's launches live: ``runs/<stem>/<sample>/attempt-K/`` (its ``output/`` and
``log.txt``, a warm-up launch's under ``warmup/``), their caches, their containers' names.

A retry removes the failed attempt's outputs and nothing else (R10): everything an attempt
writes is inside its own output directory. A bucket that runs warm shares one cache across
its samples and runs (R16); a cold one gets a fresh cache per attempt.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from perfgate.result import CacheState

#: Written into a warm cache once a launch completed in it: the next launch starts warm.
WARM_MARK = ".perfgate-warm"


@dataclass(frozen=True, kw_only=True)
class WarmCache:
    """A bucket's cache kept warm across its samples and runs (R16): ``path`` is perfgate's.

    It is cold until a launch completed in it; a retry after a failed attempt empties it
    first, since the failed attempt may have poisoned it.
    """

    path: Path

    @property
    def state(self) -> CacheState:
        """Warm once a launch completed in it."""
        return CacheState.WARM if (self.path / WARM_MARK).is_file() else CacheState.COLD

    def mark_warm(self) -> None:
        """Record that a launch completed in the cache."""
        (self.path / WARM_MARK).write_text("filled by a completed launch\n", encoding="utf-8")

    def empty(self) -> None:
        """Start over from an empty cache (what this user cannot delete stays, unmarked)."""
        shutil.rmtree(self.path, ignore_errors=True)
        (self.path / WARM_MARK).unlink(missing_ok=True)
        self.path.mkdir(parents=True, exist_ok=True)


def container_name(*parts: str) -> str:
    """A docker-legal container name built from ``parts``."""
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", "-".join(("perfgate", *parts))).strip("-.")[:120]


@dataclass(frozen=True, kw_only=True)
class SampleLayout:
    """One sample of a bucket on disk: its attempts' directories, their caches (the bucket's
    warm cache, else one per attempt keyed by the run) and their containers' names."""

    work_root: Path
    # What keys the per-attempt caches and container names: the run (``launch.run_key_of``).
    run_key: str
    stem: str  # the bucket's file stem
    index: int
    # Names the sample's directory instead of ``sample-<index>`` (a paired sample's side).
    label: str | None = None
    warm: WarmCache | None = None

    @property
    def name(self) -> str:
        """The sample's directory name."""
        return self.label or f"sample-{self.index}"

    def output_dir(self, number: int, *, warmup: bool = False) -> Path:
        """Where a launch writes its outputs (removed when the attempt is retried)."""
        return self._attempt(number, warmup) / "output"

    def log(self, number: int, *, warmup: bool = False) -> Path:
        """Where a launch's whole output is kept."""
        return self._attempt(number, warmup) / "log.txt"

    def _attempt(self, number: int, warmup: bool) -> Path:
        base = self.work_root / "runs" / self.stem / self.name / f"attempt-{number}"
        return base / "warmup" if warmup else base

    def cache_dir(self, number: int) -> Path:
        """Attempt ``number``'s cache: the warm cache, else a fresh one of its own."""
        if self.warm is not None:
            return self.warm.path
        return self.work_root / "cache" / self.run_key / self.stem / self.name / f"attempt-{number}"

    def container_name(self, number: int) -> str:
        """The docker name of attempt ``number``'s container (unique to this perfgate process)."""
        sample = self.label or str(self.index)
        return container_name(f"{self.run_key}-{sample}", str(os.getpid()), self.stem, str(number))
