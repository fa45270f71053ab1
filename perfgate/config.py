"""Parse and validate ``perfgate.yaml`` into frozen dataclasses (DESIGN.md R1)."""

from __future__ import annotations

import fnmatch
import json
import re
import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import jsonschema

from perfgate.backends import VOCABULARIES
from perfgate.errors import ConfigError, UsageError
from perfgate.yamlfile import KeyPath, YamlDocument, format_key_path, load_yaml

DEFAULT_CONFIG = Path("perfgate.yaml")


class Mode(StrEnum):
    """Whether regressions fail the gate's exit code (blocking) or are only reported."""

    ADVISORY = "advisory"
    BLOCKING = "blocking"


class Direction(StrEnum):
    """Which way is better for a metric."""

    HIGHER = "higher"
    LOWER = "lower"


class FloorKind(StrEnum):
    """What crossing a fixed floor does: force a verdict, or only get recorded."""

    BLOCK = "BLOCK"
    WARN = "WARN"
    REPORT = "REPORT"


@dataclass(frozen=True, kw_only=True)
class OraclePolicy:
    """Constants of the rolling-window verdict (R5)."""

    k_warn: float = 2.5
    k_block: float = 4.0
    min_block_regression_pct: float = 3.0
    noise_floor_pct: float = 0.0


@dataclass(frozen=True, kw_only=True)
class BaselinePolicy:
    """Where baselines live and how large a window must be (R4, R9)."""

    branch: str = "perf-baselines"
    remote: str = "origin"
    min_samples: int = 5
    max_samples: int = 20
    # A publish retries lost races and network failures until this much time has passed.
    publish_deadline_minutes: float = 10.0
    # Deprecated (a fixed count is what lost samples); read only to say it is ignored.
    push_retries: int | None = None


@dataclass(frozen=True, kw_only=True)
class GatePolicy:
    """The gate block of perfgate.yaml."""

    mode: Mode = Mode.ADVISORY
    target_branches: tuple[str, ...] = ("main",)
    protected_branches: tuple[str, ...] = ("main",)
    oracle: OraclePolicy = field(default_factory=OraclePolicy)
    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)

    @property
    def blocking(self) -> bool:
        """True when BLOCK and HARD_FAILURE fail the exit code."""
        return self.mode is Mode.BLOCKING

    def is_protected(self, branch: str | None) -> bool:
        """True when pushes to ``branch`` may write baselines."""
        return branch is not None and any(
            fnmatch.fnmatchcase(branch, pattern) for pattern in self.protected_branches
        )


@dataclass(frozen=True, kw_only=True)
class Metric:
    """Where the figure is read from a benchmark's output and which way is better."""

    path: str = "runtime.total_fps.mean"
    direction: Direction = Direction.HIGHER
    unit: str = "steps/s"


@dataclass(frozen=True, kw_only=True)
class Floor:
    """A fixed threshold on the metric for one hardware pattern and backend."""

    name: str
    value: float
    kind: FloorKind


@dataclass(frozen=True, kw_only=True)
class PhaseMarkers:
    """Log markers a driver uses to tell which phase a failed run died in."""

    import_error: tuple[str, ...] = ("ModuleNotFoundError", "ImportError")
    driver_error: tuple[str, ...] = ()
    oom: tuple[str, ...] = ("oom-kill", "Out of memory", "MemoryError")
    init_done: str | None = None
    stepping: str | None = None


@dataclass(frozen=True, kw_only=True)
class CommandSpec:
    """The ``command`` driver's program: an argument list (no shell) and its output file."""

    argv: tuple[str, ...]
    output: str
    cwd: str | None = None
    markers: PhaseMarkers = field(default_factory=PhaseMarkers)


