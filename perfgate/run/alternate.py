"""Paired samples measured: the merge base's launch and the change's, alternately on this
runner, pair by pair (``run.paired`` is the loop, the judge side says when to stop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from perfgate.config import Bucket
from perfgate.result import (
    CacheState,
    FailurePhase,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
)
from perfgate.run.admission import AdmissionControl
from perfgate.run.launch import BenchSettings, sample_layout, warm_cache
from perfgate.run.paired import measure_pairs
from perfgate.run.sample import (
    SampleRun,
    grant_remeasure,
    measure_sample,
    measured_bucket,
    sample_figure,
)


def measure_alternately(
    bucket: Bucket,
    sides: Mapping[PairedSide, tuple[Bucket, BenchSettings]],
    *,
    base_commit: str,
    run_key: str,
    control: AdmissionControl,
    max_pairs: int,
    budget_s: float | None,
    wants_more: Callable[[PairedRecord], bool],
    started: float | None = None,
    expected_s: float | None = None,
) -> PairedRecord:
    """The base side and the head side, alternately on this machine, pair by pair (A B,
    B A, ...), until ``wants_more`` is satisfied, ``max_pairs`` are in or the budget is spent.

    ``sides`` maps each side to the bucket as its checkout declares it and the settings
    that run it there; ``bucket`` names the metrics every pair records. Both sides run the
    same way (R16): the base's own benchmark with the head's container profile and cache
    state, each side warming a cache of its own, so no launch of one side compiles the
    other's kernels. Every launch is optional: charged to the run's allowance, a retry or
    a re-measure started only when it affords one at ``expected_s``.
    """
    started = time.monotonic() if started is None else started
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
            max_pairs=max_pairs,
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
        max_pairs=max_pairs,
        budget_s=budget_s,
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
