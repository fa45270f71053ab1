"""The gate's reading edge: each judged result's windows, acknowledgements and history read
from the baseline branch, then the one report (``judge.gate.build_report``, pure) built."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.artifacts import UnreadableArtifact
from perfgate.baselines.acks import accepted_levels, kept_runs, read_acks
from perfgate.baselines.samples import WindowKey
from perfgate.baselines.store import BaselineStore
from perfgate.config import PRIMARY, Bucket, Config
from perfgate.git import merge_base
from perfgate.judge.bucket_policy import (
    fitted_window_depth,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.calibration import configured_calibration
from perfgate.judge.gate import GateReport, build_report, latest_per_bucket
from perfgate.judge.runners import WindowRunners
from perfgate.result import Result


def evaluate(
    config: Config,
    expected: Sequence[Bucket],
    results: Sequence[Result],
    store: BaselineStore | None,
    notes: Sequence[str] = (),
    unreadable: Sequence[UnreadableArtifact] = (),
) -> GateReport:
    """Read the window of each bucket's judged result from the store (and the noise
    calibration gate.calibration names), then build the report."""
    # Only expected buckets are judged: an artifact for any other is reported, never read for.
    # Each metric the config declares and the result reports has a window of its own.
    declared = {bucket.id: bucket for bucket in expected}
    keys = {
        (bucket, metric.name): WindowKey.for_result(r, metric.name)
        for bucket, r in latest_per_bucket(results).items()
        if bucket in declared
        for metric in declared[bucket].selecting(r.metrics).all_metrics
        if metric.name in r.all_metrics
    }
    windows: dict[str, Sequence[Sequence[float]]] = {}
    metric_windows: dict[tuple[str, str], Sequence[Sequence[float]]] = {}
    accepted: dict[tuple[str, str], int] = {}
    runners: dict[str | tuple[str, str], WindowRunners] = {}
    tip = base = source = None
    notes = list(notes)
    if store is None:
        notes.append("no baseline store here (not a git repository): every bucket has no baseline")
    else:
        target = next((r.source.target_branch for r in results if r.source.target_branch), None)
        base = merge_base(store.repo, target, store.remote)
        tip = store.refresh()
        source = f"{store.remote}/{store.branch}" if store.remote else f"{store.branch} (local)"
        found = store.windows(
            keys,
            tip=tip,
            base=base,
            max_samples=window_sample_limit(config.gate, config.buckets, config.alerts),
            max_runs=window_run_limit(config.gate),
            fitted=fitted_window_depth(config.gate, config.buckets, config.alerts),
        )
        windows = {bucket: w.runs() for (bucket, name), w in found.items() if name == PRIMARY}
        metric_windows = {key: w.runs() for key, w in found.items() if key[1] != PRIMARY}
        acks, ack_warnings = read_acks(store.repo, tip)
        levels = accepted_levels(store.repo, acks, base)
        for (bucket, name), window in found.items():
            kept = kept_runs(levels, bucket, name, window.run_commits())
            if kept is not None:
                accepted[(bucket, name)] = kept
        notes.extend(ack_warnings)
        runners = {
            (bucket if name == PRIMARY else (bucket, name)): w.runners()
            for (bucket, name), w in found.items()
        }
        if store.skipped_lines:
            # The count first: it survives the cap on notes however many lines follow.
            notes.append(
                f"{store.skipped_lines} corrupt baseline line(s) skipped on {store.branch}; "
                "each is listed below with its file and line"
            )
        notes.extend(store.warnings)
    return build_report(
        config=config,
        expected=expected,
        results=results,
        windows=windows,
        notes=notes,
        baseline_tip=tip,
        baseline_source=source,
        base_commit=base,
        unreadable=unreadable,
        calibration=configured_calibration(config),
        metric_windows=metric_windows,
        accepted=accepted,
        runners=runners,
    )
