"""compare's protections: interleaved pairs, and sets the machine moved between (pure)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from perfgate.config import Direction
from perfgate.judge.compare import (
    Change,
    SetState,
    compare_pairs,
    machine_moved,
    time_apart,
)
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Verdict
from perfgate.result import AdmissionStatus, Hardware, MachineState, SampleAdmission, Timings
from tests.factories import make_result

POLICY = CalibratedPolicy()


def state(**changes: object) -> SetState:
    base = SetState(
        started="2026-12-01T10:00:00+00:00",
        finished="2026-12-01T10:05:00+00:00",
        machines=frozenset({"cpu-test (test cpu)"}),
        governors=frozenset({"performance"}),
        load_per_cpu=0.2,
        unfit=0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_set_state_is_read_from_admission_records_timings_and_hardware() -> None:
    records = tuple(
        SampleAdmission(
            sample_index=i,
            status=AdmissionStatus.CONTAMINATED if i == 2 else AdmissionStatus.ADMITTED,
            before=MachineState(load_1m=load, cpus=4, governors=("performance",)),
        )
        for i, load in enumerate((0.8, 1.2, 4.0))
    )
    timings = Timings(
        started_at="2026-12-01T10:00:00+00:00", finished_at="2026-12-01T10:02:00+00:00", wall_s=1
    )
    found = SetState.of([make_result(admission=records, timings=timings)])
    assert found.load_per_cpu == pytest.approx(0.3)  # the median: 1.2 on 4 CPUs
    assert (found.unfit, found.governors) == (1, frozenset({"performance"}))
    assert (found.started, found.finished) == (timings.started_at, timings.finished_at)


def test_sets_that_overlap_in_time_are_not_apart() -> None:
    assert time_apart(state(), state(started="2026-12-01T10:04:00+00:00")) is None
    later = state(started="2026-12-01T11:00:00+00:00", finished="2026-12-01T11:05:00+00:00")
    assert "were measured at different times" in (time_apart(state(), later) or "")


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"load_per_cpu": 0.8}, "CPU load 0.20 vs 0.80 per CPU"),
        ({"governors": frozenset({"powersave"})}, "CPU governor performance vs powersave"),
        ({"machines": frozenset({"cpu-other (other cpu)"})}, "different machines"),
        ({"unfit": 2}, "admission control found 0 (A) and 2 (B) sample(s) taken on an unfit"),
    ],
)
def test_what_shows_the_machine_moved(changes: dict[str, object], said: str) -> None:
    (moved,) = machine_moved(state(), state(**changes))
    assert moved.startswith(said)


def test_a_steady_machine_did_not_move() -> None:
    assert machine_moved(state(), state(load_per_cpu=0.6)) == []  # under half a CPU
    assert machine_moved(state(), state(load_per_cpu=None, governors=frozenset())) == []


def test_interleaved_pairs_call_a_real_drop_worse_and_steady_pairs_the_same() -> None:
    drop = [(100.0 + d, 70.0 + d) for d in (0.0, 0.2, -0.1, 0.3, -0.2, 0.1)]
    found = compare_pairs(drop, direction=Direction.HIGHER, policy=POLICY)
    assert found.change is Change.WORSE and found.change_pct == pytest.approx(-30.0, abs=0.2)
    # The machine halves its speed half way: each pair still sees the same machine twice.
    steady = [
        (100.0, 100.2),
        (99.9, 99.8),
        (100.1, 100.0),
        (55.0, 55.1),
        (54.9, 55.0),
        (55.1, 55.0),
    ]
    same = compare_pairs(steady, direction=Direction.HIGHER, policy=POLICY)
    assert same.change is Change.SAME and abs(same.change_pct) < 0.5
    few = compare_pairs(drop[:3], direction=Direction.HIGHER, policy=POLICY)
    assert few.change is Change.UNCLEAR and "at least 5" in few.detail


def test_a_machine_that_moved_is_described_on_another_hardware_too() -> None:
    gpu = Hardware(slug="gpu-l40s", gpu_name="L40S", gpu_count=1, driver_version="550")
    other = replace(gpu, driver_version="560")
    a = SetState.of([replace(make_result(), hardware=gpu)])
    b = SetState.of([replace(make_result(), hardware=other)])
    (moved,) = machine_moved(a, b)
    assert "driver 550" in moved and "driver 560" in moved


def test_measured_pairs_are_called_by_the_gates_paired_test_with_one_figure() -> None:
    """compare --measure and the gate decide with one rule and print one figure."""
    from perfgate.judge.paired import PairedPolicy, paired_decide

    rng = random.Random(3)
    pairs = [(100.0 * math.exp(rng.gauss(0, 0.03)), 85.0 * math.exp(rng.gauss(0, 0.03)))
             for _ in range(8)]  # fmt: skip
    pairs[2] = (pairs[2][0], pairs[2][1] * 0.6)  # one launch on a contended machine
    found = compare_pairs(pairs, direction=Direction.HIGHER, policy=POLICY)
    gate = paired_decide(pairs, policy=PairedPolicy(max_pairs=8, last_look_share=1.0),
                         final=True)  # fmt: skip
    assert found.change is Change.WORSE and gate.verdict is Verdict.BLOCK
    assert found.change_pct == pytest.approx(gate.effect_pct)
    assert found.ratio == pytest.approx(1.0 + found.change_pct / 100.0)  # B/A is the change
    assert "1 set aside as outliers" in found.detail
