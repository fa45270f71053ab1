"""Parse and validate ``perfgate.yaml`` into frozen dataclasses (docs/design.md R1)."""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
import reprlib
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from perfgate import jsonfile
from perfgate.backends import VOCABULARIES
from perfgate.errors import ConfigError, UsageError
from perfgate.yamlfile import KeyPath, YamlDocument, format_key_path, load_yaml

if TYPE_CHECKING:
    import jsonschema

DEFAULT_CONFIG = Path("perfgate.yaml")

#: GitHub runs at most 256 jobs from one matrix; the bench job has one per bucket.
MAX_BUCKETS = 256
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
#: What ``image.tags`` and ``image.build.image`` may name; ``image.build.argv`` also ``{image}``.
IMAGE_PLACEHOLDERS = frozenset({"branch", "branch_slug", "branch_leaf", "era_key", "era_short"})
#: Variables kept in the benchmark's environment although their names look like credentials.
DEFAULT_KEEP_ENV = ("TOKENIZERS_PARALLELISM",)


class Mode(StrEnum):
    """The rollout stage the reports name (R8); the exit code tells the verdict in both.

    Advisory: the check is not yet required in branch protection, so a red job informs and
    does not stop a merge. Blocking: branch protection requires it.
    """

    ADVISORY = "advisory"
    BLOCKING = "blocking"


class Direction(StrEnum):
    """Which way is better for a metric."""

    HIGHER = "higher"
    LOWER = "lower"


class ActionRef(StrEnum):
    """How rendered workflows reference perfgate's composite actions."""

    SELF = "self"  # $/actions/NAME: this repository at the running commit, no checkout needed
    LOCAL = "local"  # ./actions/NAME after the checkout: GitHub Enterprise Server, older runners


class PolicyName(StrEnum):
    """Which rule turns a run's samples and its window into a verdict (R5)."""

    CALIBRATED = "calibrated"  # thresholds from a target false-alarm rate (judge/stats.py)
    REFERENCE = "reference"  # the seed's median - k x MAD rule, exactly


class ConfirmMode(StrEnum):
    """How the bench confirms a suspicious run before it may be BLOCKed."""

    # The merge base and the change, alternately on this runner, when the window cannot clear
    # the run; outside a git checkout (no merge base to measure) it falls back to REPEAT.
    PAIRED = "paired"
    REPEAT = "repeat"  # re-measure on the same runner while the rule asks (up to max_repeats)
    OFF = "off"  # only the initial repeats


class AdmissionMode(StrEnum):
    """What admission control does with a sample taken on an unfit machine."""

    ENFORCE = "enforce"  # re-measured, then set aside: never in a window, never behind a BLOCK
    RECORD = "record"  # checked and recorded; nothing is set aside
    OFF = "off"  # not checked


class FloorKind(StrEnum):
    """What crossing a fixed floor does: force a verdict, or only get recorded."""

    BLOCK = "BLOCK"
    WARN = "WARN"
    REPORT = "REPORT"


@dataclass(frozen=True, kw_only=True)
class OraclePolicy:
    """Constants of the window verdict (R5); ``k_*`` are the reference policy's alone."""

    k_warn: float = 2.5
    k_block: float = 4.0
    # Both policies: the smallest drop that may BLOCK (and, calibrated, gain that is IMPROVED).
    min_block_regression_pct: float = 3.0
    noise_floor_pct: float = 0.0
    # Calibrated policy: a whole run moves with its runner's state by at least this much.
    run_noise_floor_pct: float = 0.0


@dataclass(frozen=True, kw_only=True)
class BaselinePolicy:
    """Where baselines live and how large a window must be (R4, R9)."""

    branch: str = "perf-baselines"
    remote: str = "origin"
    min_samples: int = 5
    # The reference policy's window: the nearest samples.
    max_samples: int = 20
    # The calibrated policy's window: the nearest runs, every sample of each.
    min_runs: int = 3
    max_runs: int = 20
    # Runs of history (beyond the window) that runner offsets and whole-run falls are
    # learned from; 0 judges every run against its window as its runner measured it.
    history_runs: int = 200
    # A publish retries lost races and network failures until this much time has passed.
    publish_deadline_minutes: float = 10.0
    # Deprecated (a fixed count is what lost samples); read only to say it is ignored.
    push_retries: int | None = None


@dataclass(frozen=True, kw_only=True)
class FileRef:
    """A file perfgate.yaml names, and where it names it (for errors about the file)."""

    path: Path
    # ``perfgate.yaml:12: gate.calibration``: file, line and key path of the reference.
    where: str
    # The directory the file must lie in once links are resolved (None: anywhere).
    root: Path | None = None


@dataclass(frozen=True, kw_only=True)
class GatePolicy:
    """The gate block of perfgate.yaml."""

    mode: Mode = Mode.ADVISORY
    # The explicit opt-in to green jobs: exit 0 whatever the verdict (R8).
    always_pass: bool = False
    target_branches: tuple[str, ...] = ("main",)
    protected_branches: tuple[str, ...] = ("main",)
    policy: PolicyName = PolicyName.CALIBRATED
    # Calibrated policy: the chance that unchanged code is BLOCKed, per bucket run.
    false_alarm_rate: float = 0.001
    confirm: ConfirmMode = ConfirmMode.PAIRED
    # Confirmation starts only when the window cannot rule out a drop this large (%): a
    # smaller one is left to post-merge detection. At least min_block_regression_pct.
    confirm_drop_pct: float = 5.0
    # Runner minutes of confirmation one run may spend across the whole matrix (None: each
    # bucket only within its own budgets), the most suspicious buckets first.
    budget_minutes: float | None = None
    oracle: OraclePolicy = field(default_factory=OraclePolicy)
    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)
    # gate.calibration: the noise calibration file (None: every bucket uncalibrated).
    calibration: FileRef | None = None

    def runs_to_fill(self, repeats: int) -> int:
        """Recorded runs of ``repeats`` samples each that fill a window the rule can judge
        with (R4): enough samples, and for the calibrated rule enough runs."""
        window = self.baseline
        runs = math.ceil(window.min_samples / max(1, repeats))
        return runs if self.policy is PolicyName.REFERENCE else max(runs, window.min_runs)

    @property
    def window_needs(self) -> str:
        """What a window must hold before the rule judges with it (R4), in words."""
        window = self.baseline
        if self.policy is PolicyName.REFERENCE:
            return f"{window.min_samples} samples"
        return f"{window.min_samples} samples in {window.min_runs} runs"

    def is_protected(self, branch: str | None) -> bool:
        """True when pushes to ``branch`` may write baselines."""
        return branch is not None and any(
            fnmatch.fnmatchcase(branch, pattern) for pattern in self.protected_branches
        )


