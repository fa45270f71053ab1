"""The ``demo`` driver: the built-in numpy benchmark, run as a real subprocess."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import perfgate
from perfgate import demo
from perfgate.bundle import OutputError, launch_mismatches, load_json, metric_stats
from perfgate.config import Bucket, PhaseMarkers
from perfgate.drivers.base import Measurement
from perfgate.execution import AttemptDirs, Invocation


def _own_package_path() -> dict[str, str]:
    """PYTHONPATH that makes the child import this very perfgate, installed or not."""
    root = str(Path(perfgate.__file__).resolve().parent.parent)
    inherited = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([root, inherited]) if inherited else root}


class DemoDriver:
    """Runs ``python -m perfgate.demo`` and reads its RuntimeBundle."""

    name = "demo"
    version = "1"

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """The demo prints when its environments are ready and when stepping starts."""
        return PhaseMarkers(init_done=demo.INIT_DONE, stepping=demo.STEPPING)

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """Nothing beyond the common launch settings changes the demo experiment."""
        return {}

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """``python -m perfgate.demo`` with the bucket's settings."""
        argv = (
            sys.executable, "-m", "perfgate.demo",
            "--task", bucket.task,
            "--physics", bucket.physics,
            "--num-envs", str(bucket.num_envs),
            "--steps", str(bucket.steps),
            "--warmup-steps", str(bucket.warmup_steps),
            "--seed", str(bucket.seed),
            "--output-path", str(dirs.output_dir),
        )  # fmt: skip
        return Invocation(
            argv=argv, cwd=checkout, env=_own_package_path(), outputs=(str(dirs.output_dir),)
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
            runtime_fields={
                "versions.python": bundle.get("versions", {}).get("python"),
                "versions.numpy": bundle.get("versions", {}).get("numpy"),
                "hardware.cpu_name": bundle.get("hardware", {}).get("cpu_name"),
            },
            config_mismatch="; ".join(mismatches) or None,
            output_file=path,
        )
