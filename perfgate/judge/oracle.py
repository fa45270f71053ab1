"""The verdict for one bucket's result against its baseline window (R3, R5). Pure."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum

from perfgate.config import Direction, Floor, FloorKind, OraclePolicy
from perfgate.result import FailurePhase, Result


class Verdict(Enum):
    """Bucket verdicts, ordered by severity."""

    PASS = 0
    WARN = 1
    BLOCK = 2
    HARD_FAILURE = 3

    @property
    def severity(self) -> int:
        """0 (PASS) to 3 (HARD_FAILURE)."""
        return self.value

    @property
    def label(self) -> str:
        """The verdict's name, as printed and stored."""
        return self.name


class Reason(StrEnum):
    """Why a verdict was reached; a judgement carries every reason that applied."""

    CONFIG_MISMATCH = "CONFIG_MISMATCH"
    UNHEALTHY_RUN = "UNHEALTHY_RUN"
    MISSING_RESULT = "MISSING_RESULT"
    MISSING_METRIC = "MISSING_METRIC"
    NONFINITE_METRIC = "NONFINITE_METRIC"
    NONPOSITIVE_METRIC = "NONPOSITIVE_METRIC"
    UNREADABLE_ARTIFACT = "UNREADABLE_ARTIFACT"
    STALE_IMAGE = "STALE_IMAGE"
    NOT_REPORTED = "NOT_REPORTED"
    FLOOR_CROSSED = "FLOOR_CROSSED"
    FLOOR_RECORDED = "FLOOR_RECORDED"
    NO_BASELINE = "NO_BASELINE"
    INSUFFICIENT_WINDOW = "INSUFFICIENT_WINDOW"
    ROLLING_WINDOW = "ROLLING_WINDOW"
    BELOW_BLOCK_INSIDE_REGRESSION_FLOOR = "BELOW_BLOCK_INSIDE_REGRESSION_FLOOR"
    RETRIED_PASS = "RETRIED_PASS"  # noqa: S105 (a reason code, not a password)


class Bisect(StrEnum):
    """What a bisection should make of this commit."""

    GOOD = "GOOD"
    BAD = "BAD"
    SKIP = "SKIP"


@dataclass(frozen=True, kw_only=True)
class Signal:
    """One reason with the verdict it calls for and a human-readable detail."""

    reason: Reason
    verdict: Verdict
    detail: str


