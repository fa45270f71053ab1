"""One ``buckets`` entry over the defaults, expanded into a bucket per backend (R1).

The entry is checked first, every problem named at the key where it was written (the
entry's, else the defaults'); the buckets are then built from settings known to be sound
(``config.build``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfgate.backends import VOCABULARIES
from perfgate.config.bucket import COMMAND_PLACEHOLDERS, PRIMARY, Bucket, OutputFormat
from perfgate.config.build import (
    MergedMetrics,
    build_buckets,
    entry_backend_keys,
    metric_path,
    output_format_of,
    primary_path,
)
from perfgate.config.checks import check_placeholders, image_reference_problem, path_problem
from perfgate.config.container import OPT_IN, refusal, unsafe_args
from perfgate.config.messages import fail, short
from perfgate.util.yamlfile import KeyPath, YamlDocument


def expand(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[Bucket]:
    """The buckets of the entry at ``key_path``, one per backend; ConfigError names a problem."""
    settings = _settings(entry, defaults)
    _check_entry(document, key_path, entry, settings)
    metrics = _merged_metrics(key_path, entry, defaults)
    _check_metrics(document, key_path, entry, defaults, settings, metrics)
    return build_buckets(entry, settings, metrics)


def _settings(entry: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The entry over the defaults; ``metric`` and the driver blocks merge key by key."""
    settings = {**defaults, **entry}
    settings["metric"] = {**defaults.get("metric", {}), **entry.get("metric", {})}
    # Driver blocks merge key by key, like metric, so a bucket can override one setting.
    for block in ("isaaclab", "container", "demo"):
        if block in defaults or block in entry:
            settings[block] = {**defaults.get(block, {}), **entry.get(block, {})}
    return settings


def _written(key_path: KeyPath, entry: Mapping[str, Any], *keys: str | int) -> KeyPath:
    """Where a merged setting was written: the entry, else the defaults."""
    return (*key_path, *keys) if keys[0] in entry else ("defaults", *keys)


def _check_entry(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], settings: Mapping[str, Any]
) -> None:
    """The entry's driver, blocks, paths, repeats and backends fit together."""
    driver = settings["driver"]
    vocabulary = VOCABULARIES[driver]
    if vocabulary.tasks is not None and entry["task"] not in vocabulary.tasks:
        fail(
            document,
            (*key_path, "task"),
            f"unknown task {entry['task']!r} for driver {driver!r}; "
            f"use one of: {', '.join(sorted(vocabulary.tasks))}",
        )
    if "command" in entry and driver != "command":
        fail(
            document,
            (*key_path, "command"),
            f"a 'command' block only applies to driver 'command' (this bucket's driver is "
            f"{driver!r}); remove it or set driver: command",
        )
    command = settings.get("command")
    if driver == "command" and command is None:
        fail(document, key_path, "driver 'command' needs a 'command' block with argv and output")
    if command is not None:
        _check_command(document, key_path, entry, command)
    for index, pattern in enumerate(settings["paths"]):
        if problem := path_problem(pattern, what="a paths glob"):
            where = _written(key_path, entry, "paths", index)
            fail(document, where, f"{pattern!r} can never match: {problem}")
    if driver == "isaaclab":
        for index, pattern in enumerate(settings.get("isaaclab", {}).get("pin_files", ())):
            if problem := path_problem(pattern, what="a pin file"):
                fail(document, _written(key_path, entry, "isaaclab", "pin_files", index), problem)
    if "demo" in entry and driver != "demo":
        fail(
            document,
            (*key_path, "demo"),
            f"a 'demo' block only applies to driver 'demo' (this bucket's driver is "
            f"{driver!r}); remove it or set driver: demo",
        )
    if settings["max_repeats"] < settings["repeats"]:
        # Name the key that was written: this entry's, else the defaults' (max_repeats first).
        written = [key for key in ("max_repeats", "repeats") if key in entry]
        declared = document.data.get("defaults", {})
        written += [key for key in ("max_repeats", "repeats") if key in declared]
        fail(
            document,
            _written(key_path, entry, written[0]) if written else ("defaults", "max_repeats"),
            f"max_repeats ({settings['max_repeats']}) is under repeats ({settings['repeats']}): "
            "a run always takes its repeats; raise max_repeats to at least repeats",
        )
    if driver == "demo" and "container" in settings:
        fail(
            document,
            (*key_path, "container"),
            "the demo driver runs on the host's Python; use driver 'command' or 'isaaclab' "
            "in a container, or drop the container block",
        )
    if "container" in settings:
        _check_container(document, key_path, entry, settings["container"])
    for index, backend in enumerate(entry["backends"]):
        for role, allowed in (("physics", vocabulary.physics), ("render", vocabulary.render)):
            value = backend.get(role)
            if value is not None and allowed is not None and value not in allowed:
                fix = (
                    f"use one of: {', '.join(sorted(allowed))}"
                    if allowed
                    else f"driver {driver!r} has no {role} backend, so remove '{role}'"
                )
                fail(
                    document,
                    (*key_path, "backends", index, role),
                    f"unknown {role} backend {value!r} for driver {driver!r}; {fix}",
                )


