"""Results + expected buckets + baseline windows -> one GateReport (R5, R6, R8).

Every surface (summary.md, verdict.json, JUnit, statuses, the PR comment) renders
this one object, so no two surfaces can disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.artifacts import UnreadableArtifact
from perfgate.config import PRIMARY, Bucket, Config, ConfirmMode, Mode, PolicyName
from perfgate.errors import ExitCode
from perfgate.judge.bucket_policy import metric_checks, policy_for
from perfgate.judge.calibration import NoiseCalibration, NoiseUse
from perfgate.judge.judgement import Bisect, Judgement, MetricKey, MetricWindow, Signal
from perfgate.judge.oracle import judge
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import Result, Spend


@dataclass(frozen=True, kw_only=True)
class Row:
    """One expected bucket: its verdict and, when it reported, the result and judgement."""

    bucket: Bucket
    verdict: Verdict
    result: Result | None
    judgement: Judgement | None

    @property
    def reported(self) -> bool:
        """True when an artifact arrived for this bucket (a judged one, or an unreadable one)."""
        return self.result is not None or self.judgement is not None

    @property
    def excused(self) -> bool:
        """A crash with evidence of a stale CI image (R7): still reported, never a pass."""
        return self.judgement is not None and Reason.STALE_IMAGE in self.judgement.reasons

    @property
    def reasons(self) -> tuple[str, ...]:
        """Reason codes for this row."""
        if self.judgement is None:
            return (Reason.NOT_REPORTED.value,)
        return tuple(r.value for r in self.judgement.reasons)

    @property
    def details(self) -> tuple[str, ...]:
        """Human-readable reasons."""
        if self.judgement is None:
            return ("no result artifact arrived for this bucket",)
        return tuple(s.detail for s in self.judgement.signals)

    @property
    def headline(self) -> str:
        """Why the row has its verdict, in one reason: the first signal that set it."""
        signals = self.judgement.signals if self.judgement else ()
        setting = [s.detail for s in signals if s.verdict is self.verdict]
        return (setting or list(self.details) or [self.verdict.label])[0]


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """Which expected buckets reported (R6)."""

    expected: tuple[str, ...]
    reported: tuple[str, ...]
    missing: tuple[str, ...]
    duplicates: tuple[str, ...]
    unexpected: tuple[str, ...]
    # Buckets of the matrix this run did not set out to measure (a change that touches none
    # of their paths, or a run narrowed by --bucket/--tag): named, never counted as passing.
    not_selected: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class GateReport:
    """The whole verdict of one gate run."""

    # The rollout stage (advisory: not yet a required check); the exit code ignores it.
    mode: Mode
    rows: tuple[Row, ...]
    coverage: Coverage
    overall: Verdict
    headlines: tuple[str, ...]
    description: str
    exit_code: int
    # gate.always_pass: the exit code is 0 whatever the verdict (R8's explicit opt-in).
    always_pass: bool
    # The rule every bucket was judged with (gate.policy) and the settings a reader needs
    # to read its verdicts: the window's samples and runs, the false-alarm rate, the minimum
    # drop; all are the config's (``evaluate``).
    min_samples: int
    max_samples: int
    policy: PolicyName
    false_block_rate: float
    min_drop_pct: float
    max_runs: int
    # How a suspicious run is confirmed before it may block (gate.confirm).
    confirm: ConfirmMode
    baseline_tip: str | None = None
    # Which baseline branch was read: "origin/perf-baselines" or "perf-baselines (local)".
    baseline_source: str | None = None
    # This CI run's page, where each bucket's attempt logs are artifacts.
    run_url: str | None = None
    base_commit: str | None = None
    commit: str | None = None
    target_branch: str | None = None
    hardware: tuple[str, ...] = ()
    # One line per machine fingerprint seen: GPU, driver, clocks, throttling (run context).
    machines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # The published trend site (perfgate.yaml report.url): summaries link each bucket there.
    trend_url: str | None = None

    @property
    def status_state(self) -> str:
        """GitHub commit status state: success for PASS- and WARN-level, failure otherwise."""
        return "success" if self.overall.level in (Verdict.PASS, Verdict.WARN) else "failure"

    @property
    def underfilled(self) -> tuple[str, ...]:
        """Buckets that measured a figure but whose window is under the minimum (reseed plan)."""
        return tuple(
            row.bucket.id
            for row in self.rows
            if row.judgement is not None
            and row.judgement.reasons
            and {Reason.NO_BASELINE, Reason.INSUFFICIENT_WINDOW} & set(row.judgement.reasons)
        )

    @property
    def spend(self) -> Spend:
        """What every bucket run that reported cost its runner, summed (R17)."""
        total = Spend()
        for row in self.rows:
            if row.result is not None and row.result.spend is not None:
                total = total + row.result.spend
        return total

    @property
    def spend_unrecorded(self) -> tuple[str, ...]:
        """Buckets that reported a result without a record of what it cost (older perfgate)."""
        return tuple(
            row.bucket.id
            for row in self.rows
            if row.result is not None and row.result.spend is None
        )

    @property
    def confirmation_minutes(self) -> float:
        """Runner minutes every bucket spent confirming its verdict (repeats, paired A/B)."""
        return sum(
            row.judgement.confirmation.minutes
            for row in self.rows
            if row.judgement is not None and row.judgement.confirmation is not None
        )


def latest_per_bucket(results: Sequence[Result]) -> dict[str, Result]:
    """One result per bucket: of several artifacts, the latest attempt's counts."""

    def order(result: Result) -> tuple[int, str]:
        attempt = result.ci.run_attempt or "0"
        # isdigit() alone accepts '²' and other digits int() refuses.
        number = int(attempt) if attempt.isascii() and attempt.isdigit() else 0
        return (number, result.timings.finished_at)

    latest: dict[str, Result] = {}
    for result in results:
        known = latest.get(result.bucket.id)
        if known is None or order(result) > order(known):
            latest[result.bucket.id] = result
    return latest


