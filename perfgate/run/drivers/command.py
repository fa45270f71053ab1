"""The ``command`` driver: any program (argument list, no shell) that writes JSON."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from perfgate.config import Bucket, CommandSpec, PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.run.bundle import OutputError, load_json, metric_stats, metric_values
from perfgate.run.container import ContainerProfile
from perfgate.run.drivers.base import Measurement
from perfgate.run.execution import AttemptDirs, Invocation


def _spec(bucket: Bucket) -> CommandSpec:
    if bucket.command is None:
        raise ConfigError(f"bucket {bucket.id}: driver 'command' needs a 'command' block")
    return bucket.command


class CommandDriver:
    """Placeholders ``{output_dir}``, ``{cache_dir}``, ``{task}``, ``{physics}``, ``{render}``,
    ``{backend}``, ``{num_envs}``, ``{steps}``, ``{warmup_steps}``, ``{seed}`` are filled in
    argv and in the output path."""

    name = "command"
    version = "1"
    # The environment's thread settings apply unless the bucket sets ``threads``.
    default_threads: int | None = None
    # A plain profile: the checkout, outputs and a per-attempt cache, as the invoking user.
    container = ContainerProfile()
    warm_cache = False
    needs_lfs = False
    cache_pins: tuple[tuple[str, str], ...] = ()

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """The markers the bucket declares."""
        return _spec(bucket).markers

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """The argument template is part of the experiment."""
        spec = _spec(bucket)
        return {"argv": list(spec.argv), "output": spec.output}

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """argv and output with the placeholders filled."""
        spec = _spec(bucket)
        values = _placeholders(bucket, dirs)
        try:
            argv = tuple(arg.format(**values) for arg in spec.argv)
            output = spec.output.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"bucket {bucket.id}: command placeholder {exc} is unknown; "
                f"use one of {', '.join('{' + k + '}' for k in values)}"
            ) from None
        cwd = checkout / spec.cwd if spec.cwd else checkout
        return Invocation(argv=argv, cwd=cwd, outputs=(output,))

    def read(self, bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
        """The newest file matching the output pattern, metric at the bucket's path.

        Only files that really lie inside the attempt's output directory count: a symlink
        the benchmark planted there cannot make perfgate read (or report) another file.
        """
        pattern = invocation.outputs[0]
        root = dirs.output_dir.resolve()
        matches = sorted(
            (
                Path(p)
                for p in glob.glob(str(invocation.cwd / pattern), recursive=True)
                if Path(p).is_file() and Path(p).resolve().is_relative_to(root)
            ),
            key=lambda p: p.stat().st_mtime,
        )
        empty = metric_stats({}, bucket.metric.path)
        if not matches:
            return Measurement(stats=empty, error=f"no file matches the output {pattern!r}")
        try:
            data = load_json(matches[-1])
        except OutputError as exc:
            return Measurement(stats=empty, error=str(exc))
        return Measurement(
            stats=metric_stats(data, bucket.metric.path),
            metrics=metric_values(data, bucket.metrics),
            output_file=matches[-1],
        )


def _placeholders(bucket: Bucket, dirs: AttemptDirs) -> dict[str, str]:
    """Every placeholder of COMMAND_PLACEHOLDERS (config validates templates against it)."""
    return {
        "output_dir": str(dirs.output_dir),
        "cache_dir": str(dirs.cache_dir),
        "task": bucket.task,
        "physics": bucket.physics,
        "render": bucket.render or "",
        "backend": bucket.backend_key,
        "num_envs": str(bucket.num_envs),
        "steps": str(bucket.steps),
        "warmup_steps": str(bucket.warmup_steps),
        "seed": str(bucket.seed),
    }
