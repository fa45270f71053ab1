"""baselines/recurrence.py: a pool whose runs never name the same machine twice is said so."""

from __future__ import annotations

from perfgate.baselines.recurrence import MIN_NAMED_RUNS, never_recurs
from perfgate.baselines.samples import samples_from_result
from perfgate.result import CiInfo
from tests.factories import make_result


def test_ephemeral_runner_names_never_recur() -> None:
    unique = [f"arc-runner-{n:05d}" for n in range(MIN_NAMED_RUNS)]
    assert never_recurs(unique)
    assert not never_recurs([*unique, unique[3]])


def test_too_few_named_runs_say_nothing_yet() -> None:
    unique = [f"runner-{n}" for n in range(MIN_NAMED_RUNS - 1)]
    assert not never_recurs(unique)
    assert not never_recurs([*unique, None, None])


def test_the_machine_names_a_run_before_its_runner() -> None:
    assert CiInfo(runner_name="arc-x7k2p", machine="gpu-0123456789ab").runner_identity == (
        "gpu-0123456789ab"
    )
    assert CiInfo(runner_name="l40s-03").runner_identity == "l40s-03"
    assert CiInfo().runner_identity is None


def test_a_stored_sample_names_the_machine_the_runner_model_knows() -> None:
    result = make_result(ci=CiInfo(run_id="7", runner_name="arc-x7k2p", machine="gpu-0123456789ab"))
    stored = samples_from_result(result, trusted_source="protected_branch")
    assert {sample.ci_runner_name for sample in stored} == {"gpu-0123456789ab"}
