"""A verdict and the statistics behind it: what every rule returns and verdict.json carries."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.judge.goodness import effect_text
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import Shift, WindowMode


@dataclass(frozen=True, kw_only=True)
class DecisionBasis:
    """What a verdict is judged on: the policy, the run's samples and the window used."""

    policy: str
    samples: int  # run samples used
    window_samples: int  # window samples used (after the shift cut)
    window_runs: int
    modes: tuple[WindowMode, ...] = ()
    shift: Shift | None = None


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The verdict and the statistics behind it (what verdict.json carries)."""

    verdict: Verdict
    reasons: tuple[Reason, ...]
    detail: str
    need_more: bool = False  # the sequential rule asks for another sample
    # A drop of at least the minimum is still inside the warn-level interval: the window
    # cannot clear the run (paired confirmation measures the merge base beside it then).
    drop_possible: bool = False
    # The largest drop still inside the warn-level interval, metric % (negative: even the
    # pessimistic end is a gain). A drop above it is ruled out by the window.
    drop_bound_pct: float | None = None
    drop_pct: float | None = None  # the estimated drop, metric % (negative: a gain)
    # The drop bound more samples of this run could reach at best: the noise its samples
    # share (runner, state, the window's own level) does not average away.
    repeats_bound_pct: float | None = None
    policy: str
    samples: int  # run samples used
    window_samples: int  # window samples used (after the shift cut)
    window_runs: int
    value: float | None = None  # the run's figure (robust location), metric units
    baseline: float | None = None  # the matched baseline level, metric units
    effect_pct: float | None = None  # change of the metric, % (sign as measured)
    interval_pct: tuple[float, float] | None = None
    confidence: float | None = None
    block_line: float | None = None  # metric value past which this run would BLOCK
    warn_line: float | None = None
    threshold_pct: float | None = None  # block line as a change %
    t: float | None = None
    t_block: float | None = None
    df: float | None = None
    noise_pct: float | None = None  # per-sample noise, % of the level
    run_noise_pct: float | None = None  # noise shared by one run's samples, % of the level
    within_noise_pct: float | None = None  # noise between one run's samples, % of the level
    within_df: float | None = None
    resolution_pct: float | None = None  # smallest drop that could BLOCK with the full budget
    modes: tuple[WindowMode, ...] = ()
    shift: Shift | None = None
    between_modes: int = 0  # run samples that matched no mode

    @classmethod
    def on(
        cls, basis: DecisionBasis, *, verdict: Verdict, reasons: tuple[Reason, ...], detail: str
    ) -> Decision:
        """The verdict on ``basis``, no statistics yet (``dataclasses.replace`` adds them)."""
        return cls(
            verdict=verdict,
            reasons=reasons,
            detail=detail,
            policy=basis.policy,
            samples=basis.samples,
            window_samples=basis.window_samples,
            window_runs=basis.window_runs,
            modes=basis.modes,
            shift=basis.shift,
        )

    @property
    def multimodal(self) -> bool:
        """The window has more than one mode."""
        return len(self.modes) > 1

    def effect_text(self) -> str:
        """'-6.1 % (-7.9 ... -4.2)' or '' when there is no effect estimate."""
        return effect_text(self.effect_pct, self.interval_pct)
