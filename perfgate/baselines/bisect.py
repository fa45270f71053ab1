"""Bisect a regression: the first commit between GOOD and BAD where a bucket got slower.

A trusted replay like seed: each commit is checked out in a throwaway worktree and the
bucket runs *that commit's own* benchmark through the normal bench path: one run of
``--repeats`` samples at each step, more while the rule finds it suspicious, as the bench
confirms (the good end takes enough runs to fill a window).
Each step's run is judged by the oracle with the gate's rule (``policy_for``, told the
noise ``gate.calibration`` measured for the run's experiment, as the gate is), every
sample of it, against a window whose runs are those of the commits already labelled GOOD:
GOOD (a clean pass), BAD (a regression, or a crash in init or runtime) or SKIP (anything
else: a warning, an inconclusive run, an excused or other crash). Every step is kept in a
state file, so an interrupted bisection resumes where it stopped; nothing is written to
the baseline branch. The replays themselves run in ``baselines.bisect_replay``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from perfgate.baselines.seed.plan import config_at
from perfgate.config import Bucket, Config, ConfirmMode, GatePolicy
from perfgate.errors import ConfigError, GitError, UsageError
from perfgate.judge.bucket_policy import policy_for
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.judgement import Bisect, MetricCheck, MetricWindow
from perfgate.judge.oracle import judge
from perfgate.judge.policies import CalibratedPolicy, Calibration, Policy
from perfgate.result import Result
from perfgate.run.sampling import SamplingPlan
from perfgate.util import jsonfile
from perfgate.util.git import git

# 2: a step keeps its runs (each run's samples), not one flat list of figures.
BISECT_SCHEMA_VERSION = 2
#: Samples a step takes unless --repeats says otherwise.
BISECT_REPEATS = 3


@dataclass(frozen=True, kw_only=True)
class BisectOptions:
    """The bisect command line, parsed."""

    bucket: str
    good: str
    bad: str
    metric: str | None = None
    repeats: int = BISECT_REPEATS
    execute: bool = False
    work_dir: Path
    state: Path
    out: Path
    # None: each commit's own perfgate.yaml; a path: that file for every commit.
    config: Path | None = None


@dataclass(frozen=True, kw_only=True)
class Step:
    """One measured commit: the samples of each of its runs and what the oracle made of them."""

    commit: str
    label: Bisect
    # The figures each run read, in the order they ran (the good end has several runs).
    runs: tuple[tuple[float, ...], ...]
    verdict: str
    detail: str

    @property
    def figures(self) -> tuple[float, ...]:
        """Every figure of the step."""
        return tuple(value for run in self.runs for value in run)

    @property
    def figure(self) -> float | None:
        """The median of the step's samples (the figure the gate reports for a run)."""
        return statistics.median(self.figures) if self.figures else None

    def to_json(self) -> dict[str, Any]:
        """The step as stored in the state file and bisect.json."""
        return {**asdict(self), "label": self.label.value, "runs": [list(r) for r in self.runs],
                "figures": list(self.figures), "figure": self.figure}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """A step read back from the state file."""
        return cls(
            commit=str(data["commit"]),
            label=Bisect(data["label"]),
            runs=tuple(tuple(float(v) for v in run) for run in data["runs"]),
            verdict=str(data["verdict"]),
            detail=str(data["detail"]),
        )


@dataclass(frozen=True, kw_only=True)
class BisectPlan:
    """What a bisection will replay, and the most it can cost."""

    bucket: Bucket
    good: str
    bad: str
    # Commits after GOOD up to BAD (inclusive), oldest first, on BAD's first-parent line.
    candidates: tuple[str, ...]
    # Samples per run: every step takes one run of them, and up to max_repeats on suspicion.
    repeats: int
    max_repeats: int
    # Runs GOOD is measured for: its runs are the first window, so they must fill one (R4).
    good_runs: int
    hardware: str
    metric: str

    @property
    def max_steps(self) -> int:
        """GOOD, BAD and the halvings between them (more only when commits are skipped)."""
        return 2 + math.ceil(math.log2(max(1, len(self.candidates))))

    @property
    def max_samples(self) -> int:
        """Benchmark processes at most, without skips."""
        return self.good_runs * self.repeats + (self.max_steps - 1) * self.max_repeats

    def runner_minutes(self) -> tuple[float, float]:
        """An upper bound of runner time from the bucket's timeout: (plain, every retry used)."""
        plain = self.max_samples * self.bucket.timeout_minutes
        return plain, plain * (self.bucket.retries + 1)