def _blocking_signal(row: Row) -> str:
    """What made a BLOCK row block: each crossed floor and each blocked metric's change.

    A metric other than the primary is named before its change (``startup_s +18.0 %``).
    """
    reasons = []
    for metric in row.judgement.metrics if row.judgement else ():
        if not metric.gates or metric.verdict is not Verdict.BLOCK:
            continue
        named = [] if metric.name == PRIMARY else [metric.name]
        for signal in metric.signals:
            if signal.verdict is not Verdict.BLOCK:
                continue
            if signal.reason is Reason.FLOOR_CROSSED:
                reasons.append(" ".join([*named, signal.detail]))
            elif metric.paired is not None:
                reasons.append(" ".join([*named, metric.paired.effect_text()]))
            elif metric.decision is not None:
                reasons.append(" ".join([*named, metric.decision.effect_text()]))
    return " ".join([row.bucket.id, *reasons])


def _description(rows: Sequence[Row], coverage: Coverage) -> str:
    """Names every blocking-level signal: all counts first (they survive truncation), then names."""
    failed = [r.bucket.id for r in rows if r.reported and r.verdict is Verdict.HARD_FAILURE
              and not r.excused]  # fmt: skip
    stale = [r.bucket.id for r in rows if r.excused]
    blocked = [_blocking_signal(r) for r in rows if r.verdict is Verdict.BLOCK]
    categories = [
        ("failed to run", "failed", failed),
        ("did not report", "missing", list(coverage.missing)),
        ("stale CI image", "stale image", stale),
        ("regression(s)", "regressed", blocked),
    ]
    present = [(label, short, names) for label, short, names in categories if names]
    if present:
        head = ", ".join(f"{len(names)} {label}" for label, _, names in present)
        tail = "; ".join(f"{short}: {', '.join(names)}" for _, short, names in present)
        return f"{head} — {tail}"
    warned = [r for r in rows if r.verdict.level is Verdict.WARN]
    unjudged = [r for r in warned if awaits_baseline(r)]
    improved = sum(1 for r in rows if r.verdict is Verdict.IMPROVED)
    gains = f"; {improved} improved" if improved else ""
    if warned and len(unjudged) == len(warned):
        return f"{_baseline_state(unjudged)} for {len(unjudged)} of {len(rows)}; not judged{gains}"
    if warned:
        also = f"; {len(unjudged)} without a full baseline yet" if unjudged else ""
        by_verdict = Counter(r.verdict.label for r in warned if not awaits_baseline(r))
        what = ", ".join(f"{count} {label}" for label, count in sorted(by_verdict.items()))
        return (
            f"no confirmed regression; {len(warned)} of {len(rows)} buckets need attention "
            f"({what}{also}){gains}"
        )
    if improved:
        return f"all {len(rows)} buckets pass; {improved} improved"
    return f"all {len(rows)} buckets within noise"


