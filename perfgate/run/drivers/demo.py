"""The ``demo`` driver: the built-in numpy benchmark, run as a real subprocess."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import perfgate
from perfgate.config import Bucket, PhaseMarkers
from perfgate.errors import UsageError
from perfgate.run.bundle import (
    OutputError,
    launch_mismatches,
    load_json,
    metric_stats,
    metric_values,
)
from perfgate.run.container import ContainerProfile
from perfgate.run.drivers.base import Measurement
from perfgate.run.execution import AttemptDirs, Invocation

# Where a perfgate tree keeps its demo benchmark, newest layout first: replayed commits
# from before the stage folders hold it at perfgate/demo.py.
DEMO_MODULES = ("perfgate.run.demo", "perfgate.demo")


def _demo_source(checkout: Path) -> tuple[str, dict[str, str]]:
    """The demo module to run and the PYTHONPATH that finds it.

    perfgate gates itself with the demo, so a change (or a replayed commit) must be
    measured with its own benchmark code; any other checkout gets this perfgate's demo.
    """
    for module in DEMO_MODULES:
        if (checkout / (module.replace(".", "/") + ".py")).is_file():
            root, chosen = str(checkout), module
            break
    else:
        root, chosen = str(Path(perfgate.__file__).resolve().parent.parent), DEMO_MODULES[0]
    inherited = os.environ.get("PYTHONPATH")
    return chosen, {"PYTHONPATH": os.pathsep.join([root, inherited]) if inherited else root}


def _require_numpy(bucket: Bucket) -> None:
    """The demo needs numpy, an extra: say how to install it instead of crashing."""
    try:
        found = importlib.util.find_spec("numpy") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(
            f"{bucket.id}: the demo driver needs numpy, which is not installed; "
            "install perfgate with its demo extra: pip install 'perfgate[demo]'"
        )


class DemoDriver:
    """Runs the demo benchmark module and reads its RuntimeBundle."""

    name = "demo"
    # 2: time-based warm-up and measurement, and the median step's throughput.
    # 3: steps timed in the process's CPU time (wall-clock with ``timer: wall``).
    version = "3"
    # Numeric libraries run single-threaded unless the bucket sets ``threads``: a
    # multi-threaded figure follows whatever else the machine runs.
    default_threads: int | None = 1
    # The demo runs on the host's Python only (a container block is refused).
    container = ContainerProfile()
    warm_cache = False
    needs_lfs = False
    cache_pins: tuple[tuple[str, str], ...] = ()

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """The demo prints when its environments are ready and when stepping starts."""
        # Imported here: the demo module needs numpy, which only demo buckets require.
        _require_numpy(bucket)
        from perfgate.run import demo

        return PhaseMarkers(init_done=demo.INIT_DONE, stepping=demo.STEPPING)

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """The ``demo`` block (how long to warm up and measure), when the bucket has one."""
        if bucket.demo is None:
            return {}
        # Only when set: buckets that leave the timer alone keep their launch hash.
        timer = {"timer": bucket.demo.timer} if bucket.demo.timer else {}
        return {
            "measure_seconds": bucket.demo.measure_seconds,
            "warmup_seconds": bucket.demo.warmup_seconds,
            **timer,
        }

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """``python -m perfgate.run.demo`` (the checkout's own) with the bucket's settings."""
        _require_numpy(bucket)
        module, env = _demo_source(checkout)
        argv: tuple[str, ...] = (
            sys.executable, "-m", module,
            "--task", bucket.task,
            "--physics", bucket.physics,
            "--num-envs", str(bucket.num_envs),
            "--steps", str(bucket.steps),
            "--warmup-steps", str(bucket.warmup_steps),
            "--seed", str(bucket.seed),
            "--output-path", str(dirs.output_dir),
        )  # fmt: skip
        if bucket.demo is not None:
            # Only when asked: a replayed commit's older demo knows only the flags above.
            argv += (
                "--warmup-seconds", str(bucket.demo.warmup_seconds),
                "--measure-seconds", str(bucket.demo.measure_seconds),
            )  # fmt: skip
            if bucket.demo.timer:
                argv += ("--timer", bucket.demo.timer)
        return Invocation(
            argv=argv,
            cwd=checkout,
            env=env,
            outputs=(str(dirs.output_dir),),
        )

    def read(self, bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
        """Read the bundle, check the launch echo, take the metric and the versions."""
        path = dirs.output_dir / f"benchmark_runtime_{bucket.task}.json"
        try:
            bundle = load_json(path)
        except OutputError as exc:
            return Measurement(stats=metric_stats({}, bucket.metric.path), error=str(exc))
        mismatches = launch_mismatches(
            bundle,
            {
                "run.task": bucket.task,
                "run.num_envs": bucket.num_envs,
                "run.seed": bucket.seed,
                "run.config.physics_backend": bucket.physics,
                "extra.num_steps": bucket.steps,
                "extra.warmup_steps": bucket.warmup_steps,
            },
        )
        return Measurement(
            stats=metric_stats(bundle, bucket.metric.path),
            metrics=metric_values(bundle, bucket.metrics),
            runtime_fields={
                "versions.python": bundle.get("versions", {}).get("python"),
                "versions.numpy": bundle.get("versions", {}).get("numpy"),
                "hardware.cpu_name": bundle.get("hardware", {}).get("cpu_name"),
            },
            config_mismatch="; ".join(mismatches) or None,
            output_file=path,
        )
