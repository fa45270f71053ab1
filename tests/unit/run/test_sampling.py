"""The sampling loop alone: repeats, confirmation while asked, max_repeats, budget, failure."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from perfgate.config import AlertsSpec, ConfirmMode, GatePolicy, load_config
from perfgate.context import RunContext, detect
from perfgate.errors import UsageError
from perfgate.result import SamplingStop
from perfgate.run.sampling import (
    Sampler,
    SamplingPlan,
    as_run_measures,
    with_sample_count,
)
from tests.paths import ROOT

T = TypeVar("T")

REPEAT = SamplingPlan(confirm=ConfirmMode.REPEAT, repeats=2, max_repeats=5, budget_s=60.0)


def take_samples(
    plan: SamplingPlan,
    measure: Callable[[int], T],
    *,
    healthy: Callable[[T], bool],
    wants_more: Callable[[Sequence[T]], bool] | None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[T], SamplingStop]:
    """Measure samples 0, 1, ... until the plan says stop; the samples and why they stopped."""
    sampler = Sampler(measure, healthy=healthy, clock=clock)
    stop = sampler.run(plan, wants_more)
    return sampler.taken, stop


def measure(index: int) -> float:
    return 100.0 + index


def test_the_repeats_are_taken_before_anything_is_asked() -> None:
    asked: list[int] = []

    def wants_more(taken: Sequence[float]) -> bool:
        asked.append(len(taken))
        return False

    taken, stop = take_samples(REPEAT, measure, healthy=lambda v: True, wants_more=wants_more)
    assert (taken, stop, asked) == ([100.0, 101.0], SamplingStop.SETTLED, [2])


def test_no_question_or_confirmation_off_takes_the_repeats_only() -> None:
    taken, stop = take_samples(REPEAT, measure, healthy=lambda v: True, wants_more=None)
    assert (len(taken), stop) == (2, SamplingStop.PLANNED)
    off = SamplingPlan(confirm=ConfirmMode.OFF, repeats=3, max_repeats=3)
    taken, stop = take_samples(off, measure, healthy=lambda v: True, wants_more=lambda t: True)
    assert (len(taken), stop) == (3, SamplingStop.PLANNED)


def test_more_while_asked_up_to_max_repeats() -> None:
    taken, stop = take_samples(REPEAT, measure, healthy=lambda v: True, wants_more=lambda t: True)
    assert (taken, stop) == ([100.0, 101.0, 102.0, 103.0, 104.0], SamplingStop.MAX_REPEATS)


def test_no_sample_starts_once_the_budget_is_spent() -> None:
    ticks = iter([0.0, 30.0, 61.0, 99.0])  # start, then after samples 2 and 3
    taken, stop = take_samples(
        REPEAT, measure, healthy=lambda v: True, wants_more=lambda t: True,
        clock=lambda: next(ticks),
    )  # fmt: skip
    assert (len(taken), stop) == (3, SamplingStop.TIME_BUDGET)


def test_an_unhealthy_sample_ends_the_run_at_once() -> None:
    taken, stop = take_samples(
        REPEAT, measure, healthy=lambda v: v < 101.0, wants_more=lambda t: True
    )
    assert (taken, stop) == ([100.0, 101.0], SamplingStop.FAILED)


def test_a_bucket_declares_its_plan() -> None:
    bucket = load_config(ROOT / "perfgate.yaml").buckets[0]
    plan = SamplingPlan.for_bucket(bucket, ConfirmMode.REPEAT)
    assert (plan.repeats, plan.max_repeats, plan.budget_s) == (3, 10, 60.0)
    assert SamplingPlan.for_bucket(bucket, ConfirmMode.OFF).max_repeats == 3


def test_a_set_aside_sample_is_measured_again_while_the_budget_lasts() -> None:
    """Admission control sets samples 1 and 2 aside; one re-measure is granted."""
    budget = [1]

    def remeasure(value: float) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        return True

    sampler = Sampler(
        measure, healthy=lambda v: True, set_aside=lambda v: v in (101.0, 102.0),
        remeasure=remeasure,
    )  # fmt: skip
    off = SamplingPlan(confirm=ConfirmMode.OFF, repeats=2, max_repeats=2)
    assert sampler.run(off, None) is SamplingStop.PLANNED
    # 101 was replaced by 102; 102 was set aside too but the budget was spent, so it counts.
    assert (sampler.taken, sampler.replaced, sampler.counted) == ([100.0, 101.0, 102.0], [1], 2)


def test_sampling_resumes_with_another_plan() -> None:
    """Paired confirmation's fallback: the repeats first, then confirmation by repeats."""
    sampler = Sampler(measure, healthy=lambda v: True)
    off = SamplingPlan(confirm=ConfirmMode.OFF, repeats=2, max_repeats=5)
    assert sampler.run(off, lambda t: True) is SamplingStop.PLANNED
    assert sampler.run(REPEAT, lambda t: len(t) < 4) is SamplingStop.SETTLED
    assert sampler.taken == [100.0, 101.0, 102.0, 103.0]


def test_repeats_set_the_samples_a_run_takes_and_leave_room_to_confirm() -> None:
    declared = load_config(ROOT / "perfgate.yaml").buckets
    (many,) = with_sample_count(declared[:1], repeats=declared[0].max_repeats + 5)
    assert many.repeats == many.max_repeats == declared[0].max_repeats + 5
    (one,) = with_sample_count(declared[:1], repeats=1)
    assert (one.repeats, one.max_repeats) == (1, declared[0].max_repeats)
    assert with_sample_count(declared) == declared


