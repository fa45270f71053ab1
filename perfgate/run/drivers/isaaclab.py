"""The ``isaaclab`` driver: Isaac Lab's runtime benchmark, in the flavour the checkout offers.

What the checkout offers decides the command (read from the checkout before each attempt):

- the current CLI, ``source/isaaclab/isaaclab/benchmark/entrypoints/runtime.py``, run as
  ``<launcher> benchmark runtime``; the older self-contained ``scripts/benchmarks/runtime.py``,
  run as ``<launcher> -p scripts/benchmarks/runtime.py``. The step and warm-up flags are the
  ones the file defines (``--num_steps``/``--warmup_steps`` or ``--num_frames``/
  ``--warmup_frames``). A checkout with neither is a HARD_FAILURE naming both paths.
- the launcher: ``./isaaclab.sh`` when the checkout has it (it needs nothing on PATH), else
  the ``isaaclab`` console script; ``isaaclab.executable`` overrides both.
- the task id: a bucket's ``isaaclab.task_aliases`` lists the other ids its task has had; the
  first of ``task`` and its aliases that a ``gym.register(id=...)`` in ``source/**/*.py``
  registers is run. The bucket keeps its id (and store identity) whichever runs. The scan
  chooses, it never vetoes: when it finds none of them (a checkout that registers its ids
  through a helper or an f-string), ``task`` is run and the benchmark answers.
- the preset spellings: physics is pinned (``isaacsim_physx``, ``newton_mjwarp``), the
  renderer named (``isaacsim_rtx``, ``newton_renderer`` + ``rgb``, ``ovrtx``); on an older
  checkout that declares none of a backend's current names, its older spelling is sent
  (``newton``, ``isaacsim_rtx_renderer``, ``ovrtx_renderer``) or nothing where that backend
  was the default (PhysX, the RTX renderer). A checkout whose scan finds no preset
  declarations at all gets the current names. The hashed launch keeps the current names.

:func:`plan_launch` makes these choices for a checkout and a bucket without launching
anything, so a hosted job can check a pull request before any GPU minute is spent.

In Isaac Lab's CI image the driver's container profile (:data:`CONTAINER`) does what the
upstream perf-smoke job does by hand: the checkout over ``/workspace/isaaclab`` with the
``_isaac_sim`` link it hides, the image's user (uid 1000), writable Warp, CUDA and Kit
caches, the EULA, headless and CUP variables, ``--init`` and the security options. Its
launches share a warm cache (R16) and its checkouts fetch Git LFS content (the assets).

The bundle's launch echo is checked against what was sent (a mismatch is a HARD_FAILURE):
``run.task``, ``run.num_envs``, ``run.seed``, ``runtime.iterations_completed`` (measured
steps), ``run.config.physics_backend`` / ``rendering_backend`` (schema literals),
``run.config.presets`` when the bundle lists them (older bundles; a ``presets=a,b`` entry
counts as ``a`` and ``b``), and the warm-up count wherever the bundle records it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config import Bucket, ContainerSpec, IsaacLabSpec, PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.run.bundle import (
    OutputError,
    dig,
    finite_figures,
    launch_mismatches,
    load_json,
    metric_stats,
    metric_values,
)
from perfgate.run.container import ContainerProfile
from perfgate.run.drivers.base import CheckoutUnsupported, Measurement
from perfgate.run.execution import AttemptDirs, Invocation

BENCHMARK_FORMATTER = "schema"
ENTRYPOINT = "source/isaaclab/isaaclab/benchmark/entrypoints/runtime.py"
SCRIPT = "scripts/benchmarks/runtime.py"
LAUNCHER = "isaaclab.sh"

# Preset spellings per backend, newest first. The first one the checkout declares is sent;
# None means "send nothing": on checkouts that old, that backend was the default.
PHYSICS_SPELLINGS: Mapping[str, tuple[str | None, ...]] = {
    "physx": ("isaacsim_physx", None),
    "newton": ("newton_mjwarp", "newton"),
}
RENDER_SPELLINGS: Mapping[str, tuple[str | None, ...]] = {
    "rtx_renderer": ("isaacsim_rtx", "isaacsim_rtx_renderer", None),
    "newton_renderer": ("newton_renderer",),
    "ovrtx_renderer": ("ovrtx", "ovrtx_renderer"),
}
# The Newton Warp renderer takes the rgb camera data type (the reference gate sends it).
RENDER_EXTRAS: Mapping[str, tuple[str, ...]] = {"newton_renderer": ("rgb",)}

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

# What the CLI prints (nothing at step start, a launcher line only when Kit runs): a failure
# is `import` when the checkout could not load the benchmark, its task or its presets, and
# `runtime` once a traceback (or, with PYTHONFAULTHANDLER, a fatal-signal dump) shows the
# step loop, stepping.run_runtime_loop, which runs the warm-up and the measured steps.
# What shows the image cannot run it at all is an environment failure, never retried: each
# names its fix. isaaclab.sh's interpreter lookup (source/isaaclab/isaaclab/cli/utils.py
# extract_python_exe); Isaac Sim's EULA prompt, which a container without a terminal cannot
# answer; the RTX shader database, which needs a writable Kit cache (perf-smoke-test.yaml),
# else the renderer crashes later with a CUDA error that reads as a driver fault; a cache
# the container's user cannot write, where Warp's PermissionError may end as a missing
# `mdp.<attr>` (the lazy task loader's error) that reads as a bug in the change.
# Root-owned in the image; the RTX shader database must be able to write it.
KIT_CACHE = "/isaac-sim/kit/cache"
MARKERS = PhaseMarkers(
    import_error=("ModuleNotFoundError:", "ImportError:", "NameNotFound:", "Unknown preset(s):"),
    driver_error=("CudaError", "CUDA_ERROR_"),
    oom=("oom-kill",),
    init_done=None,
    stepping="in run_runtime_loop",
    environment={
        "Unable to find any Python executable at path": (
            "the checkout has no Isaac Sim Python: in the CI image it needs the _isaac_sim "
            "link to /isaac-sim (container.links, the isaaclab driver's default) or an "
            "isaaclab.executable"
        ),
        "Do you accept the EULA?": (
            "Isaac Sim's EULA is not accepted: set OMNI_KIT_ACCEPT_EULA=yes and ACCEPT_EULA=Y "
            "for the benchmark (in a container the isaaclab driver's container.set_env does)"
        ),
        "Failed to initialize rtx::shaderdb::ContextManager": (
            "the RTX shader cache is not writable for the container's user: mount a writable "
            "Kit cache over /isaac-sim/kit/cache (container.caches.kit, the isaaclab driver's "
            "default)"
        ),
        **dict.fromkeys(
            (
                f"Permission denied: '{ContainerSpec.cache_mount}",
                f"Permission denied: '{KIT_CACHE}",
            ),
            "a cache is not writable for the container's user (a directory left by a container "
            "that ran as another user): delete the bucket's cache so the next launch starts cold",
        ),
    },
)

# The CI image's layout and user, and what the upstream perf-smoke job
# (.github/workflows/perf-smoke-test.yaml) passes to `docker run`: docker/.env.base puts
# Isaac Lab at /workspace/isaaclab and Isaac Sim at /isaac-sim; docker/Dockerfile.base links
# _isaac_sim there (the git-ignored link a mounted checkout hides) and leaves
# /isaac-sim/kit/cache root-owned; the image runs as `isaaclab`, uid 1000. WARP_CACHE_PATH
# and CUDA_CACHE_PATH point into the bucket's cache (execution.with_cache_env).
CONTAINER = ContainerProfile(
    checkout_mount="/workspace/isaaclab",
    user="1000:1000",
    links={"_isaac_sim": "/isaac-sim"},
    caches={"kit": KIT_CACHE},
    env={
        "OMNI_KIT_ACCEPT_EULA": "yes",
        "ACCEPT_EULA": "Y",
        # Isaac Sim's container documentation passes it beside ACCEPT_EULA.
        "PRIVACY_CONSENT": "Y",
        "OMNI_KIT_DISABLE_CUP": "1",
        "ISAAC_SIM_HEADLESS": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    },
    run_args=(
        "--security-opt=no-new-privileges:true",
        *("--ulimit", "nofile=65536:65536"),
        *("--ulimit", "nproc=4096:4096"),
    ),
    writable_checkout=True,
    git_metadata=True,
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

_TASK_ID = re.compile(r"""\bid\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""")
# The names a checkout is searched for: every spelling but a backend's last (the fallback).
_PROBED = sorted(
    {
        spelling
        for table in (PHYSICS_SPELLINGS, RENDER_SPELLINGS)
        for spellings in table.values()
        for spelling in spellings[:-1]
        if spelling is not None
    }
)
# A preset is declared as a PresetCfg field (`name: Cfg = ...`) or a keyword (`name=...`).
_PRESET_FIELD = re.compile(r"\b(" + "|".join(_PROBED) + r")\b\s*(?::|=(?!=))")


@dataclass(frozen=True, kw_only=True)
class Cli:
    """How the checkout's runtime benchmark is started and which flags count its steps."""

    entry: tuple[str, ...]
    steps_flag: str
    warmup_flag: str


