"""Terminal and CI output: progress lines, tables, GitHub annotations, step outputs."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from perfgate.config import Bucket
from perfgate.result import Result
from perfgate.util.redact import redact


def on_github() -> bool:
    """True inside a GitHub Actions job."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def write_step_outputs(values: Mapping[str, str], env: Mapping[str, str] = os.environ) -> None:
    """Append ``key=value`` lines to $GITHUB_OUTPUT (nothing when the step has none).

    The file takes one line per output, so a value spanning lines is a bug, refused.
    """
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    for key, value in values.items():
        if "\n" in value or "\r" in value:
            raise ValueError(f"step output {key} spans lines: {value!r}")
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.writelines(f"{key}={value}\n" for key, value in values.items())


def write_step_summary(markdown: str, env: Mapping[str, str] = os.environ) -> None:
    """Append ``markdown`` to $GITHUB_STEP_SUMMARY (nothing when the step has none)."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")


def say(message: str) -> None:
    """A ``perfgate: …`` line on stderr, where the human side of every verb speaks."""
    print(f"perfgate: {redact(message)}", file=sys.stderr)


def annotate(level: str, message: str, stream: TextIO | None = None) -> None:
    """A ``::error::``/``::warning::``/``::notice::`` line on GitHub; plain text elsewhere."""
    message = redact(message)
    if on_github():
        escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        print(f"::{level}::{escaped}", file=stream or sys.stdout)
    else:
        print(f"{level}: {message}", file=stream or sys.stdout)


def inert(line: str) -> str:
    """One line of a benchmark's output, as a terminal shows it, that no runner reads a
    workflow command from (R14).

    The Actions runner splits output at a bare carriage return as well as at a newline,
    reads ``::command::`` at the start of a line (after spaces) and the legacy
    ``##[command]`` anywhere in one: a benchmark printing ``x\r::add-mask::w`` would
    otherwise give a command behind perfgate's ``  | `` prefix.
    """
    shown = next((part for part in reversed(line.split("\r")) if part), "")
    if shown.lstrip().startswith("::"):
        shown = shown.replace("::", ": :", 1)
    return shown.replace("##[", "## [")


def plural(count: int, word: str) -> str:
    """``1 sample``, ``2 samples``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def listing(values: Iterable[object]) -> str:
    """The values as text, separated by commas."""
    return ", ".join(str(v) for v in values)


# Past this a figure's digits say nothing a reader can take in: it is written 1.23e+15.
LARGEST_PLAIN = 1e12


def format_figure(value: float | None) -> str:
    """A figure with thousands separators (scientific past ``LARGEST_PLAIN``), or an em
    dash when absent."""
    if value is None:
        return "—"
    if not math.isfinite(value) or abs(value) >= LARGEST_PLAIN:
        return f"{value:.3g}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def health_text(result: Result) -> str:
    """``ok``, ``ok (retried)`` or ``FAILED phase …`` for a result."""
    health = result.health
    if health.healthy:
        return "ok (retried)" if health.retried else "ok"
    detail = health.phase.value if health.phase else "unknown"
    return f"FAILED ({detail}, exit {health.exit_code})"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain aligned text table."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def bench_table(results: Sequence[Result]) -> str:
    """Figures and health of each bucket run."""
    rows = [
        [
            r.bucket.id,
            format_figure(r.metric.value),
            format_figure(r.metric.std),
            r.metric.unit,
            health_text(r),
            str(r.health.attempts),
            f"{r.timings.wall_s:.1f}s",
        ]
        for r in results
    ]
    return render_table(["bucket", "figure", "± std", "unit", "health", "attempts", "wall"], rows)


FAILURE_TAIL_LINES = 12


def failure_cause(result: Result) -> str:
    """What stopped a bucket: the benchmark's own last words when it crashed.

    A crashed run also leaves no output file; "no file matches the output" is then a
    consequence, so the log's last line (usually the exception) comes first.
    """
    health = result.health
    crashed = health.phase is not None and health.phase.value not in ("output", "config_mismatch")
    last = [line.strip() for line in result.log_tail.splitlines() if line.strip()]
    if crashed and last:
        return last[-1]
    return health.config_mismatch or health.error or (last[-1] if last else "see the log")


def failure_lines(result: Result) -> list[str]:
    """Phase, the log's last lines and where the whole log is, for a failed bucket."""
    health = result.health
    lines = [f"cause: {inert(failure_cause(result))}"]
    if health.retried:
        lines.append(f"attempts: {health.attempts} (the last one is shown)")
    tail = [line for line in result.log_tail.splitlines() if line.strip()][-FAILURE_TAIL_LINES:]
    if tail:
        lines += ["last lines of its output:", *(f"  | {inert(line)}" for line in tail)]
    if result.log_path:
        lines.append(f"full log: {result.log_path}")
    return lines


class Progress:
    """One line per bucket; on a terminal the line is rewritten when the bucket finishes."""

    def __init__(
        self, total: int, stream: TextIO | None = None, *, echo: bool = False, figures: bool = True
    ) -> None:
        self.total = total
        self.done = 0
        # A judged run's table prints the figure that decides, after confirmation: this
        # line's first look (the median of the first samples) would only contradict it.
        self.figures = figures
        self.stream = stream or sys.stderr
        # The benchmark's own output between the lines would break a rewritten line.
        self.live = self.stream.isatty() and not on_github() and not echo

    def start(self, bucket: Bucket) -> None:
        """Announce a bucket that is starting."""
        text = f"[{self.done + 1}/{self.total}] {bucket.id} running…"
        self.stream.write(f"\r\033[K{text}" if self.live else text + "\n")
        self.stream.flush()

    def finish(self, result: Result) -> None:
        """Report a finished bucket."""
        self.done += 1
        metric = result.metric
        kept = len(metric.sample_values(result.set_aside))
        # Which figure of the benchmark's output this is, and how the samples made it.
        how = f"{metric.path}, median of {kept} samples" if kept > 1 else metric.path
        figure = f"{format_figure(metric.value)} {metric.unit} ({how})"
        if not self.figures:
            figure = f"{kept} sample(s), judged below"
        text = f"[{self.done}/{self.total}] {result.bucket.id}: {figure}, {health_text(result)}"
        self.stream.write((f"\r\033[K{text}" if self.live else text) + "\n")
        self.stream.flush()
        if not result.health.healthy:
            for line in failure_lines(result):
                self.stream.write(f"    {line}\n")
            self.stream.flush()
            annotate(
                "error",
                f"{result.bucket.id} failed ({health_text(result)}): {failure_cause(result)}",
                stream=self.stream,
            )
