"""The verdict for one bucket's result against its baseline windows (R3, R5). Pure.

Health first (a run that did not produce usable figures is a HARD_FAILURE), then, for
each metric of the bucket apart (the primary and any others it declares), fixed floors
and the statistical rule (``judge.rule``) on every sample of the run against that
metric's window; the worst signal of the metrics that gate wins. The records it returns
are in ``judge.judgement``, the policies it is given come from ``judge.bucket_policy``;
the signals and the ladder they feed stay together here (a little over 500 lines).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from perfgate.config import ConfirmMode, Direction, Floor, FloorKind
from perfgate.judge.bucket_policy import pair_noise
from perfgate.judge.budget import UNJUDGED
from perfgate.judge.decision import Decision
from perfgate.judge.goodness import figure_text, past, pct_of_g, signed_pct
from perfgate.judge.judgement import (
    Confirmation,
    Judgement,
    Method,
    MetricCheck,
    MetricJudgement,
    MetricWindow,
    Signal,
    bisect_label,
)
from perfgate.judge.paired import PairedDecision, PairedPolicy, settled_decision
from perfgate.judge.policies import CalibratedPolicy, Calibration, Policy
from perfgate.judge.rule import decide
from perfgate.judge.runner_offsets import WindowView, window_view
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import (
    FailurePhase,
    MetricReading,
    PairedRecord,
    PairedStatus,
    Result,
)
from perfgate.util.console import failure_cause


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
                # The cause: a crash's own last words before what it left missing.
                detail=f"unhealthy run (exit={health.exit_code}, phase={phase}): "
                f"{failure_cause(result)}",
            )
        )
    elif health.error:
        signals.append(
            Signal(reason=Reason.MISSING_RESULT, verdict=Verdict.HARD_FAILURE, detail=health.error)
        )
    head = result.paired.head_failure if result.paired else None
    if head is not None and head.phase is not None and not signals:
        signals.append(
            Signal(
                reason=Reason.UNHEALTHY_RUN,
                verdict=Verdict.HARD_FAILURE,
                detail="a sample of the change failed during the paired comparison "
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
    return signals or _figure_signals(result.metric, required=True)


def _figure_signals(reading: MetricReading, *, required: bool) -> list[Signal]:
    """A metric the run did not measure, or measured as no real figure (R3)."""
    if reading.value is None and not required:
        return [
            Signal(
                reason=Reason.METRIC_ABSENT,
                verdict=Verdict.WARN,
                detail=f"no number at {reading.path} in this run (an optional metric): not judged",
            )
        ]
    if reading.value is None:
        return [
            Signal(
                reason=Reason.MISSING_METRIC,
                verdict=Verdict.HARD_FAILURE,
                detail=f"no number at {reading.path}",
            )
        ]
    for value in (reading.value, *reading.sample_values()):
        if not math.isfinite(value):
            # NaN compares false with every line, so it would otherwise pass as "within noise".
            return [
                Signal(
                    reason=Reason.NONFINITE_METRIC,
                    verdict=Verdict.HARD_FAILURE,
                    detail=f"{reading.path} = {value}: not a finite number, not a measurement",
                )
            ]
        if value <= 0:
            return [
                Signal(
                    reason=Reason.NONPOSITIVE_METRIC,
                    verdict=Verdict.HARD_FAILURE,
                    detail=f"{reading.path} = {value:g}: no forward progress, a dead run",
                )
            ]
    return []


def _floor_signals(value: float, floors: Sequence[Floor], direction: Direction) -> list[Signal]:
    signals = []
    for floor in floors:
        if not past(value, floor.value, direction):
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
        what = "an accepted change of" if shift.accepted else "a level shift of"
        signals.append(
            Signal(
                reason=Reason.LEVEL_SHIFT,
                verdict=Verdict.PASS,
                detail=f"{what} {shift.change_pct:+.1f}% landed {shift.kept_runs} "
                "run(s) ago; the window starts after it",
            )
        )
    return signals


def judge(
    result: Result,
    checks: Sequence[MetricCheck],
    *,
    confirm: ConfirmMode = ConfirmMode.REPEAT,
    confirm_drop_pct: float | None = None,
) -> Judgement:
    """Judge one result: health first, then each metric apart; the worst that gates wins.

    ``checks`` are the bucket's metrics, each with its window, floors and rules, the one
    the bucket is read by (its primary) first: its signals, decision and paired test are
    the bucket's. A window holds the baseline's runs, nearest first, each the samples it
    took; an accepted change (R18) starts its level, and the runners that measured it put
    it on the result's runner's terms (``judge.runner_offsets``). The rule sees every sample of
    the run that admission control kept (``final``: the bench took its last one). A paired
    comparison, when measured, decides in the window's place; under ``confirm: paired`` a
    window BLOCK that no paired comparison confirmed is INCONCLUSIVE, unless the bench
    skipped the pairs on purpose (the budget could not decide or afford them): then the
    window's verdict stands, and says so. Samples admission control set aside never
    support a BLOCK. Under ``confirm: paired`` a blocking drop the window could not rule
    out and no pair measured is named as left to post-merge detection (``confirm_drop_pct``).
    """
    signals = _health_signals(result)
    samples = result.metric.sample_values(result.set_aside) or result.metric.sample_values()
    value = statistics.median(samples) if samples else result.metric.value
    judged: list[MetricJudgement] = []
    if not signals and value is not None:
        judged = [
            _judge_metric(check, result, confirm=confirm, confirm_drop_pct=confirm_drop_pct)
            for check in checks
        ]
        signals += judged[0].signals
        for other in judged[1:]:
            signals += [
                replace(signal, detail=f"{other.name}: {signal.detail}")
                for signal in other.signals
                if signal.verdict is not Verdict.PASS
                and (other.gates or signal.verdict is Verdict.HARD_FAILURE)
            ]
        if result.set_aside and not any(s.reason is Reason.CONTAMINATED for s in signals):
            signals.append(_contamination_signal(result, unconfirmed=False))
    retried = f"{result.health.attempts} attempts" if result.health.retried else None
    verdict = _worst(signals, retried=retried)
    paired = judged[0].paired if judged else None
    return Judgement(
        verdict=verdict,
        signals=tuple(signals),
        value=value,
        decision=judged[0].decision if judged else None,
        bisect=bisect_label(verdict, result),
        metrics=tuple(judged),
        paired=paired,
        confirmation=_confirmation(result, paired),
    )


def judge_run(
    samples: Sequence[float],
    window: MetricWindow,
    *,
    direction: Direction,
    floors: Sequence[Floor],
    policy: Policy,
    calibration: Calibration | None = None,
    retried: bool = False,
    runner: str | None = None,
) -> Judgement:
    """Judge a stored run's samples against its window, as :func:`judge` judges a metric.

    The trend site judges the runs the baseline branch holds with it, so a chart draws the
    verdict and lines the rule gave. Paired comparisons are never stored, so this is the
    window's verdict: what the gate says under ``gate.confirm: repeat`` or ``off``. When
    the window names who measured each run it is put on ``runner``'s terms, as the gate
    does.
    """
    value = statistics.median(samples)
    rule = _WindowRule(window=window, policy=policy, direction=direction,
                       calibration=calibration, runner=runner)  # fmt: skip
    decision = rule.decide(samples)
    signals = [*_floor_signals(value, floors, direction), *_window_signals(decision)]
    verdict = _worst(signals, retried="a retry" if retried else None)
    return Judgement(
        verdict=verdict,
        signals=tuple(signals),
        value=value,
        decision=decision,
        bisect=bisect_label(verdict, None),
    )


def _worst(signals: list[Signal], *, retried: str | None) -> Verdict:
    """The worst signal's verdict; a pass that needed ``retried`` (a retry) is WARN (R5)."""
    verdict = max((s.verdict for s in signals), key=lambda v: v.severity)
    if verdict.level is Verdict.PASS and retried:
        signals.append(
            Signal(
                reason=Reason.RETRIED_PASS,
                verdict=Verdict.WARN,
                detail=f"passed only after {retried}",
            )
        )
        verdict = Verdict.WARN
    return verdict


