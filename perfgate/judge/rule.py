"""The statistical rule: a bucket run's samples against its baseline window (R4, R5). Pure.

Pure Python, so it is importable without numpy and callable on plain numbers: any series
can be scored (``nox -s quality`` does). One entry point for both policies
(``judge.policies``):

* the reference rule (``judge.reference``): the mean of the run's samples against the
  median of the window -/+ k x unscaled MAD; WARN past 2.5, BLOCK past 4.0 with at least
  a 3 % drop; window 5..20 samples;
* the calibrated rule (the default): the window analysed once (``judge.window``: level
  shifts, modes, noise), then a robust test of the run's samples against it with
  thresholds set from a target false-alarm rate per bucket run and sequential
  confirmation on suspicion (``judge.calibrated``), on the numerical kit of
  ``judge.numerics`` and the goodness scale of ``judge.goodness``.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.config import Direction
from perfgate.judge.calibrated import calibrated_decide
from perfgate.judge.decision import Decision
from perfgate.judge.policies import CalibratedPolicy, Calibration, Policy, ReferencePolicy
from perfgate.judge.reference import reference_decide
from perfgate.judge.window import WindowInput, WindowModel, analyse_window


def decide(
    window: WindowInput | WindowModel,
    samples: Sequence[float],
    *,
    direction: Direction = Direction.HIGHER,
    policy: Policy | None = None,
    calibration: Calibration | None = None,
    final: bool = False,
    known_shift: int | None = None,
) -> Decision:
    """Judge a run's samples against a window (nearest-first runs, or an analysed model).

    ``known_shift``: an accepted change starts the level after the nearest that many runs;
    the reference rule's window is those runs alone.
    """
    policy = CalibratedPolicy() if policy is None else policy
    if isinstance(policy, ReferencePolicy):
        if isinstance(window, WindowModel):
            raise TypeError("the reference policy judges raw windows")
        kept = window if known_shift is None else window[:known_shift]
        return reference_decide(kept, samples, policy=policy, direction=direction)
    model = (
        window
        if isinstance(window, WindowModel)
        else analyse_window(
            window,
            policy=policy,
            direction=direction,
            calibration=calibration,
            known_shift=known_shift,
        )
    )
    return calibrated_decide(model, samples, policy=policy, final=final)


def needs_more(
    window: WindowInput | WindowModel,
    samples: Sequence[float],
    *,
    direction: Direction = Direction.HIGHER,
    policy: Policy | None = None,
    calibration: Calibration | None = None,
) -> bool:
    """Should the bench measure this bucket once more before the verdict is final?"""
    if isinstance(policy, ReferencePolicy):
        return False
    return decide(
        window, samples, direction=direction, policy=policy, calibration=calibration
    ).need_more