def _check_container(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], raw: Mapping[str, Any]
) -> None:
    """The image is an image reference; docker options that break the container's isolation
    need the opt-in (R14)."""
    if "image" in raw:
        problem = image_reference_problem(raw["image"])
        if problem:
            where = _written_in(key_path, entry, "container", "image")
            fail(document, where, f"{short(raw['image'])} {problem}")
    if raw.get(OPT_IN):
        return  # said in a notice wherever the config loads
    for key in ("run_args", "extra_args"):
        for unsafe in unsafe_args(raw.get(key, ())):
            where = (*_written_in(key_path, entry, "container", key), unsafe.index)
            fail(document, where, refusal(unsafe))


def _written_in(key_path: KeyPath, entry: Mapping[str, Any], block: str, key: str) -> KeyPath:
    """Where a key of a block merged key by key was written: the entry's block, else the
    defaults'."""
    return (*key_path, block, key) if key in entry.get(block, {}) else ("defaults", block, key)


def _check_command(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], raw: Mapping[str, Any]
) -> None:
    """Placeholders must exist, and the output must lie inside the attempt's directory."""
    for index, arg in enumerate(raw["argv"]):
        where = _written(key_path, entry, "command", "argv", index)
        check_placeholders(document, where, arg, COMMAND_PLACEHOLDERS)
    output, output_key = raw["output"], _written(key_path, entry, "command", "output")
    check_placeholders(document, output_key, output, COMMAND_PLACEHOLDERS)
    inside = output.removeprefix("{output_dir}/")
    if inside == output or not inside or path_problem(inside, what="output"):
        # Outputs are cleaned before every attempt: anywhere else, that would delete files
        # perfgate does not own.
        fail(
            document,
            output_key,
            f"{output!r} is outside the attempt's output directory; write "
            "'{output_dir}/FILE' (a glob after '{output_dir}/' is fine, '..' is not) and pass "
            "{output_dir} to the program in argv",
        )
    if raw.get("cwd") is not None:
        problem = path_problem(raw["cwd"], what="cwd")
        if problem:
            fail(document, _written(key_path, entry, "command", "cwd"), problem)


def _metric_lists(
    key_path: KeyPath, entry: Mapping[str, Any], defaults: Mapping[str, Any]
) -> tuple[tuple[KeyPath, Sequence[Mapping[str, Any]]], ...]:
    """The defaults' ``metrics`` list, then the entry's, each with the key path it is at."""
    return (("defaults",), defaults.get("metrics", ())), (key_path, entry.get("metrics", ()))


def _merged_metrics(
    key_path: KeyPath, entry: Mapping[str, Any], defaults: Mapping[str, Any]
) -> MergedMetrics:
    """The bucket's further metrics: the defaults' list, each entry's settings merged by name."""
    merged: MergedMetrics = {}
    for where, declared in _metric_lists(key_path, entry, defaults):
        for index, raw in enumerate(declared):
            settings = merged.get(raw["name"], ({}, where))[0]
            merged[raw["name"]] = ({**settings, **raw}, (*where, "metrics", index))
    return merged


