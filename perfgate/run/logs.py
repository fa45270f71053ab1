"""A benchmark's log read: scanned in bounded memory as it streams (R14), the phase a
failed run died in, and the Python crash it ended with."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from pathlib import Path

from perfgate.config import PhaseMarkers
from perfgate.result import FailurePhase

LOG_TAIL_BYTES = 8192
HANG_FRACTION = 0.95  # a run that used 95 % of its budget is a hang, not a slow success
# A line longer than this reaches the line callback in pieces.
MAX_LINE_BYTES = 64 * 1024
# Enough of a huge log, from both ends, for stale-image evidence (a version banner near the
# start, the fatal import error at the end).
LOG_EXCERPT_BYTES = 1024 * 1024


def classify_failure(
    *,
    exit_code: int | None,
    timed_out: bool,
    wall_s: float,
    timeout_s: float,
    log: Container[str],
    markers: PhaseMarkers,
) -> FailurePhase | None:
    """Name the phase a run failed in from its exit, its timing and its log; None if it did not.

    ``log`` answers ``marker in log``: the whole text, or a :class:`LogScan` of it. An
    environment marker wins over every other sign: a run that could never have started
    (no interpreter, an unaccepted EULA, an unwritable cache) shows later symptoms too.
    """
    if exit_code == 0 and not timed_out:
        return None
    if environment_fix(log, markers) is not None:
        return FailurePhase.ENVIRONMENT
    if timed_out:
        return FailurePhase.HANG
    if exit_code in (137, -signal.SIGKILL) or any(m in log for m in markers.oom):
        return FailurePhase.OOM
    if wall_s >= HANG_FRACTION * timeout_s:
        return FailurePhase.HANG
    initialised = markers.init_done is not None and markers.init_done in log
    stepped = markers.stepping is not None and markers.stepping in log
    # An import error once stepping started is a crash while running (a lazy import).
    if not (initialised or stepped) and any(m in log for m in markers.import_error):
        return FailurePhase.IMPORT
    if any(m in log for m in markers.driver_error):
        return FailurePhase.DRIVER
    # The latest marker the driver declares tells how far the run got.
    if markers.stepping is not None:
        return FailurePhase.RUNTIME if stepped else FailurePhase.INIT
    if markers.init_done is not None:
        return FailurePhase.RUNTIME if initialised else FailurePhase.INIT
    return FailurePhase.RUNTIME


def environment_fix(log: Container[str], markers: PhaseMarkers) -> str | None:
    """The fix of the first environment marker (in declaration order) the log shows."""
    return next((fix for marker, fix in markers.environment.items() if marker in log), None)


#: Python exceptions the same code and inputs raise again at the same place: a mistake in
#: the program or its arguments, not a state of the machine (CUDA, network, a full disk).
REPEATING_EXCEPTIONS = frozenset(
    {
        "AssertionError",
        "AttributeError",
        "ImportError",
        "IndentationError",
        "IndexError",
        "KeyError",
        "ModuleNotFoundError",
        "NameError",
        "NotImplementedError",
        "SyntaxError",
        "TypeError",
        "UnboundLocalError",
        "ValueError",
        "ZeroDivisionError",
    }
)
#: Phases that end before the benchmark's measurement starts (no step was timed).
BEFORE_MEASUREMENT = frozenset({FailurePhase.IMPORT, FailurePhase.INIT})
_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
_RAISED = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")


@dataclass(frozen=True, kw_only=True)
class PythonCrash:
    """The exception a Python traceback in a log ended with, and where it was raised."""

    exception: str  # its class name, without the module: KeyError
    message: str
    where: str  # the innermost frame: bench.py:12 in main ('' when the log lost it)


def python_crash(log_tail: str) -> PythonCrash | None:
    """The last Python traceback of a log: its exception and innermost frame (None: none)."""
    lines = [line.rstrip() for line in log_tail.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return None
    where = ""
    for line in lines[starts[-1] + 1 :]:
        frame = _FRAME.match(line)
        if frame:
            where = f"{Path(frame['file']).name}:{frame['line']} in {frame['func']}"
            continue
        raised = _RAISED.match(line)
        if raised and not line.startswith(" "):
            name = raised["name"].rsplit(".", 1)[-1]
            return PythonCrash(exception=name, message=raised["message"] or "", where=where)
    return None


def marker_strings(markers: PhaseMarkers) -> tuple[str, ...]:
    """Every text a phase classification may look for in a log."""
    found = (*markers.import_error, *markers.driver_error, *markers.oom, *markers.environment)
    return (*found, *(m for m in (markers.init_done, markers.stepping) if m is not None))


class LogScan:
    """A run's output, kept within bounds: which markers appeared anywhere, and the tail.

    Output of any size costs a constant amount of memory (R14): the whole log goes to a
    file, the tail stays in memory, and markers are matched as bytes stream by, across
    chunk boundaries. ``on_line`` (optional) sees each line as it arrives, for a live echo.
    """

    def __init__(
        self,
        markers: Iterable[str],
        *,
        tail_bytes: int = LOG_TAIL_BYTES,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self._wanted = {marker: marker.encode() for marker in markers}
        self._seen: set[str] = set()
        self._overlap = max((len(b) for b in self._wanted.values()), default=1) - 1
        self._carry = b""
        self._tail = bytearray()
        self._tail_bytes = tail_bytes
        self._line = bytearray()
        self._on_line = on_line
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        """Account for the next piece of output."""
        self.size += len(chunk)
        window = self._carry + chunk
        for marker, needle in self._wanted.items():
            if marker not in self._seen and needle in window:
                self._seen.add(marker)
        self._carry = window[-self._overlap :] if self._overlap else b""
        self._tail += chunk
        if len(self._tail) > 2 * self._tail_bytes:
            del self._tail[: -self._tail_bytes]
        if self._on_line is not None:
            self._lines(chunk)

    def _lines(self, chunk: bytes) -> None:
        assert self._on_line is not None
        self._line += chunk
        *complete, rest = self._line.split(b"\n")
        for line in complete:
            self._on_line(line.decode("utf-8", errors="replace"))
        while len(rest) > MAX_LINE_BYTES:
            self._on_line(bytes(rest[:MAX_LINE_BYTES]).decode("utf-8", errors="replace"))
            rest = rest[MAX_LINE_BYTES:]
        self._line = bytearray(rest)

    def __contains__(self, marker: object) -> bool:
        if marker not in self._wanted:
            raise LookupError(f"{marker!r} was not scanned for; pass it to LogScan")
        return marker in self._seen

    def tail(self) -> str:
        """The last ``tail_bytes`` of output, starting at a line; '…' when cut."""
        data = bytes(self._tail[-self._tail_bytes :])
        text = data.decode("utf-8", errors="replace")
        return text if self.size <= self._tail_bytes else "…" + text.split("\n", 1)[-1]


def read_log_excerpt(path: Path, limit: int = LOG_EXCERPT_BYTES) -> str:
    """A log's text, or for a huge log its first and last ``limit`` bytes: bounded memory."""
    if not path.is_file():
        return ""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(0)
        if size <= 2 * limit:
            return handle.read().decode("utf-8", errors="replace")
        head = handle.read(limit)
        handle.seek(size - limit)
        tail = handle.read(limit)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n… {size - 2 * limit} bytes left out …\n"
        + tail.decode("utf-8", errors="replace")
    )
