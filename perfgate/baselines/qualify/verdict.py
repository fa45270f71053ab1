"""The qualification verdict, per bucket and for the pool (R15).

Coverage gaps make a bucket INCONCLUSIVE_DO_NOT_GATE, exceeded limits
UNSTABLE_DO_NOT_GATE, and what passes both is STABLE_ENOUGH_TO_GATE; the pool's verdict
is its worst bucket's. The scope is explicit: only the selected buckets are expected.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from perfgate.baselines.qualify.coverage import Design, coverage_problems
from perfgate.baselines.qualify.metrics import BucketMetrics, bucket_metrics
from perfgate.baselines.qualify.observations import (
    Evidence,
    Observation,
    PoolFingerprint,
    index_positionally,
)
from perfgate.baselines.qualify.rule import measure_noise
from perfgate.config import Bucket, Config, QualifyPolicy
from perfgate.judge.bucket_policy import policy_for
from perfgate.judge.calibration import BucketNoise
from perfgate.judge.policies import CalibratedPolicy, Policy
from perfgate.util.console import listing, plural

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


@dataclass(frozen=True, kw_only=True)
class AllocationEvidence:
    """One allocation of one bucket: its runner(s) and samples by index."""

    label: str
    runners: tuple[str, ...]
    samples: tuple[tuple[int | None, float | None], ...]


@dataclass(frozen=True, kw_only=True)
class BucketQualification:
    """One bucket's verdict and the evidence behind it."""

    bucket: str
    unit: str
    verdict: QualVerdict
    coverage: tuple[str, ...]  # every missing piece (INCONCLUSIVE)
    instability: tuple[str, ...]  # every limit exceeded (UNSTABLE)
    fingerprint: PoolFingerprint | None
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


def qualify_bucket(
    bucket: Bucket,
    observations: Sequence[Observation],
    *,
    design: Design,
    policy: QualifyPolicy,
    rule: Callable[[Bucket, str], Policy],
    pool_allocations: Sequence[str] = (),
    unreadable: Sequence[str] = (),
) -> BucketQualification:
    """One bucket's verdict: coverage gaps make it INCONCLUSIVE, exceeded limits UNSTABLE.

    Metrics are judged whenever the samples share one fingerprint, even with gaps:
    instability seen in part of the evidence is still instability. Samples of mixed
    fingerprints are not pooled at all (their spread could be the commit's, not the pool's).
    """
    coverage = [
        *(f"unreadable artifact: {problem}" for problem in unreadable),
        *coverage_problems(observations, design, pool_allocations),
    ]
    prints = {o.fingerprint for o in observations}
    fingerprint = next(iter(prints)) if len(prints) == 1 else None
    healthy = [o for o in observations if o.value is not None]
    metrics: BucketMetrics | None = None
    instability: list[str] = []
    gate_policy = rule(bucket, fingerprint.hardware) if fingerprint is not None else None
    calibrated = gate_policy if isinstance(gate_policy, CalibratedPolicy) else None
    noise = measure_noise(observations, policy=calibrated) if fingerprint is not None else None
    if gate_policy is not None and len(healthy) >= 2:
        metrics, instability = bucket_metrics(healthy, policy, gate_policy, noise)
    elif fingerprint is not None and observations:
        coverage.append(f"{plural(len(healthy), 'usable sample')}: too few to measure noise")
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


def qualify(
    config: Config,
    scope: Sequence[Bucket],
    evidence: Evidence,
    *,
    design: Design,
    flags: Mapping[str, Sequence[str]] | None = None,
    rule: Callable[[Bucket, str], Policy] | None = None,
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
            f"artifacts of buckets outside the selected scope were not judged: {listing(outside)}"
        )
    unknown = sorted({o.bucket for o in observations if o.bucket not in known})
    if unknown:
        notes.append(f"artifacts of buckets {config.path} does not declare: {listing(unknown)}")
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
