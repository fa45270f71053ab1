"""The ``isaaclab`` driver: the supported ``isaaclab benchmark runtime`` CLI and its RuntimeBundle.

The bundle's launch echo is checked against the request (a mismatch is a HARD_FAILURE):

- ``run.task``, ``run.num_envs``, ``run.seed``: always echoed.
- ``run.config.physics_backend`` / ``run.config.rendering_backend``: what the Hydra presets
  actually selected, so a preset that silently did nothing is caught.
- ``run.config.presets``: each requested token must be listed, when the list is non-empty
  (current Isaac Lab writes it empty; older bundles list the tokens).
- ``runtime.iterations_completed``: the number of measured steps (``--num_steps``).
- warm-up: ``runtime.environment_step_timing.warmup_steps`` or ``extra.warmup_steps``, when
  the bundle carries either (the current CLI keeps it out of the bundle; ``extra`` is free-form).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.config import Bucket, IsaacLabSpec, PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.run.bundle import OutputError, dig, launch_mismatches, load_json, metric_stats
from perfgate.run.drivers.base import Measurement
from perfgate.run.execution import AttemptDirs, Invocation

BENCHMARK_FORMATTER = "schema"

# Hydra preset tokens per backend (the reference gate's hydra_args_for_task, facts section 1).
PHYSICS_PRESETS: Mapping[str, tuple[str, ...]] = {"physx": (), "newton": ("newton_mjwarp",)}
RENDER_PRESETS: Mapping[str, tuple[str, ...]] = {
    "rtx_renderer": ("isaacsim_rtx",),
    "newton_renderer": ("newton", "rgb"),
    "ovrtx_renderer": ("ovrtx",),
}
# What run.config echoes for each backend. Isaac Lab 6.0 prereleases report plain "newton".
PHYSICS_ECHO: Mapping[str, frozenset[str]] = {
    "physx": frozenset({"physx"}),
    "newton": frozenset({"newton_mjwarp", "newton"}),
}
RENDER_ECHO: Mapping[str | None, frozenset[str]] = {
    None: frozenset({"none"}),
    "rtx_renderer": frozenset({"isaacsim_rtx"}),
    "newton_renderer": frozenset({"newton"}),
    "ovrtx_renderer": frozenset({"ovrtx"}),
}

# Failure phases as the reference gate's subprocess runner tells them (facts section 3).
MARKERS = PhaseMarkers(
    import_error=("Traceback",),
    driver_error=("CudaError", "CUDA_ERROR_"),
    oom=("oom-kill",),
    init_done="AppLauncher initialization complete",
    stepping="Step Frametimes",
)

# Runtime contract (facts section 5): always, then by physics, then by render backend.
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


def spec(bucket: Bucket) -> IsaacLabSpec:
    """The bucket's ``isaaclab`` block, or the defaults."""
    return bucket.isaaclab or IsaacLabSpec()


def presets(bucket: Bucket) -> tuple[str, ...]:
    """The Hydra preset tokens for the bucket's backend (or the ones it declares)."""
    declared = spec(bucket).presets
    if declared is not None:
        return declared
    tokens = list(PHYSICS_PRESETS.get(bucket.physics, ()))
    if bucket.render is not None:
        if bucket.render not in RENDER_PRESETS:
            raise ConfigError(
                f"bucket {bucket.id}: no Hydra preset is known for render backend "
                f"{bucket.render!r}; declare them with isaaclab.presets in perfgate.yaml"
            )
        tokens += RENDER_PRESETS[bucket.render]
    return tuple(tokens)


def hydra_args(bucket: Bucket) -> tuple[str, ...]:
    """``presets=<comma list>``, or nothing for plain PhysX."""
    tokens = presets(bucket)
    return (f"presets={','.join(tokens)}",) if tokens else ()


def runtime_paths(bucket: Bucket) -> tuple[str, ...]:
    """Bundle paths of the runtime contract fields for this bucket's backends."""
    return (
        *RUNTIME_ALWAYS,
        *RUNTIME_BY_PHYSICS.get(bucket.physics, ()),
        *(RUNTIME_BY_RENDER.get(bucket.render, ()) if bucket.render else ()),
    )


def expected_echo(bucket: Bucket) -> dict[str, Any]:
    """Bundle paths that must equal the request exactly."""
    return {
        "run.task": bucket.task,
        "run.num_envs": bucket.num_envs,
        "run.seed": bucket.seed,
        "runtime.iterations_completed": bucket.steps,
    }