@dataclass(frozen=True, kw_only=True)
class Sources:
    """What the checkout's ``source/`` declares: registered task ids and preset names."""

    task_ids: frozenset[str]
    preset_names: frozenset[str]


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """How a bucket launches in one checkout, decided before anything runs."""

    cli: Cli
    # The launcher the command starts with (./isaaclab.sh, the console script, or configured).
    executable: tuple[str, ...]
    # The task id the checkout is asked to run (the bucket's, or an alias it registers).
    task: str
    # The Hydra preset names sent, as this checkout spells them.
    presets: tuple[str, ...]

    @property
    def output_name(self) -> str:
        """The RuntimeBundle file the run must write (see :func:`bundle_files`)."""
        return f"benchmark_runtime_{self.task}_<timestamp>[_<hex>].json"


def detect_cli(checkout: Path) -> Cli:
    """The CLI flavour the checkout offers, from the flags its entry file defines."""
    for relative, entry in ((ENTRYPOINT, ("benchmark", "runtime")), (SCRIPT, ("-p", SCRIPT))):
        path = checkout / relative
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        steps = next((f for f in ("--num_steps", "--num_frames") if f'"{f}"' in text), None)
        warmup = next((f for f in ("--warmup_steps", "--warmup_frames") if f'"{f}"' in text), None)
        if steps is None or warmup is None:
            raise CheckoutUnsupported(
                f"{path} defines no step flags (looked for --num_steps/--num_frames and "
                "--warmup_steps/--warmup_frames); this Isaac Lab runtime benchmark is unsupported"
            )
        return Cli(entry=entry, steps_flag=steps, warmup_flag=warmup)
    raise CheckoutUnsupported(
        f"{checkout} offers no Isaac Lab runtime benchmark: looked for {ENTRYPOINT} "
        f"(`isaaclab benchmark runtime`) and {SCRIPT} (--num_frames); older checkouts with only "
        "scripts/benchmarks/benchmark_non_rl.py write no RuntimeBundle and are not supported"
    )