@dataclass(frozen=True, kw_only=True)
class IsaacLabSpec:
    """How the ``isaaclab`` driver launches ``isaaclab benchmark runtime``."""

    executable: tuple[str, ...] = ("isaaclab",)
    extra_args: tuple[str, ...] = ()
    # None: derive the Hydra presets from the backend; a tuple replaces them.
    presets: tuple[str, ...] | None = None
    markers: PhaseMarkers | None = None
    pin_files: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """Run the benchmark inside ``docker run``; ``PERFGATE_IMAGE`` overrides ``image``."""

    image: str | None = None
    docker: tuple[str, ...] = ("docker",)
    checkout_mount: str = "/workspace/checkout"
    workdir: str | None = None
    output_mount: str = "/perfgate/output"
    cache_mount: str = "/perfgate/cache"
    # Names only: values travel in the docker client's environment, never on its command line.
    env: tuple[str, ...] = ()
    # "host" runs as the invoking user's uid:gid, so outputs stay removable by the runner.
    user: str = "host"
    gpus: str = "all"
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PinInput:
    """A package version pinned in a checkout file; an era-key input that must resolve."""

    file: str
    package: str


@dataclass(frozen=True, kw_only=True)
class ImageBuild:
    """The last-resort build: an argument list and the image reference it produces."""

    argv: tuple[str, ...]
    image: str


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    """The top-level ``image`` block: era key inputs, manifest, fallbacks (R11)."""

    env_file: str | None = None
    env_keys: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    pins: tuple[PinInput, ...] = ()
    manifest: str = "image_era_manifest.json"
    tags: Mapping[str, str] = field(default_factory=dict)
    probe: tuple[str, ...] | None = None
    build: ImageBuild | None = None