def _baseline_state(rows: Sequence[Row]) -> str:
    """'no baseline yet' when none of ``rows`` has a window; else 'too few baseline runs yet'."""
    empty = all(Reason.NO_BASELINE in r.judgement.reasons for r in rows if r.judgement is not None)
    return "no baseline yet" if empty else "too few baseline runs yet"


def awaits_baseline(row: Row) -> bool:
    """A row that could not be judged only because its window is empty or too small."""
    waiting = {Reason.NO_BASELINE, Reason.INSUFFICIENT_WINDOW}
    judgement = row.judgement
    return (
        judgement is not None
        and all(s.reason in waiting for s in judgement.signals if s.verdict.level is Verdict.WARN)
        and any(s.reason in waiting for s in judgement.signals)
    )


def _headlines(rows: Sequence[Row], coverage: Coverage) -> tuple[str, ...]:
    """The worst condition first, then every other blocking-level one (never a lone all-clear)."""
    lines = []
    if any(r.reported and r.verdict is Verdict.HARD_FAILURE and not r.excused for r in rows):
        lines.append("❌ One or more benchmarks failed before producing usable performance data")
    if coverage.missing:
        lines.append(
            f"❌ Only {len(coverage.reported)} of {len(coverage.expected)} benchmark buckets "
            "reported — coverage is incomplete"
        )
    if any(r.excused for r in rows):
        lines.append(
            "⚠️ The CI image is stale for this change, so some buckets could not be measured"
        )
    if any(r.verdict is Verdict.BLOCK for r in rows):
        lines.append("🚫 One or more blocking-level performance regressions were detected")
    warned = [r for r in rows if r.verdict.level is Verdict.WARN]
    if not lines and warned and all(awaits_baseline(r) for r in warned):
        state = _baseline_state(warned)
        lines.append(f"⚠️ {state[0].upper()}{state[1:]} for some buckets: they are measured, "
                     "not judged")  # fmt: skip
    elif not lines and any(r.verdict is Verdict.INCONCLUSIVE for r in warned):
        lines.append(
            "🔍 No confirmed regression, but for some buckets the evidence cannot separate "
            "a change from noise"
        )
    elif not lines and warned:
        lines.append("⚠️ No confirmed regression, but one or more results need attention")
    if not lines:
        lines.append("✅ No meaningful performance regressions detected")
    if any(r.verdict is Verdict.IMPROVED for r in rows):
        lines.append(
            "🚀 Some buckets improved beyond noise; baselines follow once pushes record it"
        )
    return tuple(lines)


def exit_code_for(overall: Verdict, *, always_pass: bool) -> int:
    """R8: BLOCK exits 1 and HARD_FAILURE 2 in every mode, unless ``gate.always_pass``."""
    if always_pass:
        return ExitCode.OK
    if overall is Verdict.HARD_FAILURE:
        return ExitCode.HARD_FAILURE
    if overall is Verdict.BLOCK:
        return ExitCode.BLOCK
    return ExitCode.OK


def _unreadable_judgement(artifact: UnreadableArtifact) -> Judgement:
    """A bad artifact costs its bucket, never the gate: HARD_FAILURE naming the file."""
    signal = Signal(
        reason=Reason.UNREADABLE_ARTIFACT, verdict=Verdict.HARD_FAILURE, detail=artifact.problem
    )
    return Judgement(
        verdict=Verdict.HARD_FAILURE,
        signals=(signal,),
        value=None,
        decision=None,
        bisect=Bisect.SKIP,
    )


@dataclass(frozen=True, kw_only=True)
class ReportContext:
    """What the report says of where its baselines came from, and what else it notes."""

    baseline_tip: str | None = None
    baseline_source: str | None = None
    base_commit: str | None = None
    notes: Sequence[str] = ()


