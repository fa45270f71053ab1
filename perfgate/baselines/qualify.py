"""Runner-pool stability qualification: may this pool's figures gate at all? (R15)

Input: result artifacts from N *allocations* (runner jobs, each named by its run label),
each taking K samples of every selected bucket. Per bucket:

* coverage checks fail closed (INCONCLUSIVE_DO_NOT_GATE) and name every missing piece:
  one fingerprint, exactly N allocations on at least ``min_runners`` runners with one
  runner each, K samples with indices 0..K-1 and unique ids in every allocation, the
  expected hardware, branch and commit;
* metric checks flag a pool whose noise would hide a real regression
  (UNSTABLE_DO_NOT_GATE): pooled CV, any sample or any runner's median too far from the
  pooled median, and the drop the gate's own verdict rule would need before it blocks;
* what passes both is STABLE_ENOUGH_TO_GATE.

Beyond the verdict it names each runner's offset and samples (which machine to drain),
says per bucket the smallest regression the gate could detect, and measures the noise
calibration the gate reads (``gate.calibration``). The scope is explicit: only the
selected buckets are expected, so a rescoped run is judged on what it was asked to
collect. Qualification never writes baselines.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from pathlib import Path

from perfgate.config import Bucket, Config, Direction, QualifyPolicy
from perfgate.console import format_figure
from perfgate.errors import GateMalfunction
from perfgate.identity import stable_hash
from perfgate.judge import stats
from perfgate.judge.calibration import BucketNoise
from perfgate.judge.oracle import policy_for
from perfgate.result import ArtifactError, CiInfo, Result, read_result

SCHEMA_VERSION = 1


class QualVerdict(StrEnum):
    """A bucket's (and the pool's) qualification verdict."""

    STABLE = "STABLE_ENOUGH_TO_GATE"
    INCONCLUSIVE = "INCONCLUSIVE_DO_NOT_GATE"
    UNSTABLE = "UNSTABLE_DO_NOT_GATE"

    @property
    def severity(self) -> int:
        """Overall = the worst: UNSTABLE over INCONCLUSIVE over STABLE."""
        return {"STABLE": 0, "INCONCLUSIVE": 1, "UNSTABLE": 2}[self.name]


# -- what qualification reads ------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """What must be identical across every sample of one bucket for them to be comparable."""

    hardware: str | None
    target_branch: str | None
    commit: str | None
    launch_hash: str | None
    benchmark_hash: str | None
    runtime_hash: str | None
    baseline_epoch: int | None

    def missing(self) -> list[str]:
        """Names of the fields that are absent."""
        return [f.name for f in fields(self) if getattr(self, f.name) in (None, "")]

    @classmethod
    def of(cls, result: Result) -> Fingerprint:
        """The fingerprint a result carries."""
        return cls(
            hardware=result.hardware.slug,
            target_branch=result.source.target_branch,
            commit=result.source.commit,
            launch_hash=result.identity.launch_hash,
            benchmark_hash=result.identity.benchmark_hash,
            runtime_hash=result.identity.runtime_hash,
            baseline_epoch=result.bucket.baseline_epoch,
        )


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One sample as qualification sees it: which allocation, runner and index it is."""

    bucket: str
    source: str  # the artifact it came from
    allocation: str | None
    runner: str | None
    sample_index: int | None
    # Derived from what identifies the measurement: one counted twice has the same id.
    sample_id: str
    value: float | None  # None: the run produced no usable figure
    failure: str | None = None
    fingerprint: Fingerprint
    direction: Direction = Direction.HIGHER
    started_at: str = ""


def allocation_of(ci: CiInfo) -> str | None:
    """The allocation a run belongs to: its run label, else run id:attempt:job:runner.

    Without a run label, only a CI run id can tell allocations apart; a local run with
    neither belongs to no allocation (and is named as such).
    """
    if ci.run_label:
        return ci.run_label
    if not ci.run_id:
        return None
    return ":".join(part or "-" for part in (ci.run_id, ci.run_attempt, ci.job, ci.runner_name))