@dataclass(frozen=True, kw_only=True)
class Bucket:
    """One (task, backend) experiment: the unit that is run, judged and stored."""

    task: str
    physics: str
    render: str | None
    driver: str
    runner: tuple[str, ...]
    timeout_minutes: float
    retries: int
    num_envs: int
    steps: int
    warmup_steps: int
    seed: int
    tags: tuple[str, ...]
    baseline_epoch: int
    metric: Metric
    paths: tuple[str, ...] = ()
    command: CommandSpec | None = None
    isaaclab: IsaacLabSpec | None = None
    container: ContainerSpec | None = None
    floors: Mapping[str, tuple[Floor, ...]] = field(default_factory=dict)
    noise_floor_pct: Mapping[str, float] = field(default_factory=dict)

    @property
    def backend_key(self) -> str:
        """``physics``, or ``physics_render`` when a render backend is set (R1)."""
        return f"{self.physics}_{self.render}" if self.render else self.physics

    @property
    def id(self) -> str:
        """``task/backend_key``."""
        return f"{self.task}/{self.backend_key}"

    @property
    def file_stem(self) -> str:
        """The bucket id made safe for a file name."""
        return self.id.replace("/", "__")

    def matrix_entry(self) -> dict[str, object]:
        """The matrix entry other tools (templates, CI) consume for this bucket."""
        return {
            "id": self.id,
            "file_stem": self.file_stem,
            "task": self.task,
            "backend": self.backend_key,
            "physics": self.physics,
            "render": self.render,
            "driver": self.driver,
            "timeout_minutes": self.timeout_minutes,
            "retries": self.retries,
            "runner": list(self.runner),
            "tags": list(self.tags),
            "paths": list(self.paths),
        }

    def floors_for(self, hardware: str) -> tuple[Floor, ...]:
        """Every floor whose hardware pattern matches ``hardware``."""
        return tuple(
            floor
            for pattern, floors in self.floors.items()
            if fnmatch.fnmatchcase(hardware, pattern)
            for floor in floors
        )

    def noise_floor_for(self, hardware: str, default: float) -> float:
        """The noise floor percentage for ``hardware``; the first matching pattern wins."""
        for pattern, pct in self.noise_floor_pct.items():
            if fnmatch.fnmatchcase(hardware, pattern):
                return pct
        return default


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated perfgate.yaml."""

    path: Path
    gate: GatePolicy
    buckets: tuple[Bucket, ...]
    image: ImageSpec | None = None
    # workflows.perfgate_source: the pip requirement rendered CI jobs install perfgate from.
    perfgate_source: str | None = None
    # What still works but should change (deprecated keys), each naming file and line.
    notices: tuple[str, ...] = ()

    def bucket_ids(self) -> tuple[str, ...]:
        """Every bucket id, in declaration order."""
        return tuple(bucket.id for bucket in self.buckets)

    def select(self, ids: Iterable[str] = (), tags: Iterable[str] = ()) -> tuple[Bucket, ...]:
        """Buckets named by id or carrying a tag; all buckets when neither is given."""
        ids, tags = list(ids), list(tags)
        known = set(self.bucket_ids())
        unknown = [bucket_id for bucket_id in ids if bucket_id not in known]
        if unknown:
            raise UsageError(
                f"unknown bucket {', '.join(unknown)} in {self.path}; "
                f"known buckets: {', '.join(sorted(known))}"
            )
        known_tags = {tag for bucket in self.buckets for tag in bucket.tags}
        unknown_tags = [tag for tag in tags if tag not in known_tags]
        if unknown_tags:
            raise UsageError(
                f"unknown tag {', '.join(unknown_tags)} in {self.path}; "
                f"known tags: {', '.join(sorted(known_tags))}"
            )
        if not ids and not tags:
            return self.buckets
        return tuple(
            bucket
            for bucket in self.buckets
            if bucket.id in ids or any(tag in bucket.tags for tag in tags)
        )


_DEFAULT_SETTINGS: dict[str, Any] = {
    "driver": "demo",
    "runner": ["ubuntu-latest"],
    "timeout_minutes": 10,
    "retries": 1,
    "num_envs": 512,
    "steps": 200,
    "warmup_steps": 20,
    "seed": 42,
    "tags": ["always"],
    "baseline_epoch": 1,
    "paths": [],
}


@cache
def config_schema() -> dict[str, Any]:
    """The JSON Schema that perfgate.yaml's structure must satisfy."""
    text = resources.files("perfgate.schemas").joinpath("perfgate.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def load_config(path: Path = DEFAULT_CONFIG) -> Config:
    """Read, validate and expand ``path``; any problem raises ConfigError naming the key path."""
    document = load_yaml(path)
    if not isinstance(document.data, dict):
        _fail(
            document,
            (),
            "expected a mapping with 'version: 1' and a 'buckets' list at the top "
            "(see perfgate/schemas/perfgate.schema.json)",
        )
    _check_schema(document)
    data = document.data
    gate = _gate_policy(data.get("gate", {}))
    defaults = {**_DEFAULT_SETTINGS, **data.get("defaults", {})}
    buckets: list[Bucket] = []
    seen: dict[str, KeyPath] = {}
    for index, entry in enumerate(data["buckets"]):
        expanded = _expand(document, ("buckets", index), entry, defaults)
        for backend_index, bucket in enumerate(expanded):
            here: KeyPath = ("buckets", index, "backends", backend_index)
            if bucket.id in seen:
                first = seen[bucket.id]
                line = document.lines.get(first)
                _fail(
                    document,
                    here,
                    f"duplicate bucket id {bucket.id!r} (first declared at "
                    f"{format_key_path(first)}{f', line {line}' if line else ''}); "
                    "each task/backend pair may appear once, so remove one of them",
                )
            seen[bucket.id] = here
            buckets.append(bucket)
    if not buckets:
        _fail(document, ("buckets",), "the matrix is empty; declare at least one bucket")
    if gate.baseline.min_samples > gate.baseline.max_samples:
        _fail(
            document,
            ("gate", "baseline", "min_samples"),
            f"min_samples ({gate.baseline.min_samples}) exceeds max_samples "
            f"({gate.baseline.max_samples}); raise max_samples or lower min_samples",
        )
    if gate.oracle.k_warn > gate.oracle.k_block:
        _fail(
            document,
            ("gate", "oracle", "k_warn"),
            f"k_warn ({gate.oracle.k_warn:g}) exceeds k_block ({gate.oracle.k_block:g}), which "
            "would put the block line inside the warn line; make k_block >= k_warn",
        )
    image = _image_spec(document, data["image"]) if "image" in data else None
    source = data.get("workflows", {}).get("perfgate_source")
    if source is not None and not _PINNED_REQUIREMENT.search(source):
        _fail(
            document,
            ("workflows", "perfgate_source"),
            f"{source!r} is not pinned; CI must install a fixed perfgate: use "
            "'perfgate==X.Y.Z' or 'perfgate @ git+https://HOST/OWNER/perfgate@<40-hex commit>'",
        )
    return Config(
        path=path,
        gate=gate,
        buckets=tuple(buckets),
        image=image,
        perfgate_source=source,
        notices=_deprecations(document, gate),
    )


def _deprecations(document: YamlDocument, gate: GatePolicy) -> tuple[str, ...]:
    """A notice per deprecated key present: accepted, ignored, and named so it gets removed."""
    if gate.baseline.push_retries is None:
        return ()
    key_path: KeyPath = ("gate", "baseline", "push_retries")
    return (
        f"{document.where(key_path)}: {format_key_path(key_path)} is deprecated and ignored: "
        "a publish now retries until gate.baseline.publish_deadline_minutes (default 10) "
        "have passed; remove push_retries",
    )


# An exact version, or a VCS URL ending in a full commit SHA.
_PINNED_REQUIREMENT = re.compile(r"===?\s*[\w.+!-]+\s*$|@[0-9a-f]{40}\s*$")


def _fail(document: YamlDocument, key_path: KeyPath, message: str) -> NoReturn:
    # One line always: a caller (or CI log grep) sees the whole problem on it.
    text = f"{document.where(key_path)}: {format_key_path(key_path)}: {message}"
    raise ConfigError(" ".join(text.split()))


def _check_schema(document: YamlDocument) -> None:
    validator = jsonschema.Draft202012Validator(config_schema())
    errors = sorted(
        (e for e in validator.iter_errors(document.data) if not _spurious(e)), key=_error_rank
    )
    if not errors:
        return
    error = errors[0]
    key_path: KeyPath = tuple(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        extra = _unknown_keys(error)
        _fail(
            document,
            (*key_path, extra[0]) if extra else key_path,
            f"unknown key {', '.join(repr(k) for k in extra)}; "
            f"allowed keys: {', '.join(sorted(_allowed_keys(_error_schema(error))))}",
        )
    _fail(document, key_path, _describe(error))


def _unknown_keys(error: jsonschema.ValidationError) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    allowed = _allowed_keys(_error_schema(error))
    return sorted(str(key) for key in instance if key not in allowed)


def _spurious(error: jsonschema.ValidationError) -> bool:
    # A key whose value is invalid counts as "unevaluated" too; its own error says more.
    return error.validator == "unevaluatedProperties" and not _unknown_keys(error)


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}


_PATTERN_HINTS = {
    "^[a-z0-9][a-z0-9_]*$": "lower-case letters, digits and underscores (e.g. physx, rtx_renderer)",
    "^[A-Za-z0-9][A-Za-z0-9._-]*$": "letters, digits, '.', '_' and '-' (no '/' or spaces)",
    "^[A-Za-z0-9_]+(\\.[A-Za-z0-9_]+)*$": "a dotted path such as runtime.total_fps.mean",
}


def _describe(error: jsonschema.ValidationError) -> str:
    """A schema violation in words that say what to write instead."""
    value = _short(error.instance)
    expected: Any = error.validator_value
    match error.validator:
        case "type":
            names = [expected] if isinstance(expected, str) else list(expected)
            wanted = " or ".join(_TYPE_NAMES.get(name, name) for name in names)
            if error.instance is None:
                return f"is empty; expected {wanted}"
            return f"{value} is {_kind(error.instance)}; expected {wanted}"
        case "enum":
            choices = ", ".join(str(choice) for choice in expected)
            return f"{value} is not allowed; use one of: {choices}"
        case "const":
            return f"{value} is not supported; use {expected!r}"
        case "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            return f"missing required key {missing!r}"
        case "minItems":
            return f"{value} needs at least {expected} item(s)"
        case "minLength":
            return "must not be empty"
        case "minimum" | "exclusiveMinimum" | "maximum" | "exclusiveMaximum":
            relation = {
                "minimum": ">=",
                "exclusiveMinimum": ">",
                "maximum": "<=",
                "exclusiveMaximum": "<",
            }[str(error.validator)]
            return f"{value} is out of range; use a value {relation} {expected}"
        case "pattern":
            hint = _PATTERN_HINTS.get(str(expected), f"the pattern {expected}")
            return f"{value} is not allowed; use {hint}"
    return str(error.message)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    for python_type, name in ((dict, "object"), (list, "array"), (str, "string"), (int, "integer")):
        if isinstance(value, python_type):
            return _TYPE_NAMES[name]
    if isinstance(value, float):
        return _TYPE_NAMES["number"]
    return "empty" if value is None else f"a {type(value).__name__}"


def _short(value: Any) -> str:
    short = reprlib.Repr()
    short.maxstring = short.maxother = 40
    short.maxdict = short.maxlist = 3
    return short.repr(value)


def _error_schema(error: jsonschema.ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def _error_rank(error: jsonschema.ValidationError) -> tuple[int, int]:
    # The shallowest error first: a wrong type at the top explains the ones below it.
    return (len(error.absolute_path), 0 if error.validator != "required" else 1)


def _allowed_keys(schema: Mapping[str, Any]) -> set[str]:
    keys = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        ref = part.get("$ref", "")
        if ref.startswith("#/$defs/"):
            keys |= _allowed_keys(config_schema()["$defs"][ref.removeprefix("#/$defs/")])
    return keys


def _gate_policy(raw: Mapping[str, Any]) -> GatePolicy:
    return GatePolicy(
        mode=Mode(raw.get("mode", Mode.ADVISORY)),
        target_branches=tuple(raw.get("target_branches", GatePolicy.target_branches)),
        protected_branches=tuple(raw.get("protected_branches", GatePolicy.protected_branches)),
        oracle=OraclePolicy(**raw.get("oracle", {})),
        baseline=BaselinePolicy(**raw.get("baseline", {})),
    )


def _expand(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[Bucket]:
    settings = {**defaults, **entry}
    settings["metric"] = {**defaults.get("metric", {}), **entry.get("metric", {})}
    # Driver blocks merge key by key, like metric, so a bucket can override one setting.
    for block in ("isaaclab", "container"):
        if block in defaults or block in entry:
            settings[block] = {**defaults.get(block, {}), **entry.get(block, {})}
    driver = settings["driver"]
    vocabulary = VOCABULARIES[driver]
    if vocabulary.tasks is not None and entry["task"] not in vocabulary.tasks:
        _fail(
            document,
            (*key_path, "task"),
            f"unknown task {entry['task']!r} for driver {driver!r}; "
            f"use one of: {', '.join(sorted(vocabulary.tasks))}",
        )
    if "command" in entry and driver != "command":
        _fail(
            document,
            (*key_path, "command"),
            f"a 'command' block only applies to driver 'command' (this bucket's driver is "
            f"{driver!r}); remove it or set driver: command",
        )
    command = _command_spec(settings.get("command"))
    if driver == "command" and command is None:
        _fail(document, key_path, "driver 'command' needs a 'command' block with argv and output")
    if driver == "demo" and "container" in settings:
        _fail(
            document,
            (*key_path, "container"),
            "the demo driver runs on the host's Python; use driver 'command' or 'isaaclab' "
            "in a container, or drop the container block",
        )
    backends: list[tuple[str, str | None]] = []
    for index, backend in enumerate(entry["backends"]):
        for role, allowed in (("physics", vocabulary.physics), ("render", vocabulary.render)):
            value = backend.get(role)
            if value is not None and allowed is not None and value not in allowed:
                fix = (
                    f"use one of: {', '.join(sorted(allowed))}"
                    if allowed
                    else f"driver {driver!r} has no {role} backend, so remove '{role}'"
                )
                _fail(
                    document,
                    (*key_path, "backends", index, role),
                    f"unknown {role} backend {value!r} for driver {driver!r}; {fix}",
                )
        backends.append((backend["physics"], backend.get("render")))
    backend_keys = [f"{p}_{r}" if r else p for p, r in backends]
    floors = _per_backend(document, key_path, entry, "floors", backend_keys)
    noise = _per_backend(document, key_path, entry, "noise_floor_pct", backend_keys)
    return [
        Bucket(
            task=entry["task"],
            physics=physics,
            render=render,
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
            metric=Metric(
                path=settings["metric"].get("path", Metric.path),
                direction=Direction(settings["metric"].get("direction", Direction.HIGHER)),
                unit=settings["metric"].get("unit", Metric.unit),
            ),
            paths=tuple(settings["paths"]),
            command=command,
            isaaclab=_isaaclab_spec(settings.get("isaaclab")) if driver == "isaaclab" else None,
            container=_container_spec(settings.get("container")),
            floors={
                hardware: tuple(
                    Floor(
                        name=f["name"],
                        value=float(f["value"]),
                        kind=FloorKind(f.get("verdict", "BLOCK")),
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
        )
        for (physics, render), backend_key in zip(backends, backend_keys, strict=True)
    ]


def _per_backend(
    document: YamlDocument,
    key_path: KeyPath,
    entry: Mapping[str, Any],
    key: str,
    backend_keys: list[str],
) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = entry.get(key, {})
    for hardware, per_backend in table.items():
        for backend_key in per_backend:
            if backend_key not in backend_keys:
                _fail(
                    document,
                    (*key_path, key, hardware, backend_key),
                    f"backend {backend_key!r} is not one of this task's backends "
                    f"({', '.join(backend_keys)}); fix the key or add the backend",
                )
    return table


def _command_spec(raw: Mapping[str, Any] | None) -> CommandSpec | None:
    if raw is None:
        return None
    return CommandSpec(
        argv=tuple(raw["argv"]),
        output=raw["output"],
        cwd=raw.get("cwd"),
        markers=phase_markers(raw.get("markers", {}), PhaseMarkers()),
    )


def phase_markers(raw: Mapping[str, Any], base: PhaseMarkers) -> PhaseMarkers:
    """``base`` with the keys that ``raw`` (a ``markers`` block) sets replaced."""
    return PhaseMarkers(
        import_error=tuple(raw.get("import_error", base.import_error)),
        driver_error=tuple(raw.get("driver_error", base.driver_error)),
        oom=tuple(raw.get("oom", base.oom)),
        init_done=raw.get("init_done", base.init_done),
        stepping=raw.get("stepping", base.stepping),
    )


def _argv(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _isaaclab_spec(raw: Mapping[str, Any] | None) -> IsaacLabSpec:
    raw = raw or {}
    return IsaacLabSpec(
        executable=_argv(raw.get("executable", list(IsaacLabSpec.executable))),
        extra_args=tuple(raw.get("extra_args", ())),
        presets=tuple(raw["presets"]) if "presets" in raw else None,
        markers=None if "markers" not in raw else phase_markers(raw["markers"], PhaseMarkers()),
        pin_files=tuple(raw["pin_files"]) if "pin_files" in raw else None,
    )


def _container_spec(raw: Mapping[str, Any] | None) -> ContainerSpec | None:
    if raw is None:
        return None
    keys = ("image", "checkout_mount", "workdir", "output_mount", "cache_mount", "user", "gpus")
    known = {key: raw[key] for key in keys if key in raw}
    return ContainerSpec(
        **known,
        docker=_argv(raw.get("docker", list(ContainerSpec.docker))),
        env=tuple(raw.get("env", ())),
        extra_args=tuple(raw.get("extra_args", ())),
    )


def _image_spec(document: YamlDocument, raw: Mapping[str, Any]) -> ImageSpec:
    if raw.get("env_keys") and "env_file" not in raw:
        _fail(
            document, ("image", "env_keys"), "env_keys needs env_file, the file they are read from"
        )
    if not (raw.get("env_keys") or raw.get("files") or raw.get("pins")):
        _fail(
            document,
            ("image",),
            "the era key needs inputs: set env_file with env_keys, files, or pins",
        )
    build = raw.get("build")
    return ImageSpec(
        env_file=raw.get("env_file"),
        env_keys=tuple(raw.get("env_keys", ())),
        files=tuple(raw.get("files", ())),
        pins=tuple(PinInput(file=p["file"], package=p["package"]) for p in raw.get("pins", ())),
        manifest=raw.get("manifest", ImageSpec.manifest),
        tags=dict(raw["tags"]),
        probe=_argv(raw["probe"]) if "probe" in raw else None,
        build=ImageBuild(argv=tuple(build["argv"]), image=build["image"]) if build else None,
    )
