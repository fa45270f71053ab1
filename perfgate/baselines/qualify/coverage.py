"""Coverage: whether the allocations delivered what the design asked for (R15).

Every gap is named, and any gap makes the bucket INCONCLUSIVE_DO_NOT_GATE: one
fingerprint, exactly N allocations on at least ``min_runners`` runners with one runner
each, K samples with indices 0..K-1 and unique ids in every allocation, the expected
hardware, branch and commit.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.baselines.qualify.observations import Observation
from perfgate.util.console import listing, plural


@dataclass(frozen=True, kw_only=True)
class Design:
    """What the qualification run was asked to collect, fixed before measuring."""

    allocations: int
    samples: int
    min_runners: int
    hardware: str | None = None
    target_branch: str | None = None
    commit: str | None = None


def coverage_problems(
    observations: Sequence[Observation], design: Design, pool_allocations: Sequence[str]
) -> list[str]:
    """Every way one bucket's samples fall short of ``design`` (empty: complete).

    ``pool_allocations`` are the allocations that reported any bucket of the scope: one
    of them missing here is named.
    """
    if not observations:
        return [
            f"no allocation reported this bucket (0 of {design.allocations} allocations, "
            f"0 of {design.allocations * design.samples} samples)"
        ]
    return [
        *_fingerprint_problems(observations, design),
        *_allocation_problems(observations, design, pool_allocations),
        *_duplicate_ids(observations),
    ]


def _fingerprint_problems(observations: Sequence[Observation], design: Design) -> list[str]:
    problems = []
    prints = Counter(o.fingerprint for o in observations)
    parts = [fp.parts() for fp in prints]
    names = list(parts[0])
    for name in names:
        missing = sum(n for fp, n in prints.items() if name in fp.missing())
        if missing:
            problems.append(
                f"fingerprint incomplete: {name} missing in {plural(missing, 'sample')}"
            )
    if len(prints) > 1:
        varying = [name for name in names if len({part[name] for part in parts}) > 1]
        detail = "; ".join(
            f"{name}: " + listing(sorted({str(part[name]) for part in parts})) for name in varying
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
        got = {str(part[name]) for part in parts}
        # A commit may be given abbreviated, as git accepts it.
        wrong = sorted(
            g for g in got if g != wanted and not (name == "commit" and g.startswith(wanted))
        )
        if wrong:
            problems.append(f"{name} {listing(wrong)} is not the expected {wanted}")
    return problems


def _allocation_problems(
    observations: Sequence[Observation], design: Design, pool_allocations: Sequence[str]
) -> list[str]:
    problems = []
    unlabelled = sorted({o.source for o in observations if o.allocation is None})
    if unlabelled:
        problems.append(
            f"{plural(len(unlabelled), 'artifact')} name no allocation ({listing(unlabelled)}): "
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
            f"{len(labels)} allocations reported, {design.allocations} expected ({listing(labels)})"
            if len(labels) > design.allocations
            else f"{len(labels)} of {design.allocations} allocations reported"
        )
        if absent:
            text += f"; allocation(s) {listing(absent)} reported other buckets but not this one"
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
                f"allocation {label} ran on {len(names)} runners ({listing(names)}): "
                "an allocation is one runner job"
            )
        problems += _sample_problems(label, samples, design.samples)
    if len(runners) < design.min_runners:
        problems.append(
            f"{plural(len(runners), 'distinct runner')} ({listing(sorted(runners)) or 'none'}); "
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
            parts.append(f"missing index {listing(missing)}")
        if extra:
            parts.append(f"index {listing(extra)} outside 0..{wanted - 1}")
        if twice:
            parts.append(f"index {listing(twice)} more than once")
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
                f"sample id {sample_id[:12]} counted {count} times ({listing(sources)}): "
                "one measurement must count once"
            )
    return problems