def observations_of(result: Result, source: str) -> list[Observation]:
    """The samples one artifact holds, each with its ``sample_index``.

    A run that failed adds one sample without a figure, at the index it was taking. An
    artifact of one figure written before runs took samples is one sample; its index is
    its place among its allocation's runs of that bucket (``index_positionally``). Ids
    are derived from what identifies the run (CI identity, start time) and the sample,
    never the file name, so the same measurement counted twice shows as a duplicate.
    """
    health = result.health
    run = {
        "ci": asdict(result.ci),
        "bucket": result.bucket.id,
        "commit": result.source.commit,
        "started_at": result.timings.started_at,
        "finished_at": result.timings.finished_at,
    }
    readings: list[tuple[int | None, float | None]] = [
        (s.sample_index, s.value) for s in result.metric.samples
    ]
    if not readings and health.healthy:
        readings = [(None, result.metric.value)]
    failure = None
    if not health.healthy:
        phase = health.phase.value if health.phase else "no figure"
        failure = f"{phase}, exit {health.exit_code}" + (
            f": {health.error}" if health.error else ""
        )
        taken = [index for index, _ in readings if index is not None]
        readings.append((max(taken) + 1 if taken else None, None))
    fingerprint, allocation = Fingerprint.of(result), allocation_of(result.ci)
    return [
        Observation(
            bucket=result.bucket.id,
            source=source,
            allocation=allocation,
            runner=result.ci.runner_name,
            sample_index=index,
            sample_id=stable_hash({**run, "sample_index": index, "value": value}, length=24),
            value=value,
            failure=failure if value is None else None,
            fingerprint=fingerprint,
            direction=result.metric.direction,
            started_at=result.timings.started_at,
        )
        for index, value in readings
    ]


def index_positionally(observations: Iterable[Observation]) -> list[Observation]:
    """Give samples without an index their place in their allocation's runs (by start)."""
    items = list(observations)
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for position, obs in enumerate(items):
        if obs.sample_index is None:
            groups[(obs.bucket, obs.allocation)].append(position)
    for (_, allocation), positions in groups.items():
        if allocation is None:
            continue  # no allocation, no place in one: named by the coverage checks
        ordered = sorted(positions, key=lambda p: (items[p].started_at, items[p].source))
        for index, position in enumerate(ordered):
            items[position] = replace(items[position], sample_index=index)
    return items


# -- the design and the rule -------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Design:
    """What the qualification run was asked to collect, fixed before measuring."""

    allocations: int
    samples: int
    min_runners: int
    hardware: str | None = None
    target_branch: str | None = None
    commit: str | None = None


@dataclass(frozen=True, kw_only=True)
class RuleFigures:
    """What the gate's verdict rule needs to block a bucket whose window looks like the pool."""

    policy: str
    # The drop at which the rule blocks (a drop measured exactly this large sits on the line).
    block_band_pct: float | None
    # The drop the rule blocks with probability ``power`` (the smallest it reliably detects).
    detectable_pct: float | None
    power: float
    false_alarm_rate: float | None  # None for the reference rule, which sets no rate
    detail: str = ""


def _g_of_drop(pct: float, direction: Direction) -> float:
    """A regression of ``pct`` % of the metric as a fall of ln(goodness).

    A throughput cannot drop by 100 % or more: that is an infinite fall.
    """
    if direction is Direction.HIGHER:
        return math.inf if pct >= 100.0 else -math.log1p(-pct / 100.0)
    return math.log1p(pct / 100.0)


def _drop_of_g(g: float, direction: Direction) -> float:
    """The inverse of ``_g_of_drop``; saturates rather than overflows."""
    if direction is Direction.HIGHER:
        return -math.expm1(-g) * 100.0
    return math.expm1(min(g, 700.0)) * 100.0


