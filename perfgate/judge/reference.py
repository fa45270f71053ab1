"""The reference rule (``gate.policy: reference``): the seed's verdict, reproduced exactly (R5)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import replace

from perfgate.config import Direction
from perfgate.judge.decision import Decision, DecisionBasis
from perfgate.judge.goodness import figure_text, past
from perfgate.judge.policies import ReferencePolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import WindowInput, runs_of


def reference_decide(
    window: WindowInput,
    samples: Sequence[float],
    *,
    policy: ReferencePolicy,
    direction: Direction = Direction.HIGHER,
) -> Decision:
    """The seed's verdict: the mean of the samples against median -/+ k x unscaled MAD.

    The window is every sample, nearest first, capped at ``max_samples``; the lines, the
    reasons and the texts are the seed's (exactly on a line is not past it).
    """
    flat = [v for run in runs_of(window) for v in run][: policy.max_samples]
    basis = DecisionBasis(
        policy=policy.name, samples=len(samples), window_samples=len(flat), window_runs=len(flat)
    )
    if not samples:
        return Decision.on(
            basis, verdict=Verdict.WARN, reasons=(Reason.NO_SAMPLES,), detail="no samples"
        )
    value = math.fsum(samples) / len(samples)
    if not flat:
        return replace(
            Decision.on(
                basis,
                verdict=Verdict.WARN,
                reasons=(Reason.NO_BASELINE,),
                detail="no baseline yet for this experiment on this hardware",
            ),
            value=value,
        )
    median = statistics.median(flat)
    mad = statistics.median(abs(v - median) for v in flat)
    noise = max(mad, policy.noise_floor_pct / 100.0 * median)
    sign = -1.0 if direction is Direction.HIGHER else 1.0
    warn_line = median + sign * policy.k_warn * noise
    block_line = median + sign * policy.k_block * noise
    change_pct = (value - median) / median * 100.0
    regression_pct = -change_pct if direction is Direction.HIGHER else change_pct
    change = f"{change_pct:+.1f}% vs median {figure_text(median)}"
    if len(flat) < policy.min_samples:
        verdict, reason = Verdict.WARN, Reason.INSUFFICIENT_WINDOW
        detail = f"only {len(flat)} of {policy.min_samples} baseline samples; cannot judge yet"
    elif past(value, block_line, direction) and regression_pct >= policy.min_drop_pct:
        verdict, reason = Verdict.BLOCK, Reason.ROLLING_WINDOW
        detail = f"regression {change}, past the block line"
    elif past(value, block_line, direction):
        verdict, reason = Verdict.WARN, Reason.BELOW_BLOCK_INSIDE_REGRESSION_FLOOR
        detail = (
            f"past the block line but {change} is under the "
            f"{policy.min_drop_pct:g}% minimum for a block"
        )
    elif past(value, warn_line, direction):
        verdict, reason = Verdict.WARN, Reason.ROLLING_WINDOW
        detail = f"possible regression {change}"
    else:
        verdict, reason, detail = Verdict.PASS, Reason.ROLLING_WINDOW, f"within noise ({change})"
    return replace(
        Decision.on(basis, verdict=verdict, reasons=(reason,), detail=detail),
        value=value,
        baseline=median,
        effect_pct=change_pct,
        block_line=block_line,
        warn_line=warn_line,
        threshold_pct=(block_line - median) / median * 100.0,
        noise_pct=noise / median * 100.0,
    )
