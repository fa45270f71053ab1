"""The RuntimeBundle an ``isaaclab`` launch writes, read back: the metric, the recorded
figures and the runtime contract fields.

The bundle's launch echo is checked against what was sent (a mismatch is a HARD_FAILURE):
``run.task``, ``run.num_envs``, ``run.seed``, ``runtime.iterations_completed`` (measured
steps), ``run.config.physics_backend`` / ``rendering_backend`` (schema literals),
``run.config.presets`` when the bundle lists them (older bundles; a ``presets=a,b`` entry
counts as ``a`` and ``b``), and the warm-up count wherever the bundle records it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perfgate.config import Bucket
from perfgate.run.bundle import (
    OutputError,
    dig,
    finite_figures,
    launch_mismatches,
    load_json,
    metric_stats,
    metric_values,
)
from perfgate.run.drivers.base import Measurement
from perfgate.run.execution import AttemptDirs, Invocation

# run.config echoes (isaaclab.benchmark.schema PhysicsBackend / RenderingBackend literals):
# Isaac Sim PhysX echoes "physx"; the Newton Warp renderer echoes "newton".
PHYSICS_ECHO: Mapping[str, str] = {"physx": "physx", "newton": "newton_mjwarp"}
RENDER_ECHO: Mapping[str | None, str] = {
    None: "none",
    "rtx_renderer": "isaacsim_rtx",
    "newton_renderer": "newton",
    "ovrtx_renderer": "ovrtx",
}
WARMUP_ECHOES = (
    "runtime.environment_step_timing.warmup_steps",  # current bundles
    "extra.warmup_frames",  # scripts/benchmarks/runtime.py
    "extra.warmup_steps",
)

# Startup and memory figures recorded with every run (``metric.figures``), whether or not a
# bucket declares them as metrics of their own to gate (docs/isaaclab.md "The `isaaclab` driver").
FIGURES = (
    "runtime.startup_time_s.python_imports",
    "runtime.startup_time_s.task_config",
    "runtime.startup_time_s.app_launch",
    "runtime.startup_time_s.env_creation",
    "runtime.startup_time_s.first_step",
    "resources.gpu_mem_gb.peak",
)

# Runtime contract: always, then by physics, then by render backend.
RUNTIME_ALWAYS = (
    "versions.isaacsim",
    "versions.isaaclab",
    "versions.torch",
    "versions.warp",
    "hardware.cpu_name",
)
RUNTIME_BY_PHYSICS: Mapping[str, tuple[str, ...]] = {
    "physx": ("versions.isaaclab_physx",),
    "newton": ("versions.isaaclab_newton", "versions.newton"),
}
RUNTIME_BY_RENDER: Mapping[str, tuple[str, ...]] = {
    render: ("versions.isaaclab_ov",)
    for render in ("newton_renderer", "ovrtx_renderer", "warp_renderer", "rtx_renderer")
}


def runtime_paths(bucket: Bucket) -> tuple[str, ...]:
    """Bundle paths of the runtime contract fields for this bucket's backends."""
    return (
        *RUNTIME_ALWAYS,
        *RUNTIME_BY_PHYSICS.get(bucket.physics, ()),
        *(RUNTIME_BY_RENDER.get(bucket.render, ()) if bucket.render else ()),
    )