def build_report(
    *,
    config: Config,
    expected: Sequence[Bucket],
    results: Sequence[Result],
    windows: Mapping[MetricKey, MetricWindow],
    unreadable: Sequence[UnreadableArtifact] = (),
    calibration: NoiseCalibration | None = None,
    context: ReportContext = ReportContext(),
) -> GateReport:
    """Judge every expected bucket; pure, so every rule is testable without I/O.

    ``windows`` holds each bucket's baseline of each metric (absent: none yet). A bucket
    that ``calibration`` measured on this hardware and experiment is judged with that
    measured noise (an A/A noise model of its primary metric): the calibrated rule reads
    it as its A/A calibration, the reference rule takes its noise floor from it instead
    of from a constant.
    """
    by_bucket = latest_per_bucket(results)
    policy = config.gate
    rows = []
    placed: set[Path] = set()
    noise: dict[str, NoiseUse] = {}
    for bucket in expected:
        result = by_bucket.get(bucket.id)
        if result is None:
            bad = next((u for u in unreadable if u.belongs_to(bucket)), None)
            judgement = None if bad is None else _unreadable_judgement(bad)
            placed.update(() if bad is None else (bad.path,))
            verdict = Verdict.HARD_FAILURE if judgement is None else judgement.verdict
            rows.append(Row(bucket=bucket, verdict=verdict, result=None, judgement=judgement))
            continue
        # A selection's metrics are the benchmarks this run measured; the rate is split
        # over every metric that gates, so the bucket's false-alarm rate holds (R5).
        bucket = bucket.selecting(result.metrics)
        rule = policy_for(bucket, policy, result.hardware.slug)
        window = windows.get(MetricKey(bucket.id), MetricWindow())
        use = NoiseUse() if calibration is None else calibration.use_for(result, window.runs, rule)
        noise[bucket.id] = use
        checks = metric_checks(bucket, result, windows, policy, use.applied)
        judgement = judge(result, checks, confirm=policy.confirm,
                          confirm_drop_pct=policy.confirm_drop_pct)  # fmt: skip
        rows.append(
            Row(bucket=bucket, verdict=judgement.verdict, result=result, judgement=judgement)
        )
    coverage = _coverage(config, expected, results, rows)
    notes = [
        *context.notes,
        *(f"unreadable result artifact skipped: {u.problem}"
          for u in unreadable if u.path not in placed),
        *_report_notes(config, coverage, calibration, noise),
    ]  # fmt: skip
    overall = max((row.verdict for row in rows), key=lambda v: v.severity)
    reported = [r.result for r in rows if r.result is not None]
    return GateReport(
        mode=policy.mode,
        rows=tuple(rows),
        coverage=coverage,
        overall=overall,
        headlines=_headlines(rows, coverage),
        description=_description(rows, coverage),
        exit_code=exit_code_for(overall, always_pass=policy.always_pass),
        always_pass=policy.always_pass,
        min_samples=policy.baseline.min_samples,
        max_samples=policy.baseline.max_samples,
        policy=policy.policy,
        false_block_rate=policy.false_block_rate,
        min_drop_pct=policy.oracle.min_drop_pct,
        max_runs=policy.baseline.max_runs,
        confirm=policy.confirm,
        baseline_tip=context.baseline_tip,
        baseline_source=context.baseline_source,
        base_commit=context.base_commit,
        commit=reported[0].source.commit if reported else None,
        target_branch=reported[0].source.target_branch if reported else None,
        hardware=tuple(sorted({r.hardware.slug for r in reported})),
        machines=tuple(sorted({r.hardware.describe() for r in reported})),
        notes=tuple(notes),
        trend_url=config.report.url,
    )


def _coverage(
    config: Config, expected: Sequence[Bucket], results: Sequence[Result], rows: Sequence[Row]
) -> Coverage:
    """Which expected buckets reported, and which artifacts were doubled or unexpected."""
    expected_ids = tuple(b.id for b in expected)
    counts = Counter(result.bucket.id for result in results)
    arrived = {row.bucket.id for row in rows if row.reported}
    return Coverage(
        expected=expected_ids,
        reported=tuple(b for b in expected_ids if b in arrived),
        missing=tuple(b for b in expected_ids if b not in arrived),
        duplicates=tuple(b for b, n in counts.items() if n > 1 and b in expected_ids),
        unexpected=tuple(sorted(b for b in counts if b not in expected_ids)),
        not_selected=tuple(b for b in config.bucket_ids() if b not in expected_ids),
    )


def _report_notes(
    config: Config,
    coverage: Coverage,
    calibration: NoiseCalibration | None,
    noise: Mapping[str, NoiseUse],
) -> list[str]:
    """What a reader should know besides the verdicts: artifacts set aside, calibration used."""
    notes = []
    if coverage.unexpected:
        notes.append(
            f"ignored artifacts for buckets not expected by {config.path} (reported, not "
            "judged): " + ", ".join(coverage.unexpected)
        )
    notes += calibration.notes(noise) if calibration is not None else []
    if coverage.duplicates:
        notes.append(
            f"several artifacts for {', '.join(coverage.duplicates)}; the latest attempt counts"
        )
    return notes
