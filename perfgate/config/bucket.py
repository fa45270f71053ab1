"""A bucket of the matrix: its metrics, floors and driver settings (R1, R5, R16)."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from perfgate.config.policy import AlertsSpec, ConfirmMode

#: What a ``command`` driver's argv and output may name (filled per attempt).
COMMAND_PLACEHOLDERS = (
    "output_dir",
    "cache_dir",
    "task",
    "physics",
    "render",
    "backend",
    "num_envs",
    "steps",
    "warmup_steps",
    "seed",
)
#: Variables kept in the benchmark's environment although their names look like credentials.
DEFAULT_KEEP_ENV = ("TOKENIZERS_PARALLELISM",)


class Direction(StrEnum):
    """Which way is better for a metric."""

    HIGHER = "higher"
    LOWER = "lower"


class OutputFormat(StrEnum):
    """What a ``command`` bucket's output file is: the program's own JSON, read at a dotted
    path, or a benchmark tool's output, read by that tool's adapter (``run/drivers/adapters``)."""

    JSON = "json"
    PYTEST_BENCHMARK = "pytest-benchmark"
    GOOGLE_BENCHMARK = "google-benchmark"
    HYPERFINE = "hyperfine"
    PYPERF = "pyperf"
    ASV = "asv"
    CRITERION = "criterion"
    # github-action-benchmark's tool-neutral lists of {name, unit, value, range?, extra?}.
    CUSTOM_SMALLER = "customSmallerIsBetter"
    CUSTOM_BIGGER = "customBiggerIsBetter"

    @property
    def direction(self) -> Direction:
        """Which way is better for the figures this format reports (the tools report times)."""
        if self in (OutputFormat.JSON, OutputFormat.CUSTOM_BIGGER):
            return Direction.HIGHER
        return Direction.LOWER

    @property
    def unit(self) -> str | None:
        """A metric's unit unless it declares one: seconds for a timing tool; None where
        each entry names its own, so the bucket must say which it expects."""
        if self is OutputFormat.JSON:
            return Metric.unit
        if self in (OutputFormat.CUSTOM_SMALLER, OutputFormat.CUSTOM_BIGGER):
            return None
        return "s"


class FloorKind(StrEnum):
    """What crossing a fixed floor does: force a verdict, or only get recorded."""

    BLOCK = "BLOCK"
    WARN = "WARN"
    REPORT = "REPORT"


#: The name of a bucket's ``metric`` block: the figure every surface shows first.
PRIMARY = "primary"
#: Metrics one bucket run may report, selected ones included (the result schema's limit).
MAX_METRICS = 1000


@dataclass(frozen=True, kw_only=True)
class Metric:
    """A figure read from a benchmark's output, which way is better, and how it is judged.

    A bucket has one primary metric (its ``metric`` block) and may declare more
    (``metrics``), each judged against its own window (R5).
    """

    # Where the figure is read: a dotted path in the program's own JSON or, in a bucket
    # whose ``command.format`` is a tool's, the benchmark's name in that tool's output.
    path: str = "runtime.total_fps.mean"
    direction: Direction = Direction.HIGHER
    unit: str = "steps/s"
    name: str = PRIMARY
    # A metric summed from several output paths; ``path`` then names them joined by " + ".
    sum: tuple[str, ...] = ()
    # Missing from a run: a HARD_FAILURE when required, a warning otherwise.
    required: bool = True
    # False: judged and reported, but its verdict never counts toward the bucket's.
    gates: bool = True
    # None: gate.oracle's minimum drop and noise floor.
    min_drop_pct: float | None = None
    noise_floor_pct: float | None = None
    # A selection (``benchmarks:``): name patterns of a tool's benchmarks, each benchmark
    # they match a metric of its own, named by the benchmark (``Bucket.selecting``).
    select: tuple[str, ...] = ()
    # The selection a metric was made by (its name), None for a declared one.
    family: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        """The output paths the figure is read from (several for a sum)."""
        return self.sum or (self.path,)

    def selects(self, benchmark: str) -> bool:
        """Whether this selection's patterns match ``benchmark`` (fnmatch, case-sensitive)."""
        return any(fnmatch.fnmatchcase(benchmark, pattern) for pattern in self.select)

    def selected(self, benchmark: str) -> Metric:
        """The metric this selection makes of ``benchmark``: its settings, the benchmark's name."""
        return replace(self, name=benchmark, path=benchmark, select=(), family=self.name)


def summed_path(paths: Iterable[str]) -> str:
    """How a summed metric's paths are named together (and hashed into its window)."""
    return " + ".join(paths)