def scan_sources(checkout: Path) -> Sources | None:
    """Task ids and preset names the checkout's ``source/`` declares; None without it."""
    root = checkout / "source"
    if not root.is_dir():
        return None
    task_ids: set[str] = set()
    preset_names: set[str] = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        # Plain substring tests first: most files hold neither, and they are ten times faster.
        if "register(" in text:
            task_ids.update(_TASK_ID.findall(text))
        if any(name in text for name in _PROBED):
            preset_names.update(_PRESET_FIELD.findall(text))
    return Sources(task_ids=frozenset(task_ids), preset_names=frozenset(preset_names))


def spec(bucket: Bucket) -> IsaacLabSpec:
    """The bucket's ``isaaclab`` block, or the defaults."""
    return bucket.isaaclab or IsaacLabSpec()


def _spelling(spellings: Sequence[str | None], declared: frozenset[str] | None) -> str | None:
    # Nothing found (no source/, or presets declared some way the scan cannot see): the
    # current names, never the oldest spellings (PhysX unpinned would run Newton today).
    if not declared:
        return spellings[0]
    return next((s for s in spellings if s is None or s in declared), spellings[-1])


def presets(bucket: Bucket, declared: frozenset[str] | None = None) -> tuple[str, ...]:
    """The Hydra preset tokens for the bucket's backend, spelt as ``declared`` spells them.

    ``declared`` is the set of preset names a checkout declares; None or an empty set gives
    the current names (what is hashed). Presets the bucket declares itself are sent as they
    are.
    """
    own = spec(bucket).presets
    if own is not None:
        return own
    if bucket.physics not in PHYSICS_SPELLINGS:
        raise ConfigError(
            f"bucket {bucket.id}: no Hydra preset is known for physics backend "
            f"{bucket.physics!r}; declare them with isaaclab.presets in perfgate.yaml"
        )
    tokens = [_spelling(PHYSICS_SPELLINGS[bucket.physics], declared)]
    if bucket.render is not None:
        if bucket.render not in RENDER_SPELLINGS:
            raise ConfigError(
                f"bucket {bucket.id}: no Hydra preset is known for render backend "
                f"{bucket.render!r}; declare them with isaaclab.presets in perfgate.yaml"
            )
        tokens += [_spelling(RENDER_SPELLINGS[bucket.render], declared)]
        tokens += RENDER_EXTRAS.get(bucket.render, ())
    return tuple(token for token in tokens if token is not None)


def hydra_args(tokens: Sequence[str]) -> tuple[str, ...]:
    """``presets=<comma list>``, or nothing."""
    return (f"presets={','.join(tokens)}",) if tokens else ()


