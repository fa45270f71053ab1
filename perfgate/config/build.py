"""A checked ``buckets`` entry built into a bucket per backend (R1), and the readers of its
merged settings that the checks (``config.expand``) share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.config.bucket import (
    DEFAULT_KEEP_ENV,
    PRIMARY,
    Bucket,
    CommandSpec,
    ContainerSpec,
    DemoSpec,
    Direction,
    Floor,
    FloorKind,
    IsaacLabSpec,
    Metric,
    OutputFormat,
    PhaseMarkers,
    argv_of,
    summed_path,
)
from perfgate.util.yamlfile import KeyPath

#: A metric's settings merged by name, with the key path that last declared it.
MergedMetrics = dict[str, tuple[dict[str, Any], KeyPath]]


def entry_backend_keys(entry: Mapping[str, Any]) -> list[str]:
    """The entry's backend keys (``physics`` or ``physics_render``), in declaration order."""
    pairs = [(backend["physics"], backend.get("render")) for backend in entry["backends"]]
    return [f"{physics}_{render}" if render else physics for physics, render in pairs]


def metric_path(raw: Mapping[str, Any]) -> str:
    """Where a further metric's figure is read: its benchmark's name in a tool's output, its
    ``path``, or its ``sum``'s paths joined (a selection's patterns, joined)."""
    if "benchmark" in raw:
        return str(raw["benchmark"])
    if "benchmarks" in raw:
        return " ".join(selection_patterns(raw))
    return str(raw["path"]) if "path" in raw else summed_path(raw.get("sum", ()))