def gate_window(
    allocations: Sequence[Sequence[float]], *, runs: int, repeats: int
) -> list[list[float]]:
    """The window the gate will hold on this pool: ``runs`` runs of ``repeats`` samples,
    taken in turn from the allocations (each run from one allocation, as a bucket run
    comes from one runner).

    The calibrated rule's thresholds depend on the window's size as well as its noise: a
    qualification's few allocations would overstate what a full window on the same pool
    needs, a tiny one absurdly so.
    """
    window = []
    for run in range(runs):
        own = allocations[run % len(allocations)]
        first = run // len(allocations) * repeats
        window.append([own[(first + k) % len(own)] for k in range(repeats)])
    return window


def rule_figures(
    runs: Sequence[Sequence[float]],
    *,
    policy: stats.Policy,
    direction: Direction,
    power: float,
    run_noise_pct: float | None = None,
) -> RuleFigures:
    """Block band and smallest detectable regression of ``policy`` on a window of ``runs``.

    ``runs`` are the pool's allocations, each the figures of its samples. Allocations ran
    side by side, so their order means nothing: level-shift detection is switched off for
    the calibrated rule, which otherwise reads a window in time order. ``run_noise_pct``
    is the runner-to-runner noise these runs measure (``measure_noise``): the calibrated
    rule takes it as known, as it does once the gate reads the calibration, rather than
    estimating it again from a handful of runs (a gate's window holds up to 20).
    """
    z = statistics.NormalDist().inv_cdf(power)
    pooled = [value for run in runs for value in run]
    level = statistics.median(pooled)
    if isinstance(policy, stats.ReferencePolicy):
        decision = stats.decide(runs, [level], policy=policy, direction=direction)
        if decision.threshold_pct is None or decision.noise_pct is None:
            return RuleFigures(
                policy=policy.name,
                block_band_pct=None,
                detectable_pct=None,
                power=power,
                false_alarm_rate=None,
                detail=decision.detail,
            )
        band = max(abs(decision.threshold_pct), policy.min_block_regression_pct)
        # One figure per run: its error is the window's noise, made sigma-consistent (the
        # rule's noise is the unscaled MAD, about 0.67 sigma).
        se = math.log1p(stats.MAD_TO_SIGMA * decision.noise_pct / 100.0)
        detectable = _drop_of_g(_g_of_drop(band, direction) + z * se, direction)
        return RuleFigures(
            policy=policy.name,
            block_band_pct=band,
            detectable_pct=detectable,
            power=power,
            false_alarm_rate=None,
            detail=f"median - {policy.k_block:g} x MAD, "
            f"at least {policy.min_block_regression_pct:g} %",
        )
    no_shifts = replace(policy, min_shift_pct=math.inf)
    # df 0: the per-sample noise is the window's own (the same samples must not count twice).
    measured = (
        None
        if run_noise_pct is None
        else stats.Calibration(noise_pct=0.0, df=0.0, run_noise_pct=run_noise_pct)
    )
    model = stats.analyse_window(
        gate_window(runs, runs=policy.max_runs, repeats=policy.initial_repeats),
        policy=no_shifts,
        direction=direction,
        calibration=measured,
    )
    decision = stats.judge(model, [level] * policy.max_repeats, policy=no_shifts, final=True)
    resolution, interval = decision.resolution_pct, decision.interval_pct
    if (
        resolution is None
        or not math.isfinite(resolution)
        or interval is None
        or decision.df is None
        or decision.confidence is None
    ):
        return RuleFigures(
            policy=policy.name,
            block_band_pct=None,
            detectable_pct=None,
            power=power,
            false_alarm_rate=policy.false_alarm_rate,
            detail=decision.detail or "the pool's noise leaves no regression it could resolve",
        )
    # The standard error of the run's effect with the full budget, from its interval
    # (a saturated end, -100 % of a throughput, means no bound at all).
    lo, hi = (math.log1p(p / 100.0) if p > -100.0 else -math.inf for p in interval)
    se = (hi - lo) / (2.0 * stats.t_isf((1.0 - decision.confidence) / 2.0, decision.df))
    detectable = _drop_of_g(_g_of_drop(resolution, direction) + z * se, direction)
    return RuleFigures(
        policy=policy.name,
        block_band_pct=resolution,
        detectable_pct=detectable,
        power=power,
        false_alarm_rate=policy.false_alarm_rate,
        detail=f"false-alarm rate {policy.false_alarm_rate:g} per bucket run, "
        f"{policy.max_repeats} samples, at least {policy.min_drop_pct:g} %",
    )