@dataclass(kw_only=True)
class BisectState:
    """Every step measured so far; saved after each one, so a bisection resumes."""

    key: dict[str, Any]
    steps: dict[str, Step] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        """Write the state (atomically: a kill mid-write leaves the previous one)."""
        jsonfile.write(path, {"key": self.key, "steps": [s.to_json() for s in self.steps.values()]})

    @classmethod
    def load(cls, path: Path, key: dict[str, Any]) -> BisectState:
        """The saved state of this same bisection, or a fresh one (another's is not reused)."""
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(key=key)
        if not isinstance(document, dict) or document.get("key") != key:
            return cls(key=key)
        steps = [Step.from_json(s) for s in document.get("steps", [])]
        return cls(key=key, steps={s.commit: s for s in steps})


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """Where the search stands: the last GOOD and first BAD commit, and what is left."""

    last_good: str
    first_bad: str | None
    # Commits between them that were skipped: the regression may be in any of these.
    skipped: tuple[str, ...] = ()
    next_commit: str | None = None
    why: str = ""


def plan_bisect(repo: Path, options: BisectOptions, current: Config, hardware: str) -> BisectPlan:
    """Resolve GOOD and BAD, list the commits between them, and check the bucket and metric."""
    good, bad = (_commit(repo, ref, name) for ref, name in
                 ((options.good, "--good"), (options.bad, "--bad")))  # fmt: skip
    try:
        git("merge-base", "--is-ancestor", good, bad, cwd=repo)
    except GitError:
        raise UsageError(
            f"--good {options.good} is not an ancestor of --bad {options.bad}: a bisection "
            "needs a good commit before the bad one on the same history"
        ) from None
    if good == bad:
        raise UsageError("--good and --bad name the same commit: nothing to bisect")
    listing = git("rev-list", "--first-parent", "--ancestry-path", "--reverse",
                  f"{good}..{bad}", cwd=repo).split()  # fmt: skip
    at_bad = step_config(repo, bad, options, current)
    bucket = at_bad.find(options.bucket) if at_bad else None
    if bucket is None:
        known = ", ".join(at_bad.bucket_ids()) if at_bad else ""
        raise UsageError(
            f"bucket {options.bucket} is not declared in perfgate.yaml at --bad {bad[:12]}; "
            f"known there: {known or 'none'}"
        )
    if options.metric is not None and options.metric != bucket.metric.path:
        raise UsageError(
            f"--metric {options.metric}: bucket {bucket.id} measures {bucket.metric.path} "
            "(one metric per bucket); omit --metric or name that one"
        )
    if options.repeats < 1:
        raise UsageError(f"--repeats {options.repeats}: must be at least 1")
    return BisectPlan(
        bucket=bucket,
        good=good,
        bad=bad,
        candidates=tuple(listing),
        repeats=options.repeats,
        max_repeats=step_sampling(bucket, current.gate, options.repeats).max_repeats,
        good_runs=current.gate.runs_to_fill(options.repeats),
        hardware=hardware,
        metric=bucket.metric.path,
    )


def _commit(repo: Path, ref: str, flag: str) -> str:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo).strip()
    except GitError:
        raise UsageError(f"{flag} {ref}: no such commit here; fetch it or check the SHA") from None


def step_config(repo: Path, commit: str, options: BisectOptions, current: Config) -> Config | None:
    """The commit's own perfgate.yaml (or --config's), None when it has none or a bad one."""
    if options.config is not None:
        return current
    try:
        return config_at(repo, commit, options.work_dir / "configs")
    except ConfigError:
        return None