@dataclass(frozen=True, kw_only=True)
class WindowStats:
    """The baseline window's statistics and the lines the figure was compared with."""

    size: int
    median: float
    mad: float
    noise: float
    warn_line: float
    block_line: float
    change_pct: float


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """The verdict for one bucket and everything that led to it."""

    verdict: Verdict
    signals: tuple[Signal, ...]
    value: float | None
    stats: WindowStats | None
    bisect: Bisect

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason, in the order found."""
        return tuple(signal.reason for signal in self.signals)

    def details(self, at_least: Verdict = Verdict.PASS) -> list[str]:
        """Details of the signals at or above a severity."""
        return [s.detail for s in self.signals if s.verdict.severity >= at_least.severity]


def window_stats(
    value: float, window: Sequence[float], noise_floor_pct: float, policy: OraclePolicy,
    direction: Direction,
) -> WindowStats:  # fmt: skip
    """Median, MAD (unscaled), effective noise and the warn/block lines for ``value``."""
    median = statistics.median(window)
    mad = statistics.median(abs(v - median) for v in window)
    noise = max(mad, noise_floor_pct / 100.0 * median)
    sign = -1.0 if direction is Direction.HIGHER else 1.0
    return WindowStats(
        size=len(window),
        median=median,
        mad=mad,
        noise=noise,
        warn_line=median + sign * policy.k_warn * noise,
        block_line=median + sign * policy.k_block * noise,
        change_pct=(value - median) / median * 100.0,
    )


def _figure(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _worse(value: float, line: float, direction: Direction) -> bool:
    """Strictly on the bad side of ``line``; exactly on a line is not past it."""
    return value < line if direction is Direction.HIGHER else value > line


def _health_signals(result: Result) -> list[Signal]:
    health = result.health
    signals = []
    if health.phase is FailurePhase.CONFIG_MISMATCH or health.config_mismatch:
        signals.append(
            Signal(
                reason=Reason.CONFIG_MISMATCH,
                verdict=Verdict.HARD_FAILURE,
                detail=f"ran a different experiment than requested: {health.config_mismatch}",
            )
        )
    elif health.exit_code != 0 or health.phase is not None:
        phase = health.phase.value if health.phase else "none"
        signals.append(
            Signal(
                reason=Reason.UNHEALTHY_RUN,
                verdict=Verdict.HARD_FAILURE,
                detail=f"unhealthy run (exit={health.exit_code}, phase={phase})"
                + (f": {health.error}" if health.error else ""),
            )
        )
    elif health.error:
        signals.append(
            Signal(reason=Reason.MISSING_RESULT, verdict=Verdict.HARD_FAILURE, detail=health.error)
        )
    if health.stale_image is not None:
        stale = health.stale_image
        signals.append(
            Signal(
                reason=Reason.STALE_IMAGE,
                verdict=Verdict.HARD_FAILURE,
                detail=f"stale CI image: {stale.package} {stale.installed} installed, source pins "
                f"{stale.pinned} (missing {stale.symbol}); excused, still not a pass",
            )
        )
    value = result.metric.value
    if not signals and value is None:
        signals.append(
            Signal(
                reason=Reason.MISSING_METRIC,
                verdict=Verdict.HARD_FAILURE,
                detail=f"no number at {result.metric.path}",
            )
        )
    elif not signals and value is not None and not math.isfinite(value):
        # NaN compares false with every line, so it would otherwise pass as "within noise".
        signals.append(
            Signal(
                reason=Reason.NONFINITE_METRIC,
                verdict=Verdict.HARD_FAILURE,
                detail=f"{result.metric.path} = {value}: not a finite number, not a measurement",
            )
        )
    elif not signals and value is not None and value <= 0:
        signals.append(
            Signal(
                reason=Reason.NONPOSITIVE_METRIC,
                verdict=Verdict.HARD_FAILURE,
                detail=f"{result.metric.path} = {value:g}: no forward progress, a dead run",
            )
        )
    return signals


def _floor_signals(value: float, floors: Sequence[Floor], direction: Direction) -> list[Signal]:
    signals = []
    for floor in floors:
        if not _worse(value, floor.value, direction):
            continue
        if floor.kind is FloorKind.REPORT:
            signals.append(
                Signal(
                    reason=Reason.FLOOR_RECORDED,
                    verdict=Verdict.PASS,
                    detail=f"past reporting-only floor {floor.name} ({floor.value:g})",
                )
            )
        else:
            signals.append(
                Signal(
                    reason=Reason.FLOOR_CROSSED,
                    verdict=Verdict[floor.kind.value],
                    detail=f"crossed floor {floor.name} "
                    f"({_figure(value)} vs {_figure(floor.value)})",
                )
            )
    return signals


def _window_signal(
    value: float,
    window: Sequence[float],
    *,
    min_samples: int,
    noise_floor_pct: float,
    policy: OraclePolicy,
    direction: Direction,
) -> tuple[Signal, WindowStats | None]:
    if not window:
        return Signal(
            reason=Reason.NO_BASELINE,
            verdict=Verdict.WARN,
            detail="no baseline yet for this experiment on this hardware",
        ), None
    stats = window_stats(value, window, noise_floor_pct, policy, direction)
    if len(window) < min_samples:
        return Signal(
            reason=Reason.INSUFFICIENT_WINDOW,
            verdict=Verdict.WARN,
            detail=f"only {len(window)} of {min_samples} baseline samples; cannot judge yet",
        ), stats
    regression_pct = -stats.change_pct if direction is Direction.HIGHER else stats.change_pct
    change = f"{stats.change_pct:+.1f}% vs median {_figure(stats.median)}"
    if _worse(value, stats.block_line, direction):
        if regression_pct >= policy.min_block_regression_pct:
            return Signal(
                reason=Reason.ROLLING_WINDOW,
                verdict=Verdict.BLOCK,
                detail=f"regression {change}, past the block line",
            ), stats
        return Signal(
            reason=Reason.BELOW_BLOCK_INSIDE_REGRESSION_FLOOR,
            verdict=Verdict.WARN,
            detail=f"past the block line but {change} is under the "
            f"{policy.min_block_regression_pct:g}% minimum for a block",
        ), stats
    if _worse(value, stats.warn_line, direction):
        return Signal(
            reason=Reason.ROLLING_WINDOW,
            verdict=Verdict.WARN,
            detail=f"possible regression {change}",
        ), stats
    return Signal(
        reason=Reason.ROLLING_WINDOW, verdict=Verdict.PASS, detail=f"within noise ({change})"
    ), stats


def bisect_label(verdict: Verdict, result: Result | None) -> Bisect:
    """GOOD for a clean pass, BAD for a regression or a crash in init/runtime, else SKIP."""
    if verdict is Verdict.PASS:
        return Bisect.SKIP if result is not None and result.health.retried else Bisect.GOOD
    if verdict is Verdict.BLOCK:
        return Bisect.BAD
    if verdict is Verdict.HARD_FAILURE and result is not None:
        crashed = result.health.phase in (FailurePhase.INIT, FailurePhase.RUNTIME)
        return Bisect.BAD if crashed and result.health.stale_image is None else Bisect.SKIP
    return Bisect.SKIP


def judge(
    result: Result,
    window: Sequence[float],
    *,
    floors: Sequence[Floor],
    noise_floor_pct: float,
    policy: OraclePolicy,
    min_samples: int,
) -> Judgement:
    """Judge one result: health first, then fixed floors and the rolling window; worst wins."""
    signals = _health_signals(result)
    stats: WindowStats | None = None
    value = result.metric.value
    if not signals and value is not None:
        direction = result.metric.direction
        signals += _floor_signals(value, floors, direction)
        window_signal, stats = _window_signal(
            value,
            window,
            min_samples=min_samples,
            noise_floor_pct=noise_floor_pct,
            policy=policy,
            direction=direction,
        )
        signals.append(window_signal)
    verdict = max((s.verdict for s in signals), key=lambda v: v.severity)
    if verdict is Verdict.PASS and result.health.retried:
        signals.append(
            Signal(
                reason=Reason.RETRIED_PASS,
                verdict=Verdict.WARN,
                detail=f"passed only after {result.health.attempts} attempts",
            )
        )
        verdict = Verdict.WARN
    return Judgement(
        verdict=verdict,
        signals=tuple(signals),
        value=value,
        stats=stats,
        bisect=bisect_label(verdict, result),
    )
