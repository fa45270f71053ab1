"""The ``isaaclab`` driver: Isaac Lab's runtime benchmark, in the flavour the checkout offers.

What the checkout offers decides the command (read from the checkout before each attempt):

- the current CLI, ``source/isaaclab/isaaclab/benchmark/entrypoints/runtime.py``, run as
  ``<launcher> benchmark runtime``; the older self-contained ``scripts/benchmarks/runtime.py``,
  run as ``<launcher> -p scripts/benchmarks/runtime.py``. The step and warm-up flags are the
  ones the file's argparse defines (``--num_steps``/``--warmup_steps`` or ``--num_frames``/
  ``--warmup_frames``). A checkout with neither is a HARD_FAILURE naming both paths; one
  whose parser lacks a flag every launch passes is one naming the flags.
- the launcher: ``./isaaclab.sh`` when the checkout has it (it needs nothing on PATH), else
  the ``isaaclab`` console script; ``isaaclab.executable`` overrides both.
- the task id: a bucket's ``isaaclab.task_aliases`` lists the other ids its task has had; the
  first of ``task`` and its aliases that a ``gym.register(id=...)`` in ``source/**/*.py``
  registers is run. The bucket keeps its id (and store identity) whichever runs. When every
  id there is a literal and none is one of these, the launch is a HARD_FAILURE naming them;
  when an id may be registered where no read can see it (a helper, an f-string), ``task``
  is run and the benchmark answers.
- the preset spellings: physics is pinned (``isaacsim_physx``, ``newton_mjwarp``), the
  renderer named (``isaacsim_rtx``, ``newton_renderer`` + ``rgb``, ``ovrtx``); on an older
  checkout that declares none of a backend's current names, its older spelling is sent
  (``newton``, ``isaacsim_rtx_renderer``, ``ovrtx_renderer``) or nothing where that backend
  was the default (PhysX, the RTX renderer); a preset sent that ``source/`` does not declare
  is a HARD_FAILURE naming it. A checkout whose scan finds no preset declarations at all
  gets the current names. The hashed launch keeps the current names.

:func:`plan_launch` makes these choices for a checkout and a bucket without launching
anything, so a hosted job can check a pull request before any GPU minute is spent;
:func:`survey` says every problem of the launch and every doubt of the read
(``isaaclab_scan`` reads the checkout; ``isaaclab_bundle`` reads the bundle back).

In Isaac Lab's CI image the driver's container profile (:data:`CONTAINER`) does what the
upstream perf-smoke job does by hand: the checkout over ``/workspace/isaaclab`` with the
``_isaac_sim`` link it hides, the image's user (uid 1000), writable Warp, CUDA and Kit
caches, the EULA, headless and CUP variables, ``--init`` and the security options. Its
launches share a warm cache (R16) and its checkouts fetch Git LFS content (the assets).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config import Bucket, ContainerSpec, IsaacLabSpec, PhaseMarkers
from perfgate.errors import ConfigError
from perfgate.run.container import ContainerProfile
from perfgate.run.drivers import isaaclab_scan
from perfgate.run.drivers.base import CheckoutUnsupported, Measurement
from perfgate.run.drivers.isaaclab_bundle import read_bundle
from perfgate.run.drivers.isaaclab_scan import Sources, parser_flags, unread_ids
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


# The flags every launch passes (beside the steps and warm-up flags of the CLI's era).
STEP_FLAGS = ("--num_steps", "--num_frames")
WARMUP_FLAGS = ("--warmup_steps", "--warmup_frames")
SENT_FLAGS = ("--task", "--num_envs", "--seed", "--benchmark_formatter", "--output_path")
# Each flag every launch passes, or the alternatives of the CLI's eras.
WANTED_FLAGS = (STEP_FLAGS, WARMUP_FLAGS, *((flag,) for flag in SENT_FLAGS))
# The preset names a checkout is searched for: every spelling, and the extras sent with them.
PROBED = sorted(
    {
        spelling
        for table in (PHYSICS_SPELLINGS, RENDER_SPELLINGS)
        for spellings in table.values()
        for spelling in spellings
        if spelling is not None
    }
    | {extra for extras in RENDER_EXTRAS.values() for extra in extras}
)


@dataclass(frozen=True, kw_only=True)
class Cli:
    """How the checkout's runtime benchmark is started and which flags count its steps."""

    entry: tuple[str, ...]
    steps_flag: str
    warmup_flag: str
    # What the read of its parser could not tell (flags added under computed names).
    doubts: tuple[str, ...] = ()


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


