"""Seed replay: each commit in a throwaway worktree, each bucket through the normal bench path.

A bucket's samples at a commit are appended in one store commit once all of them ran, so
an interrupted seed never leaves a half-written bucket. A cancelled seed (SIGTERM) unwinds
through the command line's one signal handler like every verb (``errors.Terminated``, a
KeyboardInterrupt), so its worktree is removed and it exits 128 + the signal's number.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate.baselines.ledger import record_of
from perfgate.baselines.samples import Sample, WindowIdentity, samples_from_result, seed_sample_id
from perfgate.baselines.seed.plan import PlanEntry, SeedPlan, SeedTarget
from perfgate.baselines.seed.records import RecordStatus, SeedRecord, present_records
from perfgate.baselines.store import BaselineStore
from perfgate.config import AdmissionMode, AdmissionPolicy, ImageSpec
from perfgate.context import RunContext
from perfgate.result import Hardware, Result, SampleReading, write_result
from perfgate.run.bench import run_bucket
from perfgate.run.checkout import replay_checkout
from perfgate.run.drivers import get_driver
from perfgate.run.launch import WARM_CACHE_DIR, BenchSettings

TRUSTED_SOURCE = "seed"


@dataclass(frozen=True, kw_only=True)
class ExecuteSettings:
    """Where the seed runs and what it writes through."""

    repo: Path
    store: BaselineStore
    work_dir: Path
    hardware: Hardware
    context: RunContext
    # Samples taken on an unfit machine never become baselines: the seed passes
    # perfgate.yaml's admission policy (off unless given).
    admission: AdmissionPolicy = field(
        default_factory=lambda: AdmissionPolicy(mode=AdmissionMode.OFF)
    )
    # perfgate.yaml's image block (``per_commit``: each commit runs in its own image).
    image: ImageSpec | None = None


def _samples_for(
    result: Result, entry: PlanEntry, index: int, seed_key: str
) -> tuple[list[Sample], SeedRecord]:
    # The samples are for the replayed target, whatever the run's context said.
    identity = replace(WindowIdentity.of_result(result), target_branch=entry.target.target_branch)
    record = SeedRecord(
        commit=entry.target.commit,
        bucket=entry.bucket.id,
        hardware=result.hardware.slug,
        sample_index=index,
        status=RecordStatus.FAILED,
        identity=identity,
        value=result.metric.value,
    )
    value = result.metric.value
    if not result.health.healthy:
        phase = result.health.phase.value if result.health.phase else "unknown"
        why = result.health.config_mismatch or result.health.error or "see the log"
        return [], replace(
            record, detail=f"failed ({phase}, exit {result.health.exit_code}): {why}"
        )
    if value is None or value <= 0:
        return [], replace(record, detail="no positive figure")

    def sample_id(reading: SampleReading, metric: str) -> str:
        # The replay index names the run; each of its repeats and metrics gets its own id.
        return seed_sample_id(
            seed_key=seed_key,
            commit=entry.target.commit,
            bucket=entry.bucket.id,
            hardware=result.hardware.slug,
            identity=identity,
            sample_index=index,
            repeat=reading.sample_index,
            metric=metric,
        )

    samples = samples_from_result(result, trusted_source=TRUSTED_SOURCE, sample_ids=sample_id)
    if not samples:
        why = "; ".join(dict.fromkeys(r for a in result.admission for r in a.reasons))
        return [], replace(record, detail=f"every sample was taken on an unfit machine: {why}")
    return samples, replace(record, status=RecordStatus.RECORDED, sample_id=samples[0].sample_id)


def _seed_bucket(
    entry: PlanEntry,
    *,
    checkout: Path,
    context: RunContext,
    settings: ExecuteSettings,
    seed_key: str,
    announce: Callable[[PlanEntry, int], None],
) -> list[SeedRecord]:
    """Run the bucket's missing samples at one commit, then append them in one store commit."""
    samples, records, spend = [], [], []
    for index in entry.missing:
        announce(entry, index)
        # Each sample index gets its own logs and caches, as each CI attempt does (R10).
        scratch = (
            settings.work_dir / entry.target.commit[:12] / entry.target.target_branch
        ) / f"sample-{index}"
        result = run_bucket(
            entry.bucket,
            BenchSettings(
                checkout=checkout,
                work_root=scratch,
                out_dir=scratch / "results",
                hardware=settings.hardware,
                context=context,
                admission=settings.admission,
                image=settings.image,
                # One warm cache per bucket across the replayed commits, as CI keeps it.
                warm_caches=settings.work_dir / WARM_CACHE_DIR,
            ),
        )
        write_result(result, scratch / "results")
        taken, record = _samples_for(result, entry, index, seed_key)
        samples += taken
        records.append(record)
        spend += [line for line in [record_of(result)] if line is not None]
    if samples or spend:
        settings.store.append(
            samples,
            f"Seed {len(samples)} sample(s) of {entry.bucket.id} "
            f"at {entry.target.commit[:12]} for {entry.target.target_branch}",
            spend,
        )
    return records


def execute(
    plan: SeedPlan,
    settings: ExecuteSettings,
    on_record: Callable[[SeedRecord], None],
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> None:
    """Run every missing sample; append each bucket's samples at a commit in one store commit."""
    groups: dict[SeedTarget, list[PlanEntry]] = {}
    for entry in plan.entries:
        groups.setdefault(entry.target, []).append(entry)
    counter = iter(range(1, plan.runs + 1))

    def announce(entry: PlanEntry, index: int) -> None:
        log(
            f"perfgate: [{next(counter)}/{plan.runs}] {entry.target.commit[:12]} "
            f"{entry.bucket.id} sample {index}"
        )

    for target, entries in groups.items():
        for entry in entries:
            for record in present_records(entry, plan.hardware):
                on_record(record)
        if not any(e.missing for e in entries):
            log(f"perfgate: {target.commit[:12]}: every sample already present, not replayed")
            continue
        context = replace(
            settings.context,
            commit=target.commit,
            branch=target.branch or target.target_branch,
            target_branch=target.target_branch,
            event="seed",
            pr_number=None,
            head_sha=None,
        )
        worktrees = settings.work_dir / "worktrees"
        lfs = any(get_driver(entry.bucket.driver).needs_lfs for entry in entries)
        with replay_checkout(settings.repo, target.commit, worktrees, lfs=lfs) as checkout:
            for entry in entries:
                if not entry.missing:
                    continue
                records = _seed_bucket(
                    entry,
                    checkout=checkout,
                    context=context,
                    settings=settings,
                    seed_key=plan.seed_key,
                    announce=announce,
                )
                for record in records:
                    on_record(record)