@dataclass(frozen=True, kw_only=True)
class Floor:
    """A fixed threshold on one metric (the primary unless named) for a hardware and backend."""

    name: str
    value: float
    kind: FloorKind
    metric: str = PRIMARY


@dataclass(frozen=True, kw_only=True)
class PhaseMarkers:
    """Log markers a driver uses to tell which phase a failed run died in."""

    import_error: tuple[str, ...] = ("ModuleNotFoundError", "ImportError")
    driver_error: tuple[str, ...] = ()
    oom: tuple[str, ...] = ("oom-kill", "Out of memory", "MemoryError")
    init_done: str | None = None
    stepping: str | None = None
    # Log text that shows the environment cannot run the benchmark, each with its fix in
    # one line (phase ``environment``: never retried, since it would fail the same way).
    environment: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CommandSpec:
    """The ``command`` driver's program: an argument list (no shell) and its output file."""

    argv: tuple[str, ...]
    output: str
    format: OutputFormat = OutputFormat.JSON
    cwd: str | None = None
    markers: PhaseMarkers = field(default_factory=PhaseMarkers)


@dataclass(frozen=True, kw_only=True)
class IsaacLabSpec:
    """How the ``isaaclab`` driver launches Isaac Lab's runtime benchmark."""

    # None: ./isaaclab.sh when the checkout has it, else the `isaaclab` console script.
    executable: tuple[str, ...] | None = None
    # The other ids the bucket's task has had; the one the checkout registers is run.
    task_aliases: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = ()
    # None: derive the Hydra presets from the backend; a tuple replaces them.
    presets: tuple[str, ...] | None = None
    markers: PhaseMarkers | None = None
    pin_files: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class DemoSpec:
    """How the ``demo`` driver measures one sample: at least so long, after so much warm-up,
    timing steps in CPU time unless ``timer: wall`` (None: the demo's default, CPU time)."""

    measure_seconds: float = 0.0
    warmup_seconds: float = 0.0
    timer: str | None = None


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """Run the benchmark inside ``docker run``; ``PERFGATE_IMAGE`` overrides ``image``.

    The driver owns the profile its benchmark needs in the image (R16: mounts, user, links,
    caches, environment, docker options); a field left None takes the driver's, and
    ``links``, ``caches`` and ``set_env`` override it key by key (null removes a key).
    """

    image: str | None = None
    docker: tuple[str, ...] = ("docker",)
    checkout_mount: str | None = None
    workdir: str | None = None
    output_mount: str = "/perfgate/output"
    cache_mount: str = "/perfgate/cache"
    # Names only: values travel in the docker client's environment, never on its command line.
    env: tuple[str, ...] = ()
    # "host" runs as the invoking user's uid:gid; "image" as the image's own USER; else a
    # docker --user value (the isaaclab driver's is the image user's uid, 1000:1000).
    user: str | None = None
    gpus: str = "all"
    extra_args: tuple[str, ...] = ()
    # Links made in the checkout before launch (path in the checkout -> target in the image).
    links: Mapping[str, str | None] = field(default_factory=dict)
    # Subdirectories of the bucket's cache mounted writable at these container paths.
    caches: Mapping[str, str | None] = field(default_factory=dict)
    # Environment set in the container, values included (never for secrets: use ``env``).
    set_env: Mapping[str, str | None] = field(default_factory=dict)
    # docker run options replacing the driver's (--security-opt, --ulimit, ...).
    run_args: tuple[str, ...] | None = None
    # Make the checkout writable for the container's user (a+rwX) when it is not.
    writable_checkout: bool | None = None
    # Mount a linked worktree's git directory read-only, so git works inside the container.
    git_metadata: bool | None = None
    # Pass docker options that break the container's isolation (perfgate/config/container.py).
    allow_unsafe_args: bool = False


def argv_of(value: str | list[str]) -> tuple[str, ...]:
    """A program written as one word or as a list, as its argument tuple."""
    return (value,) if isinstance(value, str) else tuple(value)


