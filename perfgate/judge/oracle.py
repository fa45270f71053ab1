"""The verdict for one bucket's result against its baseline window (R3, R5). Pure.

Health first (a run that did not produce usable figures is a HARD_FAILURE), then fixed
floors and the statistical rule (``judge.stats``) on every sample of the run against
the window's runs; the worst signal wins.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from perfgate.config import (
    Bucket,
    Direction,
    Floor,
    FloorKind,
    GatePolicy,
    PolicyName,
)
from perfgate.judge.stats import (
    CalibratedPolicy,
    Calibration,
    Decision,
    Policy,
    ReferencePolicy,
    decide,
    figure_text,
)
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import FailurePhase, Result


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
class Judgement:
    """The verdict for one bucket and everything that led to it."""

    verdict: Verdict
    signals: tuple[Signal, ...]
    # The run's figure: the median of its samples.
    value: float | None
    # The statistics behind the window signal (None when health stopped the judging).
    decision: Decision | None
    bisect: Bisect

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason, in the order found."""
        return tuple(signal.reason for signal in self.signals)

    def details(self, at_least: Verdict = Verdict.PASS) -> list[str]:
        """Details of the signals at or above a severity."""
        return [s.detail for s in self.signals if s.verdict.severity >= at_least.severity]


def window_sample_limit(gate: GatePolicy, buckets: Sequence[Bucket]) -> int:
    """How many of the nearest samples to read so every bucket's window is whole (R4).

    The bench (confirming) and the gate read with the same limit, so they see one window.
    """
    if gate.policy is PolicyName.REFERENCE:
        return gate.baseline.max_samples
    most = max((b.most_samples(gate.confirm) for b in buckets), default=1)
    # The rule keeps the nearest max_runs runs of what is read.
    return gate.baseline.max_runs * most


def policy_for(bucket: Bucket, gate: GatePolicy, hardware: str) -> Policy:
    """The rule ``bucket`` is judged with on ``hardware``, from perfgate.yaml (R5).

    The calibrated policy spends its false-alarm budget over the looks the bench can take,
    so its repeats and confirmation budget are the bucket's own.
    """
    oracle, window = gate.oracle, gate.baseline
    floor = bucket.noise_floor_for(hardware, oracle.noise_floor_pct)
    if gate.policy is PolicyName.REFERENCE:
        return ReferencePolicy(
            k_warn=oracle.k_warn,
            k_block=oracle.k_block,
            min_block_regression_pct=oracle.min_block_regression_pct,
            noise_floor_pct=floor,
            min_samples=window.min_samples,
            max_samples=window.max_samples,
        )
    return CalibratedPolicy(
        false_alarm_rate=gate.false_alarm_rate,
        min_drop_pct=oracle.min_block_regression_pct,
        noise_floor_pct=floor,
        run_noise_floor_pct=oracle.run_noise_floor_pct,
        min_samples=window.min_samples,
        min_runs=window.min_runs,
        max_runs=window.max_runs,
        initial_repeats=bucket.repeats,
        max_repeats=bucket.most_samples(gate.confirm),
    )


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
    metric = result.metric
    if not signals and metric.value is None:
        signals.append(
            Signal(
                reason=Reason.MISSING_METRIC,
                verdict=Verdict.HARD_FAILURE,
                detail=f"no number at {metric.path}",
            )
        )
        return signals
    for value in (metric.value, *metric.sample_values()):
        if signals or value is None:
            break
        if not math.isfinite(value):
            # NaN compares false with every line, so it would otherwise pass as "within noise".
            signals.append(
                Signal(
                    reason=Reason.NONFINITE_METRIC,
                    verdict=Verdict.HARD_FAILURE,
                    detail=f"{metric.path} = {value}: not a finite number, not a measurement",
                )
            )
        elif value <= 0:
            signals.append(
                Signal(
                    reason=Reason.NONPOSITIVE_METRIC,
                    verdict=Verdict.HARD_FAILURE,
                    detail=f"{metric.path} = {value:g}: no forward progress, a dead run",
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
                    f"({figure_text(value)} vs {figure_text(floor.value)})",
                )
            )
    return signals


def _window_signals(decision: Decision) -> list[Signal]:
    """The rule's verdict, then what it noticed about the window (modes, a level shift)."""
    signals = [Signal(reason=decision.reasons[0], verdict=decision.verdict, detail=decision.detail)]
    if decision.multimodal:
        modes = ", ".join(
            f"{figure_text(mode.center)} ({mode.share:.0%})" for mode in decision.modes
        )
        signals.append(
            Signal(
                reason=Reason.MULTIMODAL,
                verdict=Verdict.PASS,
                detail=f"the window has {len(decision.modes)} modes: {modes}; each sample is "
                "judged against the mode it matches",
            )
        )
    if decision.shift is not None:
        shift = decision.shift
        signals.append(
            Signal(
                reason=Reason.LEVEL_SHIFT,
                verdict=Verdict.PASS,
                detail=f"a level shift of {shift.change_pct:+.1f}% landed {shift.kept_runs} "
                "run(s) ago; the window starts after it",
            )
        )
    return signals


def bisect_label(verdict: Verdict, result: Result | None) -> Bisect:
    """GOOD for a clean pass, BAD for a regression or a crash in init/runtime, else SKIP."""
    if verdict.level is Verdict.PASS:
        return Bisect.SKIP if result is not None and result.health.retried else Bisect.GOOD
    if verdict is Verdict.BLOCK:
        return Bisect.BAD
    if verdict is Verdict.HARD_FAILURE and result is not None:
        crashed = result.health.phase in (FailurePhase.INIT, FailurePhase.RUNTIME)
        return Bisect.BAD if crashed and result.health.stale_image is None else Bisect.SKIP
    return Bisect.SKIP


def judge(
    result: Result,
    window: Sequence[Sequence[float]],
    *,
    floors: Sequence[Floor],
    policy: Policy,
    calibration: Calibration | None = None,
) -> Judgement:
    """Judge one result: health first, then fixed floors and the window; worst wins.

    ``window`` holds the baseline's runs, nearest first, each the samples it took. The
    rule sees every sample of the run (``final``: the bench took its last one).
    """
    signals = _health_signals(result)
    decision: Decision | None = None
    samples = result.metric.sample_values()
    value = statistics.median(samples) if samples else result.metric.value
    if not signals and value is not None:
        direction = result.metric.direction
        signals += _floor_signals(value, floors, direction)
        decision = decide(
            window,
            samples,
            direction=direction,
            policy=policy,
            calibration=calibration,
            final=True,
        )
        signals += _window_signals(decision)
    verdict = max((s.verdict for s in signals), key=lambda v: v.severity)
    if verdict.level is Verdict.PASS and result.health.retried:
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
        decision=decision,
        bisect=bisect_label(verdict, result),
    )