# -- per-bucket evidence -----------------------------------------------------------------


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
class AllocationEvidence:
    """One allocation of one bucket: its runner(s) and samples by index."""

    label: str
    runners: tuple[str, ...]
    samples: tuple[tuple[int | None, float | None], ...]


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


@dataclass(frozen=True, kw_only=True)
class BucketQualification:
    """One bucket's verdict and the evidence behind it."""

    bucket: str
    unit: str
    verdict: QualVerdict
    coverage: tuple[str, ...]  # every missing piece (INCONCLUSIVE)
    instability: tuple[str, ...]  # every limit exceeded (UNSTABLE)
    fingerprint: Fingerprint | None
    metrics: BucketMetrics | None
    allocations: tuple[AllocationEvidence, ...]
    noise: BucketNoise | None  # the calibration this bucket's samples measure


@dataclass(frozen=True, kw_only=True)
class QualificationReport:
    """The whole qualification: per bucket, and the pool."""

    verdict: QualVerdict
    buckets: tuple[BucketQualification, ...]
    design: Design
    policy: QualifyPolicy
    scope: Mapping[str, tuple[str, ...]]  # the flags as given: bucket, tag, backend
    problems: tuple[str, ...]  # pool-level gaps (INCONCLUSIVE), e.g. an unreadable artifact
    notes: tuple[str, ...]

    @property
    def unstable_runners(self) -> tuple[str, ...]:
        """Every runner whose median is past the limit in some bucket: drain these."""
        names = {
            runner.runner
            for bucket in self.buckets
            if bucket.metrics is not None
            for runner in bucket.metrics.runners
            if runner.over_limit
        }
        return tuple(sorted(names))

    def calibration(self) -> tuple[BucketNoise, ...]:
        """The noise calibration of every STABLE bucket (the others must not set thresholds)."""
        return tuple(b.noise for b in self.buckets if b.verdict is QualVerdict.STABLE and b.noise)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _names(values: Iterable[object]) -> str:
    return ", ".join(str(v) for v in values)


def _fingerprint_problems(observations: Sequence[Observation], design: Design) -> list[str]:
    problems = []
    prints = Counter(o.fingerprint for o in observations)
    names = [f.name for f in fields(Fingerprint)]
    for name in names:
        missing = sum(n for fp, n in prints.items() if name in fp.missing())
        if missing:
            problems.append(
                f"fingerprint incomplete: {name} missing in {_plural(missing, 'sample')}"
            )
    if len(prints) > 1:
        varying = [name for name in names if len({getattr(fp, name) for fp in prints}) > 1]
        detail = "; ".join(
            f"{name}: " + _names(sorted({str(getattr(fp, name)) for fp in prints}))
            for name in varying
        )
        problems.append(
            f"{len(prints)} fingerprints in one bucket ({detail}): samples of different "
            "experiments cannot be pooled"
        )
    expected = (
        ("hardware", design.hardware),
        ("target_branch", design.target_branch),
        ("commit", design.commit),
    )
    for name, wanted in expected:
        if wanted is None:
            continue
        got = {str(getattr(fp, name)) for fp in prints}
        # A commit may be given abbreviated, as git accepts it.
        wrong = sorted(
            g for g in got if g != wanted and not (name == "commit" and g.startswith(wanted))
        )
        if wrong:
            problems.append(f"{name} {_names(wrong)} is not the expected {wanted}")
    return problems


