"""The result artifacts of a run: every one under a directory read, each unreadable file named.

Artifacts are untrusted (R14): a file that is not a usable result costs the bucket it
belongs to (the gate judges it a HARD_FAILURE naming the file), never the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfgate.config import Bucket
from perfgate.errors import GateMalfunction
from perfgate.result import ArtifactError, Result, read_result


@dataclass(frozen=True, kw_only=True)
class UnreadableArtifact:
    """A file in the results directory that is not a usable result artifact (R14)."""

    path: Path
    problem: str
    # The bucket id the artifact names, when it got far enough to name one.
    named: str | None = None

    def belongs_to(self, bucket: Bucket) -> bool:
        """True when it names ``bucket``, or carries that bucket's artifact file name."""
        return self.named == bucket.id or self.path.name == f"{bucket.file_stem}.json"


@dataclass(frozen=True, kw_only=True)
class Artifacts:
    """The result artifacts found, and each file that could not be read as one."""

    results: tuple[Result, ...]
    unreadable: tuple[UnreadableArtifact, ...]


def load_results(results_dir: Path) -> Artifacts:
    """Every result artifact under ``results_dir`` (searched recursively, as artifacts nest).

    An unreadable file is named; it costs the bucket it belongs to (a HARD_FAILURE naming
    the file), never the gate. Only when no artifact arrived at all is the gate unable to
    run (R8).
    """
    if not results_dir.is_dir():
        raise GateMalfunction(
            f"results directory {results_dir} does not exist; did the bench jobs upload artifacts?"
        )
    paths = sorted(results_dir.rglob("*.json"))
    results, unreadable = [], []
    for path in paths:
        try:
            results.append(read_result(path))
        except ArtifactError as exc:
            unreadable.append(UnreadableArtifact(path=path, problem=str(exc), named=exc.bucket))
    if not paths:
        raise GateMalfunction(
            f"no result artifacts in {results_dir}: the benchmarks did not run, so there is "
            "nothing to judge"
        )
    return Artifacts(results=tuple(results), unreadable=tuple(unreadable))
