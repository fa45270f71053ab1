"""How the demo benchmark times a sample: the best short block of steps, in CPU time."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from perfgate.run import demo

pytestmark = pytest.mark.integration


def sleepy(rng: np.random.Generator, num_envs: int) -> tuple[np.ndarray, Any]:
    """A step that waits 5 ms without working: what a neighbour holding the core looks like."""
    state = np.zeros(num_envs)

    def step(actions: np.ndarray) -> None:
        time.sleep(0.005)

    return state, step


def test_time_the_machine_spends_elsewhere_is_not_the_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(demo.TASKS, "sleepy", {"numpy": sleepy})
    length = demo.Length(steps=20, warmup_steps=2, warmup_seconds=0, measure_seconds=0)
    runs = {
        timer: demo.run("sleepy", "numpy", 64, length, seed=1, timer=timer)
        for timer in ("wall", "cpu")
    }
    wall, cpu = (runs[t]["runtime"]["total_fps"] for t in ("wall", "cpu"))
    assert wall["best_block"] <= 64 / 0.005  # every wall-clock step waited its 5 ms
    assert cpu["best_block"] > 10 * wall["best_block"]  # waiting costs no CPU time
    assert runs["cpu"]["runtime"]["environment_step_timing"]["measurement_mode"] == (
        "process_cpu_time"
    )
    assert runs["cpu"]["extra"]["timer"] == "cpu"


def test_the_best_block_is_of_consecutive_steps_and_always_exists() -> None:
    length = demo.Length(steps=5, warmup_steps=1, warmup_seconds=0, measure_seconds=0)
    bundle = demo.run("cartpole", "numpy", 64, length, seed=1)
    fps, extra = bundle["runtime"]["total_fps"], bundle["extra"]
    assert 1 <= extra["steps_per_block"] <= extra["measured_steps"]
    assert fps["best_block"] > 0