def echo_mismatches(bundle: Any, bucket: Bucket) -> list[str]:
    """Every way the bundle's launch echo differs from what the bucket requested."""
    problems = launch_mismatches(bundle, expected_echo(bucket))
    for path, allowed in (
        ("run.config.physics_backend", PHYSICS_ECHO.get(bucket.physics)),
        ("run.config.rendering_backend", RENDER_ECHO.get(bucket.render)),
    ):
        got = dig(bundle, path)
        if allowed is not None and got not in allowed:
            problems.append(f"{path}={got!r} (requested {' or '.join(sorted(allowed))})")
    echoed_presets = dig(bundle, "run.config.presets")
    if isinstance(echoed_presets, list) and echoed_presets:
        missing = [token for token in presets(bucket) if token not in echoed_presets]
        if missing:
            problems.append(f"run.config.presets={echoed_presets!r} lacks {missing!r}")
    for path in ("runtime.environment_step_timing.warmup_steps", "extra.warmup_steps"):
        got = dig(bundle, path)
        if got is not None and got != bucket.warmup_steps:
            problems.append(f"{path}={got!r} (requested {bucket.warmup_steps!r})")
    return problems


def find_bundle(output_dir: Path, task: str) -> Path | None:
    """The schema output in ``output_dir``: ``benchmark_runtime_<task>[_schema].json``."""
    exact = [output_dir / f"benchmark_runtime_{task}{s}.json" for s in ("_schema", "")]
    for path in exact:
        if path.is_file():
            return path
    # Some versions add a timestamp to the name; the attempt's directory is private, so the
    # newest match is this attempt's.
    matches = sorted(
        output_dir.glob(f"benchmark_runtime_{task}*.json"), key=lambda p: p.stat().st_mtime
    )
    return matches[-1] if matches else None


def _versions(bundle: Any) -> dict[str, str]:
    raw = bundle.get("versions") if isinstance(bundle, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): str(v) for k, v in raw.items() if isinstance(v, str) and v}


class IsaacLabDriver:
    """Runs ``isaaclab benchmark runtime`` with the bucket's launch and reads the RuntimeBundle."""

    name = "isaaclab"
    version = "1"

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """Section-3 markers, unless the bucket declares its own."""
        return spec(bucket).markers or MARKERS

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """Presets, formatter and extra arguments change the experiment; the executable does not."""
        return {
            "presets": list(presets(bucket)),
            "benchmark_formatter": BENCHMARK_FORMATTER,
            "extra_args": list(spec(bucket).extra_args),
        }

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """``<executable> benchmark runtime --task ... --output_path <attempt dir> presets=...``."""
        settings = spec(bucket)
        argv = (
            *settings.executable, "benchmark", "runtime",
            "--task", bucket.task,
            "--num_envs", str(bucket.num_envs),
            "--num_steps", str(bucket.steps),
            "--warmup_steps", str(bucket.warmup_steps),
            "--seed", str(bucket.seed),
            "--benchmark_formatter", BENCHMARK_FORMATTER,
            "--output_path", str(dirs.output_dir),
            *settings.extra_args,
            # Hydra overrides go last: the CLI hands whatever argparse leaves over to Hydra.
            *hydra_args(bucket),
        )  # fmt: skip
        return Invocation(argv=argv, cwd=checkout, outputs=(str(dirs.output_dir),))

    def read(self, bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
        """Find and read the bundle, check the launch echo, take metric and runtime fields."""
        empty = metric_stats({}, bucket.metric.path)
        path = find_bundle(dirs.output_dir, bucket.task)
        if path is None:
            wanted = f"benchmark_runtime_{bucket.task}*.json"
            return Measurement(stats=empty, error=f"no RuntimeBundle {wanted} in {dirs.output_dir}")
        try:
            bundle = load_json(path)
        except OutputError as exc:
            return Measurement(stats=empty, error=str(exc), output_file=path)
        if not isinstance(bundle, Mapping) or not isinstance(bundle.get("runtime"), Mapping):
            return Measurement(
                stats=empty, error=f"{path} is not a RuntimeBundle (no 'runtime')", output_file=path
            )
        stats = metric_stats(bundle, bucket.metric.path)
        mismatches = echo_mismatches(bundle, bucket)
        return Measurement(
            stats=stats,
            runtime_fields={field: dig(bundle, field) for field in runtime_paths(bucket)},
            versions=_versions(bundle),
            config_mismatch="; ".join(mismatches) or None,
            error=None
            if stats.value is not None
            else f"{path} has no number at {bucket.metric.path}",
            output_file=path,
        )
