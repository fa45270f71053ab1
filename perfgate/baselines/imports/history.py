"""What an imported history is: runs of a benchmark suite, each at one commit, read from a
file another tool wrote; every source (``datajs``, ``asv``) reads into these."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from perfgate.config import OutputFormat
from perfgate.errors import UsageError
from perfgate.run.drivers.adapters.base import Suite

#: What an imported sample's ``trusted_source`` says, so every reader can tell it apart.
TRUSTED_SOURCE = "import"

#: The hardware partition of a history that does not say what it ran on (data.js).
IMPORTED_HARDWARE = "unknown-imported"


class HistoryError(UsageError):
    """An imported file is not what the import reads; the message names file, field and fix."""


@dataclass(frozen=True, kw_only=True)
class HistoryRun:
    """One run of a suite at one commit, as the history keeps it."""

    # Where the run is in its file, for messages: ``data.js: entries['Bench'][3]``.
    where: str
    # The commit as the history names it (resolved against the repository later).
    commit: str
    # When the run was taken (ISO 8601, UTC): what tells two runs of one commit apart.
    timestamp: str
    # The run's name within its history, for sample ids: stable across re-imports.
    key: str
    # The bucket formats that read the figures this run holds (none: no perfgate format
    # reads what the tool kept).
    formats: tuple[OutputFormat, ...]
    # The tool that wrote the run, as the history names it.
    tool: str
    suite: Suite


@dataclass(frozen=True, kw_only=True)
class History:
    """Every run one file (or results directory) holds, and what it says about the machine."""

    # The file or directory read, and what kind of history it is.
    path: str
    kind: str
    runs: tuple[HistoryRun, ...]
    # The machine the history says it ran on (asv's machine name); None when it does not say.
    machine: str | None = None
    # What was read but cannot be imported as a whole (a tool no perfgate format reads).
    notes: tuple[str, ...] = ()


def iso_from_millis(millis: float) -> str:
    """A history's milliseconds since the epoch as an ISO 8601 UTC time."""
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat()