#: The name of a bucket's ``metric`` block: the figure every surface shows first.
PRIMARY = "primary"


@dataclass(frozen=True, kw_only=True)
class QualifyPolicy:
    """Runner-pool qualification: its design and the limits a stable pool stays within (R15).

    The defaults are the reference qualification's: 5 allocations x 3 samples on at least
    3 runners, and 5 % / 5 % / 5 % / 10 % limits.
    """

    allocations: int = 5
    samples: int = 3
    min_runners: int = 3
    max_pooled_cv_pct: float = 5.0
    max_sample_deviation_pct: float = 5.0
    max_runner_deviation_pct: float = 5.0
    max_block_band_pct: float = 10.0
    # The report's "smallest detectable regression" is blocked with this probability.
    detection_power: float = 0.9


#: Clock-event reasons that mean the GPU ran slower than it can: a sample under one is not
#: a measurement of the code. SW power cap is a GPU's normal operating point under full load.
DEFAULT_THROTTLE_REASONS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
)


@dataclass(frozen=True, kw_only=True)
class GpuAdmission:
    """When a GPU is fit to measure on (``admission.gpu``)."""

    # A busy GPU (not idle) runs its SM and memory clocks at >= this % of their maxima.
    min_clock_pct: float = 90.0
    throttle_reasons: tuple[str, ...] = DEFAULT_THROTTLE_REASONS
    # Before a sample (an idle GPU): hotter will throttle, more power means someone else works.
    max_temperature_c: float | None = 85.0
    max_power_pct: float | None = 60.0
    foreign_processes: bool = True
    ignore_processes: tuple[str, ...] = ()
    ecc_errors: bool = True


@dataclass(frozen=True, kw_only=True)
class CpuAdmission:
    """When a CPU-only runner is fit to measure on (``admission.cpu``); None: recorded only."""

    governor: str | None = None
    max_load_per_cpu: float | None = None


@dataclass(frozen=True, kw_only=True)
class AdmissionPolicy:
    """The ``admission`` block: is the machine fit to measure, before and after each sample?"""

    mode: AdmissionMode = AdmissionMode.ENFORCE
    gpu: GpuAdmission = field(default_factory=GpuAdmission)
    cpu: CpuAdmission = field(default_factory=CpuAdmission)
    # A bucket run waits at most this long in all for an unfit machine, then measures anyway.
    wait_seconds: float = 60.0
    poll_seconds: float = 5.0
    # Contaminated samples a bucket run replaces in all; later ones stay, set aside.
    remeasure: int = 3


@dataclass(frozen=True, kw_only=True)
class Metric:
    """A figure read from a benchmark's output, which way is better, and how it is judged.

    A bucket has one primary metric (its ``metric`` block) and may declare more
    (``metrics``), each judged against its own window (R5).
    """

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

    @property
    def paths(self) -> tuple[str, ...]:
        """The output paths the figure is read from (several for a sum)."""
        return self.sum or (self.path,)


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


#: Placeholders of the era roll's templates: the pushed commit, its branch and the era.
ROLL_PLACEHOLDERS = IMAGE_PLACEHOLDERS | {"sha", "sha7"}
#: Placeholders of ``image.per_commit``: the commit whose image is run.
PER_COMMIT_PLACEHOLDERS = frozenset({"sha", "sha7"})


@dataclass(frozen=True, kw_only=True)
class ImageRoll:
    """How ``perfgate roll-era`` builds and publishes a new era's image (R11).

    The build produces ``build.image``; each of ``refs`` is tagged from it (``tag``) and
    pushed (``push``); the first ref, resolved to its digest where possible, is recorded.
    """

    build: ImageBuild
    refs: tuple[str, ...]
    tag: tuple[str, ...] = ("docker", "tag", "{image}", "{ref}")
    push: tuple[str, ...] = ("docker", "push", "{ref}")
    # Runs first, with the registry secrets in its environment (never on its command line).
    login: tuple[str, ...] | None = None
    # Repository secrets the rendered roll job passes to the roll step, by name (R12).
    secrets: tuple[str, ...] = ()
    runner: tuple[str, ...] = ("ubuntu-latest",)
    timeout_minutes: int = 120


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
    # Prints the digest of ``{image}`` in a registry; None: images are recorded as tagged.
    digest: tuple[str, ...] | None = ("docker", "buildx", "imagetools", "inspect", "{image}")
    roll: ImageRoll | None = None
    # The image the project's own CI built for each commit ("registry/ci:sha-{sha}"): head and
    # merge base each run in their own commit's image, with no checkout mounted over it.
    per_commit: str | None = None
    # How long a bench waits for a commit's image to appear before giving up on it.
    per_commit_wait_minutes: float = 30.0


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

    def most_samples(self, confirm: ConfirmMode) -> int:
        """The samples one run may take against its window: up to max_repeats when it
        confirms by repeats (paired confirmation falls back to repeats), else its repeats."""
        return self.repeats if confirm is ConfirmMode.OFF else self.max_repeats

    @property
    def all_metrics(self) -> tuple[Metric, ...]:
        """The primary metric, then the others in declaration order."""
        return (self.metric, *self.metrics)

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