def _plain_json(value: Any) -> Any:
    """Dataclasses, enums, tuples and mappings of config values as plain JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_json(item) for item in value]
    return value


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
    # Further metrics of the same run, each judged against its own window.
    metrics: tuple[Metric, ...] = ()
    paths: tuple[str, ...] = ()
    # Samples per run: ``repeats`` always, up to ``max_repeats`` to confirm a suspicious run.
    repeats: int = 2
    max_repeats: int = 10
    # No confirmation sample starts once the run's samples took this long (None: no limit).
    repeat_budget_minutes: float | None = None
    # gate.confirm: paired: at most this many base/head pairs, and no pair starts after the
    # budget (None: no limit besides max_pairs).
    max_pairs: int = 16
    pair_budget_minutes: float | None = None
    # Runner minutes of one launch (a sample) before recorded samples' durations say better:
    # what budgets are checked against (None: unknown until samples are recorded).
    launch_minutes: float | None = None
    # Runner minutes a CI job on this bucket's runners takes before its first launch
    # (checkout, image, cache restore): what the worst-case bill counts (None: unknown).
    setup_minutes: float | None = None
    # Threads of numeric libraries in the benchmark (None: the driver's choice).
    threads: int | None = None
    command: CommandSpec | None = None
    isaaclab: IsaacLabSpec | None = None
    demo: DemoSpec | None = None
    container: ContainerSpec | None = None
    # "warm": launches share a cache kept warm across samples and runs; "cold": each attempt
    # compiles from an empty cache; None: the driver's choice (R16).
    cache: str | None = None
    floors: Mapping[str, tuple[Floor, ...]] = field(default_factory=dict)
    noise_floor_pct: Mapping[str, float] = field(default_factory=dict)
    # Environment variables the benchmark keeps although their names look like credentials.
    keep_env: tuple[str, ...] = DEFAULT_KEEP_ENV

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

    def matrix_entry(self) -> dict[str, Any]:
        """Everything this bucket resolves to, as plain JSON for other tools (templates, CI).

        The identity keys come first (``id``, ``file_stem``, ``backend``), then every field
        of the bucket after ``defaults`` were merged: nothing a tool needs is left out.
        """
        fields = {name: _plain_json(getattr(self, name)) for name in self.__dataclass_fields__}
        return {"id": self.id, "file_stem": self.file_stem, "backend": self.backend_key, **fields}

    def taking(self, repeats: int) -> Bucket:
        """This bucket with runs of ``repeats`` samples (a suspicious run may still take up
        to its max_repeats, and never fewer than ``repeats``)."""
        return replace(self, repeats=repeats, max_repeats=max(self.max_repeats, repeats))

    def as_pushed(self, alerts: AlertsSpec) -> Bucket:
        """This bucket as a push to a protected branch measures it: at least
        ``alerts.push_repeats`` samples a run (R18)."""
        pushed = alerts.push_samples(self.repeats)
        return self if pushed == self.repeats else self.taking(pushed)

    def most_samples(self, confirm: ConfirmMode) -> int:
        """The samples one run may take against its window: up to max_repeats when it
        confirms by repeats (paired confirmation falls back to repeats), else its repeats."""
        return self.repeats if confirm is ConfirmMode.OFF else self.max_repeats

    @property
    def all_metrics(self) -> tuple[Metric, ...]:
        """The primary metric, then the others in declaration order."""
        return (self.metric, *self.metrics)

    @property
    def selections(self) -> tuple[Metric, ...]:
        """The metrics that select benchmarks by name pattern (``benchmarks:``), unexpanded."""
        return tuple(metric for metric in self.metrics if metric.select)

    def metric_named(self, name: str) -> Metric | None:
        """The metric ``name``: a declared one, or a selection's for a benchmark it matches."""
        return next((m for m in self.selecting([name]).all_metrics if m.name == name), None)

    def selecting(self, benchmarks: Iterable[str]) -> Bucket:
        """This bucket with each selection replaced by a metric per benchmark of
        ``benchmarks`` it matches, in their order (R5).

        A benchmark another metric reads or names is that metric's, and one two selections
        match is the first's. A bucket without selections is returned as it is.
        """
        if not self.selections:
            return self
        declared = [metric for metric in self.all_metrics if not metric.select]
        taken = {metric.name for metric in declared} | {metric.path for metric in declared}
        names = list(dict.fromkeys(benchmarks))
        metrics: list[Metric] = []
        for metric in self.metrics:
            if not metric.select:
                metrics.append(metric)
                continue
            for name in names:
                if name not in taken and metric.selects(name):
                    taken.add(name)
                    metrics.append(metric.selected(name))
        return replace(self, metrics=tuple(metrics))

    def floors_for(self, hardware: str, metric: str = PRIMARY) -> tuple[Floor, ...]:
        """Every floor of ``metric`` whose hardware pattern matches ``hardware``."""
        return tuple(
            floor
            for pattern, floors in self.floors.items()
            if fnmatch.fnmatchcase(hardware, pattern)
            for floor in floors
            if floor.metric == metric
        )

    def noise_floor_for(self, hardware: str, default: float) -> float:
        """The noise floor percentage for ``hardware``; the first matching pattern wins."""
        for pattern, pct in self.noise_floor_pct.items():
            if fnmatch.fnmatchcase(hardware, pattern):
                return pct
        return default
