"""Bisect's pure parts: the search over labelled commits, the window, the oracle's labels."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfgate.baselines.bisect import (
    BisectPlan,
    Step,
    label,
    search,
    step_policy,
    step_sampling,
    window_for,
)
from perfgate.config import BaselinePolicy, ConfirmMode, GatePolicy, PolicyName
from perfgate.judge.bucket_policy import policy_for
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.judgement import Bisect
from perfgate.judge.oracle import judge
from perfgate.judge.verdicts import Verdict
from perfgate.result import FailurePhase
from tests.factories import make_result, primary_check
from tests.unit.baselines.test_seed_plan import bucket
from tests.unit.judge.test_calibration import RUNNER_OFFSETS, entry

GOOD, BAD = "g" * 40, "b" * 40
MIDDLE = tuple(f"{i}" * 40 for i in range(1, 7))  # six commits between good and bad


def plan(repeats: int = 3) -> BisectPlan:
    return BisectPlan(bucket=bucket(), good=GOOD, bad=BAD, candidates=(*MIDDLE, BAD),
                      repeats=repeats, max_repeats=10, good_runs=3, hardware="cpu-test",
                      metric="runtime.total_fps.mean")  # fmt: skip


def step(commit: str, verdict: Bisect, *runs: tuple[float, ...]) -> Step:
    return Step(commit=commit, label=verdict, runs=runs or ((100.0,),), verdict="x", detail="")


def test_the_ends_are_measured_first_then_the_middle() -> None:
    p = plan()
    assert search(p, {}).next_commit == GOOD
    assert search(p, {GOOD: step(GOOD, Bisect.GOOD)}).next_commit == BAD
    steps = {GOOD: step(GOOD, Bisect.GOOD), BAD: step(BAD, Bisect.BAD)}
    # order: good, 1..6, bad (indices 0..7): the middle of 0 and 7 is 3 or 4; 3 wins ties.
    assert search(p, steps).next_commit == MIDDLE[2]


def test_a_bad_end_that_is_not_bad_stops_the_search() -> None:
    steps = {GOOD: step(GOOD, Bisect.GOOD), BAD: step(BAD, Bisect.SKIP)}
    outcome = search(plan(), steps)
    assert outcome.next_commit is None and "not a regression" in outcome.why


def test_labels_narrow_to_the_first_bad_commit() -> None:
    p = plan()
    truth = {c: (Bisect.GOOD if i < 4 else Bisect.BAD) for i, c in enumerate((GOOD, *MIDDLE, BAD))}
    steps: dict[str, Step] = {}
    while (outcome := search(p, steps)).next_commit is not None:
        commit = outcome.next_commit
        steps[commit] = step(commit, truth[commit])
    assert outcome.first_bad == MIDDLE[3] and outcome.last_good == MIDDLE[2]
    assert not outcome.skipped and len(steps) <= p.max_steps


def test_skipped_commits_are_stepped_around_and_named_when_they_hide_the_answer() -> None:
    p = plan()
    steps = {GOOD: step(GOOD, Bisect.GOOD), BAD: step(BAD, Bisect.BAD),
             MIDDLE[2]: step(MIDDLE[2], Bisect.SKIP)}  # fmt: skip
    assert search(p, steps).next_commit == MIDDLE[3]  # the nearest untried to the middle
    steps.update({c: step(c, Bisect.SKIP) for c in MIDDLE[3:]})
    steps.update({c: step(c, Bisect.GOOD) for c in MIDDLE[:2]})
    outcome = search(p, steps)
    assert outcome.next_commit is None
    assert outcome.last_good == MIDDLE[1] and outcome.first_bad == BAD
    assert outcome.skipped == MIDDLE[2:]


def test_the_window_is_the_good_commits_runs_nearest_first() -> None:
    steps = {GOOD: step(GOOD, Bisect.GOOD, (1.0, 1.1), (2.0, 2.1)),
             MIDDLE[0]: step(MIDDLE[0], Bisect.SKIP, (9.0,)),
             MIDDLE[1]: step(MIDDLE[1], Bisect.GOOD, (3.0, 3.1))}  # fmt: skip
    assert window_for(plan(), steps) == [(3.0, 3.1), (2.0, 2.1), (1.0, 1.1)]


def test_the_good_end_takes_the_runs_a_window_needs() -> None:
    window = BaselinePolicy(min_samples=5, min_runs=3)
    assert GatePolicy(baseline=window).runs_to_fill(3) == 3  # three runs, as the rule asks
    assert GatePolicy(baseline=window).runs_to_fill(1) == 5  # five samples
    reference = GatePolicy(baseline=window, policy=PolicyName.REFERENCE)
    assert reference.runs_to_fill(3) == 2  # the seed's rule counts samples only


# Five runs of three repeats around 100 (about 0.5 % noise): the good commits' window.
WINDOW = [(100.2, 99.6, 100.4), (99.8, 100.5, 99.9), (100.1, 99.3, 100.0),
          (100.6, 99.9, 99.7), (99.5, 100.3, 100.1)]  # fmt: skip


def test_a_step_samples_like_the_bench_from_its_own_repeats() -> None:
    sampling = step_sampling(bucket(), GatePolicy(), repeats=3)
    assert (sampling.repeats, sampling.max_repeats, sampling.confirm) == (3, 10, ConfirmMode.REPEAT)
    # A step has no merge base to pair with: under confirm: paired it confirms by repeats.
    assert GatePolicy().confirm is ConfirmMode.PAIRED
    fixed = step_sampling(bucket(), GatePolicy(confirm=ConfirmMode.OFF), repeats=3)
    assert (fixed.repeats, fixed.max_repeats) == (3, 3)  # a step never takes fewer
    policy = step_policy(bucket(), GatePolicy(), "cpu-test", sampling)
    assert (policy.initial_repeats, policy.max_repeats) == (3, 10)  # type: ignore[union-attr]


def judged(samples: tuple[float, ...], repeats: int, **health: object) -> Step:
    result = make_result("cartpole/numpy", samples=samples, commit=MIDDLE[0])
    result = replace(result, health=replace(result.health, **health))
    sampling = step_sampling(bucket(), GatePolicy(confirm=ConfirmMode.OFF), repeats)
    return label(
        result, WINDOW, bucket(), step_policy(bucket(), GatePolicy(), "cpu-test", sampling)
    )


@pytest.mark.parametrize(
    ("figures", "phase", "expected"),
    [
        ((100.0, 99.0, 101.0), None, Bisect.GOOD),
        ((80.0, 81.0, 82.0), None, Bisect.BAD),
        ((100.0, 60.0, 101.0), None, Bisect.GOOD),  # one noisy repeat cannot mislead it
        ((100.0, 100.0), FailurePhase.RUNTIME, Bisect.BAD),
        ((100.0, 100.0), FailurePhase.IMPORT, Bisect.SKIP),
    ],
)
def test_the_oracle_labels_a_commit_from_its_run(
    figures: tuple[float, ...], phase: FailurePhase | None, expected: Bisect
) -> None:
    failed = {"exit_code": 1, "phase": phase} if phase is not None else {}
    step = judged(figures, 3, **failed)
    assert step.label is expected, step.detail
    assert step.runs == (figures,) and step.commit == MIDDLE[0]


def test_a_step_of_two_repeats_can_be_bad() -> None:
    """The bench may confirm a run of two samples, so the gate never blocks one; a step
    that takes exactly its repeats can, as the rule is told its sampling."""
    assert judged((80.0, 81.0), 2).label is Bisect.BAD
    result = make_result("cartpole/numpy", samples=(80.0, 81.0), commit=MIDDLE[0])
    policy = policy_for(bucket(), GatePolicy(), "cpu-test")
    gate = judge(result, [primary_check(WINDOW, policy=policy)])
    assert gate.verdict is Verdict.INCONCLUSIVE


def test_a_step_is_judged_with_the_noise_the_gates_calibration_measured() -> None:
    """The gate judges a bucket with gate.calibration's noise for its experiment; a step is
    the same run, so it gets the same noise. On runners about 2 % apart, ten runs leave
    the window's runner noise uncertain and a 7 % drop inconclusive; the pool measured
    that noise, and with it the drop is bad, for the gate and for bisect alike."""
    result = make_result("cartpole/numpy", samples=(93.0, 93.2, 92.8), commit=MIDDLE[0])
    pool = NoiseCalibration(buckets=(entry(noise_pct=0.3, df=20.0, run_noise_pct=1.8),))
    sampling = step_sampling(bucket(), GatePolicy(confirm=ConfirmMode.OFF), 3)
    policy = step_policy(bucket(), GatePolicy(), "cpu-test", sampling)
    plain = label(result, RUNNER_OFFSETS, bucket(), policy)
    measured = label(result, RUNNER_OFFSETS, bucket(), policy, pool)
    assert (plain.label, measured.label) == (Bisect.SKIP, Bisect.BAD), measured.detail
    # Measured for another experiment (its benchmark changed), the entry does not apply.
    other = NoiseCalibration(buckets=(entry(benchmark_hash="e" * 16, run_noise_pct=1.8),))
    assert label(result, RUNNER_OFFSETS, bucket(), policy, other).label is Bisect.SKIP