@dataclass(frozen=True, kw_only=True)
class ReportSpec:
    """The ``report`` block: where the trend site goes after each publish."""

    # Deploy to GitHub Pages; otherwise the push workflow uploads the site as an artifact.
    pages: bool = False
    # The published site's root: the PR summary links each bucket to its page there.
    url: str | None = None

    def page_url(self, file_stem: str) -> str | None:
        """The URL of a bucket's page on the published site, when one is configured."""
        if self.url is None:
            return None
        return f"{self.url.rstrip('/')}/buckets/{file_stem}.html"


@dataclass(frozen=True, kw_only=True)
class AlertsSpec:
    """The ``alerts`` block: post-merge regression alerts on protected branches (R18)."""

    # The chance that unchanged code is alerted as a regression, per bucket-push.
    false_alert_rate: float = 0.001
    # Pushes at the new level, the change's own included, before a regression is alerted.
    confirm_runs: int = 3
    # A suspect range is bisected only when the bisection's runner-minute bound is within
    # this (0: never).
    bisect_max_minutes: float = 600.0


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated perfgate.yaml."""

    path: Path
    gate: GatePolicy
    buckets: tuple[Bucket, ...]
    image: ImageSpec | None = None
    qualify: QualifyPolicy = field(default_factory=QualifyPolicy)
    # workflows.perfgate_source: the pip requirement rendered CI jobs install perfgate from.
    perfgate_source: str | None = None
    # What still works but should change (deprecated keys), each naming file and line.
    notices: tuple[str, ...] = ()
    # workflows.action_ref: how workflows reference the composite actions (self or local).
    action_ref: ActionRef = ActionRef.SELF
    report: ReportSpec = field(default_factory=ReportSpec)
    admission: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    alerts: AlertsSpec = field(default_factory=AlertsSpec)

    def bucket_ids(self) -> tuple[str, ...]:
        """Every bucket id, in declaration order."""
        return tuple(bucket.id for bucket in self.buckets)

    def runner_pools(self) -> tuple[tuple[str, ...], ...]:
        """The distinct runner label sets of the buckets, in order of first appearance."""
        return tuple(dict.fromkeys(bucket.runner for bucket in self.buckets))

    def select(
        self, ids: Iterable[str] = (), tags: Iterable[str] = (), backends: Iterable[str] = ()
    ) -> tuple[Bucket, ...]:
        """Buckets named by id or carrying a tag (all when neither is given), narrowed to
        ``backends``; an unknown id, tag or backend key is an error, never dropped."""
        ids, tags, backends = list(ids), list(tags), list(backends)
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
        known_backends = {bucket.backend_key for bucket in self.buckets}
        unknown_backends = [key for key in backends if key not in known_backends]
        if unknown_backends:
            # A typo must not narrow the scope into a weaker run that still reads as complete.
            raise UsageError(
                f"unknown backend key {', '.join(unknown_backends)} in {self.path}; "
                f"known backend keys: {', '.join(sorted(known_backends))}"
            )
        chosen = tuple(
            bucket
            for bucket in self.buckets
            if ((not ids and not tags) or bucket.id in ids or any(t in bucket.tags for t in tags))
            and (not backends or bucket.backend_key in backends)
        )
        if not chosen:
            raise UsageError(
                f"no bucket of {self.path} is both selected by --bucket/--tag and of backend "
                f"{', '.join(backends)}; widen the selection or drop --backend"
            )
        return chosen


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
    "keep_env": [],
    "repeats": 2,
    "max_repeats": 10,
    "max_pairs": 16,
}


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
    raw_buckets = document.data.get("buckets")
    if isinstance(raw_buckets, list) and len(raw_buckets) > MAX_BUCKETS:
        # Said before any per-bucket work: a huge matrix costs nothing to refuse.
        _too_many_buckets(document, len(raw_buckets))
    _check_values(document)
    _check_schema(document)
    data = document.data
    _check_task_aliases(document, data)
    gate = _gate_policy(document, data.get("gate", {}))
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
    if len(buckets) > MAX_BUCKETS:
        _too_many_buckets(document, len(buckets))
    if gate.baseline.min_samples > gate.baseline.max_samples:
        _fail(
            document,
            ("gate", "baseline", "min_samples"),
            f"min_samples ({gate.baseline.min_samples}) exceeds max_samples "
            f"({gate.baseline.max_samples}); raise max_samples or lower min_samples",
        )
    if gate.baseline.min_runs > gate.baseline.max_runs:
        _fail(
            document,
            ("gate", "baseline", "min_runs"),
            f"min_runs ({gate.baseline.min_runs}) exceeds max_runs ({gate.baseline.max_runs}); "
            "raise max_runs or lower min_runs",
        )
    if gate.oracle.k_warn > gate.oracle.k_block:
        _fail(
            document,
            ("gate", "oracle", "k_warn"),
            f"k_warn ({gate.oracle.k_warn:g}) exceeds k_block ({gate.oracle.k_block:g}), which "
            "would put the block line inside the warn line; make k_block >= k_warn",
        )
    _check_gate(document, gate)
    qualify = _qualify_policy(document, data.get("qualify", {}))
    image = _image_spec(document, data["image"]) if "image" in data else None
    source = data.get("workflows", {}).get("perfgate_source")
    if source is not None and not _PINNED_REQUIREMENT.fullmatch(source):
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
        qualify=qualify,
        perfgate_source=source,
        action_ref=ActionRef(data.get("workflows", {}).get("action_ref", ActionRef.SELF)),
        report=ReportSpec(**data.get("report", {})),
        notices=_deprecations(document, gate),
        admission=_admission_policy(data.get("admission", {})),
        alerts=AlertsSpec(**data.get("alerts", {})),
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


# An exact version, or a git URL ending in a full commit SHA; nothing before or after.
_PINNED_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*\s*===?\s*[A-Za-z0-9.+!_-]+"
    r"|[A-Za-z0-9][A-Za-z0-9._-]*\s*@\s*git\+https://[^\s@]+@[0-9a-f]{40}"
)


# Branch names (git's rules, minus what GitHub's filter syntax gives a meaning: + ? [ ] !).
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_BRANCH = 255


def branch_problem(value: str, *, pattern: bool) -> str | None:
    """Why ``value`` is no usable branch name (or, with ``pattern``, prefix glob); else None.

    A pattern is a branch name, optionally ending in ``*`` or ``**`` (every branch under a
    prefix): the one glob both git's ``fnmatch`` and a workflow ``if:`` can express.
    """
    name = value
    if pattern:
        name = value.removesuffix("**") if value.endswith("**") else value.removesuffix("*")
        if not name and value in ("*", "**"):
            return None
    glob = " optionally ending in '*' or '**'" if pattern else ""
    if len(value) > MAX_BRANCH:
        return f"is {len(value)} characters long; git allows at most {MAX_BRANCH}"
    if not _BRANCH.fullmatch(name):
        return (
            f"is not a branch name{' pattern' if pattern else ''}: use letters, digits, "
            f"'.', '_', '-' and '/'{glob}, starting with a letter, digit or '_'"
        )
    parts = name.split("/")
    last = parts[-1] if not (pattern and name.endswith("/")) else parts[-2]
    if (
        ".." in name
        or "//" in name
        or any(part.startswith(".") for part in parts)
        or last.endswith((".lock", "."))
        or (name.endswith("/") and not pattern)
    ):
        return (
            "is not a valid git branch name (no '..', '//', component starting with '.', "
            "or ending in '/', '.' or '.lock')"
        )
    return None


def path_problem(value: str, *, what: str) -> str | None:
    """Why ``value`` is no path (or glob) relative to the repository root; else None."""
    if value.startswith(("/", "./")) or value in (".", ".."):
        return (
            f"{what} must be relative to the repository root, without a leading '/' or './' "
            f"(write {value.lstrip('./') or 'dir/**'!r})"
        )
    *inner, last = value.split("/")  # a trailing '/' (everything below) leaves last empty
    if "\\" in value or last in (".", "..") or any(p in ("", ".", "..") for p in inner):
        return f"{what} must name a path inside the repository: no '..', '.', '//' or '\\'"
    return None


# An image reference as docker reads one (the distribution project's grammar): a name of
# lower-case path components, optionally behind a registry host[:port], then an optional
# :tag and @digest. Nothing else reaches docker as an image, so no value can read as an
# option or carry a space or a line break.
_IMAGE_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_HOST = (
    r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
    r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
_IMAGE_NAME = re.compile(
    rf"(?:{_IMAGE_HOST}/)?{_IMAGE_PATH_COMPONENT}(?:/{_IMAGE_PATH_COMPONENT})*", re.ASCII
)
_IMAGE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
_IMAGE_DIGEST = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}", re.ASCII
)
_IMAGE_NAME_MAX = 255


def image_reference_problem(value: str) -> str | None:
    """Why ``value`` is no image reference (``[host[:port]/]name[:tag][@digest]``); else None."""
    rest, _, digest = value.partition("@")
    # A ':' after the last '/' starts the tag; one before it is a registry's port.
    name, colon, tag = rest.rpartition(":") if ":" in rest.rpartition("/")[2] else (rest, "", "")
    if not _IMAGE_NAME.fullmatch(name):
        return (
            "is not an image reference: write [registry[:port]/]name[:tag][@sha256:digest], "
            "the name in lower-case letters, digits and '.', '_', '-' between them (never "
            "'-' first, no spaces)"
        )
    if len(name) > _IMAGE_NAME_MAX:
        return f"is not an image reference: its name is over {_IMAGE_NAME_MAX} characters"
    if colon and not _IMAGE_TAG.fullmatch(tag):
        return "is not an image reference: a tag is 1-128 letters, digits, '_', '.' or '-'"
    if "@" in value and not _IMAGE_DIGEST.fullmatch(digest):
        return "is not an image reference: a digest is algorithm:hex, such as sha256:<64 hex>"
    return None


def placeholder_problem(template: str, allowed: Iterable[str]) -> str | None:
    """Why ``template`` cannot be filled with ``allowed`` placeholders; else None."""
    known = sorted(allowed) if isinstance(allowed, frozenset | set) else list(allowed)
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in
                  string.Formatter().parse(template) if name is not None]  # fmt: skip
    except ValueError as exc:
        return f"has an unbalanced brace ({exc}); write {{{{ and }}}} for a literal brace"
    for name, spec, conversion in fields:
        if name not in known or spec or conversion:
            return (
                f"placeholder {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is unknown; use one of "
                + ", ".join("{" + k + "}" for k in known)
            )
    return None


def _check_gate(document: YamlDocument, gate: GatePolicy) -> None:
    for key in ("target_branches", "protected_branches"):
        for index, value in enumerate(getattr(gate, key)):
            problem = branch_problem(value, pattern=True)
            if problem:
                _fail(document, ("gate", key, index), f"{value!r} {problem}")
    problem = branch_problem(gate.baseline.branch, pattern=False)
    if problem:
        _fail(document, ("gate", "baseline", "branch"), f"{gate.baseline.branch!r} {problem}")
    if not _NAME.fullmatch(gate.baseline.remote):
        # A remote starting with '-' would reach git as an option.
        _fail(
            document,
            ("gate", "baseline", "remote"),
            f"{gate.baseline.remote!r} is not a git remote name; use letters, digits, '.', "
            "'_' and '-', starting with a letter or digit (e.g. origin)",
        )


def _too_many_buckets(document: YamlDocument, count: int) -> NoReturn:
    _fail(
        document,
        ("buckets",),
        f"{count} buckets, over GitHub's limit of {MAX_BUCKETS} jobs in one matrix; "
        "split the matrix into several configs or drop buckets",
    )


# -- values that no later step can handle (R14) ------------------------------------------

# C0/C1 controls and the Unicode line and paragraph separators: nothing that ends a line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Program arguments may be multi-line scripts (python -c ...); only NUL cannot be passed.
_ARGV_KEYS = frozenset({"argv", "extra_args", "executable", "probe", "docker"})
MAX_TEXT = 4096


def _walk(value: Any, key_path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
    """Every key (as its path) and every value of a YAML document, depth first, no recursion."""
    stack: list[tuple[KeyPath, Any]] = [(key_path, value)]
    while stack:
        here, item = stack.pop()
        yield here, item
        if isinstance(item, dict):
            stack.extend(((*here, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            indexed = list(enumerate(item))
            stack.extend(((*here, index), child) for index, child in reversed(indexed))


def _check_values(document: YamlDocument) -> None:
    """Refuse what no later step can take: non-finite numbers, odd keys, unsafe text."""
    for key_path, value in _walk(document.data, ()):
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    _fail(
                        document,
                        key_path,
                        f"key {key!r} is {_kind(key)}; keys are names, so quote it",
                    )
                _check_text(document, (*key_path, key), key, is_key=True)
        elif isinstance(value, float) and not math.isfinite(value):
            _fail(
                document,
                key_path,
                f"{value} is not a finite number; write an ordinary number (no .nan or .inf)",
            )
        elif isinstance(value, str):
            _check_text(document, key_path, value, is_key=False)


def _check_text(document: YamlDocument, key_path: KeyPath, text: str, *, is_key: bool) -> None:
    what = "key" if is_key else "value"
    if "${{" in text:
        _fail(
            document,
            key_path,
            f"{what} {_short(text)} contains '${{{{', which GitHub would evaluate as an "
            "expression in a rendered workflow; remove it (perfgate's placeholders are {name})",
        )
    argv = any(part in _ARGV_KEYS for part in key_path if isinstance(part, str))
    control = re.search(r"\x00", text) if argv else _CONTROL.search(text)
    if control:
        _fail(
            document,
            key_path,
            f"{what} {_short(text)} contains the control character "
            f"U+{ord(control.group()):04X}; names, branches, labels and paths are one line "
            "of printable text",
        )
    if len(text) > MAX_TEXT and not argv:
        _fail(
            document,
            key_path,
            f"{what} is {len(text)} characters long; at most {MAX_TEXT} are allowed",
        )


def _fail(document: YamlDocument, key_path: KeyPath, message: str) -> NoReturn:
    # One line always: a caller (or CI log grep) sees the whole problem on it.
    text = f"{document.where(key_path)}: {format_key_path(key_path)}: {message}"
    raise ConfigError(" ".join(text.split()))


def _check_schema(document: YamlDocument) -> None:
    if jsonfile.conforms("perfgate", document.data):
        return  # jsonschema, which names each problem, is for a config the schema refuses
    errors = sorted(
        (e for e in jsonfile.validator("perfgate").iter_errors(document.data) if not _spurious(e)),
        key=_error_rank,
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
    "^[a-z0-9*?_\\[\\]-]+$": "a hardware slug pattern such as l40s or cpu-*",
    "^/[A-Za-z0-9._/-]*$": "an absolute container path of letters, digits, '.', '_', '-', '/'",
    "^[A-Za-z0-9]": "a value starting with a letter or digit (never '-', which is an option)",
    "^[A-Za-z0-9_][A-Za-z0-9_.:-]*$": "host, a user name, or uid:gid",
    '^[A-Za-z0-9"][A-Za-z0-9=,:"_.-]*$': "all, a count, or device=0,1",
    "^[A-Za-z_][A-Za-z0-9_]*$": "an environment variable name such as HF_TOKEN",
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
            # A boolean in an enum is YAML's reading of a bare word (off), not a choice to offer.
            choices = ", ".join(str(c) for c in expected if not isinstance(c, bool))
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
        case "maxLength":
            return f"{value} is {len(str(error.instance))} characters long; use at most {expected}"
        case "maxItems":
            return f"has too many items; at most {expected} are allowed"
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
            definitions = jsonfile.schema("perfgate")["$defs"]
            keys |= _allowed_keys(definitions[ref.removeprefix("#/$defs/")])
    return keys


def _gate_policy(document: YamlDocument, raw: Mapping[str, Any]) -> GatePolicy:
    calibration = raw.get("calibration")
    if calibration is not None:
        # Relative to perfgate.yaml's directory, which is the repository root of a
        # rendered site; nothing outside the tree is read.
        problem = path_problem(calibration, what="gate.calibration")
        if problem:
            _fail(document, ("gate", "calibration"), problem)
    oracle = OraclePolicy(**raw.get("oracle", {}))
    confirm_drop = raw.get("confirm_drop_pct")
    if confirm_drop is not None and confirm_drop < oracle.min_block_regression_pct:
        _fail(
            document,
            ("gate", "confirm_drop_pct"),
            f"confirm_drop_pct ({confirm_drop:g}) is under oracle.min_block_regression_pct "
            f"({oracle.min_block_regression_pct:g}): a drop too small to BLOCK cannot be worth "
            "confirming; raise it to at least the minimum",
        )
    return GatePolicy(
        mode=Mode(raw.get("mode", Mode.ADVISORY)),
        always_pass=bool(raw.get("always_pass", False)),
        target_branches=tuple(raw.get("target_branches", GatePolicy.target_branches)),
        protected_branches=tuple(raw.get("protected_branches", GatePolicy.protected_branches)),
        policy=PolicyName(raw.get("policy", PolicyName.CALIBRATED)),
        false_alarm_rate=float(raw.get("false_alarm_rate", GatePolicy.false_alarm_rate)),
        # YAML 1.1 reads a bare `off` as false: the schema allows it, and it means off.
        confirm=ConfirmMode(raw.get("confirm", ConfirmMode.PAIRED) or ConfirmMode.OFF),
        # Unset: the default, or the minimum drop when that is larger.
        confirm_drop_pct=float(
            confirm_drop
            if confirm_drop is not None
            else max(GatePolicy.confirm_drop_pct, oracle.min_block_regression_pct)
        ),
        budget_minutes=(
            float(raw["budget_minutes"]) if raw.get("budget_minutes") is not None else None
        ),
        oracle=oracle,
        baseline=BaselinePolicy(**raw.get("baseline", {})),
        calibration=None
        if calibration is None
        else FileRef(
            path=document.path.parent / calibration,
            where=f"{document.where(('gate', 'calibration'))}: gate.calibration",
            root=document.path.parent,
        ),
    )


def _qualify_policy(document: YamlDocument, raw: Mapping[str, Any]) -> QualifyPolicy:
    policy = QualifyPolicy(**raw)
    if policy.min_runners > policy.allocations:
        _fail(
            document,
            ("qualify", "min_runners"),
            f"min_runners ({policy.min_runners}) exceeds allocations ({policy.allocations}): "
            "each allocation lands on one runner, so the pool could never qualify; raise "
            "allocations or lower min_runners",
        )
    return policy


def _admission_policy(raw: Mapping[str, Any]) -> AdmissionPolicy:
    """The ``admission`` block over its defaults (the schema checked every key and value)."""
    gpu, cpu = raw.get("gpu", {}), raw.get("cpu", {})
    return AdmissionPolicy(
        # YAML 1.1 reads a bare `off` as false: the schema allows it, and it means off.
        mode=AdmissionMode(raw.get("mode", AdmissionMode.ENFORCE) or AdmissionMode.OFF),
        gpu=GpuAdmission(
            **{
                **gpu,
                **{k: tuple(gpu[k]) for k in ("throttle_reasons", "ignore_processes") if k in gpu},
            }
        ),
        cpu=CpuAdmission(**cpu),
        wait_seconds=float(raw.get("wait_seconds", AdmissionPolicy.wait_seconds)),
        poll_seconds=float(raw.get("poll_seconds", AdmissionPolicy.poll_seconds)),
        remeasure=raw.get("remeasure", AdmissionPolicy.remeasure),
    )


def _expand(
    document: YamlDocument, key_path: KeyPath, entry: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[Bucket]:
    settings = {**defaults, **entry}
    settings["metric"] = {**defaults.get("metric", {}), **entry.get("metric", {})}
    # Driver blocks merge key by key, like metric, so a bucket can override one setting.
    for block in ("isaaclab", "container", "demo"):
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

    def origin(*keys: str | int) -> KeyPath:
        """Where a merged setting was written: the entry, else the defaults."""
        return (*key_path, *keys) if keys[0] in entry else ("defaults", *keys)

    if command is not None:
        _check_command(document, command, origin)
    for index, pattern in enumerate(settings["paths"]):
        problem = path_problem(pattern, what="a paths glob")
        if problem:
            _fail(document, origin("paths", index), f"{pattern!r} can never match: {problem}")
    if driver == "isaaclab":
        for index, pattern in enumerate(settings.get("isaaclab", {}).get("pin_files", ())):
            problem = path_problem(pattern, what="a pin file")
            if problem:
                _fail(document, origin("isaaclab", "pin_files", index), problem)
    if "demo" in entry and driver != "demo":
        _fail(
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
        _fail(
            document,
            origin(written[0]) if written else ("defaults", "max_repeats"),
            f"max_repeats ({settings['max_repeats']}) is under repeats ({settings['repeats']}): "
            "a run always takes its repeats; raise max_repeats to at least repeats",
        )
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
    primary = Metric(
        path=settings["metric"].get("path", Metric.path),
        direction=Direction(settings["metric"].get("direction", Direction.HIGHER)),
        unit=settings["metric"].get("unit", Metric.unit),
    )
    metrics = _metrics(document, key_path, entry, defaults, primary)
    floors = _per_backend(document, key_path, entry, "floors", backend_keys)
    _check_floor_metrics(document, key_path, floors, (primary, *metrics))
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
            metric=primary,
            metrics=metrics,
            paths=tuple(settings["paths"]),
            repeats=settings["repeats"],
            max_repeats=settings["max_repeats"],
            repeat_budget_minutes=(
                float(settings["repeat_budget_minutes"])
                if "repeat_budget_minutes" in settings
                else None
            ),
            max_pairs=settings["max_pairs"],
            pair_budget_minutes=(
                float(settings["pair_budget_minutes"])
                if "pair_budget_minutes" in settings
                else None
            ),
            launch_minutes=(
                float(settings["launch_minutes"]) if "launch_minutes" in settings else None
            ),
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
        for (physics, render), backend_key in zip(backends, backend_keys, strict=True)
    ]


def _metrics(
    document: YamlDocument,
    key_path: KeyPath,
    entry: Mapping[str, Any],
    defaults: Mapping[str, Any],
    primary: Metric,
) -> tuple[Metric, ...]:
    """The bucket's further metrics: the defaults' list, each entry's settings merged by name."""
    merged: dict[str, dict[str, Any]] = {}
    written: dict[str, KeyPath] = {}
    for where, declared in ((("defaults",), defaults), (key_path, entry)):
        seen: set[str] = set()
        for index, raw in enumerate(declared.get("metrics", ())):
            here: KeyPath = (*where, "metrics", index)
            name = raw["name"]
            if name in seen:
                _fail(document, (*here, "name"), f"metric {name!r} is declared twice in this list")
            seen.add(name)
            if name == PRIMARY:
                _fail(
                    document,
                    (*here, "name"),
                    f"{PRIMARY!r} is the name of the 'metric' block; set the primary metric "
                    "there and give this one another name",
                )
            merged[name] = {**merged.get(name, {}), **raw}
            written[name] = here
    metrics = []
    paths = {primary.path: PRIMARY}
    for name, raw in merged.items():
        here = written[name]
        if ("path" in raw) == ("sum" in raw):
            _fail(
                document,
                here,
                f"metric {name!r} needs exactly one of 'path' (one figure) or 'sum' (a list of "
                "figures to add up)",
            )
        if "direction" not in raw:
            _fail(
                document,
                here,
                f"metric {name!r} needs a direction: higher (throughput) or lower (a time, "
                "memory); a wrong guess would call every regression an improvement",
            )
        total = tuple(raw.get("sum", ()))
        path = raw["path"] if "path" in raw else summed_path(total)
        if path in paths:
            _fail(
                document,
                here,
                f"metric {name!r} reads {path!r}, which metric {paths[path]!r} reads already; "
                "each metric of a bucket reads its own figure",
            )
        paths[path] = name
        metrics.append(
            Metric(
                name=name,
                path=path,
                sum=total,
                direction=Direction(raw["direction"]),
                unit=raw.get("unit", ""),
                required=raw.get("required", True),
                gates=raw.get("gate", True),
                min_drop_pct=_optional_float(raw.get("min_drop_pct")),
                noise_floor_pct=_optional_float(raw.get("noise_floor_pct")),
            )
        )
    return tuple(metrics)