def test_samples_are_exactly_that_many_with_none_to_confirm() -> None:
    declared = load_config(ROOT / "perfgate.yaml").buckets
    assert {(b.repeats, b.max_repeats) for b in with_sample_count(declared, samples=3)} == {(3, 3)}


@pytest.mark.parametrize(("flag", "count"), [("repeats", 0), ("samples", 101)])
def test_a_count_outside_1_to_100_names_its_flag(flag: str, count: int) -> None:
    declared = load_config(ROOT / "perfgate.yaml").buckets
    with pytest.raises(UsageError, match=f"--{flag} {count}: take between 1 and 100 samples"):
        with_sample_count(declared, **{flag: count})


QUEUE = f"gh-readonly-queue/main/pr-12-{'2' * 40}"  # a merge queue's branch for main


def on_github(tmp_path: Path, event: str, ref: str, payload: dict[str, Any]) -> RunContext:
    """The run context GitHub's environment gives ``event`` on ``ref``."""
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event, "GITHUB_REF": ref,
           "GITHUB_EVENT_PATH": str(event_path), "GITHUB_SHA": "1" * 40}  # fmt: skip
    return detect(env)


def test_a_push_to_a_protected_branch_takes_the_push_repeats(tmp_path: Path) -> None:
    config = load_config(ROOT / "perfgate.yaml")
    declared = tuple(replace(b, repeats=2, max_repeats=3) for b in config.buckets)
    push = on_github(tmp_path, "push", "refs/heads/main", {"ref": "refs/heads/main"})
    alerts = AlertsSpec(push_repeats=5)
    pushed = as_run_measures(declared, push, config.gate, alerts)
    assert {(b.repeats, b.max_repeats) for b in pushed} == {(5, 5)}
    # The plan the bench measures by: five samples, whatever confirmation may add.
    for confirm in ConfirmMode:
        assert SamplingPlan.for_bucket(pushed[0], confirm).repeats == 5
    assert SamplingPlan.for_bucket(pushed[0], ConfirmMode.OFF).max_repeats == 5
    # Room to confirm stays: a bucket allowed ten samples may still take them.
    roomy = (replace(declared[0], max_repeats=10),)
    assert [(b.repeats, b.max_repeats) for b in as_run_measures(roomy, push, config.gate,
                                                                alerts)] == [(5, 10)]  # fmt: skip
    # A bucket whose own repeats are more keeps them: push_repeats is a floor.
    many = (replace(declared[0], repeats=7, max_repeats=7),)
    assert as_run_measures(many, push, config.gate, alerts) == many


def test_by_default_a_protected_push_takes_six_samples_and_one_leaves_the_repeats(
    tmp_path: Path,
) -> None:
    """The key unset, a push takes 6 samples of each bucket; ``push_repeats: 1`` measures
    a push like any other run."""
    config = load_config(ROOT / "perfgate.yaml")
    assert config.alerts == AlertsSpec()
    assert all(b.repeats < 6 for b in config.buckets)  # else 6 would change nothing
    push = on_github(tmp_path, "push", "refs/heads/main", {"ref": "refs/heads/main"})
    pushed = as_run_measures(config.buckets, push, config.gate, config.alerts)
    assert {b.repeats for b in pushed} == {6}
    own = AlertsSpec(push_repeats=1)
    assert as_run_measures(config.buckets, push, config.gate, own) == config.buckets


def test_every_protected_branch_pattern_counts(tmp_path: Path) -> None:
    declared = load_config(ROOT / "perfgate.yaml").buckets[:1]
    gate = GatePolicy(protected_branches=("main", "release/*"))
    push = on_github(tmp_path, "push", "refs/heads/release/1.2", {})
    (bucket,) = as_run_measures(declared, push, gate, AlertsSpec(push_repeats=6))
    assert bucket.repeats == 6


@pytest.mark.parametrize(
    ("event", "ref", "payload"),
    [
        pytest.param("pull_request", "refs/pull/12/merge",
                     {"pull_request": {"number": 12, "base": {"ref": "main"},
                                       "head": {"ref": "fix", "sha": "2" * 40}}},
                     id="pull_request"),
        pytest.param("pull_request_target", "refs/heads/main",
                     {"pull_request": {"number": 12, "base": {"ref": "main"},
                                       "head": {"ref": "fix", "sha": "2" * 40}}},
                     id="pull_request_target"),
        pytest.param("merge_group", f"refs/heads/{QUEUE}",
                     {"merge_group": {"head_sha": "2" * 40, "base_ref": "refs/heads/main",
                                      "head_ref": f"refs/heads/{QUEUE}"}},
                     id="merge_group"),
        pytest.param("push", "refs/heads/feature", {}, id="push_to_an_unprotected_branch"),
        pytest.param("push", "refs/tags/v1.0", {}, id="tag_push"),
        pytest.param("workflow_dispatch", "refs/heads/main", {}, id="workflow_dispatch"),
        pytest.param("schedule", "refs/heads/main", {}, id="schedule"),
    ],
)  # fmt: skip
def test_any_other_run_takes_the_buckets_own_repeats(
    tmp_path: Path, event: str, ref: str, payload: dict[str, Any]
) -> None:
    config = load_config(ROOT / "perfgate.yaml")
    run = on_github(tmp_path, event, ref, payload)
    alerts = AlertsSpec(push_repeats=8)
    assert as_run_measures(config.buckets, run, config.gate, alerts) == config.buckets


def test_a_local_run_on_the_protected_branch_takes_the_buckets_own_repeats() -> None:
    config = load_config(ROOT / "perfgate.yaml")
    local = RunContext(commit="1" * 40, branch="main", target_branch="main", event="local")
    alerts = AlertsSpec(push_repeats=8)
    assert as_run_measures(config.buckets, local, config.gate, alerts) == config.buckets
