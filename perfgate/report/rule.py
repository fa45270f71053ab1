"""The gate's verdict rule applied along a stored history: the one adapter the trend uses.

Each run is judged as the gate judged it: its window from the store's own selection
(:func:`perfgate.baselines.history.windows_before`), its figure and the window's lines from
the oracle in force (:func:`perfgate.judge.oracle.judge_figure`). A chart's bands and the
index's verdicts come from here alone, so neither can disagree with a gate run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.baselines.history import Run, Series, windows_before
from perfgate.config import Direction, GatePolicy
from perfgate.judge.oracle import judge_figure


@dataclass(frozen=True, kw_only=True)
class JudgedRun:
    """One run, the lines it was judged against and the verdict it got."""

    run: Run
    figure: float
    verdict: str
    reasons: tuple[str, ...]
    window_size: int
    median: float | None = None
    warn_line: float | None = None
    block_line: float | None = None
    change_pct: float | None = None
    # The commit where the level shift that the window starts after landed (none found).
    shift_commit: str | None = None


def run_figure(values: Sequence[float]) -> float:
    """What the oracle in force judges of a run's repeats: their median (one run, one figure)."""
    return statistics.median(values)


def judge_series(series: Series, gate: GatePolicy) -> list[JudgedRun]:
    """Every run of ``series`` judged against the window before it, oldest first."""
    bucket, hardware = series.bucket, series.hardware
    direction = Direction(series.direction)
    floors = bucket.floors_for(hardware)
    noise_floor = bucket.noise_floor_for(hardware, gate.oracle.noise_floor_pct)
    judged = []
    for run, window in zip(
        series.runs, windows_before(series.runs, gate.baseline.max_samples), strict=True
    ):
        figure = run_figure(run.values)
        judgement = judge_figure(
            figure,
            window.values,
            direction=direction,
            floors=floors,
            noise_floor_pct=noise_floor,
            policy=gate.oracle,
            min_samples=gate.baseline.min_samples,
            retried=run.retried,
        )
        # Lines are drawn only where the window could judge (R4: at least min_samples).
        stats = judgement.stats if len(window.values) >= gate.baseline.min_samples else None
        judged.append(
            JudgedRun(
                run=run,
                figure=figure,
                verdict=judgement.verdict.label,
                reasons=tuple(r.value for r in judgement.reasons),
                window_size=len(window.values),
                median=stats.median if stats else None,
                warn_line=stats.warn_line if stats else None,
                block_line=stats.block_line if stats else None,
                change_pct=stats.change_pct if stats else None,
            )
        )
    return judged
