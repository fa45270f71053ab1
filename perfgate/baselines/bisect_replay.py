"""Bisect's replays: each step's commit checked out in a throwaway worktree and measured
through the bench, then labelled against the GOOD runs so far (``baselines.bisect``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baselines.bisect import (
    BisectOptions,
    BisectPlan,
    BisectState,
    Outcome,
    Step,
    baseline_step,
    fixed_sampling,
    label,
    search,
    step_config,
    step_noise,
    step_policy,
    step_sampling,
    window_for,
)
from perfgate.config import Bucket, Config, ImageSpec
from perfgate.context import RunContext
from perfgate.judge.calibration import NoiseCalibration, configured_calibration
from perfgate.judge.judgement import Bisect
from perfgate.judge.rule import needs_more
from perfgate.result import Hardware, Result, write_result
from perfgate.run.bench import Confirm, run_bucket
from perfgate.run.checkout import replay_checkout
from perfgate.run.drivers import get_driver
from perfgate.run.launch import WARM_CACHE_DIR, BenchSettings
from perfgate.run.sampling import SamplingPlan


@dataclass(frozen=True, kw_only=True)
class ReplaySettings:
    """Where the replays run."""

    repo: Path
    hardware: Hardware
    context: RunContext
    # perfgate.yaml's image block (``per_commit``: each commit runs in its own image).
    image: ImageSpec | None = None


def measure(
    commit: str,
    bucket: Bucket,
    runs: int,
    sampling: SamplingPlan,
    settings: ReplaySettings,
    work_dir: Path,
    announce: Callable[[str], None],
    confirm: Confirm | None = None,
) -> list[Result]:
    """Run ``bucket`` ``runs`` times at ``commit`` with that commit's own benchmark.

    Each run samples through the bench's own loop (``sampling``; ``confirm`` answers
    whether a suspicious run needs another sample).
    """
    context = replace(
        settings.context,
        commit=commit,
        branch=None,
        target_branch=None,
        event="bisect",
        pr_number=None,
        head_sha=None,
    )
    most = f", up to {sampling.max_repeats}" if sampling.max_repeats > sampling.repeats else ""
    results = []
    lfs = get_driver(bucket.driver).needs_lfs
    with replay_checkout(settings.repo, commit, work_dir / "worktrees", lfs=lfs) as checkout:
        for index in range(runs):
            announce(
                f"{commit[:12]} {bucket.id} run {index + 1}/{runs} "
                f"({sampling.repeats} repeats{most})"
            )
            scratch = work_dir / commit[:12] / f"run-{index}"
            result = run_bucket(
                bucket,
                BenchSettings(
                    checkout=checkout,
                    work_root=scratch,
                    out_dir=scratch / "results",
                    hardware=settings.hardware,
                    context=context,
                    say=announce,
                    image=settings.image,
                    # One warm cache per bucket across the bisected commits.
                    warm_caches=work_dir / WARM_CACHE_DIR,
                ),
                plan=sampling,
                confirm=confirm,
            )
            write_result(result, scratch / "results")
            results.append(result)
    return results


def measure_step(
    plan: BisectPlan,
    commit: str,
    steps: dict[str, Step],
    settings: ReplaySettings,
    options: BisectOptions,
    current: Config,
    log: Callable[[str], None],
    calibration: NoiseCalibration | None,
) -> Step:
    """Measure ``commit`` and label it against the runs of the GOOD commits so far, with
    the noise ``calibration`` (the gate's) measured for its experiment."""
    config = step_config(settings.repo, commit, options, current)
    bucket = config.find(options.bucket) if config else None
    if bucket is None or config is None:
        return Step(commit=commit, label=Bisect.SKIP, runs=(), verdict="SKIP",
                    detail=f"no bucket {plan.bucket.id} in perfgate.yaml here")  # fmt: skip
    if commit == plan.good:
        fixed = fixed_sampling(plan.repeats)
        runs = measure(commit, bucket, plan.good_runs, fixed, settings, options.work_dir, log)
        return baseline_step(commit, runs)
    window = window_for(plan, steps)
    sampling = step_sampling(bucket, config.gate, plan.repeats)
    policy = step_policy(bucket, config.gate, settings.hardware.slug, sampling)

    def suspicious(_: Bucket, result: Result) -> bool:
        rule, measured = step_noise(policy, calibration, result, window)
        samples = result.metric.sample_values()
        return needs_more(window, samples, direction=result.metric.direction, policy=rule,
                          calibration=measured)  # fmt: skip

    (result,) = measure(
        commit, bucket, 1, sampling, settings, options.work_dir, log, confirm=suspicious
    )
    return label(result, window, bucket, policy, calibration)


def run_bisect(
    plan: BisectPlan,
    state: BisectState,
    settings: ReplaySettings,
    options: BisectOptions,
    current: Config,
    log: Callable[[str], None],
) -> Outcome:
    """Measure commits until the search concludes; the state is saved after every step."""
    calibration = configured_calibration(current)  # a bad file fails before any launch
    while (outcome := search(plan, state.steps)).next_commit is not None:
        commit = outcome.next_commit
        step = measure_step(plan, commit, state.steps, settings, options, current, log, calibration)
        state.steps[commit] = step
        state.save(options.state)
        log(f"{commit[:12]}: {step.label.value} ({step.verdict}: {step.detail})")
    return outcome