def _allocation_problems(
    observations: Sequence[Observation], design: Design, pool_allocations: Sequence[str]
) -> list[str]:
    problems = []
    unlabelled = sorted({o.source for o in observations if o.allocation is None})
    if unlabelled:
        problems.append(
            f"{_plural(len(unlabelled), 'artifact')} name no allocation ({_names(unlabelled)}): "
            "run bench with --run-label (or PERFGATE_RUN_LABEL) per allocation"
        )
    by_allocation: dict[str, list[Observation]] = defaultdict(list)
    for obs in observations:
        if obs.allocation is not None:
            by_allocation[obs.allocation].append(obs)
    labels = sorted(by_allocation)
    absent = [label for label in pool_allocations if label not in by_allocation]
    if len(labels) != design.allocations or absent:
        text = (
            f"{len(labels)} allocations reported, {design.allocations} expected ({_names(labels)})"
            if len(labels) > design.allocations
            else f"{len(labels)} of {design.allocations} allocations reported"
        )
        if absent:
            text += f"; allocation(s) {_names(absent)} reported other buckets but not this one"
        problems.append(text)
    runners: set[str] = set()
    for label in labels:
        samples = by_allocation[label]
        names = sorted({o.runner for o in samples if o.runner})
        runners.update(names)
        if any(not o.runner for o in samples):
            problems.append(f"allocation {label} names no runner (RUNNER_NAME) for some samples")
        if len(names) > 1:
            problems.append(
                f"allocation {label} ran on {len(names)} runners ({_names(names)}): "
                "an allocation is one runner job"
            )
        problems += _sample_problems(label, samples, design.samples)
    if len(runners) < design.min_runners:
        problems.append(
            f"{_plural(len(runners), 'distinct runner')} ({_names(sorted(runners)) or 'none'}); "
            f"at least {design.min_runners} needed to measure runner-to-runner noise"
        )
    return problems


def _sample_problems(label: str, samples: Sequence[Observation], wanted: int) -> list[str]:
    problems = []
    indices = Counter(o.sample_index for o in samples if o.sample_index is not None)
    missing = [i for i in range(wanted) if i not in indices]
    extra = sorted(i for i in indices if not 0 <= i < wanted)
    twice = sorted(i for i, n in indices.items() if n > 1)
    if len(samples) != wanted or missing or extra or twice:
        parts = [f"allocation {label}: {len(samples)} of {wanted} samples"]
        if missing:
            parts.append(f"missing index {_names(missing)}")
        if extra:
            parts.append(f"index {_names(extra)} outside 0..{wanted - 1}")
        if twice:
            parts.append(f"index {_names(twice)} more than once")
        problems.append("; ".join(parts))
    for obs in samples:
        if obs.value is None:
            problems.append(
                f"allocation {label} sample {obs.sample_index} on {obs.runner or 'a runner'}: "
                f"no figure ({obs.failure}) in {obs.source}"
            )
    return problems


def _duplicate_ids(observations: Sequence[Observation]) -> list[str]:
    counts = Counter(o.sample_id for o in observations)
    problems = []
    for sample_id, count in sorted(counts.items()):
        if count > 1:
            sources = sorted({o.source for o in observations if o.sample_id == sample_id})
            problems.append(
                f"sample id {sample_id[:12]} counted {count} times ({_names(sources)}): "
                "one measurement must count once"
            )
    return problems