def _judge_metric(
    check: MetricCheck,
    result: Result,
    *,
    confirm: ConfirmMode,
    confirm_drop_pct: float | None = None,
) -> MetricJudgement:
    """One metric against its window: its figure, fixed floors, the rule, then its pairs.

    ``check.metric`` is the declaration; the run's reading of it (none: not reported) says
    what was measured, and its direction is the one hashed into the window.
    """
    metric = check.metric
    measured = result.all_metrics.get(metric.name) or MetricReading(
        path=metric.path, direction=metric.direction, unit=metric.unit, value=None
    )
    signals = _figure_signals(measured, required=metric.required)
    aside = result.set_aside
    samples = measured.sample_values(aside)
    everything = measured.sample_values()
    kept = samples or everything  # every sample set aside: the figure is still shown
    value = statistics.median(kept) if kept and not signals else None
    decision = paired = None
    if value is not None:
        direction = measured.direction
        signals += _floor_signals(value, check.floors, direction)
        rule = _WindowRule(
            window=check.window, policy=check.policy, direction=direction,
            calibration=check.calibration, runner=result.ci.runner_identity,
        )  # fmt: skip
        decision = rule.decide(samples)
        window = _window_signals(decision)
        if rule.view is not None and rule.view.fitted is not None and rule.view.fitted.corrects:
            window.append(_runner_signal(rule.view, direction))
        record = result.paired
        if record is not None and _measured(record) and record.measures(metric.name):
            paired = settled_decision(
                record.pairs(metric.name), direction=direction,
                policy=check.paired_policy or PairedPolicy(), prior=pair_noise(decision),
            )  # fmt: skip
        signals += _confirmation_signals(window, decision, record, paired, confirm=confirm)
        if paired is None and confirm is ConfirmMode.PAIRED and confirm_drop_pct is not None:
            signals += _post_merge_signals(decision, check.policy, confirm_drop_pct)
        # Samples set aside never support a BLOCK: when only they would have blocked, or
        # nothing else is left, the verdict cannot be a pass either.
        undecided = aside and paired is None and decision.verdict is not Verdict.BLOCK
        if undecided and (not samples or rule.decide(everything).verdict is Verdict.BLOCK):
            signals.append(_contamination_signal(result, unconfirmed=True))
    return MetricJudgement(
        name=metric.name,
        path=measured.path,
        unit=measured.unit,
        direction=measured.direction,
        gates=metric.gates,
        verdict=max((s.verdict for s in signals), key=lambda v: v.severity),
        signals=tuple(signals),
        value=value,
        decision=decision,
        paired=paired,
    )