def search(plan: BisectPlan, steps: dict[str, Step]) -> Outcome:
    """The next commit to measure, or the conclusion, from the steps so far. Pure."""
    good_step = steps.get(plan.good)
    if good_step is None:
        return Outcome(last_good=plan.good, first_bad=None, next_commit=plan.good)
    if good_step.label is not Bisect.GOOD:
        return Outcome(
            last_good=plan.good,
            first_bad=None,
            why=f"--good {plan.good[:12]} is not a clean pass ({good_step.verdict}: "
            f"{good_step.detail}); pick a good commit that measures cleanly",
        )
    bad_step = steps.get(plan.bad)
    if bad_step is None:
        return Outcome(last_good=plan.good, first_bad=None, next_commit=plan.bad)
    if bad_step.label is not Bisect.BAD:
        return Outcome(
            last_good=plan.good,
            first_bad=None,
            why=f"--bad {plan.bad[:12]} is not a regression against --good "
            f"({bad_step.verdict}: {bad_step.detail}); nothing to bisect",
        )
    order = (plan.good, *plan.candidates)
    low, high = 0, len(order) - 1
    # Narrow by the labels known: the newest GOOD before the oldest BAD after it.
    for index, commit in enumerate(order):
        step = steps.get(commit)
        if step is not None and step.label is Bisect.BAD:
            high = index
            break
        if step is not None and step.label is Bisect.GOOD:
            low = index
    inside = list(range(low + 1, high))
    untried = [i for i in inside if order[i] not in steps]
    if untried:
        middle = (low + high) / 2
        pick = min(untried, key=lambda i: (abs(i - middle), i))
        return Outcome(last_good=order[low], first_bad=order[high], next_commit=order[pick])
    return Outcome(
        last_good=order[low],
        first_bad=order[high],
        skipped=tuple(order[i] for i in inside),
    )


def window_for(plan: BisectPlan, steps: dict[str, Step]) -> list[tuple[float, ...]]:
    """The runs of the GOOD commits, nearest (newest) first, as the gate's window (R4).

    The rule keeps as many of them as it judges with (``max_runs``, or the reference
    policy's ``max_samples``).
    """
    order = (plan.good, *plan.candidates)
    runs: list[tuple[float, ...]] = []
    for commit in reversed(order):
        step = steps.get(commit)
        if step is not None and step.label is Bisect.GOOD:
            runs.extend(reversed(step.runs))
    return runs


def step_sampling(bucket: Bucket, gate: GatePolicy, repeats: int) -> SamplingPlan:
    """A step's samples: ``repeats``, then more on suspicion as the bench takes them (R5).

    The confirmation budget is the bucket's (``max_repeats``, ``repeat_budget_minutes``)
    when perfgate.yaml confirms at all; a step never takes fewer than ``repeats``. A step
    has no merge base to pair with (its window is the commits found GOOD), so under
    ``gate.confirm: paired`` it confirms by repeats, as the bench does without a base.
    """
    confirm = ConfirmMode.OFF if gate.confirm is ConfirmMode.OFF else ConfirmMode.REPEAT
    planned = SamplingPlan.for_bucket(bucket, confirm)
    return replace(planned, repeats=repeats, max_repeats=max(repeats, planned.max_repeats))


def fixed_sampling(repeats: int) -> SamplingPlan:
    """Exactly ``repeats`` samples: the good end's runs, which have no window to confirm on."""
    return SamplingPlan(confirm=ConfirmMode.OFF, repeats=repeats, max_repeats=repeats)


def step_policy(bucket: Bucket, gate: GatePolicy, hardware: str, sampling: SamplingPlan) -> Policy:
    """The gate's rule for ``bucket`` (``policy_for``), told the sampling a step has.

    The calibrated rule spreads its false-alarm budget over the looks the sampling can
    take and asks for more samples while a run is suspicious; ``--repeats`` may differ
    from the bucket's own ``repeats``, so the rule is given the step's.
    """
    policy = policy_for(bucket, gate, hardware)
    if isinstance(policy, CalibratedPolicy):
        return replace(policy, initial_repeats=sampling.repeats, max_repeats=sampling.max_repeats)
    return policy


