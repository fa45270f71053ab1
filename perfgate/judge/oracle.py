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
    ConfirmMode,
    Direction,
    Floor,
    FloorKind,
    GatePolicy,
    PolicyName,
)
from perfgate.judge.paired import PairedDecision, PairedPolicy, paired_decide
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
from perfgate.result import FailurePhase, PairedSide, PairedStatus, Result


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


class Method(StrEnum):
    """How a bucket's verdict was reached."""

    WINDOW = "window"  # the run's repeats against its window, nothing more
    REPEATS = "repeats"  # more samples on the same runner, against the window
    PAIRED = "paired"  # the merge base and the change, alternately on the same runner


@dataclass(frozen=True, kw_only=True)
class Confirmation:
    """How the verdict was reached and what confirming it cost (runner minutes)."""

    method: Method
    # Samples of the change judged against the window, and those set aside.
    samples: int
    set_aside: int = 0
    minutes: float = 0.0
    # Why a paired comparison could not be made, when one was wanted.
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """The verdict for one bucket and everything that led to it."""

    verdict: Verdict
    signals: tuple[Signal, ...]
    # The run's figure: the median of its samples (those admission control kept).
    value: float | None
    # The statistics behind the window signal (None when health stopped the judging).
    decision: Decision | None
    bisect: Bisect
    # The paired test, when a paired comparison with the merge base was measured.
    paired: PairedDecision | None = None
    confirmation: Confirmation | None = None

    def effect_text(self) -> str:
        """The change the verdict rests on: the paired one when pairs decided, else the
        window's ('' when neither has one)."""
        if self.paired is not None and self.paired.effect_pct is not None:
            return self.paired.effect_text()
        return self.decision.effect_text() if self.decision else ""

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


def paired_policy_for(bucket: Bucket, gate: GatePolicy, hardware: str) -> PairedPolicy:
    """The paired test ``bucket`` is confirmed with on ``hardware`` (gate.confirm: paired)."""
    return PairedPolicy(
        false_alarm_rate=gate.false_alarm_rate,
        min_drop_pct=gate.oracle.min_block_regression_pct,
        noise_floor_pct=bucket.noise_floor_for(hardware, gate.oracle.noise_floor_pct),
        max_pairs=bucket.max_pairs,
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
    paired = result.paired
    failed = [s for s in paired.samples if s.phase] if paired is not None and not signals else []
    head = next((s for s in failed if s.side is PairedSide.HEAD), None)
    if head is not None and head.phase is not None:
        signals.append(
            Signal(
                reason=Reason.UNHEALTHY_RUN,
                verdict=Verdict.HARD_FAILURE,
                detail=f"a sample of the change failed during the paired comparison "
                f"(phase={head.phase.value})",
            )
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
    confirm: ConfirmMode = ConfirmMode.REPEAT,
    paired_policy: PairedPolicy | None = None,
) -> Judgement:
    """Judge one result: health first, then fixed floors, the window, and the pairs.

    ``window`` holds the baseline's runs, nearest first, each the samples it took. The
    rule sees every sample of the run that admission control kept (``final``: the bench
    took its last one). A paired comparison, when measured, decides in the window's place;
    under ``confirm: paired`` a window BLOCK that no paired comparison confirmed is
    INCONCLUSIVE. Samples admission control set aside never support a BLOCK.
    """
    signals = _health_signals(result)
    decision: Decision | None = None
    paired: PairedDecision | None = None
    aside = result.set_aside
    samples = result.metric.sample_values(aside)
    everything = result.metric.sample_values()
    measured = samples or everything
    value = statistics.median(measured) if measured else result.metric.value
    if not signals and value is not None:
        direction = result.metric.direction
        signals += _floor_signals(value, floors, direction)

        def against_window(values: Sequence[float]) -> Decision:
            return decide(window, values, direction=direction, policy=policy,
                          calibration=calibration, final=True)  # fmt: skip

        decision = against_window(samples)
        window_signals = _window_signals(decision)
        record = result.paired
        if record is not None and record.status is PairedStatus.MEASURED:
            paired = paired_decide(
                record.pairs(),
                direction=direction,
                policy=paired_policy or PairedPolicy(),
                final=True,
            )
            window_signals = [_informational(window_signals[0]), *window_signals[1:]]
            window_signals.append(_paired_signal(paired, result))
        elif record is not None and confirm is ConfirmMode.PAIRED:
            window_signals.append(
                Signal(
                    reason=Reason.PAIRED_UNAVAILABLE,
                    verdict=Verdict.PASS,
                    detail=f"no paired A/B ({record.reason}); confirmed by repeats "
                    "against the window",
                )
            )
        elif confirm is ConfirmMode.PAIRED and decision.verdict is Verdict.BLOCK:
            first = window_signals[0]
            window_signals[0] = Signal(
                reason=Reason.UNPAIRED,
                verdict=Verdict.INCONCLUSIVE,
                detail=f"{first.detail}; not confirmed: the bench made no paired comparison "
                "with the merge base, and gate.confirm: paired needs one to block",
            )
        signals += window_signals
        if aside and paired is None:
            unconfirmed = decision.verdict is not Verdict.BLOCK and (
                not samples or against_window(everything).verdict is Verdict.BLOCK
            )
            signals.append(_contamination_signal(result, unconfirmed))
        elif aside:
            signals.append(_contamination_signal(result, False))
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
        paired=paired,
        confirmation=_confirmation(result, paired),
    )


