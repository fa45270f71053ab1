"""The verdicts a bucket can get and the reasons behind them (R3, R5): one vocabulary.

The statistics (``judge.rule``) reach PASS, IMPROVED, WARN, INCONCLUSIVE or BLOCK; result
health and fixed floors (``judge.oracle``) add HARD_FAILURE. Every surface prints these
names.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class Verdict(Enum):
    """Bucket verdicts, ordered by severity (the worst of a bucket's signals wins).

    Four *levels* decide what happens: PASS, WARN, BLOCK, HARD_FAILURE. IMPROVED is
    PASS-level (a significant gain), INCONCLUSIVE is WARN-level (the evidence cannot
    separate a change from noise): each has its own name so a reader knows which it was.
    """

    PASS = 0
    IMPROVED = 1
    WARN = 2
    INCONCLUSIVE = 3
    BLOCK = 4
    HARD_FAILURE = 5

    @property
    def severity(self) -> int:
        """Rank for "the worst wins": PASS 0 ... HARD_FAILURE 5."""
        return self.value

    @property
    def label(self) -> str:
        """The verdict's name, as printed and stored."""
        return self.name

    @property
    def level(self) -> Verdict:
        """The level that decides exit codes and statuses: PASS, WARN, BLOCK or HARD_FAILURE."""
        return _LEVELS.get(self, self)


_LEVELS = {Verdict.IMPROVED: Verdict.PASS, Verdict.INCONCLUSIVE: Verdict.WARN}


class Reason(StrEnum):
    """Why a verdict was reached; a judgement carries every reason that applied."""

    # result health (R3) and coverage (R6)
    CONFIG_MISMATCH = "CONFIG_MISMATCH"
    UNHEALTHY_RUN = "UNHEALTHY_RUN"
    MISSING_RESULT = "MISSING_RESULT"
    MISSING_METRIC = "MISSING_METRIC"
    METRIC_ABSENT = "METRIC_ABSENT"  # an optional metric the run did not report (WARN)
    NONFINITE_METRIC = "NONFINITE_METRIC"
    NONPOSITIVE_METRIC = "NONPOSITIVE_METRIC"
    UNREADABLE_ARTIFACT = "UNREADABLE_ARTIFACT"
    STALE_IMAGE = "STALE_IMAGE"
    NOT_REPORTED = "NOT_REPORTED"
    # fixed floors
    FLOOR_CROSSED = "FLOOR_CROSSED"
    FLOOR_RECORDED = "FLOOR_RECORDED"
    # the window (R4)
    NO_BASELINE = "NO_BASELINE"
    INSUFFICIENT_WINDOW = "INSUFFICIENT_WINDOW"
    NO_SAMPLES = "NO_SAMPLES"
    # the calibrated rule (R5)
    WITHIN_NOISE = "WITHIN_NOISE"
    IMPROVEMENT = "IMPROVEMENT"
    REGRESSION = "REGRESSION"
    SMALL_REGRESSION = "SMALL_REGRESSION"  # significant, but under the minimum drop
    POSSIBLE_REGRESSION = "POSSIBLE_REGRESSION"  # past the warn line, not confirmed
    UNRESOLVED = "UNRESOLVED"  # looks like a blocking drop, noise too large to confirm it
    UNCONFIRMED = "UNCONFIRMED"  # significant, but too few samples to be allowed to block
    MULTIMODAL = "MULTIMODAL"  # informational: judged against the matching mode
    BETWEEN_MODES = "BETWEEN_MODES"  # the run matches no mode of a multimodal window
    LEVEL_SHIFT = "LEVEL_SHIFT"  # informational: the window starts after a landed shift
    SHIFT_SETTLING = "SHIFT_SETTLING"  # a shift landed, too few samples after it yet
    # a window BLOCK that a whole-run excursion of unchanged code could explain
    RUN_STATE = "RUN_STATE"
    # the run matches a slower state of the window's whole runs: that state, or a drop
    SLOWER_STATE = "SLOWER_STATE"
    # admission control and paired confirmation
    CONTAMINATED = "CONTAMINATED"  # samples taken on an unfit machine, set aside
    PAIRED_REGRESSION = "PAIRED_REGRESSION"  # confirmed by the paired test on one runner
    NOT_CONFIRMED = "NOT_CONFIRMED"  # the paired test cleared what the window suspected
    PAIRED_UNRESOLVED = "PAIRED_UNRESOLVED"  # the pairs cannot separate base and head
    PAIRED_UNAVAILABLE = "PAIRED_UNAVAILABLE"  # informational: no merge base to measure
    UNPAIRED = "UNPAIRED"  # the window would block, but no paired comparison confirmed it
    # informational: no pairs on purpose (the budget could not decide or afford them)
    PAIRED_SKIPPED = "PAIRED_SKIPPED"
    # informational: a blocking drop the window could not rule out, too small to confirm here
    POST_MERGE = "POST_MERGE"
    # informational: the window was judged on this run's runner's terms (its offset taken out)
    RUNNER_OFFSET = "RUNNER_OFFSET"
    WINDOW_SUSPECT = "WINDOW_SUSPECT"  # informational: what the window said; pairs decided
    # the reference policy (the seed's names)
    ROLLING_WINDOW = "ROLLING_WINDOW"
    BELOW_BLOCK_INSIDE_REGRESSION_FLOOR = "BELOW_BLOCK_INSIDE_REGRESSION_FLOOR"
    # after everything else
    RETRIED_PASS = "RETRIED_PASS"  # noqa: S105 (a reason code, not a password)
