"""Bisect's pure parts: the search over labelled commits, the window, the oracle's labels."""

from __future__ import annotations

import pytest

from perfgate.baselines.bisect import BisectPlan, Step, label, search, window_for
from perfgate.config import Config, GatePolicy
from perfgate.judge.oracle import Bisect
from perfgate.result import FailurePhase
from tests.factories import make_result
from tests.unit.baselines.test_seed_plan import bucket

GOOD, BAD = "g" * 40, "b" * 40
MIDDLE = tuple(f"{i}" * 40 for i in range(1, 7))  # six commits between good and bad


def plan(repeats: int = 3) -> BisectPlan:
    return BisectPlan(bucket=bucket(), good=GOOD, bad=BAD, candidates=(*MIDDLE, BAD),
                      repeats=repeats, good_samples=5, hardware="cpu-test",
                      metric="runtime.total_fps.mean")  # fmt: skip


def step(commit: str, verdict: Bisect, *figures: float) -> Step:
    return Step(commit=commit, label=verdict, figures=figures or (100.0,), verdict="x", detail="")


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


def test_the_window_is_the_good_commits_figures_nearest_first() -> None:
    steps = {GOOD: step(GOOD, Bisect.GOOD, 1.0, 2.0), MIDDLE[0]: step(MIDDLE[0], Bisect.SKIP, 9.0),
             MIDDLE[1]: step(MIDDLE[1], Bisect.GOOD, 3.0, 4.0)}  # fmt: skip
    assert window_for(plan(), steps, max_samples=3) == [3.0, 4.0, 1.0]


@pytest.mark.parametrize(
    ("figures", "phase", "expected"),
    [
        ((100.0, 99.0, 101.0), None, Bisect.GOOD),
        ((80.0, 81.0, 100.0), None, Bisect.BAD),  # the median repeat regressed
        ((100.0, 60.0, 101.0), None, Bisect.GOOD),  # one noisy repeat cannot mislead it
        ((100.0, 100.0, None), FailurePhase.RUNTIME, Bisect.BAD),
        ((100.0, 100.0, None), FailurePhase.IMPORT, Bisect.SKIP),
    ],
)
def test_the_oracle_labels_a_commit_from_its_repeats(
    figures: tuple[float | None, ...], phase: FailurePhase | None, expected: Bisect
) -> None:
    config = Config(path=None, gate=GatePolicy(), buckets=(bucket(),))  # type: ignore[arg-type]
    window = [100.0, 99.5, 100.5, 100.2, 99.8]
    results = [
        make_result("cartpole/numpy", value, commit=MIDDLE[0])
        if value is not None
        else make_result("cartpole/numpy", None, commit=MIDDLE[0], exit_code=1, phase=phase)
        for value in figures
    ]
    judged = label(results, window, bucket(), config)
    assert judged.label is expected
    assert judged.figures == tuple(v for v in figures if v is not None)