@dataclass(frozen=True, kw_only=True)
class Findings:
    """What a read of the checkout says of one bucket's launch. Texts name no bucket, so
    buckets sharing one are said together."""

    # What certainly stops the launch: each fails it.
    problems: tuple[str, ...] = ()
    # What the read cannot tell: never a failure.
    doubts: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Survey:
    """One bucket's launch read against a checkout: its plan, None when a problem stops it."""

    plan: LaunchPlan | None
    findings: Findings


def detect_cli(checkout: Path) -> Cli:
    """The CLI flavour the checkout offers, from the flags its entry file's parser defines.

    A parser that certainly lacks a flag every launch passes is unsupported, naming each
    missing flag; one the read cannot be sure of (options added under computed names) only
    doubts, unless the steps or warm-up flag is missing: no command can be built then.
    """
    for relative, entry in ((ENTRYPOINT, ("benchmark", "runtime")), (SCRIPT, ("-p", SCRIPT))):
        path = checkout / relative
        if not path.is_file():
            continue
        flags = parser_flags(checkout, path, WANTED_FLAGS)
        missing = [choices for choices in WANTED_FLAGS if not flags.defined.intersection(choices)]
        steps = next((f for f in STEP_FLAGS if f in flags.defined), None)
        warmup = next((f for f in WARMUP_FLAGS if f in flags.defined), None)
        if flags.unread is not None and steps is not None and warmup is not None:
            named = ", ".join("/".join(choices) for choices in missing)
            doubts = (f"{path} may not parse {named}: {flags.unread}, so a read cannot tell",)
            return Cli(
                entry=entry, steps_flag=steps, warmup_flag=warmup, doubts=doubts if missing else ()
            )
        if missing:
            if flags.unread is not None:
                missing = [c for c in missing if c in (STEP_FLAGS, WARMUP_FLAGS)]
            named = ", ".join("/".join(choices) for choices in missing)
            unsure = f" (as far as a read can tell: {flags.unread})" if flags.unread else ""
            them = "it" if len(missing) == 1 else "them"
            raise CheckoutUnsupported(
                f"{path} parses no {named}{unsure}; every launch passes {them}: restore "
                f"{them} in the benchmark's argparse, or run this benchmark with the command "
                "driver"
            )
        assert steps is not None and warmup is not None
        return Cli(entry=entry, steps_flag=steps, warmup_flag=warmup)
    raise CheckoutUnsupported(
        f"{checkout} offers no Isaac Lab runtime benchmark: looked for {ENTRYPOINT} "
        f"(`isaaclab benchmark runtime`) and {SCRIPT} (--num_frames); older checkouts with only "
        "scripts/benchmarks/benchmark_non_rl.py write no RuntimeBundle and are not supported"
    )