def _optional_float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _check_floor_metrics(
    document: YamlDocument,
    key_path: KeyPath,
    floors: Mapping[str, Mapping[str, Any]],
    metrics: Sequence[Metric],
) -> None:
    """A floor names a metric the bucket has (the primary when it names none)."""
    names = [metric.name for metric in metrics]
    for hardware, per_backend in floors.items():
        for backend_key, entries in per_backend.items():
            for index, floor in enumerate(entries):
                name = floor.get("metric", PRIMARY)
                if name not in names:
                    _fail(
                        document,
                        (*key_path, "floors", hardware, backend_key, index, "metric"),
                        f"no metric {name!r} in this bucket; use one of: {', '.join(names)}",
                    )


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


def _check_command(
    document: YamlDocument, command: CommandSpec, origin: Callable[..., KeyPath]
) -> None:
    """Placeholders must exist, and the output must lie inside the attempt's directory."""
    for index, arg in enumerate(command.argv):
        _check_placeholders(document, origin("command", "argv", index), arg, COMMAND_PLACEHOLDERS)
    _check_placeholders(document, origin("command", "output"), command.output, COMMAND_PLACEHOLDERS)
    inside = command.output.removeprefix("{output_dir}/")
    if inside == command.output or not inside or path_problem(inside, what="output"):
        # Outputs are cleaned before every attempt: anywhere else, that would delete files
        # perfgate does not own.
        _fail(
            document,
            origin("command", "output"),
            f"{command.output!r} is outside the attempt's output directory; write "
            "'{output_dir}/FILE' (a glob after '{output_dir}/' is fine, '..' is not) and pass "
            "{output_dir} to the program in argv",
        )
    if command.cwd is not None:
        problem = path_problem(command.cwd, what="cwd")
        if problem:
            _fail(document, origin("command", "cwd"), problem)


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
        environment=dict(raw.get("environment", base.environment)),
    )