@dataclass(frozen=True, kw_only=True)
class _WindowRule:
    """A metric's rule against its window for a run on ``runner``: on that runner's terms
    under the calibrated policy (``view``), else the window as stored."""

    window: MetricWindow
    policy: Policy
    direction: Direction
    calibration: Calibration | None
    runner: str | None

    @cached_property
    def view(self) -> WindowView | None:
        """The window analysed for ``runner`` (the calibrated policy's only)."""
        if not isinstance(self.policy, CalibratedPolicy):
            return None
        return window_view(self.window.runs, self.window.runners, self.runner,
                           policy=self.policy, direction=self.direction,
                           calibration=self.calibration,
                           known_shift=self.window.known_shift)  # fmt: skip

    def decide(self, samples: Sequence[float]) -> Decision:
        """The rule's decision on ``samples``, the run's last look."""
        if self.view is not None and isinstance(self.policy, CalibratedPolicy):
            return self.view.decide(samples, self.policy, final=True)
        return decide(self.window.runs, samples, direction=self.direction, policy=self.policy,
                      calibration=self.calibration, final=True,
                      known_shift=self.window.known_shift)  # fmt: skip


def _confirmation_signals(
    window: list[Signal],
    decision: Decision,
    record: PairedRecord | None,
    paired: PairedDecision | None,
    *,
    confirm: ConfirmMode,
) -> list[Signal]:
    """The window's signals as the paired comparison (or its absence) leaves them."""
    if paired is not None:
        return [_informational(window[0]), *window[1:], _paired_signal(paired, record)]
    if record is not None and record.status is PairedStatus.SKIPPED:
        detail = f"no paired A/B: {record.reason}; the window's verdict stands"
        return [*window, Signal(reason=Reason.PAIRED_SKIPPED, verdict=Verdict.PASS, detail=detail)]
    if record is not None and confirm is ConfirmMode.PAIRED:
        detail = (f"no paired A/B ({record.reason or 'no pairs for this metric'}); "
                  "confirmed by repeats against the window")  # fmt: skip
        return [*window, Signal(reason=Reason.PAIRED_UNAVAILABLE, verdict=Verdict.PASS,
                                detail=detail)]  # fmt: skip
    if confirm is ConfirmMode.PAIRED and decision.verdict is Verdict.BLOCK:
        detail = (f"{window[0].detail}; not confirmed: the bench made no paired comparison "
                  "with the merge base, and gate.confirm: paired needs one to block")  # fmt: skip
        return [Signal(reason=Reason.UNPAIRED, verdict=Verdict.INCONCLUSIVE, detail=detail),
                *window[1:]]  # fmt: skip
    return window