def scan_sources(checkout: Path) -> Sources | None:
    """Task ids and preset names the checkout's ``source/`` declares; None without it."""
    return isaaclab_scan.scan_sources(checkout, PROBED)


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
    ``task`` (whether that one is registered is :func:`task_findings`' to say)."""
    registered = sources.task_ids if sources is not None else frozenset()
    known = (bucket.task, *spec(bucket).task_aliases)
    return next((task_id for task_id in known if task_id in registered), bucket.task)


def task_findings(checkout: Path, bucket: Bucket, sources: Sources | None) -> Findings:
    """Whether ``source/`` registers the bucket's task id or an alias: a problem when no
    ``gym.register`` there can register any of them, a doubt when one may (an f-string id
    that fits, an id the read cannot see and none of these spelt beside it), nothing when
    one does."""
    known = (bucket.task, *spec(bucket).task_aliases)
    ids = ", ".join(known)
    if sources is None or not (sources.task_ids or sources.id_patterns or sources.opaque_ids):
        doubt = f"{checkout}/source registers no task id a read can see: ids are not checked"
        return Findings(doubts=(doubt,))
    # Registered, or spelt beside a registration that takes its id from a variable (a
    # helper handed the id): nothing known to be wrong.
    if any(t in sources.task_ids or t in sources.beside_opaque for t in known):
        return Findings()
    fitting = [(written, where) for pattern, written, where in sources.id_patterns
               if any(re.fullmatch(pattern, task_id) for task_id in known)]  # fmt: skip
    if fitting or sources.opaque_ids:
        doubt = (
            f"{checkout}/source registers none of {ids} by a literal gym.register id, and may "
            f"register {bucket.task} {unread_ids(fitting or sources.opaque_ids)}, whose id a "
            "read cannot see: check the id, or add the task's current id to "
            "isaaclab.task_aliases"
        )
        return Findings(doubts=(doubt,))
    close = difflib.get_close_matches(bucket.task, sources.task_ids, n=1)
    hint = f" (the closest it registers: {close[0]})" if close else ""
    problem = (
        f"{checkout}/source registers none of {ids}{hint}: every gym.register id there is "
        "literal, so the benchmark would stop with NameNotFound; add the task's current id "
        "to isaaclab.task_aliases in perfgate.yaml, or restore the id"
    )
    return Findings(problems=(problem,))


def preset_findings(checkout: Path, bucket: Bucket, sources: Sources | None) -> Findings:
    """Whether ``source/`` declares each preset sent for the bucket's backends: a problem
    when it declares presets but none of a backend's spellings, a doubt when the read finds
    no preset declared at all. Presets a bucket declares itself are sent unread."""
    if spec(bucket).presets is not None:
        return Findings()
    declared = sources.preset_names if sources is not None else frozenset()
    tokens = presets(bucket, declared)
    if not declared:
        doubt = (
            f"{checkout}/source declares none of the presets perfgate knows "
            f"({', '.join(PROBED)}) where a read can see them: preset names are not checked"
        )
        return Findings(doubts=(doubt,) if tokens else ())
    missing = [token for token in tokens if token not in declared]
    if not missing:
        return Findings()
    problem = (
        f"{checkout}/source declares no preset {', '.join(missing)} (it declares "
        f"{', '.join(sorted(declared))}): the benchmark would stop with Unknown preset(s); "
        "restore the preset, or give the bucket the checkout's names in isaaclab.presets"
    )
    return Findings(problems=(problem,))


def survey(checkout: Path, bucket: Bucket, sources: Sources | None = None) -> Survey:
    """``bucket``'s launch read against ``checkout``: its plan, every problem that certainly
    stops it (CLI flags, task id, presets) and every doubt of the read.

    ``sources`` is the checkout's :func:`scan_sources`, read here when not given. Raises
    ConfigError when no preset is known for a backend (the configuration's fault).
    """
    problems: list[str] = []
    doubts: list[str] = []
    cli: Cli | None = None
    try:
        cli = detect_cli(checkout)
        doubts += cli.doubts
    except CheckoutUnsupported as exc:
        problems.append(str(exc))
    if sources is None:
        sources = scan_sources(checkout)
    for check in (task_findings, preset_findings):
        found = check(checkout, bucket, sources)
        problems += found.problems
        doubts += found.doubts
    plan = None
    if cli is not None and not problems:
        plan = LaunchPlan(
            cli=cli,
            executable=spec(bucket).executable or default_executable(checkout),
            task=resolve_task(bucket, sources),
            presets=presets(bucket, sources.preset_names if sources is not None else None),
        )
    return Survey(plan=plan, findings=Findings(problems=tuple(problems), doubts=tuple(doubts)))


def plan_launch(checkout: Path, bucket: Bucket, sources: Sources | None = None) -> LaunchPlan:
    """How ``bucket`` launches in ``checkout``: CLI flavour, task id, preset names, output name.

    Reads the checkout only; raises CheckoutUnsupported naming every problem that certainly
    stops the launch (:func:`survey`) and ConfigError when no preset is known for a backend.
    The same plan the GPU job acts on: a launch that cannot start costs no GPU minute.
    """
    found = survey(checkout, bucket, sources)
    if found.plan is None:
        raise CheckoutUnsupported("; ".join(found.findings.problems))
    return found.plan


def default_executable(checkout: Path) -> tuple[str, ...]:
    """``./isaaclab.sh`` when the checkout has it, else the ``isaaclab`` console script."""
    return (f"./{LAUNCHER}",) if (checkout / LAUNCHER).is_file() else ("isaaclab",)


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
        return read_bundle(bucket, dirs, invocation)
