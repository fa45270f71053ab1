"""The gate's reading edge: each judged result's windows, acknowledgements and history read
from the baseline branch, then the one report (``judge.gate.build_report``, pure) built."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.artifacts import UnreadableArtifact
from perfgate.baselines.acks import accepted_levels, kept_runs, read_acks
from perfgate.baselines.samples import WindowKey
from perfgate.baselines.store import BaselineStore
from perfgate.config import Bucket, Config
from perfgate.judge.bucket_policy import (
    fitted_window_depth,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.calibration import configured_calibration
from perfgate.judge.gate import GateReport, ReportContext, build_report, latest_per_bucket
from perfgate.judge.judgement import MetricKey, MetricWindow
from perfgate.result import Result
from perfgate.util.git import merge_base


def evaluate(
    config: Config,
    expected: Sequence[Bucket],
    results: Sequence[Result],
    store: BaselineStore | None,
    unreadable: Sequence[UnreadableArtifact] = (),
) -> GateReport:
    """Read the window of each bucket's judged result from the store (and the noise
    calibration gate.calibration names), then build the report."""
    # Only expected buckets are judged: an artifact for any other is reported, never read for.
    # Each metric the config declares and the result reports has a window of its own.
    declared = {bucket.id: bucket for bucket in expected}
    keys = {
        MetricKey(bucket, metric.name): WindowKey.for_result(r, metric.name)
        for bucket, r in latest_per_bucket(results).items()
        if bucket in declared
        for metric in declared[bucket].selecting(r.metrics).all_metrics
        if metric.name in r.all_metrics
    }
    windows: dict[MetricKey, MetricWindow] = {}
    tip = base = source = None
    notes: list[str] = []
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
        acks, ack_warnings = read_acks(store.repo, tip)
        levels = accepted_levels(store.repo, acks, base)
        windows = {
            key: MetricWindow(
                runs=window.runs(),
                runners=window.runners(),
                known_shift=kept_runs(levels, key.bucket, key.metric, window.run_commits()),
            )
            for key, window in found.items()
        }
        notes.extend(ack_warnings)
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
        unreadable=unreadable,
        calibration=configured_calibration(config),
        context=ReportContext(
            baseline_tip=tip, baseline_source=source, base_commit=base, notes=notes
        ),
    )
