"""What the oracle is given of one bucket (each metric's window and rule) and what it says:
its judgement, each metric's, and the signals behind them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from perfgate.config import PRIMARY, Direction, Floor, Metric
from perfgate.judge.decision import Decision
from perfgate.judge.paired import PairedDecision, PairedPolicy
from perfgate.judge.policies import Calibration, Policy
from perfgate.judge.runner_offsets import WindowRunners
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
class MetricJudgement:
    """One metric of a bucket run against its own window: its verdict and why."""

    name: str
    path: str
    unit: str
    direction: Direction
    # False: reported only, its verdict never counts toward the bucket's.
    gates: bool
    verdict: Verdict
    signals: tuple[Signal, ...]
    # The run's figure of this metric: the median of its samples admission control kept
    # (None: not measured).
    value: float | None
    decision: Decision | None
    # The paired test of this metric, when a paired comparison was measured.
    paired: PairedDecision | None = None

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason, in the order found."""
        return tuple(signal.reason for signal in self.signals)


class MetricKey(NamedTuple):
    """Which window: one metric of one bucket."""

    bucket: str
    metric: str = PRIMARY


@dataclass(frozen=True, kw_only=True)
class MetricWindow:
    """The baseline of one metric of one bucket: its runs, nearest first, each the samples
    it took; who measured them; and where an accepted change starts its level."""

    runs: Sequence[Sequence[float]] = ()
    # Who measured each run (and a fitted runner model), for a runner-aware window.
    runners: WindowRunners | None = None
    # An accepted change starts the level after the nearest this many runs (R18).
    known_shift: int | None = None


@dataclass(frozen=True, kw_only=True)
class MetricCheck:
    """One metric of a bucket and what it is judged with."""

    metric: Metric
    window: MetricWindow
    floors: Sequence[Floor] = ()
    policy: Policy
    paired_policy: PairedPolicy | None = None
    # The measured noise of this metric (an A/A calibration), when the rule may use it.
    calibration: Calibration | None = None


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
    """The verdict for one bucket and everything that led to it.

    ``value`` and ``decision`` are the primary metric's; ``metrics`` holds every metric's
    own judgement (the primary first), empty when health stopped the judging. The
    bucket's signals are the primary's, then each other metric's that is not PASS (its
    detail naming the metric), when that metric gates or failed outright.
    """

    verdict: Verdict
    signals: tuple[Signal, ...]
    # The run's figure: the median of its samples (those admission control kept).
    value: float | None
    # The statistics behind the window signal (None when health stopped the judging).
    decision: Decision | None
    bisect: Bisect
    metrics: tuple[MetricJudgement, ...] = ()
    # The primary metric's paired test, when a paired comparison was measured.
    paired: PairedDecision | None = None
    confirmation: Confirmation | None = None

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason, in the order found."""
        return tuple(signal.reason for signal in self.signals)

    def details(self, at_least: Verdict = Verdict.PASS) -> list[str]:
        """Details of the signals at or above a severity."""
        return [s.detail for s in self.signals if s.verdict.severity >= at_least.severity]


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
