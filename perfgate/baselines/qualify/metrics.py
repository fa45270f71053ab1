"""The pool's noise against the qualification limits: what makes a bucket UNSTABLE (R15).

Pooled CV, any sample or any runner's median too far from the pooled median, and the
drop the gate's own verdict rule would need before it blocks.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.baselines.qualify.observations import Observation
from perfgate.baselines.qualify.rule import RuleFigures, rule_figures
from perfgate.config import QualifyPolicy
from perfgate.judge.calibration import BucketNoise
from perfgate.judge.policies import Policy
from perfgate.util.console import format_figure, listing, plural


@dataclass(frozen=True, kw_only=True)
class SampleEvidence:
    """One sample and how far it lies from the pooled median."""

    allocation: str
    runner: str
    index: int | None
    value: float
    offset_pct: float


@dataclass(frozen=True, kw_only=True)
class RunnerEvidence:
    """One runner: the allocations it served, its samples, and its median's offset."""

    runner: str
    allocations: tuple[str, ...]
    samples: tuple[float, ...]
    median: float
    offset_pct: float
    over_limit: bool


@dataclass(frozen=True, kw_only=True)
class BucketMetrics:
    """The pooled statistics of one bucket's samples and the checks on them."""

    samples: int
    median: float
    mean: float
    mad_pct: float
    cv_pct: float
    max_sample_offset_pct: float  # signed: the sample farthest from the median
    max_runner_offset_pct: float  # signed: the runner median farthest from it
    runners: tuple[RunnerEvidence, ...]
    outliers: tuple[SampleEvidence, ...]
    rule: RuleFigures


def bucket_metrics(
    observations: Sequence[Observation],
    policy: QualifyPolicy,
    rule: Policy,
    noise: BucketNoise | None,
) -> tuple[BucketMetrics, list[str]]:
    """Pooled statistics and every limit they exceed (UNSTABLE)."""
    healthy = [o for o in observations if o.value is not None]
    values = [o.value for o in healthy if o.value is not None]
    median = statistics.median(values)
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean * 100.0 if len(values) > 1 else 0.0
    mad_pct = statistics.median(abs(v - median) for v in values) / median * 100.0
    samples = [
        SampleEvidence(
            allocation=o.allocation or "?",
            runner=o.runner or "?",
            index=o.sample_index,
            value=o.value,
            offset_pct=(o.value - median) / median * 100.0,
        )
        for o in healthy
        if o.value is not None
    ]
    runners = _runners(healthy, median, policy)
    outliers = tuple(s for s in samples if abs(s.offset_pct) > policy.max_sample_deviation_pct)
    by_allocation: dict[str, list[float]] = defaultdict(list)
    for obs in sorted(healthy, key=lambda o: (o.allocation or "", o.sample_index or 0)):
        if obs.value is not None:
            by_allocation[obs.allocation or "?"].append(obs.value)
    figures = rule_figures(
        list(by_allocation.values()),
        policy=rule,
        direction=healthy[0].direction,
        power=policy.detection_power,
        run_noise_pct=noise.run_noise_pct if noise is not None else None,
    )
    metrics = BucketMetrics(
        samples=len(values),
        median=median,
        mean=mean,
        mad_pct=mad_pct,
        cv_pct=cv,
        max_sample_offset_pct=max((s.offset_pct for s in samples), key=abs),
        max_runner_offset_pct=max((r.offset_pct for r in runners), key=abs),
        runners=tuple(runners),
        outliers=outliers,
        rule=figures,
    )
    return metrics, _problems(metrics, policy)


def _runners(
    healthy: Sequence[Observation], median: float, policy: QualifyPolicy
) -> list[RunnerEvidence]:
    """Each runner's samples and how far their median lies from the pooled ``median``."""
    by_runner: dict[str, list[Observation]] = defaultdict(list)
    for obs in healthy:
        by_runner[obs.runner or "?"].append(obs)
    runners = []
    for name in sorted(by_runner):
        own = [o.value for o in by_runner[name] if o.value is not None]
        runner_median = statistics.median(own)
        offset = (runner_median - median) / median * 100.0
        runners.append(
            RunnerEvidence(
                runner=name,
                allocations=tuple(sorted({o.allocation or "?" for o in by_runner[name]})),
                samples=tuple(own),
                median=runner_median,
                offset_pct=offset,
                over_limit=abs(offset) > policy.max_runner_deviation_pct,
            )
        )
    return runners


def _problems(metrics: BucketMetrics, policy: QualifyPolicy) -> list[str]:
    """Every qualification limit the pooled statistics exceed."""
    problems = []
    cv, outliers, figures = metrics.cv_pct, metrics.outliers, metrics.rule
    if cv > policy.max_pooled_cv_pct:
        problems.append(f"pooled CV {cv:.1f} % exceeds {policy.max_pooled_cv_pct:g} %")
    if outliers:
        shown = ", ".join(
            f"{s.allocation}#{s.index} on {s.runner} {s.offset_pct:+.1f} %" for s in outliers[:8]
        )
        more = f" and {len(outliers) - 8} more" if len(outliers) > 8 else ""
        problems.append(
            f"{plural(len(outliers), 'sample')} more than {policy.max_sample_deviation_pct:g} % "
            f"from the pooled median: {shown}{more}"
        )
    for runner in metrics.runners:
        if runner.over_limit:
            problems.append(
                f"runner {runner.runner}: median {runner.offset_pct:+.1f} % from the pooled "
                f"median (limit {policy.max_runner_deviation_pct:g} %); its samples "
                f"{listing(format_figure(v) for v in runner.samples)} from allocation(s) "
                f"{listing(runner.allocations)}: drain it or find out why"
            )
    if figures.block_band_pct is None:
        problems.append(
            f"the gate's {figures.policy} rule cannot judge a window like this "
            f"pool's: {figures.detail}"
        )
    elif figures.block_band_pct > policy.max_block_band_pct:
        never = " (it cannot resolve any regression)" if figures.block_band_pct >= 99.95 else ""
        problems.append(
            f"the gate's {figures.policy} rule would block only past a "
            f"{figures.block_band_pct:.1f} % regression{never} "
            f"(limit {policy.max_block_band_pct:g} %)"
        )
    return problems
