"""The gate's verdict rule applied along a stored history: the one adapter the trend uses.

Each run is judged as the gate judged it: its window from the store's own selection with
the gate's sample limit (:func:`perfgate.baselines.history.windows_before`,
:func:`perfgate.judge.bucket_policy.window_sample_limit`), grouped into runs as the gate groups
it (``Window.runs``), and every sample of the run judged by the oracle with the bucket's
policy (:func:`perfgate.judge.oracle.judge_run`, :func:`perfgate.judge.bucket_policy.policy_for`).
A chart's bands, its level-shift marks and the index's verdicts come from here alone, so
neither can disagree with a gate run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.baselines.acks import AcceptedLevel, kept_runs
from perfgate.baselines.history import BranchCommit, Run, Series, windows_before
from perfgate.config import (
    PRIMARY,
    AlertsSpec,
    Bucket,
    ConfirmMode,
    Direction,
    GatePolicy,
    Metric,
)
from perfgate.judge.bucket_policy import policy_for, window_run_limit, window_sample_limit
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.judgement import MetricWindow
from perfgate.judge.oracle import judge_run
from perfgate.judge.policies import Calibration, Policy
from perfgate.judge.verdicts import Reason


@dataclass(frozen=True, kw_only=True)
class TrendRule:
    """The gate's policy, the window limit it reads with (set by the whole matrix) and the
    noise calibration it reads (``gate.calibration``)."""

    gate: GatePolicy
    window_limit: int
    calibration: NoiseCalibration | None = None
    # Accepted changes (R18): each starts a known level in the windows after it.
    accepted: tuple[AcceptedLevel, ...] = ()

    @classmethod
    def of(
        cls,
        gate: GatePolicy,
        buckets: Sequence[Bucket],
        calibration: NoiseCalibration | None = None,
        accepted: Sequence[AcceptedLevel] = (),
        alerts: AlertsSpec | None = None,
    ) -> TrendRule:
        """The rule for a perfgate.yaml: ``buckets`` is its whole matrix and ``alerts`` its
        alerts block (a push may store larger runs), as the gate reads."""
        return cls(
            gate=gate,
            window_limit=window_sample_limit(gate, buckets, alerts),
            calibration=calibration,
            accepted=tuple(accepted),
        )

    def known_shift(self, series: Series, run: Run, run_commits: Sequence[str]) -> int | None:
        """The runs of a window at the accepted level ``run`` is at, as the gate counts them."""
        at = [level for level in self.accepted if run.commit.sha in level.after]
        return kept_runs(at, series.bucket.id, series.metric, run_commits)

    def accepted_marks(self, series: Series) -> list[tuple[BranchCommit, str]]:
        """Where each accepted change of ``series`` starts (its first run), and why."""
        marks = []
        for level in self.accepted:
            if not level.ack.applies_to(series.bucket.id, series.metric):
                continue
            first = next((r for r in series.runs if r.commit.sha in level.after), None)
            if first is not None:
                marks.append((first.commit, level.ack.reason))
        return marks

    def run_policy(
        self, series: Series, run: Run, policy: Policy, window: Sequence[Sequence[float]]
    ) -> tuple[Policy, Calibration | None]:
        """The rule one run of ``series`` is judged with, as the gate's ``evaluate`` sets it:
        the series' ``policy`` (its metric's own), told the noise the calibration measured
        for the run's experiment (bucket, hardware, launch and benchmark hash), which
        applies to the primary alone, unless it is far above what ``window`` shows."""
        if series.metric != PRIMARY or self.calibration is None:
            return policy, None
        first = run.samples[0]
        measured = self.calibration.for_experiment(
            (series.bucket.id, series.hardware, first.launch_hash, first.benchmark_hash)
        )
        if measured is None or measured.beyond(window, policy):
            return policy, None
        return measured.applied_to(policy)

    @property
    def paired(self) -> bool:
        """True when the gate confirms by pairs, which the store does not keep (R5)."""
        return self.gate.confirm is ConfirmMode.PAIRED


@dataclass(frozen=True, kw_only=True)
class JudgedRun:
    """One run, the lines it was judged against and the verdict it got."""

    run: Run
    # The run's figure as the gate reports it: the median of its samples.
    figure: float
    verdict: str
    reasons: tuple[str, ...]
    detail: str
    # Window samples and runs the rule used (after a level shift's cut).
    window_size: int
    window_runs: int
    # The baseline level the run was matched against, and its lines (None: no judging).
    baseline: float | None = None
    warn_line: float | None = None
    block_line: float | None = None
    change_pct: float | None = None
    # '-6.1 % (-7.9 ... -4.2)': the change with its interval, as the gate's summary prints it.
    change_text: str = ""
    # The commit where the level shift that the window starts after landed (none found).
    shift_commit: str | None = None


def judge_series(series: Series, rule: TrendRule) -> list[JudgedRun]:
    """Every run of ``series`` judged against the window before it, oldest first."""
    direction = Direction(series.direction)
    floors = series.bucket.floors_for(series.hardware, series.metric)
    metric_policy = policy_for(series.bucket, rule.gate, series.hardware, declared(series))
    judged = []
    windows = windows_before(series.runs, rule.window_limit, window_run_limit(rule.gate))
    for run, window in zip(series.runs, windows, strict=True):
        runs = window.runs()
        policy, calibration = rule.run_policy(series, run, metric_policy, runs)
        judgement = judge_run(
            run.values,
            MetricWindow(
                runs=runs,
                runners=window.runners(),
                known_shift=rule.known_shift(series, run, window.run_commits()),
            ),
            direction=direction,
            floors=floors,
            policy=policy,
            calibration=calibration,
            retried=run.retried,
            runner=run.samples[0].ci_runner_name,
        )
        decision, figure = judgement.decision, judgement.value
        assert decision is not None and figure is not None  # judge_run always applies the rule
        # Lines are drawn only where the window could judge (R4).
        drawn = decision.block_line is not None and (
            Reason.INSUFFICIENT_WINDOW not in decision.reasons
        )
        shift = decision.shift
        judged.append(
            JudgedRun(
                run=run,
                figure=figure,
                verdict=judgement.verdict.label,
                reasons=tuple(r.value for r in judgement.reasons),
                detail="; ".join(judgement.details(judgement.verdict)),
                window_size=decision.window_samples,
                window_runs=decision.window_runs,
                baseline=decision.baseline if drawn else None,
                warn_line=decision.warn_line if drawn else None,
                block_line=decision.block_line if drawn else None,
                change_pct=decision.effect_pct if drawn else None,
                change_text=decision.effect_text() if drawn else "",
                # Window.runs() is nearest first; the runs after the shift are its first ones.
                shift_commit=window.run_commits()[shift.kept_runs - 1] if shift else None,
            )
        )
    return judged


def declared(series: Series) -> Metric:
    """The bucket's declaration of the series' metric; one it no longer declares is judged
    with the gate's defaults, as a metric without settings of its own would be."""
    metric = series.bucket.metric_named(series.metric)
    if metric is not None:
        return metric
    return Metric(
        path=series.metric_path,
        direction=Direction(series.direction),
        unit=series.unit,
        name=series.metric,
    )