def _argv(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _isaaclab_spec(raw: Mapping[str, Any] | None) -> IsaacLabSpec:
    raw = raw or {}
    return IsaacLabSpec(
        executable=_argv(raw["executable"]) if "executable" in raw else None,
        task_aliases=tuple(raw.get("task_aliases", ())),
        extra_args=tuple(raw.get("extra_args", ())),
        presets=tuple(raw["presets"]) if "presets" in raw else None,
        markers=None if "markers" not in raw else phase_markers(raw["markers"], PhaseMarkers()),
        pin_files=tuple(raw["pin_files"]) if "pin_files" in raw else None,
    )


def _check_task_aliases(document: YamlDocument, data: Mapping[str, Any]) -> None:
    """A task's aliases are its own other ids: per bucket entry, never another entry's task."""
    if "task_aliases" in data.get("defaults", {}).get("isaaclab", {}):
        _fail(
            document,
            ("defaults", "isaaclab", "task_aliases"),
            "task aliases are one task's other ids; declare them on that task's bucket entry",
        )
    tasks = {entry["task"]: index for index, entry in enumerate(data["buckets"])}
    claimed: dict[str, str] = {}
    for index, entry in enumerate(data["buckets"]):
        aliases = entry.get("isaaclab", {}).get("task_aliases", [])
        for position, alias in enumerate(aliases):
            here = ("buckets", index, "isaaclab", "task_aliases", position)
            if alias in tasks:
                owner = f"the task of buckets[{tasks[alias]}]"
                if alias == entry["task"]:
                    owner = "this entry's own task"
                _fail(document, here, f"{alias!r} is {owner}; an alias is another id of this task")
            if claimed.setdefault(alias, entry["task"]) != entry["task"]:
                _fail(
                    document,
                    here,
                    f"{alias!r} is already an alias of {claimed[alias]!r}; an id names one task",
                )


def _container_spec(raw: Mapping[str, Any] | None) -> ContainerSpec | None:
    if raw is None:
        return None
    keys = ("image", "checkout_mount", "workdir", "output_mount", "cache_mount", "user", "gpus",
            "writable_checkout", "git_metadata")  # fmt: skip
    known = {key: raw[key] for key in keys if key in raw}
    return ContainerSpec(
        **known,
        docker=_argv(raw.get("docker", list(ContainerSpec.docker))),
        env=tuple(raw.get("env", ())),
        extra_args=tuple(raw.get("extra_args", ())),
        links=dict(raw.get("links", {})),
        caches=dict(raw.get("caches", {})),
        set_env=dict(raw.get("set_env", {})),
        run_args=tuple(raw["run_args"]) if "run_args" in raw else None,
    )


def _image_spec(document: YamlDocument, raw: Mapping[str, Any]) -> ImageSpec:
    if raw.get("env_keys") and "env_file" not in raw:
        _fail(
            document, ("image", "env_keys"), "env_keys needs env_file, the file they are read from"
        )
    if "per_commit" not in raw and "tags" not in raw:
        _fail(
            document,
            ("image",),
            "the image block needs tags (the image per target branch, with era key inputs) "
            "or per_commit (the image your CI builds per commit)",
        )
    if "tags" in raw and not (raw.get("env_keys") or raw.get("files") or raw.get("pins")):
        _fail(
            document,
            ("image",),
            "the era key needs inputs: set env_file with env_keys, files, or pins",
        )
    for key in ("env_file", "manifest"):
        problem = path_problem(raw[key], what=key) if key in raw else None
        if problem:
            _fail(document, ("image", key), problem)
    for index, name in enumerate(raw.get("files", ())):
        problem = path_problem(name, what="an image file")
        if problem:
            _fail(document, ("image", "files", index), problem)
    for index, pin in enumerate(raw.get("pins", ())):
        problem = path_problem(pin["file"], what="a pin file")
        if problem:
            _fail(document, ("image", "pins", index, "file"), problem)
    for pattern, template in raw.get("tags", {}).items():
        problem = branch_problem(pattern, pattern=True)
        if problem:
            _fail(document, ("image", "tags", pattern), f"{pattern!r} {problem}")
        _check_image_template(document, ("image", "tags", pattern), template, IMAGE_PLACEHOLDERS)
    if "per_commit" in raw:
        _check_image_template(document, ("image", "per_commit"), raw["per_commit"],
                              PER_COMMIT_PLACEHOLDERS)  # fmt: skip
    build = raw.get("build")
    if build:
        _check_image_template(document, ("image", "build", "image"), build["image"],
                              IMAGE_PLACEHOLDERS)  # fmt: skip
        for index, arg in enumerate(build["argv"]):
            _check_placeholders(document, ("image", "build", "argv", index), arg,
                                IMAGE_PLACEHOLDERS | {"image"})  # fmt: skip
    digest = _argv(raw["digest"]) if "digest" in raw else ImageSpec.digest
    return ImageSpec(
        env_file=raw.get("env_file"),
        env_keys=tuple(raw.get("env_keys", ())),
        files=tuple(raw.get("files", ())),
        pins=tuple(PinInput(file=p["file"], package=p["package"]) for p in raw.get("pins", ())),
        manifest=raw.get("manifest", ImageSpec.manifest),
        tags=dict(raw.get("tags", {})),
        probe=_argv(raw["probe"]) if "probe" in raw else None,
        build=ImageBuild(argv=tuple(build["argv"]), image=build["image"]) if build else None,
        digest=digest or None,
        roll=_image_roll(document, raw["roll"]) if "roll" in raw else None,
        per_commit=raw.get("per_commit"),
        per_commit_wait_minutes=float(
            raw.get("per_commit_wait_minutes", ImageSpec.per_commit_wait_minutes)
        ),
    )


def _image_roll(document: YamlDocument, raw: Mapping[str, Any]) -> ImageRoll:
    where: KeyPath = ("image", "roll")
    images: list[tuple[KeyPath, str]] = [
        ((*where, "build", "image"), raw["build"]["image"]),
        *(((*where, "refs", i), ref) for i, ref in enumerate(raw["refs"])),
    ]
    for key_path, template in images:
        _check_image_template(document, key_path, template, ROLL_PLACEHOLDERS)
    templates: list[tuple[KeyPath, str, frozenset[str]]] = [
        ((*where, "build", "argv", i), arg, ROLL_PLACEHOLDERS | {"image"})
        for i, arg in enumerate(raw["build"]["argv"])
    ]
    for key in ("tag", "push"):
        templates += [
            ((*where, key, i), arg, ROLL_PLACEHOLDERS | {"image", "ref"})
            for i, arg in enumerate(_argv(raw.get(key, ())))
        ]
    for key_path, template, known in templates:
        _check_placeholders(document, key_path, template, known)
    for index, name in enumerate(raw.get("secrets", ())):
        if name.upper().startswith("GITHUB_"):
            _fail(
                document,
                (*where, "secrets", index),
                f"{name!r}: GitHub reserves the GITHUB_ prefix and the job token is passed "
                "already; name only the registry's secrets",
            )
    return ImageRoll(
        build=ImageBuild(argv=tuple(raw["build"]["argv"]), image=raw["build"]["image"]),
        refs=tuple(raw["refs"]),
        tag=_argv(raw.get("tag", list(ImageRoll.tag))),
        push=_argv(raw.get("push", list(ImageRoll.push))),
        login=_argv(raw["login"]) if "login" in raw else None,
        secrets=tuple(raw.get("secrets", ())),
        runner=tuple(raw.get("runner", ImageRoll.runner)),
        timeout_minutes=raw.get("timeout_minutes", ImageRoll.timeout_minutes),
    )


def _check_placeholders(
    document: YamlDocument, key_path: KeyPath, template: str, known: Iterable[str]
) -> None:
    """A template's ``{name}`` placeholders must all be known ones (R14)."""
    problem = placeholder_problem(template, known)
    if problem:
        _fail(document, key_path, f"{_short(template)} {problem}")


# What an image template's placeholders stand for when it is checked: a branch and an era
# key as a run fills them (a real branch may still make a bad tag: the run checks again).
_IMAGE_EXAMPLE_VALUES = {
    "branch": "main",
    "branch_slug": "main",
    "branch_leaf": "main",
    "era_key": "0123456789abcdef",
    "era_short": "0123456789ab",
    "sha": "0123456789abcdef0123456789abcdef01234567",
    "sha7": "0123456",
}


def _check_image_template(
    document: YamlDocument, key_path: KeyPath, template: str, known: Iterable[str]
) -> None:
    """An image template names known placeholders and, filled, an image reference (R14)."""
    _check_placeholders(document, key_path, template, known)
    problem = image_reference_problem(template.format(**_IMAGE_EXAMPLE_VALUES))
    if problem:
        _fail(document, key_path, f"{_short(template)} {problem}")
