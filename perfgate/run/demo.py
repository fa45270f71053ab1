"""The built-in CPU demo benchmark: a real simulation stepped with random actions.

Run as ``python -m perfgate.run.demo --task cartpole --physics numpy ...``. It steps
``num_envs`` environments through a warm-up (``warmup_steps``, and at least
``--warmup-seconds``), then times each measured step (``steps``, and at least
``--measure-seconds``), and writes a RuntimeBundle-shaped JSON file (the same shape the
Isaac Lab benchmark writes), so one reading path serves both drivers.

Steps are timed in the process's CPU time (``--timer cpu``, the default): on a shared
machine wall-clock time is mostly the neighbours (another process holding the core for a
while stretches the step without the code doing any more work), and a demo that measured
them would demonstrate the machine rather than the gate. ``--timer wall`` times wall-clock
steps, as a GPU benchmark must. ``runtime.total_fps.best_block`` is the throughput of the
fastest short block of consecutive steps (``BLOCK_SECONDS``), as pyperf and timeit take the
best of several short timings: a neighbour can only slow a block down, so the best one
is what the code can do, and it barely moves when the machine is busy (the median step
moves with the load; see tests/perf/demo_noise.py).

``runtime.total_fps.median`` is the throughput of the median step: a step the scheduler
preempted (another process on a shared machine) is an outlier there, where it would move
the total (``total_fps.mean``, work over wall time) by as much as it lasted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.run.hardware import cpu_name

INIT_DONE = "perfgate-demo: environments ready"
# Consecutive steps timed together for ``best_block``: long enough to hold several steps
# of a fast backend, short enough that hundreds fit in a second of measurement.
BLOCK_SECONDS = 0.002
STEPPING = "perfgate-demo: stepping"
BUNDLE_SCHEMA_VERSION = "1.2"

# Cart-pole constants (the classic control formulation), explicit Euler at 50 Hz.
GRAVITY, CART_MASS, POLE_MASS, POLE_HALF_LENGTH, FORCE, DT = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = CART_MASS + POLE_MASS
POLE_MASS_LENGTH = POLE_MASS * POLE_HALF_LENGTH
# Pendulum constants (torque-limited swing-up), semi-implicit Euler.
PENDULUM_G, PENDULUM_M, PENDULUM_L, MAX_TORQUE, MAX_SPEED = 10.0, 1.0, 1.0, 2.0, 8.0

Stepper = Callable[[np.ndarray], None]

# How a step is timed: the process's CPU time (steady on a shared machine), or wall-clock.
TIMERS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def cartpole_numpy(rng: np.random.Generator, num_envs: int) -> tuple[np.ndarray, Stepper]:
    """Vectorised cart-pole: one array operation per physics term for all envs."""
    state = rng.uniform(-0.05, 0.05, size=(4, num_envs))

    def step(actions: np.ndarray) -> None:
        x, x_dot, theta, theta_dot = state
        force = np.where(actions > 0.5, FORCE, -FORCE)
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            POLE_HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos**2 / TOTAL_MASS)
        )
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        state[0] = x + DT * x_dot
        state[1] = x_dot + DT * x_acc
        state[2] = theta + DT * theta_dot
        state[3] = theta_dot + DT * theta_acc
        done = (np.abs(state[0]) > 2.4) | (np.abs(state[2]) > 0.2095)
        state[:, done] = rng.uniform(-0.05, 0.05, size=(4, int(done.sum())))

    return state, step


def cartpole_python(rng: np.random.Generator, num_envs: int) -> tuple[np.ndarray, Stepper]:
    """The same cart-pole, one environment at a time in a plain Python loop."""
    state = rng.uniform(-0.05, 0.05, size=(4, num_envs))
    rows = [list(map(float, state[:, i])) for i in range(num_envs)]

    def step(actions: np.ndarray) -> None:
        for i, action in enumerate(actions.tolist()):
            x, x_dot, theta, theta_dot = rows[i]
            force = FORCE if action > 0.5 else -FORCE
            cos, sin = math.cos(theta), math.sin(theta)
            temp = (force + POLE_MASS_LENGTH * theta_dot * theta_dot * sin) / TOTAL_MASS
            theta_acc = (GRAVITY * sin - cos * temp) / (
                POLE_HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos * cos / TOTAL_MASS)
            )
            x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
            row = [
                x + DT * x_dot,
                x_dot + DT * x_acc,
                theta + DT * theta_dot,
                theta_dot + DT * theta_acc,
            ]
            if abs(row[0]) > 2.4 or abs(row[2]) > 0.2095:
                row = [float(v) for v in rng.uniform(-0.05, 0.05, size=4)]
            rows[i] = row

    return state, step


def pendulum_numpy(rng: np.random.Generator, num_envs: int) -> tuple[np.ndarray, Stepper]:
    """Vectorised torque-limited pendulum."""
    state = np.stack([rng.uniform(-math.pi, math.pi, num_envs), rng.uniform(-1, 1, num_envs)])

    def step(actions: np.ndarray) -> None:
        torque = (actions * 2.0 - 1.0) * MAX_TORQUE
        theta, theta_dot = state
        acc = (
            3 * PENDULUM_G / (2 * PENDULUM_L) * np.sin(theta)
            + 3.0 / (PENDULUM_M * PENDULUM_L**2) * torque
        )
        state[1] = np.clip(theta_dot + acc * DT, -MAX_SPEED, MAX_SPEED)
        state[0] = (theta + state[1] * DT + math.pi) % (2 * math.pi) - math.pi

    return state, step


def pendulum_python(rng: np.random.Generator, num_envs: int) -> tuple[np.ndarray, Stepper]:
    """The same pendulum in a plain Python loop."""
    state = np.stack([rng.uniform(-math.pi, math.pi, num_envs), rng.uniform(-1, 1, num_envs)])
    rows = [[float(state[0, i]), float(state[1, i])] for i in range(num_envs)]

    def step(actions: np.ndarray) -> None:
        for i, action in enumerate(actions.tolist()):
            theta, theta_dot = rows[i]
            torque = (action * 2.0 - 1.0) * MAX_TORQUE
            acc = (
                3 * PENDULUM_G / (2 * PENDULUM_L) * math.sin(theta)
                + 3.0 / (PENDULUM_M * PENDULUM_L**2) * torque
            )
            theta_dot = min(max(theta_dot + acc * DT, -MAX_SPEED), MAX_SPEED)
            theta = (theta + theta_dot * DT + math.pi) % (2 * math.pi) - math.pi
            rows[i] = [theta, theta_dot]

    return state, step


TASKS: dict[str, dict[str, Callable[[np.random.Generator, int], tuple[np.ndarray, Stepper]]]] = {
    "cartpole": {"numpy": cartpole_numpy, "python": cartpole_python},
    "pendulum": {"numpy": pendulum_numpy, "python": pendulum_python},
}


@dataclass(frozen=True, kw_only=True)
class Length:
    """How long the demo steps: a warm-up of at least ``warmup_steps`` and
    ``warmup_seconds``, then at least ``steps`` timed steps and ``measure_seconds``."""

    steps: int
    warmup_steps: int
    warmup_seconds: float
    measure_seconds: float


def run(
    task: str, physics: str, num_envs: int, length: Length, *, seed: int = 0, timer: str = "cpu"
) -> dict[str, Any]:
    """Step the environments and return the RuntimeBundle-shaped result."""
    clock = TIMERS[timer]
    start = datetime.now(UTC)
    rng = np.random.default_rng(seed)
    _, step = TASKS[task][physics](rng, num_envs)
    print(INIT_DONE, flush=True)
    # Warm up caches, branch predictors and the CPU clock before anything is timed.
    warm_until = time.perf_counter() + length.warmup_seconds
    done = 0
    while done < length.warmup_steps or time.perf_counter() < warm_until:
        step(rng.random(num_envs))
        done += 1
    print(STEPPING, flush=True)
    step_times: list[float] = []
    measured = 0.0
    while len(step_times) < length.steps or measured < length.measure_seconds:
        actions = rng.random(num_envs)
        began = clock()
        step(actions)
        elapsed = clock() - began
        step_times.append(elapsed)
        measured += elapsed
    times = np.asarray(step_times)
    per_step_fps = num_envs / np.maximum(times, 1e-12)
    # Blocks of consecutive steps of about BLOCK_SECONDS each (at least one step).
    per_block = min(len(times), max(1, int(BLOCK_SECONDS / max(float(np.median(times)), 1e-12))))
    blocks = len(times) // per_block
    block_times = times[: blocks * per_block].reshape(blocks, per_block).sum(axis=1)
    best_block = num_envs * per_block / max(float(block_times.min()), 1e-12)
    # Total work over total time, as Isaac Lab's total_fps aggregates it.
    total_fps = num_envs * len(times) / float(times.sum())
    end = datetime.now(UTC)
    return {
        "schema_version": BUNDLE_SCHEMA_VERSION,
        "run": {
            "run_id": f"demo-{task}-{physics}-{seed}",
            "framework": "perfgate-demo",
            "task": task,
            "seed": seed,
            "num_envs": num_envs,
            "config": {"physics_backend": physics, "rendering_backend": "none", "presets": []},
            "start_time_utc": start.isoformat(),
            "end_time_utc": end.isoformat(),
            "duration_s": (end - start).total_seconds(),
            "status": "completed",
        },
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "hardware": {
            "hostname": platform.node(),
            "gpu_devices": [],
            "cpu_name": cpu_name(),
            "cpu_count": os.cpu_count(),
        },
        "runtime": {
            "iterations_completed": len(times),
            "steps_per_iteration": num_envs,
            "total_wall_time_s": float(times.sum()),
            "iteration_time_s": _mean_std(times),
            "total_fps": {
                "mean": total_fps,
                "median": float(np.median(per_step_fps)),
                "std": float(per_step_fps.std()),
                "peak": float(per_step_fps.max()),
                "min": float(per_step_fps.min()),
                "best_block": best_block,
            },
            "environment_step_timing": {
                "environment_step_fps": _mean_std(per_step_fps),
                "measurement_mode": "host_return" if timer == "wall" else "process_cpu_time",
            },
        },
        "resources": {},
        "extra": {
            "num_steps": length.steps,
            "warmup_steps": length.warmup_steps,
            "measured_steps": len(times),
            "warmup_steps_taken": done,
            "timer": timer,
            "steps_per_block": per_block,
        },
    }


def _mean_std(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(values.mean()), "std": float(values.std()), "peak": float(values.max())}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of the demo benchmark."""
    parser = argparse.ArgumentParser(prog="python -m perfgate.run.demo", description=__doc__)
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--physics", required=True, choices=["numpy", "python"])
    parser.add_argument("--num-envs", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--warmup-steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-seconds", type=float, default=0.0)
    parser.add_argument("--measure-seconds", type=float, default=0.0)
    parser.add_argument(
        "--timer",
        choices=sorted(TIMERS),
        default="cpu",
        help="time steps in the process's CPU time (default) or wall-clock time",
    )
    parser.add_argument("--output-path", type=Path, required=True)
    args = parser.parse_args(argv)
    length = Length(
        steps=args.steps,
        warmup_steps=args.warmup_steps,
        warmup_seconds=args.warmup_seconds,
        measure_seconds=args.measure_seconds,
    )
    bundle = run(args.task, args.physics, args.num_envs, length, seed=args.seed, timer=args.timer)
    args.output_path.mkdir(parents=True, exist_ok=True)
    out = args.output_path / f"benchmark_runtime_{args.task}.json"
    out.write_text(json.dumps(bundle, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    print(f"perfgate-demo: {sample_line(args.task, args.physics, bundle)} -> {out}", flush=True)
    return 0


def sample_line(task: str, physics: str, bundle: dict[str, Any]) -> str:
    """The sample's figures, each named by its path: a bucket's metric is one of them (the
    demo matrix's is the median step's), and the bench's line names the one it reads."""
    fps = bundle["runtime"]["total_fps"]
    return (
        f"{task}/{physics} runtime.total_fps.median {fps['median']:,.0f} env-steps/s, "
        f"runtime.total_fps.mean {fps['mean']:,.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
