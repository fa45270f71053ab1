"""The rules a bucket's metrics are judged with, and how much of a window is read (R4, R5).

One place for the gate, the bench's confirmer and the trend site: each judges a bucket
with the policy, the paired test and the window depth given here, so they never differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfgate.config import PRIMARY, AlertsSpec, Bucket, GatePolicy, Metric, PolicyName
from perfgate.judge.budget import clear_drop
from perfgate.judge.calibration import BucketNoise
from perfgate.judge.decision import Decision
from perfgate.judge.judgement import MetricCheck, MetricKey, MetricWindow
from perfgate.judge.paired import PairedPolicy, PairNoise
from perfgate.judge.policies import CalibratedPolicy, Policy, ReferencePolicy
from perfgate.result import Result


def window_sample_limit(
    gate: GatePolicy, buckets: Sequence[Bucket], alerts: AlertsSpec | None = None
) -> int:
    """How many of the nearest samples to read so every bucket's window is whole (R4),
    and the history runner offsets are learned from (``baseline.history_runs``).

    The bench (confirming) and the gate read with the same limit, so they see one window.
    ``alerts``: the config's, whose ``push_repeats`` may make stored runs larger.
    """
    if gate.policy is PolicyName.REFERENCE:
        return gate.baseline.max_samples
    # The rule keeps the nearest max_runs runs of what is read; runner offsets use more.
    return max(gate.baseline.max_runs, gate.baseline.history_runs) * _most_stored(
        gate, buckets, alerts
    )


def window_run_limit(gate: GatePolicy) -> int | None:
    """How many of the nearest runs a window holds: the calibrated rule judges its nearest
    ``max_runs`` runs and learns runner offsets from ``history_runs``, so farther ones are
    never read; the reference rule counts samples."""
    if gate.policy is PolicyName.REFERENCE:
        return None
    return max(gate.baseline.max_runs, gate.baseline.history_runs)


def fitted_window_depth(
    gate: GatePolicy, buckets: Sequence[Bucket], alerts: AlertsSpec | None = None
) -> tuple[int, int] | None:
    """(samples, runs) a window reads when its runner model was fitted as its samples were
    stored: the nearest ``max_runs`` runs only. None when no model is read (no history)."""
    if gate.policy is PolicyName.REFERENCE or gate.baseline.history_runs <= 0:
        return None
    most = _most_stored(gate, buckets, alerts)
    return gate.baseline.max_runs * most, gate.baseline.max_runs


def _most_stored(gate: GatePolicy, buckets: Sequence[Bucket], alerts: AlertsSpec | None) -> int:
    """The most samples a stored run of ``buckets`` may hold: a run's own, confirmation
    included, or a protected push's (``alerts.push_repeats``): a sample limit below it
    would cut a window of larger runs short of its ``max_runs``."""
    # A run's size follows from its repeats alone: each pair of them is looked at once.
    distinct = {(b.repeats, b.max_repeats): b for b in buckets}.values()
    stored = distinct if alerts is None else [b.as_pushed(alerts) for b in distinct]
    return max((b.most_samples(gate.confirm) for b in stored), default=1)


def policy_for(
    bucket: Bucket, gate: GatePolicy, hardware: str, metric: Metric | None = None
) -> Policy:
    """The rule a metric of ``bucket`` (the primary by default) is judged with (R5).

    The calibrated policy spends its false-alarm budget over the looks the bench can take,
    so its repeats and confirmation budget are the bucket's own; a bucket whose several
    metrics gate splits the rate between them, so unchanged code is still BLOCKed in at
    most ``false_block_rate`` of bucket runs. A metric's own minimum drop and noise floor
    replace the gate's; the per-hardware noise floors are the primary's.
    """
    oracle, window = gate.oracle, gate.baseline
    metric = metric or bucket.metric
    if metric.noise_floor_pct is not None:
        floor = metric.noise_floor_pct
    elif metric.name == PRIMARY:
        floor = bucket.noise_floor_for(hardware, oracle.noise_floor_pct)
    else:
        floor = oracle.noise_floor_pct
    min_drop = metric.min_drop_pct if metric.min_drop_pct is not None else oracle.min_drop_pct
    if gate.policy is PolicyName.REFERENCE:
        return ReferencePolicy(
            k_warn=oracle.k_warn,
            k_block=oracle.k_block,
            min_drop_pct=min_drop,
            noise_floor_pct=floor,
            min_samples=window.min_samples,
            max_samples=window.max_samples,
        )
    return CalibratedPolicy(
        false_block_rate=_split_rate(bucket, gate),
        min_drop_pct=min_drop,
        history_runs=window.history_runs,
        noise_floor_pct=floor,
        run_noise_floor_pct=oracle.run_noise_floor_pct,
        min_samples=window.min_samples,
        min_runs=window.min_runs,
        max_runs=window.max_runs,
        initial_repeats=bucket.repeats,
        max_repeats=bucket.most_samples(gate.confirm),
    )


def metric_checks(
    bucket: Bucket,
    result: Result,
    windows: Mapping[MetricKey, MetricWindow],
    gate: GatePolicy,
    noise: BucketNoise | None = None,
) -> list[MetricCheck]:
    """What each metric of ``bucket`` is judged with in ``result``, the primary first: its
    window (none yet when ``windows`` has none), floors and rules; the primary's rule
    takes its noise from ``noise`` (a calibration's entry) when given."""
    hardware = result.hardware.slug
    primary = policy_for(bucket, gate, hardware)
    rule, calibration = (primary, None) if noise is None else noise.applied_to(primary)
    return [
        MetricCheck(
            metric=metric,
            window=windows.get(MetricKey(bucket.id, metric.name), MetricWindow()),
            floors=bucket.floors_for(hardware, metric.name),
            policy=rule if metric is bucket.metric else policy_for(bucket, gate, hardware, metric),
            paired_policy=paired_policy_for(bucket, gate, hardware, metric),
            calibration=calibration if metric is bucket.metric else None,
        )
        for metric in bucket.all_metrics
    ]


def paired_policy_for(
    bucket: Bucket, gate: GatePolicy, hardware: str, metric: Metric | None = None
) -> PairedPolicy:
    """The paired test a metric of ``bucket`` is confirmed with (gate.confirm: paired).

    The same false-alarm rate (split between the metrics that gate), minimum drop and
    noise floor as the window rule's; the pairs stop once they rule out a drop halfway
    between the minimum and the drop that matters for this PR (``confirm_drop_for``).
    """
    rule = policy_for(bucket, gate, hardware, metric)
    min_drop = rule.min_drop_pct
    return PairedPolicy(
        false_block_rate=_split_rate(bucket, gate),
        min_drop_pct=min_drop,
        clear_drop_pct=clear_drop(min_drop, confirm_drop_for(gate, min_drop)),
        noise_floor_pct=rule.noise_floor_pct,
        max_pairs=bucket.max_pairs,
    )


def _split_rate(bucket: Bucket, gate: GatePolicy) -> float:
    """The false-alarm rate of one metric: the gate's, split between the metrics that gate."""
    return gate.false_block_rate / max(1, sum(1 for m in bucket.all_metrics if m.gates))


def confirm_drop_for(gate: GatePolicy, min_drop_pct: float) -> float:
    """The drop worth confirming for a metric whose minimum drop is ``min_drop_pct``: the
    gate's ``confirm_drop_pct``, never under the metric's own minimum."""
    return max(gate.confirm_drop_pct, min_drop_pct)


def pair_noise(decision: Decision | None) -> PairNoise | None:
    """What the window knows of one sample's noise within a run (the pairs' prior)."""
    if decision is None or not decision.within_noise_pct or not decision.within_df:
        return None
    return PairNoise(noise_pct=decision.within_noise_pct, df=decision.within_df)
