"""Budgets that cannot decide, flagged before a minute is spent (R17): ``validate`` and the
bench ask, per bucket and runner pool, whether the pairs (or samples) its confirmation
budget affords can BLOCK a drop that matters, at the noise and launch time it recorded. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from perfgate.config import Bucket, Config, ConfirmMode, Direction, PolicyName
from perfgate.judge.bucket_policy import confirm_drop_for, paired_policy_for, policy_for
from perfgate.judge.budget import WindowNoise, pair_affordability, repeat_affordability
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.goodness import pct_of_g
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.window import WindowModel


@dataclass(frozen=True, kw_only=True)
class RecordedRuns:
    """What one runner pool recorded of a bucket: launch time, and the runs analysed."""

    launch_minutes: float | None
    hardware: str
    model: WindowModel | None


# Per bucket id: one entry per hardware it was recorded on.
Recorded = Mapping[str, Sequence[RecordedRuns]]


@dataclass(frozen=True, kw_only=True)
class BudgetNote:
    """A budget that cannot decide everything (R17): one short line, and its numbers."""

    level: str  # "warning" or "notice", as console.annotate prints it
    short: str
    detail: str

    def text(self, *, detailed: bool) -> str:
        """The short line, with its numbers when ``detailed``."""
        return f"{self.short} [{self.detail}]" if detailed else self.short


_NOTHING = (RecordedRuns(launch_minutes=None, hardware="", model=None),)


def budget_warnings(
    config: Config,
    buckets: Sequence[Bucket],
    recorded: Callable[[], Recorded],
    calibration: NoiseCalibration | None = None,
) -> list[BudgetNote]:
    """Each bucket whose confirmation budget cannot decide, with the numbers (R17).

    Under ``gate.confirm: paired``: can the pairs its budget affords BLOCK a drop of
    ``confirm_drop_pct`` (else none is taken and the window decides), and one of the
    minimum (else smaller drops are left to post-merge detection)? The noise is the
    calibration's, else what the bucket's recorded runs show (the within-run noise a pair
    sees); the launch time its recorded samples' durations, else ``launch_minutes``.
    Under ``gate.confirm: repeat``: the same for samples against the window. Buckets with
    a launch time but no noise known yet are named once; those without either are not
    checked. Each line comes with its level: ``warning`` or ``notice``. ``recorded`` reads
    the buckets' recorded runs, only when a budget is checked.
    """
    gate = config.gate
    if gate.confirm is ConfirmMode.OFF or gate.policy is not PolicyName.CALIBRATED:
        return []
    runs_of = recorded()
    lines: list[BudgetNote] = []
    unknown: list[str] = []
    for bucket in buckets:
        pools = runs_of.get(bucket.id) or _NOTHING
        for pool in pools:
            label = f"{bucket.id} on {pool.hardware}" if len(pools) > 1 else bucket.id
            lines += _budget_lines(config, bucket, pool, label, calibration, unknown)
    if unknown:
        short = f"{len(unknown)} bucket(s) have no recorded noise yet: budgets are checked later"
        detail = "record samples or calibrate; " + ", ".join(unknown)
        lines.append(BudgetNote(level="notice", short=short, detail=detail))
    return lines


def _budget_lines(
    config: Config,
    bucket: Bucket,
    pool: RecordedRuns,
    label: str,
    calibration: NoiseCalibration | None,
    unknown: list[str],
) -> list[BudgetNote]:
    """One bucket's budget on one runner pool; names it in ``unknown`` when no noise is known."""
    gate = config.gate
    lines: list[BudgetNote] = []
    hardware, model = pool.hardware, pool.model
    launch = pool.launch_minutes or bucket.launch_minutes
    policy = policy_for(bucket, gate, hardware)
    assert isinstance(policy, CalibratedPolicy)
    noise = _noise(bucket, hardware, model, calibration)
    if launch is None:
        return lines  # nothing known of it yet: checked once it declares or records a launch
    if noise is None:
        unknown.append(label)
        return lines
    drops = (confirm_drop_for(gate, policy.min_drop_pct), policy.min_drop_pct)
    if gate.confirm is ConfirmMode.PAIRED:
        paired = paired_policy_for(bucket, gate, hardware)
        plans = [
            pair_affordability(budget_minutes=bucket.pair_budget_minutes,
                               max_pairs=bucket.max_pairs, launch_minutes=launch,
                               drop_pct=drop, noise_pct=noise.noise_pct, policy=paired,
                               prior_df=noise.df)
            for drop in drops
        ]  # fmt: skip
    else:
        plans = [
            repeat_affordability(budget_minutes=bucket.repeat_budget_minutes,
                                 repeats=bucket.repeats, max_repeats=bucket.max_repeats,
                                 launch_minutes=launch, drop_pct=drop, noise=noise,
                                 policy=policy)
            for drop in drops
        ]  # fmt: skip
    matters, minimum = plans
    if not matters.decides:
        short = f"{label}: {matters.short()}; the window decides"
        lines.append(BudgetNote(level="warning", short=short, detail=matters.text()))
    elif not minimum.decides:
        short = f"{label}: drops under {matters.drop_pct:g} % are left to the post-merge alerts"
        lines.append(BudgetNote(level="notice", short=short, detail=minimum.text()))
    shared = gate.budget_minutes
    if shared is not None and matters.decides and matters.minutes > shared:
        short = f"{label}: confirming a drop costs more than the run's gate.budget_minutes"
        needs = f"{matters.minutes:.0f} runner minutes against {shared:g} for the whole run"
        lines.append(BudgetNote(level="warning", short=short, detail=needs))
    return lines


def _noise(
    bucket: Bucket,
    hardware: str,
    model: WindowModel | None,
    calibration: NoiseCalibration | None,
) -> WindowNoise | None:
    """The noise a budget is checked against: the calibration's, else the recorded runs'
    (None: neither is known)."""
    measured = next(
        (e for e in calibration.buckets if e.bucket == bucket.id and e.hardware == hardware),
        None,
    ) if calibration is not None else None  # fmt: skip
    if measured is not None:
        return WindowNoise(noise_pct=measured.noise_pct, run_noise_pct=measured.run_noise_pct,
                           df=measured.df, window_runs=20)  # fmt: skip
    if model is None or model.problem is not None:
        return None
    within = model.within_sigma if model.within_df else model.sigma
    df = model.within_df or model.df
    return WindowNoise(
        noise_pct=pct_of_g(within, Direction.HIGHER),
        run_noise_pct=pct_of_g(model.run_sigma, Direction.HIGHER),
        df=df,
        window_runs=model.runs_used,
    )
