"""Paired confirmation's measuring: the merge base and the change, alternately on one runner.

A rolling window compares this runner today with other runners on other days; the pool's
spread between runners (qualification tolerates 5 %) and the GPU's state are in that
comparison, and statistics alone cannot take them out. Measuring the merge base and the
change on the same runner, one right after the other, does: a pair shares the runner, its
clocks and its neighbours, so their ratio is the change alone.

The merge base is checked out in a throwaway worktree (as seeding does; ``run.checkout``)
with its own perfgate.yaml and benchmark, so both sides of a pair run as their own commit
declares them (R16). The judge side (``judge.confirm``, on the paired test of
``judge.paired``) plans the pairs and decides after every pair whether another is needed;
this module only takes them, within ``max_pairs`` and ``pair_budget_minutes``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from perfgate.config import Bucket, Config, load_config
from perfgate.errors import GitError, PerfgateError
from perfgate.result import (
    CacheState,
    FailurePhase,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    Result,
)
from perfgate.run.admission import AdmissionControl
from perfgate.run.allowance import MARGIN
from perfgate.run.checkout import replay_checkout
from perfgate.run.drivers import get_driver
from perfgate.run.launch import BenchSettings, bucket_hashes, sample_layout, warm_cache
from perfgate.run.sample import (
    SampleRun,
    grant_remeasure,
    measure_sample,
    measured_bucket,
    sample_figure,
)
from perfgate.run.sampling import Step
from perfgate.util.git import merge_base, try_git


@dataclass(frozen=True, kw_only=True)
class PairPlan:
    """What the judge side allows a paired comparison: how many pairs, or why none."""

    pairs: int  # at most this many (0: none)
    # Why none, said first, then its numbers after ': ' (the pairs cannot decide, or the
    # run's budget cannot afford them).
    skipped: str = ""


@dataclass(frozen=True, kw_only=True)
class BaseCheckout:
    """The merge base, ready to measure: its commit, a throwaway worktree, its own bucket."""

    commit: str
    checkout: Path
    # The bucket as the merge base's own perfgate.yaml declares it (its own benchmark).
    bucket: Bucket


class Pairing(Protocol):
    """The judge side of confirmation (``judge.confirm.Confirmer``)."""

    def needs_sample(self, bucket: Bucket, result: Result) -> bool:
        """``gate.confirm: repeat``, or no merge base to pair with: another sample?"""
        ...

    def step(self, bucket: Bucket, result: Result) -> Step:
        """What the run should spend next: nothing, another launch here, or pairs."""
        ...

    def pair_plan(self, bucket: Bucket, result: Result, left_minutes: float | None) -> PairPlan:
        """How many pairs to take at most, or why none (they cannot decide, or the run's
        shared budget, ``left_minutes`` of it left, cannot afford them)."""
        ...

    def order(self, runs: Sequence[tuple[Bucket, Result]]) -> list[Bucket]:
        """The buckets in the order the run's shared budget is spent on them."""
        ...

    def needs_pair(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        """After each pair: does the paired test need another one?"""
        ...


#: The merge base of a run checked out (removed on exit), or why none can be measured.
BaseSource = Callable[[Bucket, Result], AbstractContextManager[BaseCheckout | str]]


@dataclass(frozen=True, kw_only=True)
class Confirmation:
    """What confirms a suspicious run: the judge's answers, and where its merge base comes
    from (``merge_base_checkout``, or a stand-in)."""

    judge: Pairing
    bases: BaseSource


class HeadRun(Protocol):
    """The change's run so far, as pairs are taken beside it (``run.bench.BucketRun``)."""

    bucket: Bucket
    settings: BenchSettings
    run_key: str
    control: AdmissionControl

    def result(self) -> Result:
        """The run so far as a Result."""
        ...

    def launch_s(self) -> float:
        """One launch as this run measured it."""
        ...


@dataclass(frozen=True, kw_only=True)
class PairLimits:
    """How far a paired comparison may go: ``max_pairs``, and a budget of ``budget_s``
    (None: none) counted from ``started`` (the merge base's checkout included)."""

    max_pairs: int
    budget_s: float | None
    started: float


def pair_order(pair: int) -> tuple[PairedSide, PairedSide]:
    """Base first in even pairs, head first in odd ones (A B, B A, A B, ...).

    Each pair runs both sides back to back; swapping who goes first every pair means a
    runner that warms up or drifts steadily during the comparison favours neither side.
    """
    if pair % 2 == 0:
        return PairedSide.BASE, PairedSide.HEAD
    return PairedSide.HEAD, PairedSide.BASE


def measure_pairs(
    *,
    max_pairs: int,
    budget_s: float | None,
    measure: Callable[[PairedSide, int, int], PairedSample],
    remeasure: Callable[[PairedSample], bool],
    wants_more: Callable[[Sequence[PairedSample]], bool],
    clock: Callable[[], float] = time.monotonic,
    started: float | None = None,
    first_pair_s: float = 0.0,
) -> tuple[list[PairedSample], PairedStop]:
    """Take pairs until the judge is satisfied, ``max_pairs`` are in, or another pair would
    not finish within the budget.

    ``measure(side, pair, index)`` takes one sample; a failed one (either side) ends the
    comparison. A sample admission control set aside is measured again while
    ``remeasure`` grants it (then its pair uses the new one), else its pair is left out.
    ``wants_more`` says whether the judge is still undecided: SETTLED only when it is not.

    The budget is a cap counted from ``started`` (the merge base's checkout included): a
    pair starts only when it can finish within it, at ``first_pair_s`` for the first pair
    and afterwards at what the last pair's launches took, its warm-ups left out (a cold
    cache is warmed once).
    """
    started = clock() if started is None else started
    samples: list[PairedSample] = []
    per_pair = first_pair_s
    for pair in range(max_pairs):
        if budget_s is not None and clock() - started + per_pair * MARGIN > budget_s:
            return samples, PairedStop.TIME_BUDGET
        first = len(samples)
        for side in pair_order(pair):
            while True:
                sample = measure(side, pair, len(samples))
                samples.append(sample)
                if sample.failed:
                    return samples, PairedStop.FAILED
                if sample.usable or not remeasure(sample):
                    break
        if not wants_more(samples):
            return samples, PairedStop.SETTLED
        per_pair = sum(s.wall_s - s.warmup_s for s in samples[first:])
    return samples, PairedStop.MAX_PAIRS


def measure_alternately(
    bucket: Bucket,
    sides: Mapping[PairedSide, tuple[Bucket, BenchSettings]],
    *,
    base_commit: str,
    run_key: str,
    control: AdmissionControl,
    limits: PairLimits,
    wants_more: Callable[[PairedRecord], bool],
    expected_s: float | None = None,
) -> PairedRecord:
    """The base side and the head side, alternately on this machine, pair by pair (A B,
    B A, ...), until ``wants_more`` is satisfied or ``limits`` are reached.

    ``sides`` maps each side to the bucket as its checkout declares it and the settings
    that run it there; ``bucket`` names the metrics every pair records. Both sides run the
    same way (R16): the base's own benchmark with the head's container profile and cache
    state, each side warming a cache of its own, so no launch of one side compiles the
    other's kernels. Every launch is optional: charged to the run's allowance, a retry or
    a re-measure started only when it affords one at ``expected_s``.
    """
    started = limits.started
    head_bucket, head_settings = sides[PairedSide.HEAD]
    base_bucket, base_settings = sides[PairedSide.BASE]
    runs = {
        PairedSide.BASE: (
            replace(base_bucket, container=head_bucket.container, cache=head_bucket.cache),
            base_settings,
            f"{bucket.file_stem}.base-{base_commit[:12]}",
        ),
        PairedSide.HEAD: (head_bucket, head_settings, bucket.file_stem),
    }

    def measure(side: PairedSide, pair: int, index: int) -> PairedSample:
        which, where, warm_name = runs[side]
        layout = sample_layout(
            which, where, run_key, index, label=f"paired-{index}-{side}", warm_name=warm_name
        )
        run = measure_sample(which, where, layout, control, planned=False, expected_s=expected_s)
        metrics = measured_bucket(bucket, [run]).metrics
        others = {m.name: sample_figure(run, m) for m in metrics} if run.healthy else {}
        return PairedSample(
            sample_index=index,
            pair=pair,
            side=side,
            value=run.value if run.healthy else None,
            metrics={name: value for name, value in others.items() if value is not None},
            wall_s=round(run.wall_s, 3),
            launches=len(run.records),
            warmup_s=round(sum(r.outcome.wall_s for r in run.records if r.warmup), 3),
            phase=_phase(run),
            admission=run.admission,
        )

    def record(samples: Sequence[PairedSample], stop: PairedStop | None) -> PairedRecord:
        failed = next((s for s in samples if s.failed), None)
        reason = ""
        if failed is not None:
            phase = failed.phase.value if failed.phase else "no figure"
            reason = f"the {failed.side.value} sample {failed.sample_index} failed ({phase})"
        return PairedRecord(
            status=PairedStatus.FAILED if failed else PairedStatus.MEASURED,
            reason=reason,
            base_commit=base_commit,
            max_pairs=limits.max_pairs,
            samples=tuple(samples),
            stopped=stop,
            wall_s=round(time.monotonic() - started, 3),
        )

    # The first pair's estimate: a launch a side, and the base's warm-up when its cache
    # is cold (it is keyed by the base commit, so it is cold for every new merge base).
    warm_base = warm_cache(runs[PairedSide.BASE][0], base_settings, runs[PairedSide.BASE][2])
    launch_s = expected_s or 0.0
    cold_base = warm_base is not None and warm_base.state is CacheState.COLD
    samples, stop = measure_pairs(
        max_pairs=limits.max_pairs,
        budget_s=limits.budget_s,
        started=started,
        first_pair_s=launch_s * (3 if cold_base else 2),
        measure=measure,
        remeasure=lambda s: (
            head_settings.allowance.affords(expected_s or s.wall_s)
            and grant_remeasure(
                head_bucket,
                head_settings,
                control,
                f"paired {s.side.value} sample {s.sample_index}",
                s.wall_s,
                s.admission,
            )
        ),
        wants_more=lambda taken: wants_more(record(taken, None)),
    )
    return record(samples, stop)


def _phase(run: SampleRun) -> FailurePhase | None:
    """How a sample failed (output or mismatch when the process itself was fine)."""
    final = run.final
    phase = final.outcome.phase
    if phase is None and final.reading.config_mismatch:
        return FailurePhase.CONFIG_MISMATCH
    if phase is None and not run.healthy:
        return FailurePhase.OUTPUT
    return phase


@contextmanager
def merge_base_checkout(
    config: Config,
    bucket: Bucket,
    result: Result,
    *,
    checkout: Path,
    work_dir: Path,
    remote: str | None,
) -> Iterator[BaseCheckout | str]:
    """The merge base of ``checkout`` (the change) checked out under ``work_dir`` with its
    own bucket, or why it cannot be measured; ``remote`` holds the target branch."""
    repo = try_git("rev-parse", "--show-toplevel", cwd=checkout)
    if repo is None:
        yield "not a git checkout, so there is no merge base to measure"
        return
    top = Path(repo).resolve()
    commit, why = _base_commit(top, result, remote)
    if commit is None:
        yield why
        return
    try:
        where = checkout.resolve().relative_to(top)
        config_path: Path | None = (checkout / config.path).resolve().relative_to(top)
    except ValueError:
        where, config_path = Path(), None
    # The base gets what the change's checkout has: its LFS content (the assets) too.
    lfs = get_driver(bucket.driver).needs_lfs
    with ExitStack() as stack:
        try:
            worktree = stack.enter_context(
                replay_checkout(top, commit, work_dir / "paired", lfs=lfs)
            )
        except GitError as exc:
            yield f"the merge base {commit[:12]} cannot be checked out like the change: {exc}"
            return
        found = _base_bucket(config, bucket, result, worktree, config_path)
        if isinstance(found, str):
            yield found
        else:
            yield BaseCheckout(commit=commit, checkout=worktree / where, bucket=found)


def _base_commit(top: Path, result: Result, remote: str | None) -> tuple[str | None, str]:
    """The commit to measure beside the change, or None and why there is none.

    It is the merge base with the target branch; when the change is the merge base
    itself (a push to the target, a clean checkout of it), its first parent; with
    uncommitted changes on the merge base, HEAD.
    """
    head = try_git("rev-parse", "HEAD", cwd=top)
    if head is None:
        return None, "this checkout has no commit yet"
    base = merge_base(top, result.source.target_branch or None, remote) or head
    if base != head:
        return base, ""
    if try_git("status", "--porcelain", "--untracked-files=no", cwd=top):
        return head, ""
    parent = try_git("rev-parse", "--verify", "--quiet", "HEAD^1", cwd=top)
    return parent, "" if parent else f"{head[:12]} has no parent commit to compare with"


def _base_bucket(
    config: Config, bucket: Bucket, result: Result, worktree: Path, config_path: Path | None
) -> Bucket | str:
    """The bucket as the merge base declares it, or why it cannot be compared."""
    if config_path is None:
        base_config = config  # a config outside the repository: every commit uses it
    else:
        path = worktree / config_path
        if not path.is_file():
            return f"the merge base has no {config_path}"
        try:
            base_config = load_config(path)
        except PerfgateError as exc:
            return f"the merge base's {config_path} is not usable: {exc}"
    found = base_config.find(bucket.id)
    if found is None:
        return f"the merge base's perfgate.yaml has no bucket {bucket.id}"
    if bucket_hashes(found) != (result.identity.launch_hash, result.identity.benchmark_hash):
        return "the merge base runs another experiment (its launch or benchmark hash differs)"
    return found


def pair_with_base(run: HeadRun, confirmation: Confirmation) -> PairedRecord:
    """Pairs with the merge base for a run its window cannot clear: as many as the judge
    plans, within the bucket's pair budget and the run's allowance; none that cannot decide.

    The launches are charged to the allowance as they run; the rest of the comparison's
    time (the merge base's checkout) after it.
    """
    bucket, allowance = run.bucket, run.settings.allowance
    head = run.result()
    room = allowance.left_s
    plan = confirmation.judge.pair_plan(bucket, head, None if room is None else room / 60.0)
    if plan.pairs <= 0:
        paired = PairedRecord(
            status=PairedStatus.SKIPPED, reason=plan.skipped, max_pairs=bucket.max_pairs
        )
    else:
        budget = bucket.pair_budget_minutes
        caps = [v for v in (budget * 60.0 if budget is not None else None, room) if v is not None]
        limits = PairLimits(
            max_pairs=min(bucket.max_pairs, plan.pairs),
            budget_s=min(caps) if caps else None,
            started=time.monotonic(),
        )
        paired = _pair(run, head, confirmation, limits)
        allowance.charge(paired.wall_s - sum(s.wall_s for s in paired.samples))
    run.settings.say(_paired_notice(bucket, paired))
    return paired


def _pair(
    run: HeadRun, head: Result, confirmation: Confirmation, limits: PairLimits
) -> PairedRecord:
    """Measure the merge base and the change alternately on this runner (the evidence)."""
    bucket, settings = run.bucket, run.settings
    with confirmation.bases(bucket, head) as base:
        if isinstance(base, str):
            return PairedRecord(
                status=PairedStatus.UNAVAILABLE,
                reason=base,
                max_pairs=bucket.max_pairs,
                wall_s=round(time.monotonic() - limits.started, 3),
            )
        return measure_alternately(
            bucket,
            {
                # The base's warm caches live beside the lane's, never in what CI saves.
                PairedSide.BASE: (
                    base.bucket,
                    replace(settings, checkout=base.checkout, warm_caches=settings.base_warm_root),
                ),
                PairedSide.HEAD: (bucket, settings),
            },
            base_commit=base.commit,
            run_key=run.run_key,
            control=run.control,
            expected_s=run.launch_s(),
            limits=limits,
            wants_more=lambda record: confirmation.judge.needs_pair(bucket, head, record),
        )


def _paired_notice(bucket: Bucket, paired: PairedRecord) -> str:
    """``cartpole/numpy: paired A/B with abc123def456: 6 pair(s) (settled)``."""
    if paired.status is PairedStatus.UNAVAILABLE:
        return f"{bucket.id}: no paired A/B ({paired.reason}); confirming by repeats"
    if paired.status is PairedStatus.SKIPPED:
        # The numbers go to the verdict and the summary; the terminal gets the reason.
        why = paired.reason.split(": ", 1)[0]
        return f"{bucket.id}: no pairs taken ({why}); the window's verdict stands"
    base = (paired.base_commit or "?")[:12]
    pairs = len(paired.pairs())
    stopped = paired.stopped.value if paired.stopped else "?"
    extra = f"; {paired.reason}" if paired.reason else ""
    return f"{bucket.id}: paired A/B with the merge base {base}: {pairs} pair(s) ({stopped}){extra}"