def _argument(argv: Sequence[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def sent_task(invocation: Invocation) -> str:
    """The task id an invocation runs (its ``--task``)."""
    task = _argument(invocation.argv, "--task")
    assert task is not None, "the driver always passes --task"
    return task


def sent_presets(invocation: Invocation) -> tuple[str, ...]:
    """The preset names an invocation sends in its ``presets=`` token."""
    token = next((a for a in invocation.argv if a.startswith("presets=")), "presets=")
    return tuple(name for name in token.removeprefix("presets=").split(",") if name)


def _echoed_presets(echoed: list[Any]) -> list[str]:
    """Preset names in ``run.config.presets``: older bundles keep ``presets=a,b`` unsplit."""
    names: list[str] = []
    for entry in map(str, echoed):
        selector, has_value, value = entry.partition("=")
        if has_value and selector == "presets":
            names += value.split(",")
        elif has_value and selector in ("physics", "renderer"):
            names.append(value)
        else:
            names.append(entry)
    return names


def echo_mismatches(bundle: Any, bucket: Bucket, *, task: str, tokens: Sequence[str]) -> list[str]:
    """Every way the bundle's launch echo differs from what was sent for the bucket."""
    problems = launch_mismatches(
        bundle,
        {
            "run.task": task,
            "run.num_envs": bucket.num_envs,
            "run.seed": bucket.seed,
            "runtime.iterations_completed": bucket.steps,
        },
    )
    for path, wanted in (
        ("run.config.physics_backend", PHYSICS_ECHO.get(bucket.physics)),
        ("run.config.rendering_backend", RENDER_ECHO.get(bucket.render)),
    ):
        got = dig(bundle, path)
        if wanted is not None and got != wanted:
            problems.append(f"{path}={got!r} (requested {wanted})")
    echoed = dig(bundle, "run.config.presets")
    if isinstance(echoed, list) and echoed:
        missing = [token for token in tokens if token not in _echoed_presets(echoed)]
        if missing:
            problems.append(f"run.config.presets={echoed!r} lacks {missing!r}")
    for path in WARMUP_ECHOES:
        got = dig(bundle, path)
        if got is not None and got != bucket.warmup_steps:
            problems.append(f"{path}={got!r} (requested {bucket.warmup_steps!r})")
    return problems


def bundle_files(output_dir: Path, task: str) -> list[Path]:
    """The schema outputs in ``output_dir``, named as Isaac Lab's formatters name them.

    ``benchmark_runtime_<task>_<YYYY-MM-DD_HH-MM-SS-ffffff>_<8 hex>.json`` (current),
    ``benchmark_runtime_<task>_<YYYY-MM-DD_HH-MM-SS>.json`` (older), with ``_schema``
    appended when several formatters ran; other formatters' files are not bundles.
    """
    pattern = re.compile(
        rf"benchmark_runtime_{re.escape(task)}"
        r"_\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}(?:-\d{6}_[0-9a-f]{8})?(?:_schema)?\.json"
    )
    if not output_dir.is_dir():
        return []
    return sorted(p for p in output_dir.iterdir() if pattern.fullmatch(p.name) and p.is_file())


def _versions(bundle: Any) -> dict[str, str]:
    raw = bundle.get("versions") if isinstance(bundle, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): str(v) for k, v in raw.items() if isinstance(v, str) and v}


def read_bundle(bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
    """Find and read the bundle, check the launch echo, take metric and runtime fields."""
    empty = metric_stats({}, bucket.metric.path)
    task = sent_task(invocation)
    found = bundle_files(dirs.output_dir, task)
    if len(found) != 1:
        wanted = f"benchmark_runtime_{task}_<timestamp>[_<hex>].json"
        detail = "no" if not found else f"{len(found)} ({', '.join(p.name for p in found)})"
        return Measurement(
            stats=empty, error=f"{detail} RuntimeBundle {wanted} in {dirs.output_dir}"
        )
    path = found[0]
    try:
        bundle = load_json(path)
    except OutputError as exc:
        return Measurement(stats=empty, error=str(exc), output_file=path)
    if not isinstance(bundle, Mapping) or not isinstance(bundle.get("runtime"), Mapping):
        return Measurement(
            stats=empty, error=f"{path} is not a RuntimeBundle (no 'runtime')", output_file=path
        )
    stats = metric_stats(bundle, bucket.metric.path)
    mismatches = echo_mismatches(bundle, bucket, task=task, tokens=sent_presets(invocation))
    return Measurement(
        stats=stats,
        runtime_fields={field: dig(bundle, field) for field in runtime_paths(bucket)},
        versions=_versions(bundle),
        figures=finite_figures(bundle, FIGURES),
        metrics=metric_values(bundle, bucket.metrics),
        config_mismatch="; ".join(mismatches) or None,
        error=None if stats.value is not None else f"{path} has no number at {bucket.metric.path}",
        output_file=path,
    )