def step_noise(
    policy: Policy,
    calibration: NoiseCalibration | None,
    result: Result,
    window: Sequence[Sequence[float]],
) -> tuple[Policy, Calibration | None]:
    """``policy`` told the noise ``calibration`` measured for ``result``'s experiment, as the
    gate judges with it (none when it measured another experiment or the window shows it
    wrong)."""
    applied = None if calibration is None else calibration.use_for(result, window, policy).applied
    return (policy, None) if applied is None else applied.applied_to(policy)


def figures(result: Result) -> tuple[float, ...]:
    """The figures a run read, in the order its samples ran (a failed run stops early)."""
    return tuple(sample.value for sample in result.metric.samples)


def label(
    result: Result,
    window: Sequence[Sequence[float]],
    bucket: Bucket,
    policy: Policy,
    calibration: NoiseCalibration | None = None,
) -> Step:
    """The oracle's label for one commit's run: all its samples, judged as one run (with
    the noise ``calibration`` measured for its experiment, as the gate judges)."""
    rule, measured = step_noise(policy, calibration, result, window)
    check = MetricCheck(metric=bucket.metric, window=MetricWindow(runs=window),
                        floors=bucket.floors_for(result.hardware.slug), policy=rule,
                        calibration=measured)  # fmt: skip
    judgement = judge(result, [check])
    return Step(
        commit=result.source.commit or "",
        label=judgement.bisect,
        runs=(figures(result),),
        verdict=judgement.verdict.label,
        detail="; ".join(judgement.details(judgement.verdict)),
    )


def baseline_step(commit: str, results: Sequence[Result]) -> Step:
    """GOOD's own step: its runs are the first window, so it is judged on health alone."""
    runs = tuple(figures(r) for r in results)
    failed = [r for r in results if not r.health.healthy or r.metric.value is None]
    if failed:
        health = failed[0].health
        phase = health.phase.value if health.phase else "no figure"
        return Step(commit=commit, label=Bisect.SKIP, runs=runs, verdict="HARD_FAILURE",
                    detail=f"failed ({phase}, exit {health.exit_code})")  # fmt: skip
    samples = sum(len(run) for run in runs)
    return Step(commit=commit, label=Bisect.GOOD, runs=runs, verdict="BASELINE",
                detail=f"{len(runs)} runs, {samples} samples: the first window")  # fmt: skip


def bisect_json(plan: BisectPlan, state: BisectState, outcome: Outcome) -> dict[str, Any]:
    """The machine-readable result: the first bad commit, figures on both sides, every step."""
    order = {c: i for i, c in enumerate((plan.good, *plan.candidates))}
    good = state.steps.get(outcome.last_good)
    bad = state.steps.get(outcome.first_bad) if outcome.first_bad else None
    found = bad is not None and not outcome.skipped and not outcome.why
    change = None
    if found and good and bad and good.figure and bad.figure:
        change = (bad.figure - good.figure) / good.figure * 100.0
    return {
        "schema_version": BISECT_SCHEMA_VERSION,
        "bucket": plan.bucket.id,
        "metric": plan.metric,
        "hardware": plan.hardware,
        "good": plan.good,
        "bad": plan.bad,
        "repeats": plan.repeats,
        "good_runs": plan.good_runs,
        "candidates": len(plan.candidates),
        "status": "found" if found else ("skipped" if outcome.skipped else "inconclusive"),
        "why": outcome.why or None,
        "first_bad": outcome.first_bad if found else None,
        "last_good": outcome.last_good,
        "possibly_first_bad": [*outcome.skipped, outcome.first_bad] if outcome.skipped else [],
        "change_pct": change,
        "last_good_step": good.to_json() if good else None,
        "first_bad_step": bad.to_json() if bad else None,
        "steps": [s.to_json() for s in sorted(state.steps.values(),
                                              key=lambda s: order.get(s.commit, -1))],
    }  # fmt: skip