def resolve_task(bucket: Bucket, sources: Sources | None) -> str:
    """The id to run: the first of ``task`` and its aliases the scan finds registered, else
    ``task`` (the scan chooses, it never vetoes: the benchmark answers for an unknown id)."""
    registered = sources.task_ids if sources is not None else frozenset()
    known = (bucket.task, *spec(bucket).task_aliases)
    return next((task_id for task_id in known if task_id in registered), bucket.task)


def unregistered_ids(sources: Sources | None, bucket: Bucket) -> tuple[str, ...]:
    """The bucket's task id and aliases when a checkout's sources (``scan_sources``)
    register task ids by literal ``gym.register`` calls but none of these (empty
    otherwise): likely a stale id.

    Never a veto (a checkout may register ids through a helper the scan cannot read); the
    hosted check says it so the id is looked at before a GPU minute is spent on it.
    """
    known = (bucket.task, *spec(bucket).task_aliases)
    if sources is None or not sources.task_ids or any(t in sources.task_ids for t in known):
        return ()
    return known


def plan_launch(checkout: Path, bucket: Bucket) -> LaunchPlan:
    """How ``bucket`` launches in ``checkout``: CLI flavour, task id, preset names, output name.

    Reads the checkout only; raises CheckoutUnsupported when it offers no runtime benchmark
    and ConfigError when no preset is known for a backend. The same plan the GPU job acts on.
    """
    cli = detect_cli(checkout)
    sources = scan_sources(checkout)
    return LaunchPlan(
        cli=cli,
        executable=spec(bucket).executable or default_executable(checkout),
        task=resolve_task(bucket, sources),
        presets=presets(bucket, sources.preset_names if sources is not None else None),
    )


def default_executable(checkout: Path) -> tuple[str, ...]:
    """``./isaaclab.sh`` when the checkout has it, else the ``isaaclab`` console script."""
    return (f"./{LAUNCHER}",) if (checkout / LAUNCHER).is_file() else ("isaaclab",)


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


class IsaacLabDriver:
    """Runs the checkout's Isaac Lab runtime benchmark and reads its RuntimeBundle."""

    name = "isaaclab"
    version = "1"
    # The environment's thread settings apply unless the bucket sets ``threads``.
    default_threads: int | None = None
    container = CONTAINER
    # A cold launch recompiles Warp/CUDA kernels and rebuilds the RTX shader cache: minutes.
    warm_cache = True
    # *.usd and *.pt assets are LFS-tracked; the upstream bench job checks out with lfs: true.
    needs_lfs = True
    # perf-smoke-test.yaml keys its JIT cache on the warp-lang pin of the repo-root
    # pyproject.toml (not the isaaclab package's), so a Warp bump never reuses stale kernels.
    cache_pins: tuple[tuple[str, str], ...] = (("pyproject.toml", "warp-lang"),)

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """The runtime benchmark's markers, unless the bucket declares its own."""
        return spec(bucket).markers or MARKERS

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """Presets (current names), formatter and extra arguments change the experiment.

        Neither the executable, the CLI flavour, the task id that ran nor the era's preset
        spelling does: a bucket keeps one identity across Isaac Lab versions.
        """
        return {
            "presets": list(presets(bucket)),
            "benchmark_formatter": BENCHMARK_FORMATTER,
            "extra_args": list(spec(bucket).extra_args),
        }

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """The checkout's CLI with the bucket's launch, writing into the attempt's directory."""
        plan = plan_launch(checkout, bucket)
        cli = plan.cli
        argv = (
            *plan.executable, *cli.entry,
            "--task", plan.task,
            "--num_envs", str(bucket.num_envs),
            cli.steps_flag, str(bucket.steps),
            cli.warmup_flag, str(bucket.warmup_steps),
            "--seed", str(bucket.seed),
            "--benchmark_formatter", BENCHMARK_FORMATTER,
            "--output_path", str(dirs.output_dir),
            # argparse leaves presets=... to Hydra wherever it stands, unless it follows an
            # option taking several values (the older launcher's --visualizer): so before
            # the extra arguments.
            *hydra_args(plan.presets),
            *spec(bucket).extra_args,
        )  # fmt: skip
        return Invocation(
            argv=argv,
            cwd=checkout,
            # A fatal signal (a segfault in a kernel) then dumps the Python stack, so a crash
            # in the step loop is told from one before it.
            env={"PYTHONFAULTHANDLER": "1"},
            outputs=(str(dirs.output_dir),),
        )

    def read(self, bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
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
            error=None
            if stats.value is not None
            else f"{path} has no number at {bucket.metric.path}",
            output_file=path,
        )