def _runner_signal(view: WindowView, direction: Direction) -> Signal:
    """How the window was put on this runner's terms (informational)."""
    assert view.fitted is not None
    fitted, runner = view.fitted, view.runner
    offset = fitted.offset(runner)
    name = runner or "an unnamed runner"
    if offset.runs:
        what = (f"{name} runs {signed_pct(fitted.offset_pct(runner))} % against the pool "
                f"({offset.runs} of the last {fitted.runs} runs)")  # fmt: skip
    else:
        what = f"{name} is new to this bucket: judged as the pool's typical runner"
    spread = pct_of_g(fitted.tau, Direction.HIGHER)
    return Signal(
        reason=Reason.RUNNER_OFFSET,
        verdict=Verdict.PASS,
        detail=f"runner-aware window: {what}; runners differ by {spread:.1f} % (one sigma)",
    )


def _post_merge_signals(
    decision: Decision, policy: Policy, confirm_drop_pct: float
) -> list[Signal]:
    """A blocking drop the window could not rule out, too small to be worth confirming at
    this PR's budget (under ``confirm_drop_pct``): named, and left to post-merge alerts."""
    bound = decision.drop_bound_pct
    if not isinstance(policy, CalibratedPolicy) or bound is None or bound < policy.min_drop_pct:
        return []
    if bound >= max(confirm_drop_pct, policy.min_drop_pct):
        return []  # a drop that matters: confirmed here, or its row says why it was not
    if decision.verdict not in (Verdict.PASS, Verdict.WARN) or decision.reasons[0] in UNJUDGED:
        return []
    return [
        Signal(
            reason=Reason.POST_MERGE,
            verdict=Verdict.PASS,
            detail=f"a drop below {bound:.1f} % cannot be ruled out at this run's budget; "
            "post-merge alerts watch the target branch for it",
        )
    ]


def _measured(record: PairedRecord | None) -> bool:
    """A paired comparison whose pairs decide."""
    return record is not None and record.status is PairedStatus.MEASURED


def _informational(signal: Signal) -> Signal:
    """The window's verdict when pairs decide: kept for the reader, deciding nothing."""
    return Signal(
        reason=Reason.WINDOW_SUSPECT,
        verdict=Verdict.PASS,
        detail=f"against the window: {signal.detail} ({signal.verdict.label}-level); "
        "the paired comparison decides",
    )


def _paired_signal(paired: PairedDecision, record: PairedRecord | None) -> Signal:
    """The paired test's verdict, naming the paired samples admission control set aside."""
    aside = [s for s in record.samples if s.admission and s.admission.set_aside] if record else []
    detail = paired.detail
    if aside:
        why = "; ".join(dict.fromkeys(r for s in aside if s.admission for r in s.admission.reasons))
        detail += f"; {len(aside)} paired sample(s) set aside ({why})"
    return Signal(reason=paired.reason, verdict=paired.verdict, detail=detail)


def _contamination_signal(result: Result, *, unconfirmed: bool) -> Signal:
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
    return Confirmation(
        method=method,
        samples=len(result.metric.sample_values(result.set_aside)),
        set_aside=len(result.set_aside),
        minutes=sampling.confirmation_s / 60.0 if sampling else 0.0,
        note=record.reason if record is not None and not _measured(record) else "",
    )