def _metrics(
    observations: Sequence[Observation],
    policy: QualifyPolicy,
    rule: stats.Policy,
    noise: BucketNoise | None,
) -> tuple[BucketMetrics, list[str]]:
    """Pooled statistics and every limit they exceed (UNSTABLE)."""
    healthy = [o for o in observations if o.value is not None]
    values = [o.value for o in healthy if o.value is not None]
    median = statistics.median(values)
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean * 100.0 if len(values) > 1 else 0.0
    mad_pct = statistics.median(abs(v - median) for v in values) / median * 100.0

    def offset(value: float) -> float:
        return (value - median) / median * 100.0

    samples = [
        SampleEvidence(
            allocation=o.allocation or "?",
            runner=o.runner or "?",
            index=o.sample_index,
            value=o.value,
            offset_pct=offset(o.value),
        )
        for o in healthy
        if o.value is not None
    ]
    by_runner: dict[str, list[Observation]] = defaultdict(list)
    for obs in healthy:
        by_runner[obs.runner or "?"].append(obs)
    runners = []
    for name in sorted(by_runner):
        own = [o.value for o in by_runner[name] if o.value is not None]
        runner_median = statistics.median(own)
        runners.append(
            RunnerEvidence(
                runner=name,
                allocations=tuple(sorted({o.allocation or "?" for o in by_runner[name]})),
                samples=tuple(own),
                median=runner_median,
                offset_pct=offset(runner_median),
                over_limit=abs(offset(runner_median)) > policy.max_runner_deviation_pct,
            )
        )
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
    problems = []
    if cv > policy.max_pooled_cv_pct:
        problems.append(f"pooled CV {cv:.1f} % exceeds {policy.max_pooled_cv_pct:g} %")
    if outliers:
        shown = ", ".join(
            f"{s.allocation}#{s.index} on {s.runner} {s.offset_pct:+.1f} %" for s in outliers[:8]
        )
        more = f" and {len(outliers) - 8} more" if len(outliers) > 8 else ""
        problems.append(
            f"{_plural(len(outliers), 'sample')} more than {policy.max_sample_deviation_pct:g} % "
            f"from the pooled median: {shown}{more}"
        )
    for runner in runners:
        if runner.over_limit:
            problems.append(
                f"runner {runner.runner}: median {runner.offset_pct:+.1f} % from the pooled "
                f"median (limit {policy.max_runner_deviation_pct:g} %); its samples "
                f"{_names(format_figure(v) for v in runner.samples)} from allocation(s) "
                f"{_names(runner.allocations)}: drain it or find out why"
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
    return metrics, problems


def measure_noise(
    observations: Sequence[Observation], *, policy: stats.CalibratedPolicy | None = None
) -> BucketNoise | None:
    """The noise calibration these samples measure (allocations x samples, one experiment).

    Per-sample noise is the robust spread within allocations; run noise is what the
    spread of allocation means shows beyond it (the runner-to-runner part); the noise
    floor is the pool's unscaled MAD, what the reference rule's noise should not fall
    below. None when there is too little to measure (fewer than 2 allocations of 2).
    """
    healthy = [o for o in observations if o.value is not None and o.allocation is not None]
    groups: dict[str, list[float]] = defaultdict(list)
    for obs in healthy:
        if obs.value is not None and obs.allocation is not None:
            groups[obs.allocation].append(math.log(obs.value))
    multi = {label: g for label, g in groups.items() if len(g) >= 2}
    if len(multi) < 2 or not healthy:
        return None
    within = []
    for values in multi.values():
        centre, inflate = statistics.fmean(values), math.sqrt(len(values) / (len(values) - 1))
        within += [(v - centre) * inflate for v in values]
    sigma, df = stats.robust_scale(within, groups=len(multi) + 1)
    means = [statistics.fmean(values) for values in multi.values()]
    centre = statistics.fmean(means)
    spread, run_df = stats.robust_scale([m - centre for m in means], groups=1)
    mean_inverse_k = statistics.fmean(1.0 / len(values) for values in multi.values())
    run_sigma = math.sqrt(max(spread**2 - sigma**2 * mean_inverse_k, 0.0))
    rule = policy or stats.CalibratedPolicy()
    pooled = [math.log(o.value) for o in healthy if o.value is not None]
    modes = stats.find_modes(
        pooled,
        separation=rule.mode_separation,
        min_share=rule.min_mode_share,
        max_modes=rule.max_modes,
    )
    figures = [o.value for o in healthy if o.value is not None]
    level = statistics.median(figures)
    first = healthy[0].fingerprint
    return BucketNoise(
        bucket=healthy[0].bucket,
        hardware=first.hardware or "",
        launch_hash=first.launch_hash or "",
        benchmark_hash=first.benchmark_hash or "",
        noise_pct=math.expm1(sigma) * 100.0,
        df=df,
        run_noise_pct=math.expm1(run_sigma) * 100.0,
        run_df=run_df,
        modes=max(len(modes), 1),
        noise_floor_pct=statistics.median(abs(v - level) for v in figures) / level * 100.0,
        samples=len(figures),
        allocations=len(groups),
        runners=len({o.runner for o in healthy if o.runner}),
        commit=first.commit,
        target_branch=first.target_branch,
    )


def qualify_bucket(
    bucket: Bucket,
    observations: Sequence[Observation],
    *,
    design: Design,
    policy: QualifyPolicy,
    rule: Callable[[Bucket, str], stats.Policy],
    pool_allocations: Sequence[str] = (),
    unreadable: Sequence[str] = (),
) -> BucketQualification:
    """One bucket's verdict: coverage gaps make it INCONCLUSIVE, exceeded limits UNSTABLE.

    Metrics are judged whenever the samples share one fingerprint, even with gaps:
    instability seen in part of the evidence is still instability. Samples of mixed
    fingerprints are not pooled at all (their spread could be the commit's, not the pool's).
    """
    coverage: list[str] = [f"unreadable artifact: {problem}" for problem in unreadable]
    if not observations:
        coverage.append(
            f"no allocation reported this bucket (0 of {design.allocations} allocations, "
            f"0 of {design.allocations * design.samples} samples)"
        )
    else:
        coverage += _fingerprint_problems(observations, design)
        coverage += _allocation_problems(observations, design, pool_allocations)
        coverage += _duplicate_ids(observations)
    prints = {o.fingerprint for o in observations}
    fingerprint = next(iter(prints)) if len(prints) == 1 else None
    healthy = [o for o in observations if o.value is not None]
    metrics: BucketMetrics | None = None
    instability: list[str] = []
    gate_policy = rule(bucket, fingerprint.hardware or "") if fingerprint is not None else None
    calibrated = gate_policy if isinstance(gate_policy, stats.CalibratedPolicy) else None
    noise = measure_noise(observations, policy=calibrated) if fingerprint is not None else None
    if gate_policy is not None and len(healthy) >= 2:
        metrics, instability = _metrics(healthy, policy, gate_policy, noise)
    elif fingerprint is not None and observations:
        coverage.append(f"{_plural(len(healthy), 'usable sample')}: too few to measure noise")
    verdict = QualVerdict.STABLE
    if coverage:
        verdict = QualVerdict.INCONCLUSIVE
    if instability:
        verdict = QualVerdict.UNSTABLE
    by_allocation: dict[str, list[Observation]] = defaultdict(list)
    for obs in observations:
        by_allocation[obs.allocation or "(none)"].append(obs)
    allocations = tuple(
        AllocationEvidence(
            label=label,
            runners=tuple(sorted({o.runner or "?" for o in samples})),
            samples=tuple(
                (o.sample_index, o.value)
                for o in sorted(samples, key=lambda o: (o.sample_index is None, o.sample_index))
            ),
        )
        for label, samples in sorted(by_allocation.items())
    )
    return BucketQualification(
        bucket=bucket.id,
        unit=bucket.metric.unit,
        verdict=verdict,
        coverage=tuple(coverage),
        instability=tuple(instability),
        fingerprint=fingerprint,
        metrics=metrics,
        allocations=allocations,
        noise=noise,
    )


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the artifacts hold: their samples, and the files that could not be read."""

    observations: tuple[Observation, ...]
    # (path, problem, the bucket it names if any)
    unreadable: tuple[tuple[str, str, str | None], ...] = ()


def qualify(
    config: Config,
    scope: Sequence[Bucket],
    evidence: Evidence,
    *,
    design: Design,
    flags: Mapping[str, Sequence[str]] | None = None,
    rule: Callable[[Bucket, str], stats.Policy] | None = None,
) -> QualificationReport:
    """Qualify the pool for the buckets of ``scope`` (only those: a rescoped run is judged
    on what it selected, and never reports other buckets as missing evidence).

    ``rule`` gives the verdict rule per bucket and hardware (default: the gate's own).
    """
    # The rule in force (gate.policy) with perfgate.yaml's constants, as gate and bench take it.
    rule_for = rule or (lambda bucket, hardware: policy_for(bucket, config.gate, hardware))
    selected = {bucket.id for bucket in scope}
    known = set(config.bucket_ids())
    observations = index_positionally(evidence.observations)
    in_scope = [o for o in observations if o.bucket in selected]
    pool_allocations = sorted({o.allocation for o in in_scope if o.allocation is not None})
    notes, problems = [], []
    outside = sorted({o.bucket for o in observations if o.bucket in known - selected})
    if outside:
        notes.append(
            f"artifacts of buckets outside the selected scope were not judged: {_names(outside)}"
        )
    unknown = sorted({o.bucket for o in observations if o.bucket not in known})
    if unknown:
        notes.append(f"artifacts of buckets {config.path} does not declare: {_names(unknown)}")
    unreadable_by_bucket: dict[str, list[str]] = defaultdict(list)
    for path, problem, named in evidence.unreadable:
        if named in selected:
            unreadable_by_bucket[named].append(problem)
        elif named is None:
            # It could have held any bucket of the scope: fail closed.
            problems.append(f"unreadable artifact: {problem}")
        else:
            notes.append(f"unreadable artifact of {named}, outside the selected scope: {path}")
    buckets = []
    for bucket in scope:
        own = [o for o in in_scope if o.bucket == bucket.id]
        buckets.append(
            qualify_bucket(
                bucket,
                own,
                design=design,
                policy=config.qualify,
                rule=rule_for,
                pool_allocations=pool_allocations,
                unreadable=unreadable_by_bucket.get(bucket.id, ()),
            )
        )
    verdicts = [b.verdict for b in buckets]
    if problems:
        verdicts.append(QualVerdict.INCONCLUSIVE)
    overall = max(verdicts, key=lambda v: v.severity)
    given = flags or {}
    return QualificationReport(
        verdict=overall,
        buckets=tuple(buckets),
        design=design,
        policy=config.qualify,
        scope={key: tuple(values) for key, values in given.items()},
        problems=tuple(problems),
        notes=tuple(notes),
    )


def evidence_from(
    results: Iterable[tuple[str, Result]],
    unreadable: Iterable[tuple[str, str, str | None]] = (),
) -> Evidence:
    """The samples of ``(source, result)`` pairs, and the unreadable files."""
    observations = [obs for source, result in results for obs in observations_of(result, source)]
    return Evidence(observations=tuple(observations), unreadable=tuple(unreadable))


def load_evidence(directories: Iterable[Path]) -> Evidence:
    """Every result artifact under ``directories`` (recursively), as samples.

    A missing directory, or no artifact at all, is a malfunction (exit 3): the allocations
    did not deliver, so there is nothing to qualify. An unreadable file is named and costs
    the bucket it names (or, naming none, the pool), never the run.
    """
    pairs: list[tuple[str, Result]] = []
    unreadable: list[tuple[str, str, str | None]] = []
    found = 0
    for directory in directories:
        if not directory.is_dir():
            raise GateMalfunction(
                f"results directory {directory} does not exist; did the allocations upload "
                "their artifacts?"
            )
        for path in sorted(directory.rglob("*.json")):
            found += 1
            try:
                pairs.append((str(path), read_result(path)))
            except ArtifactError as exc:
                unreadable.append((str(path), str(exc), exc.bucket))
    if not found:
        raise GateMalfunction(
            "no result artifacts in "
            + ", ".join(str(d) for d in directories)
            + ": the allocations did not run, so there is nothing to qualify"
        )
    return evidence_from(pairs, unreadable)
