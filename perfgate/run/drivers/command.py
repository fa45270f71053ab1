"""The ``command`` driver: any program (argument list, no shell) that writes JSON."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from perfgate.config import MAX_METRICS, Bucket, CommandSpec, OutputFormat, PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.run.bundle import OutputError, load_json, metric_stats, metric_values
from perfgate.run.container import ContainerProfile
from perfgate.run.drivers import adapters
from perfgate.run.drivers.adapters.base import Suite, SuiteError
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
        """The argument template is part of the experiment; so are a tool format and the
        units its figures are converted to (a bucket reading its own JSON keeps its hashes)."""
        spec = _spec(bucket)
        inputs: dict[str, Any] = {"argv": list(spec.argv), "output": spec.output}
        if spec.format is not OutputFormat.JSON:
            inputs["format"] = spec.format.value
            # A selection's unit by its name: the benchmarks it matches never move the hash.
            inputs["units"] = {
                metric.family or metric.name: metric.unit for metric in bucket.all_metrics
            }
        return inputs

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
        """The newest file matching the output pattern: each metric at its path, or its
        benchmark in a tool's output (``command.format``).

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
        output_format = _spec(bucket).format
        if output_format is not OutputFormat.JSON:
            return _read_suite(bucket, output_format, matches[-1])
        try:
            data = load_json(matches[-1])
        except OutputError as exc:
            return Measurement(stats=empty, error=str(exc))
        return Measurement(
            stats=metric_stats(data, bucket.metric.path),
            metrics=metric_values(data, bucket.metrics),
            output_file=matches[-1],
        )


def _read_suite(bucket: Bucket, output_format: OutputFormat, path: Path) -> Measurement:
    """Each metric's benchmark in a tool's output, and each benchmark a selection matches;
    an optional metric whose benchmark is missing or failed is left out, any other problem
    (a required selection that matches nothing, too) is the attempt's error."""
    try:
        suite = adapters.read(output_format, path)
        stats = adapters.figure(suite, bucket.metric, path)
        _check_selections(bucket, suite, path)
        metrics = {}
        measured = bucket.selecting(b.name for b in suite).metrics
        if len(measured) >= MAX_METRICS:
            raise SuiteError(
                f"{path}: the bucket's selections match {len(measured)} benchmarks, more than "
                f"the {MAX_METRICS - 1} a bucket reports besides its primary; narrow their "
                "patterns or split the suite between buckets"
            )
        for metric in measured:
            try:
                metrics[metric.name] = adapters.figure(suite, metric, path).value
            except SuiteError:
                if metric.required:
                    raise
    except SuiteError as exc:
        return Measurement(stats=metric_stats({}, ""), error=str(exc), output_file=path)
    found = {name: value for name, value in metrics.items() if value is not None}
    return Measurement(stats=stats, metrics=found, output_file=path)


def _check_selections(bucket: Bucket, suite: Suite, path: Path) -> None:
    """A required selection that matches no benchmark of ``suite`` is an error listing the
    names the file has."""
    for selection in bucket.selections:
        if not selection.required or any(selection.selects(b.name) for b in suite):
            continue
        names = ", ".join(repr(b.name) for b in suite[: adapters.LISTED]) or "none"
        more = f" and {len(suite) - adapters.LISTED} more" if len(suite) > adapters.LISTED else ""
        patterns = " or ".join(repr(p) for p in selection.select)
        raise SuiteError(
            f"{path}: metric {selection.name!r} selects benchmarks matching {patterns}, and "
            f"none does; the file has {names}{more}: fix the pattern, or declare the "
            "selection required: false"
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