def _check_metrics(
    document: YamlDocument,
    key_path: KeyPath,
    entry: Mapping[str, Any],
    defaults: Mapping[str, Any],
    settings: Mapping[str, Any],
    merged: MergedMetrics,
) -> None:
    """Each metric has a name, one figure and a direction; floors name metrics and backends
    the bucket has."""
    for where, declared in _metric_lists(key_path, entry, defaults):
        seen: set[str] = set()
        for index, raw in enumerate(declared):
            here: KeyPath = (*where, "metrics", index)
            name = raw["name"]
            if name in seen:
                fail(document, (*here, "name"), f"metric {name!r} is declared twice in this list")
            seen.add(name)
            if name == PRIMARY:
                fail(
                    document,
                    (*here, "name"),
                    f"{PRIMARY!r} is the name of the 'metric' block; set the primary metric "
                    "there and give this one another name",
                )
    output_format = output_format_of(settings)
    _check_format(document, key_path, entry, settings, merged, output_format)
    paths = {primary_path(settings): PRIMARY}
    for name, (raw, here) in merged.items():
        if output_format is OutputFormat.JSON and ("path" in raw) == ("sum" in raw):
            fail(
                document,
                here,
                f"metric {name!r} needs exactly one of 'path' (one figure) or 'sum' (a list of "
                "figures to add up)",
            )
        if output_format is OutputFormat.JSON and "direction" not in raw:
            fail(
                document,
                here,
                f"metric {name!r} needs a direction: higher (throughput) or lower (a time, "
                "memory); a wrong guess would call every regression an improvement",
            )
        if "benchmarks" in raw:
            continue  # a selection reads what no other metric reads (Bucket.selecting)
        path = metric_path(raw)
        if path in paths:
            fail(
                document,
                here,
                f"metric {name!r} reads {path!r}, which metric {paths[path]!r} reads already; "
                "each metric of a bucket reads its own figure",
            )
        paths[path] = name
    backend_keys = entry_backend_keys(entry)
    _check_per_backend(document, key_path, entry, "floors", backend_keys)
    # A selection's metrics are named by the benchmarks a run reports: no floor names them.
    names = [PRIMARY, *(name for name, (raw, _) in merged.items() if "benchmarks" not in raw)]
    for hardware, per_backend in entry.get("floors", {}).items():
        for backend_key, floors in per_backend.items():
            for index, floor in enumerate(floors):
                name = floor.get("metric", PRIMARY)
                if name not in names:
                    fail(
                        document,
                        (*key_path, "floors", hardware, backend_key, index, "metric"),
                        f"no metric {name!r} in this bucket; use one of: {', '.join(names)}",
                    )
    _check_per_backend(document, key_path, entry, "noise_floor_pct", backend_keys)


def _check_format(
    document: YamlDocument,
    key_path: KeyPath,
    entry: Mapping[str, Any],
    settings: Mapping[str, Any],
    merged: MergedMetrics,
    output_format: OutputFormat,
) -> None:
    """A tool's format selects each metric's benchmark by name, in the tool's direction, and
    knows its unit; the program's own JSON is read at paths, never by benchmark name."""
    declared = [(PRIMARY, settings["metric"], None), *((n, r, w) for n, (r, w) in merged.items())]
    for name, raw, here in declared:

        def at(key: str, raw: Mapping[str, Any] = raw, here: KeyPath | None = here) -> KeyPath:
            if here is not None:
                return (*here, key) if key in raw else here
            if key in raw:
                return _written_in(key_path, entry, "metric", key)
            return (*key_path, "metric") if "metric" in entry else ("defaults", "metric")

        what = "the primary metric" if here is None else f"metric {name!r}"
        if output_format is OutputFormat.JSON:
            for key in ("benchmark", "benchmarks"):
                if key in raw:
                    fail(
                        document,
                        at(key),
                        f"{what} names {'a benchmark' if key == 'benchmark' else 'benchmarks'}, "
                        "which only a tool's output has; set "
                        "command.format to the tool that writes the output (pytest-benchmark, "
                        "google-benchmark, ...) or read the figure with 'path'",
                    )
            continue
        for key in ("path", "sum"):
            if key in raw:
                fail(
                    document,
                    at(key),
                    f"format {output_format} selects {what} by benchmark name; write "
                    f"'benchmark: NAME' (the name {output_format} reports) instead of '{key}'",
                )
        if "benchmark" in raw and "benchmarks" in raw:
            fail(
                document,
                at("benchmarks"),
                f"{what} names one benchmark ('benchmark') and selects others "
                "('benchmarks'); keep one: a selection is a metric per benchmark it matches",
            )
        if "benchmark" not in raw and "benchmarks" not in raw:
            fail(
                document,
                at("benchmark"),
                f"format {output_format} reports many benchmarks: name the one {what} reads "
                "with 'benchmark: NAME' (the name the tool reports), or select several with "
                "'benchmarks: PATTERN'",
            )
        direction = raw.get("direction", output_format.direction)
        if direction != output_format.direction:
            fail(
                document,
                at("direction"),
                f"{output_format} reports figures where {output_format.direction} is better; "
                f"remove {what}'s direction or set it to {output_format.direction}",
            )
        if "unit" not in raw and output_format.unit is None:
            fail(
                document,
                at("unit"),
                f"each entry of a {output_format} file names its own unit: declare the one "
                f"{what} expects with 'unit' (e.g. ms), so a change of unit is an error",
            )


def _check_per_backend(
    document: YamlDocument,
    key_path: KeyPath,
    entry: Mapping[str, Any],
    key: str,
    backend_keys: list[str],
) -> None:
    """A per-hardware table (``floors``, ``noise_floor_pct``) names only this task's backends."""
    for hardware, per_backend in entry.get(key, {}).items():
        for backend_key in per_backend:
            if backend_key not in backend_keys:
                fail(
                    document,
                    (*key_path, key, hardware, backend_key),
                    f"backend {backend_key!r} is not one of this task's backends "
                    f"({', '.join(backend_keys)}); fix the key or add the backend",
                )