def selection_patterns(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """A selection's name patterns: ``benchmarks:`` as one pattern or a list of them."""
    value = raw.get("benchmarks", ())
    return (value,) if isinstance(value, str) else tuple(value)


def output_format_of(settings: Mapping[str, Any]) -> OutputFormat:
    """How the bucket's output is read: its command block's ``format`` (JSON without one)."""
    command = settings.get("command") if settings["driver"] == "command" else None
    return OutputFormat((command or {}).get("format", OutputFormat.JSON))


def primary_path(settings: Mapping[str, Any]) -> str:
    """Where the primary figure is read: its benchmark's name, else its dotted path."""
    raw = settings["metric"]
    return str(raw["benchmark"]) if "benchmark" in raw else raw.get("path", Metric.path)


def build_buckets(
    entry: Mapping[str, Any], settings: Mapping[str, Any], merged: MergedMetrics
) -> list[Bucket]:
    """A bucket per backend of a checked entry, from its merged settings."""
    driver = settings["driver"]
    output_format = output_format_of(settings)
    primary = Metric(
        path=primary_path(settings),
        direction=Direction(settings["metric"].get("direction", output_format.direction)),
        unit=settings["metric"].get("unit", output_format.unit or ""),
    )
    metrics = tuple(_metric(name, raw, output_format) for name, (raw, _) in merged.items())
    floors: Mapping[str, Mapping[str, Any]] = entry.get("floors", {})
    noise: Mapping[str, Mapping[str, Any]] = entry.get("noise_floor_pct", {})
    command = _command_spec(settings.get("command"))
    return [
        Bucket(
            task=entry["task"],
            physics=backend["physics"],
            render=backend.get("render"),
            driver=driver,
            runner=tuple(settings["runner"]),
            timeout_minutes=float(settings["timeout_minutes"]),
            retries=settings["retries"],
            num_envs=settings["num_envs"],
            steps=settings["steps"],
            warmup_steps=settings["warmup_steps"],
            seed=settings["seed"],
            tags=tuple(settings["tags"]),
            baseline_epoch=settings["baseline_epoch"],
            metric=primary,
            metrics=metrics,
            paths=tuple(settings["paths"]),
            repeats=settings["repeats"],
            max_repeats=settings["max_repeats"],
            repeat_budget_minutes=_optional_float(settings.get("repeat_budget_minutes")),
            max_pairs=settings["max_pairs"],
            pair_budget_minutes=_optional_float(settings.get("pair_budget_minutes")),
            launch_minutes=_optional_float(settings.get("launch_minutes")),
            setup_minutes=_optional_float(settings.get("setup_minutes")),
            threads=settings.get("threads"),
            command=command,
            isaaclab=_isaaclab_spec(settings.get("isaaclab")) if driver == "isaaclab" else None,
            demo=DemoSpec(**settings["demo"]) if driver == "demo" and "demo" in settings else None,
            container=_container_spec(settings.get("container")),
            cache=settings.get("cache"),
            floors={
                hardware: tuple(
                    Floor(
                        name=f["name"],
                        value=float(f["value"]),
                        kind=FloorKind(f.get("verdict", "BLOCK")),
                        metric=f.get("metric", PRIMARY),
                    )
                    for f in per_backend[backend_key]
                )
                for hardware, per_backend in floors.items()
                if backend_key in per_backend
            },
            noise_floor_pct={
                hardware: float(per_backend[backend_key])
                for hardware, per_backend in noise.items()
                if backend_key in per_backend
            },
            keep_env=(*DEFAULT_KEEP_ENV, *settings["keep_env"]),
        )
        for backend, backend_key in zip(entry["backends"], entry_backend_keys(entry), strict=True)
    ]


def _metric(name: str, raw: Mapping[str, Any], output_format: OutputFormat) -> Metric:
    tool = output_format is not OutputFormat.JSON
    return Metric(
        name=name,
        path=metric_path(raw),
        sum=tuple(raw.get("sum", ())),
        direction=Direction(raw.get("direction", output_format.direction)),
        unit=raw.get("unit", (output_format.unit or "") if tool else ""),
        required=raw.get("required", True),
        gates=raw.get("gate", True),
        min_drop_pct=_optional_float(raw.get("min_drop_pct")),
        noise_floor_pct=_optional_float(raw.get("noise_floor_pct")),
        select=selection_patterns(raw),
    )


def _optional_float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _command_spec(raw: Mapping[str, Any] | None) -> CommandSpec | None:
    if raw is None:
        return None
    return CommandSpec(
        argv=tuple(raw["argv"]),
        output=raw["output"],
        format=OutputFormat(raw.get("format", OutputFormat.JSON)),
        cwd=raw.get("cwd"),
        markers=_phase_markers(raw.get("markers", {})),
    )


def _phase_markers(raw: Mapping[str, Any]) -> PhaseMarkers:
    """The default markers with the keys that ``raw`` (a ``markers`` block) sets replaced."""
    lists = {key: tuple(raw[key]) for key in ("import_error", "driver_error", "oom") if key in raw}
    return PhaseMarkers(**{**raw, **lists, "environment": dict(raw.get("environment", {}))})


def _isaaclab_spec(raw: Mapping[str, Any] | None) -> IsaacLabSpec:
    raw = raw or {}
    return IsaacLabSpec(
        executable=argv_of(raw["executable"]) if "executable" in raw else None,
        task_aliases=tuple(raw.get("task_aliases", ())),
        extra_args=tuple(raw.get("extra_args", ())),
        presets=tuple(raw["presets"]) if "presets" in raw else None,
        markers=None if "markers" not in raw else _phase_markers(raw["markers"]),
        pin_files=tuple(raw["pin_files"]) if "pin_files" in raw else None,
    )


def _container_spec(raw: Mapping[str, Any] | None) -> ContainerSpec | None:
    if raw is None:
        return None
    keys = ("image", "checkout_mount", "workdir", "output_mount", "cache_mount", "user", "gpus",
            "writable_checkout", "git_metadata", "allow_unsafe_args")  # fmt: skip
    known = {key: raw[key] for key in keys if key in raw}
    return ContainerSpec(
        **known,
        docker=argv_of(raw.get("docker", list(ContainerSpec.docker))),
        env=tuple(raw.get("env", ())),
        extra_args=tuple(raw.get("extra_args", ())),
        links=dict(raw.get("links", {})),
        caches=dict(raw.get("caches", {})),
        set_env=dict(raw.get("set_env", {})),
        run_args=tuple(raw["run_args"]) if "run_args" in raw else None,
    )