def _informational(signal: Signal) -> Signal:
    """The window's verdict when pairs decide: kept for the reader, deciding nothing."""
    return Signal(
        reason=Reason.WINDOW_SUSPECT,
        verdict=Verdict.PASS,
        detail=f"against the window: {signal.detail} ({signal.verdict.label}-level); "
        "the paired comparison decides",
    )


def _paired_signal(paired: PairedDecision, result: Result) -> Signal:
    """The paired test's verdict, naming the pairs admission control set aside."""
    record = result.paired
    aside = [s for s in record.samples if s.admission and s.admission.set_aside] if record else []
    detail = paired.detail
    if aside:
        why = "; ".join(dict.fromkeys(r for s in aside if s.admission for r in s.admission.reasons))
        detail += f"; {len(aside)} paired sample(s) set aside ({why})"
    return Signal(reason=paired.reason, verdict=paired.verdict, detail=detail)


def _contamination_signal(result: Result, unconfirmed: bool) -> Signal:
    """Samples taken on an unfit machine: named; INCONCLUSIVE when only they could block."""
    aside = [a for a in result.admission if a.set_aside]
    why = "; ".join(dict.fromkeys(reason for a in aside for reason in a.reasons))
    total = len(result.admission)
    if unconfirmed:
        return Signal(
            reason=Reason.CONTAMINATED,
            verdict=Verdict.INCONCLUSIVE,
            detail=f"{len(aside)} of {total} samples were taken on an unfit machine and set "
            f"aside, and the others cannot confirm a regression: {why}",
        )
    return Signal(
        reason=Reason.CONTAMINATED,
        verdict=Verdict.PASS,
        detail=f"{len(aside)} of {total} samples set aside by admission control: {why}",
    )


def _confirmation(result: Result, paired: PairedDecision | None) -> Confirmation:
    """How the verdict was reached: the window alone, repeats, or paired A/B."""
    sampling = result.sampling
    record = result.paired
    if paired is not None:
        method = Method.PAIRED
    elif sampling is not None and sampling.confirming_samples:
        method = Method.REPEATS
    else:
        method = Method.WINDOW
    unavailable = record is not None and record.status is not PairedStatus.MEASURED
    return Confirmation(
        method=method,
        samples=len(result.metric.sample_values(result.set_aside)),
        set_aside=len(result.set_aside),
        minutes=sampling.confirmation_s / 60.0 if sampling else 0.0,
        note=record.reason if record is not None and unavailable else "",
    )
