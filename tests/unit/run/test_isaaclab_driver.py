"""The isaaclab driver's decisions: flavour, launcher, task id, presets, command, echo, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.config import Bucket, load_config
from perfgate.errors import ConfigError
from perfgate.result import FailurePhase
from perfgate.run.drivers import get_driver
from perfgate.run.drivers.base import CheckoutUnsupported
from perfgate.run.drivers.isaaclab import (
    MARKERS,
    detect_cli,
    plan_launch,
    presets,
    resolve_task,
    scan_sources,
)
from perfgate.run.drivers.isaaclab_bundle import bundle_files, echo_mismatches, runtime_paths
from perfgate.run.execution import AttemptDirs
from perfgate.run.logs import classify_failure
from tests.fixtures import isaaclab_standin as standin

CONFIG = """
version: 1
defaults:
  driver: isaaclab
  num_envs: 512
  steps: 200
  warmup_steps: 100
  seed: 42
  isaaclab:
    extra_args: [--visualizer, none]
buckets:
  - task: Isaac-Cartpole-Direct
    backends: [{physics: physx}, {physics: newton}]
  - task: IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct
    isaaclab: {task_aliases: [Isaac-Reorient-Cube-Shadow-Camera-Benchmark-Direct]}
    backends:
      - {physics: physx, render: rtx_renderer}
      - {physics: newton, render: rtx_renderer}
      - {physics: physx, render: newton_renderer}
      - {physics: newton, render: newton_renderer}
"""
CAMERA = "IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct"
OLD_CAMERA = "Isaac-Reorient-Cube-Shadow-Camera-Benchmark-Direct"


def buckets(tmp_path: Path, text: str = CONFIG) -> dict[str, Bucket]:
    path = tmp_path / "perfgate.yaml"
    path.write_text(text, encoding="utf-8")
    return {b.id: b for b in load_config(path).buckets}


@pytest.mark.parametrize(
    ("bucket_id", "expected"),
    [
        # Physics is pinned; `newton` alone would be the deprecated *physics* alias.
        ("Isaac-Cartpole-Direct/physx", ("isaacsim_physx",)),
        ("Isaac-Cartpole-Direct/newton", ("newton_mjwarp",)),
        (f"{CAMERA}/physx_rtx_renderer", ("isaacsim_physx", "isaacsim_rtx")),
        (f"{CAMERA}/newton_rtx_renderer", ("newton_mjwarp", "isaacsim_rtx")),
        (f"{CAMERA}/physx_newton_renderer", ("isaacsim_physx", "newton_renderer", "rgb")),
        (f"{CAMERA}/newton_newton_renderer", ("newton_mjwarp", "newton_renderer", "rgb")),
    ],
)
def test_presets_are_current_isaac_lab_tokens_with_physics_pinned(
    tmp_path: Path, bucket_id: str, expected: tuple[str, ...]
) -> None:
    assert presets(buckets(tmp_path)[bucket_id]) == expected


@pytest.mark.parametrize(
    ("bucket_id", "declared", "expected"),
    [
        # Before isaacsim_physx existed PhysX was the default, and RTX the default renderer.
        (f"{CAMERA}/physx_rtx_renderer", {"newton_mjwarp"}, ()),
        (f"{CAMERA}/physx_rtx_renderer", {"isaacsim_rtx_renderer"}, ("isaacsim_rtx_renderer",)),
        (
            f"{CAMERA}/newton_newton_renderer",
            {"newton_renderer"},
            ("newton", "newton_renderer", "rgb"),
        ),
        ("Isaac-Cartpole-Direct/physx", {"isaacsim_physx", "newton_mjwarp"}, ("isaacsim_physx",)),
    ],
)
def test_an_older_checkout_gets_its_own_spelling_of_the_same_presets(
    tmp_path: Path, bucket_id: str, declared: set[str], expected: tuple[str, ...]
) -> None:
    assert presets(buckets(tmp_path)[bucket_id], frozenset(declared)) == expected


@pytest.mark.parametrize(
    "bucket_id", ["Isaac-Cartpole-Direct/physx", f"{CAMERA}/physx_rtx_renderer"]
)
def test_a_checkout_whose_scan_finds_no_preset_gets_the_current_names(
    tmp_path: Path, bucket_id: str
) -> None:
    # Presets declared some way the scan cannot see: the oldest spellings would send nothing
    # for PhysX, which on current develop runs Newton.
    bucket = buckets(tmp_path)[bucket_id]
    assert presets(bucket, frozenset()) == presets(bucket)
    assert presets(bucket, frozenset())[0] == "isaacsim_physx"


def test_render_backend_without_known_presets_needs_them_declared(tmp_path: Path) -> None:
    text = CONFIG.replace("render: rtx_renderer}\n", "render: warp_renderer}\n", 1)
    with pytest.raises(ConfigError, match=r"isaaclab\.presets"):
        presets(buckets(tmp_path, text)[f"{CAMERA}/physx_warp_renderer"])


def test_declared_presets_replace_the_derived_ones_in_every_era(tmp_path: Path) -> None:
    text = CONFIG.replace("extra_args: [--visualizer, none]", "presets: []")
    bucket = buckets(tmp_path, text)["Isaac-Cartpole-Direct/physx"]
    assert presets(bucket) == presets(bucket, frozenset()) == ()


def test_unknown_key_in_the_isaaclab_block_is_an_error(tmp_path: Path) -> None:
    text = CONFIG.replace("extra_args:", "extra_arg:")
    with pytest.raises(ConfigError, match=r"defaults\.isaaclab\.extra_arg: unknown key"):
        buckets(tmp_path, text)


def test_unknown_key_in_a_bucket_container_block_is_an_error(tmp_path: Path) -> None:
    backends = "    backends: [{physics: physx}, {physics: newton}]"
    text = CONFIG.replace(backends, f"{backends}\n    container: {{image: x, gpu: all}}")
    with pytest.raises(ConfigError, match=r"buckets\[0\]\.container\.gpu: unknown key 'gpu'"):
        buckets(tmp_path, text)


def test_bucket_isaaclab_block_merges_over_defaults(tmp_path: Path) -> None:
    spec = buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"].isaaclab
    assert spec is not None
    assert spec.task_aliases == (OLD_CAMERA,)
    assert spec.extra_args == ("--visualizer", "none")
    assert spec.executable is None  # chosen from the checkout at run time


@pytest.mark.parametrize(
    ("old", "new", "where", "says"),
    [
        (
            "  isaaclab:\n    extra_args",
            "  isaaclab:\n    task_aliases: [X]\n    extra_args",
            "defaults.isaaclab.task_aliases",
            "declare them on that task's bucket entry",
        ),
        (
            f"task_aliases: [{OLD_CAMERA}]",
            f"task_aliases: [{CAMERA}]",
            "buckets[1].isaaclab.task_aliases[0]",
            "this entry's own task",
        ),
        (
            f"task_aliases: [{OLD_CAMERA}]",
            f"task_aliases: [{OLD_CAMERA}, Isaac-Cartpole-Direct]",
            "buckets[1].isaaclab.task_aliases[1]",
            "the task of buckets[0]",
        ),
        (
            "    backends: [{physics: physx}, {physics: newton}]",
            f"    isaaclab: {{task_aliases: [{OLD_CAMERA}]}}\n"
            "    backends: [{physics: physx}, {physics: newton}]",
            "buckets[1].isaaclab.task_aliases[0]",
            "already an alias of 'Isaac-Cartpole-Direct'",
        ),
        (
            f"task_aliases: [{OLD_CAMERA}]",
            "task_aliases: [has space]",
            "buckets[1].isaaclab.task_aliases[0]",
            "no '/' or spaces",
        ),
    ],
)
def test_task_aliases_name_one_tasks_other_ids(
    tmp_path: Path, old: str, new: str, where: str, says: str
) -> None:
    assert old in CONFIG
    with pytest.raises(ConfigError) as raised:
        buckets(tmp_path, CONFIG.replace(old, new, 1))
    assert where in str(raised.value) and says in str(raised.value)


def test_the_checkout_says_which_cli_it_offers(tmp_path: Path) -> None:
    current = detect_cli(standin.write_checkout(tmp_path / "current"))
    assert (current.entry, current.steps_flag, current.warmup_flag) == (
        ("benchmark", "runtime"),
        "--num_steps",
        "--warmup_steps",
    )
    older = detect_cli(standin.write_checkout(tmp_path / "older", flavour="frames"))
    assert (older.entry, older.steps_flag, older.warmup_flag) == (
        ("-p", "scripts/benchmarks/runtime.py"),
        "--num_frames",
        "--warmup_frames",
    )


def test_a_checkout_offering_no_cli_names_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(CheckoutUnsupported) as raised:
        detect_cli(tmp_path)
    message = str(raised.value)
    assert standin.ENTRYPOINT in message and standin.SCRIPT in message
    assert "benchmark_non_rl.py" in message  # the oldest era, named as unsupported


def test_an_entry_file_without_step_flags_is_unsupported(tmp_path: Path) -> None:
    script = tmp_path / standin.SCRIPT
    script.parent.mkdir(parents=True)
    script.write_text('parser.add_argument("--task")\n', encoding="utf-8")
    with pytest.raises(CheckoutUnsupported, match="--num_steps/--num_frames"):
        detect_cli(tmp_path)


def test_sources_scan_finds_registered_ids_and_declared_presets(tmp_path: Path) -> None:
    sources = scan_sources(standin.write_checkout(tmp_path / "c", flavour="frames"))
    assert sources is not None
    assert OLD_CAMERA in sources.task_ids and CAMERA not in sources.task_ids
    # Every spelling perfgate may send is looked for, the fallbacks and extras too.
    assert sources.preset_names == {
        "newton_mjwarp", "isaacsim_rtx_renderer", "newton_renderer", "ovrtx_renderer", "rgb"
    }  # fmt: skip
    assert scan_sources(tmp_path / "empty") is None


def test_the_task_id_the_checkout_registers_is_run(tmp_path: Path) -> None:
    bucket = buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"]
    current = scan_sources(standin.write_checkout(tmp_path / "current"))
    older = scan_sources(standin.write_checkout(tmp_path / "older", flavour="frames"))
    assert resolve_task(bucket, current) == CAMERA
    assert resolve_task(bucket, older) == OLD_CAMERA
    # Without aliases the task id is run as declared: the CLI itself says if it is unknown.
    assert resolve_task(buckets(tmp_path)["Isaac-Cartpole-Direct/physx"], None) == (
        "Isaac-Cartpole-Direct"
    )


def test_a_checkout_registering_no_id_a_read_can_see_runs_the_task(tmp_path: Path) -> None:
    # No gym.register at all (or only through code no read can follow): the bucket's task
    # is run, and the benchmark itself answers whether it knows it.
    bucket = buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"]
    empty = standin.write_checkout(tmp_path / "c", tasks=())
    assert resolve_task(bucket, scan_sources(empty)) == CAMERA
    assert plan_launch(empty, bucket).task == CAMERA


def test_registrations_are_read_for_certain_only_where_the_id_is_literal(tmp_path: Path) -> None:
    tasks = tmp_path / "source" / "isaaclab_tasks" / "isaaclab_tasks"
    (tasks / "direct").mkdir(parents=True)
    (tasks / "direct" / "__init__.py").write_text(
        "import atexit\nimport gymnasium as gym\n\n"
        'gym.register(id="Isaac-Literal", entry_point="m:E")\n'
        'gym.register("Isaac-Positional", entry_point="m:E")\n'
        '# gym.register(id="Isaac-Commented-Out", entry_point="m:E")\n'
        '"""gym.register(id="Isaac-In-A-Docstring")"""\n'
        "for n in (1, 2):\n"
        '    gym.register(id=f"Isaac-Stage{n}-v0", entry_point="m:E")\n'
        "atexit.register(print)\n",
        encoding="utf-8",
    )
    (tasks / "helper").mkdir()
    (tasks / "helper" / "__init__.py").write_text(
        "import gymnasium as gym\n\n\ndef add(task_id):\n"
        '    gym.register(id=task_id, entry_point="m:E")\n\n\nadd("Isaac-Handed")\n',
        encoding="utf-8",
    )
    # Test packages are not imported with the tasks: what they register never runs.
    (tasks.parent / "test").mkdir()
    (tasks.parent / "test" / "test_env.py").write_text(
        'import gymnasium as gym\ngym.register(id="Isaac-Test-Only", entry_point="m:E")\n',
        encoding="utf-8",
    )
    sources = scan_sources(tmp_path)
    assert sources is not None
    assert sources.task_ids == {"Isaac-Literal", "Isaac-Positional"}
    assert [(p, w) for p, w, _ in sources.id_patterns] == [
        (r"Isaac\-Stage.+\-v0", "f'Isaac-Stage{n}-v0'")
    ]
    helper = "source/isaaclab_tasks/isaaclab_tasks/helper/__init__.py"
    assert sources.opaque_ids == (("task_id", f"{helper}:5"),)
    assert "Isaac-Handed" in sources.beside_opaque


def test_flags_a_helper_of_the_checkout_adds_count_and_computed_ones_only_doubt(
    tmp_path: Path,
) -> None:
    checkout = standin.write_checkout(tmp_path / "c")
    entry = checkout / standin.ENTRYPOINT
    text = entry.read_text(encoding="utf-8")
    seed = '    parser.add_argument("--seed", type=int, default=None, help="Environment seed.")\n'
    assert seed in text
    entry.write_text(
        text.replace(seed, "    add_common_args(parser)\n") + "\n\nfrom common import *\n",
        encoding="utf-8",
    )
    common = checkout / "source" / "isaaclab" / "isaaclab" / "benchmark" / "common.py"
    common.write_text(
        "def add_common_args(p):\n    add_seed(p)\n\n\n"
        'def add_seed(parser):\n    parser.add_argument("--seed", type=int)\n',
        encoding="utf-8",
    )
    # Two helpers deep, in the checkout: the flag is parsed.
    assert detect_cli(checkout).doubts == ()
    common.write_text(
        'def add_common_args(p):\n    for flag in ("--seed",):\n        p.add_argument(flag)\n',
        encoding="utf-8",
    )
    (doubt,) = detect_cli(checkout).doubts
    assert doubt == (
        f"{entry} may not parse --seed: it adds options under computed names "
        "(source/isaaclab/isaaclab/benchmark/common.py:3), so a read cannot tell"
    )


def test_launch_planning_reads_the_checkout_alone(tmp_path: Path) -> None:
    older = standin.write_checkout(tmp_path / "older", flavour="frames")
    plan = plan_launch(older, buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"])
    assert plan.cli.steps_flag == "--num_frames" and plan.executable == ("./isaaclab.sh",)
    assert (plan.task, plan.presets) == (OLD_CAMERA, ("isaacsim_rtx_renderer",))
    with pytest.raises(CheckoutUnsupported, match="offers no Isaac Lab runtime benchmark"):
        plan_launch(tmp_path / "nothing", buckets(tmp_path)["Isaac-Cartpole-Direct/physx"])


def dirs(tmp_path: Path) -> AttemptDirs:
    return AttemptDirs(number=1, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")


def test_current_command_line_uses_the_checkouts_launcher_and_step_flags(tmp_path: Path) -> None:
    checkout = standin.write_checkout(tmp_path / "c")
    bucket = buckets(tmp_path)[f"{CAMERA}/newton_rtx_renderer"]
    invocation = get_driver("isaaclab").invocation(bucket, dirs(tmp_path), checkout)
    assert invocation.argv == (
        "./isaaclab.sh", "benchmark", "runtime",
        "--task", CAMERA,
        "--num_envs", "512",
        "--num_steps", "200",
        "--warmup_steps", "100",
        "--seed", "42",
        "--benchmark_formatter", "schema",
        "--output_path", str(tmp_path / "out"),
        "presets=newton_mjwarp,isaacsim_rtx",
        "--visualizer", "none",
    )  # fmt: skip
    assert invocation.cwd == checkout
    assert invocation.outputs == (str(tmp_path / "out"),)
    assert invocation.env["PYTHONFAULTHANDLER"] == "1"


def test_older_command_line_runs_the_script_with_frame_flags_and_old_ids(tmp_path: Path) -> None:
    checkout = standin.write_checkout(tmp_path / "c", flavour="frames")
    bucket = buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"]
    argv = get_driver("isaaclab").invocation(bucket, dirs(tmp_path), checkout).argv
    assert argv[:3] == ("./isaaclab.sh", "-p", "scripts/benchmarks/runtime.py")
    assert argv[argv.index("--task") + 1] == OLD_CAMERA
    assert argv[argv.index("--num_frames") + 1] == "200"
    assert argv[argv.index("--warmup_frames") + 1] == "100"
    assert "--num_steps" not in argv
    # The older launcher's --visualizer takes several values: presets go before it.
    assert argv[-3:] == ("presets=isaacsim_rtx_renderer", "--visualizer", "none")


def test_launcher_default_and_override(tmp_path: Path) -> None:
    checkout = standin.write_checkout(tmp_path / "c")
    bucket = buckets(tmp_path)["Isaac-Cartpole-Direct/physx"]
    driver = get_driver("isaaclab")
    assert driver.invocation(bucket, dirs(tmp_path), checkout).argv[0] == "./isaaclab.sh"
    (checkout / "isaaclab.sh").unlink()
    assert driver.invocation(bucket, dirs(tmp_path), checkout).argv[0] == "isaaclab"
    text = CONFIG.replace("extra_args: [--visualizer, none]", "executable: [uv, run, isaaclab]")
    own = buckets(tmp_path, text)["Isaac-Cartpole-Direct/physx"]
    argv = driver.invocation(own, dirs(tmp_path), checkout).argv
    assert argv[:5] == ("uv", "run", "isaaclab", "benchmark", "runtime")


def test_identity_keeps_current_names_whatever_the_checkout(tmp_path: Path) -> None:
    bucket = buckets(tmp_path)[f"{CAMERA}/physx_rtx_renderer"]
    inputs = get_driver("isaaclab").launch_inputs(bucket)
    assert inputs["presets"] == ["isaacsim_physx", "isaacsim_rtx"]
    assert "task_aliases" not in inputs and "executable" not in inputs


def test_runtime_contract_fields_depend_on_backend(tmp_path: Path) -> None:
    all_buckets = buckets(tmp_path)
    always = {
        "versions.isaacsim",
        "versions.isaaclab",
        "versions.torch",
        "versions.warp",
        "hardware.cpu_name",
    }
    assert set(runtime_paths(all_buckets["Isaac-Cartpole-Direct/physx"])) == always | {
        "versions.isaaclab_physx"
    }
    assert set(runtime_paths(all_buckets[f"{CAMERA}/newton_newton_renderer"])) == always | {
        "versions.isaaclab_newton",
        "versions.newton",
        "versions.isaaclab_ov",
    }


def echo(**overrides: Any) -> dict[str, Any]:
    bundle: dict[str, Any] = {
        "run": {
            "task": CAMERA,
            "num_envs": 512,
            "seed": 42,
            "config": {
                "physics_backend": "newton_mjwarp",
                "rendering_backend": "isaacsim_rtx",
                "presets": [],
            },
        },
        "runtime": {"iterations_completed": 200},
        "extra": None,
    }
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split("__")
        node = bundle
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return bundle


SENT = ("newton_mjwarp", "isaacsim_rtx")


def mismatches(tmp_path: Path, bundle: dict[str, Any], task: str = CAMERA) -> list[str]:
    bucket = buckets(tmp_path)[f"{CAMERA}/newton_rtx_renderer"]
    return echo_mismatches(bundle, bucket, task=task, tokens=SENT)


def test_launch_echo_of_the_requested_run_matches(tmp_path: Path) -> None:
    assert mismatches(tmp_path, echo()) == []


@pytest.mark.parametrize(
    "presets_echo",
    [
        ["newton_mjwarp", "isaacsim_rtx"],  # split, as newer bundles list them
        ["presets=newton_mjwarp,isaacsim_rtx"],  # unsplit, as the older CLI echoes them
    ],
)
def test_echoed_presets_of_either_era_are_accepted(tmp_path: Path, presets_echo: list[str]) -> None:
    assert mismatches(tmp_path, echo(run__config__presets=presets_echo)) == []


def test_an_older_id_that_ran_is_the_one_echoed(tmp_path: Path) -> None:
    assert mismatches(tmp_path, echo(run__task=OLD_CAMERA), task=OLD_CAMERA) == []


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"run__seed": 0}, "run.seed=0 (requested 42)"),
        ({"run__task": "Other"}, "run.task='Other'"),
        ({"runtime__iterations_completed": 300}, "runtime.iterations_completed=300"),
        ({"run__config__physics_backend": "physx"}, "run.config.physics_backend='physx'"),
        ({"run__config__physics_backend": "newton"}, "run.config.physics_backend='newton'"),
        ({"run__config__rendering_backend": "none"}, "run.config.rendering_backend='none'"),
        ({"run__config__presets": ["newton_mjwarp"]}, "lacks ['isaacsim_rtx']"),
        ({"run__config__presets": ["presets=newton_mjwarp"]}, "lacks ['isaacsim_rtx']"),
        ({"extra": {"warmup_frames": 50}}, "extra.warmup_frames=50 (requested 100)"),
        ({"extra": {"warmup_steps": 50}}, "extra.warmup_steps=50 (requested 100)"),
        (
            {"runtime__environment_step_timing": {"warmup_steps": 0}},
            "runtime.environment_step_timing.warmup_steps=0",
        ),
    ],
)
def test_launch_echo_mismatch_names_the_field(
    tmp_path: Path, override: dict[str, Any], problem: str
) -> None:
    problems = mismatches(tmp_path, echo(**override))
    assert any(problem in p for p in problems), problems


def test_bundle_files_are_found_by_the_names_isaac_lab_writes(tmp_path: Path) -> None:
    names = [
        "benchmark_runtime_T_2026-05-01_12-00-00-123456_0a1b2c3d.json",  # current, one formatter
        "benchmark_runtime_T_2026-05-01_12-00-01-123456_0a1b2c3d_schema.json",  # several
        "benchmark_runtime_T_2026-05-01_12-00-02.json",  # older: seconds, no hex
    ]
    others = [
        "benchmark_runtime_T_2026-05-01_12-00-01-123456_0a1b2c3d_summary.json",  # a phase list
        "benchmark_runtime_T-Play_2026-05-01_12-00-00-123456_0a1b2c3d.json",  # another task
        "benchmark_runtime_T_2026-05-01_12-00-00-123456_0a1b2c3d.json.tmp",  # half written
        "benchmark_runtime_multigpu_T_2026-05-01_12-00-00-123456_0a1b2c3d.json",
    ]
    for name in names + others:
        (tmp_path / name).write_text("{}")
    assert [p.name for p in bundle_files(tmp_path, "T")] == sorted(names)
    assert bundle_files(tmp_path / "missing", "T") == []


def classify(log: str) -> FailurePhase | None:
    return classify_failure(
        exit_code=1, timed_out=False, wall_s=1.0, timeout_s=600.0, log=log, markers=MARKERS
    )


STEP_FRAME = '  File "/x/isaaclab/benchmark/stepping.py", line 40, in run_runtime_loop\n'
DUMP_FRAME = '  File "/x/isaaclab/benchmark/stepping.py", line 40 in run_runtime_loop\n'
KIT = "[ISAACLAB] KitLauncher initialization complete\n"


@pytest.mark.parametrize(
    ("log", "phase"),
    [
        ("Traceback\nModuleNotFoundError: No module named 'isaaclab_physx'\n", FailurePhase.IMPORT),
        (
            "Traceback\ngymnasium.error.NameNotFound: Environment `T` doesn't exist.\n",
            FailurePhase.IMPORT,
        ),
        ("Traceback\nValueError: Unknown preset(s): isaacsim_physx\n", FailurePhase.IMPORT),
        # A lazy import in gym.make, after Kit started: still the checkout failing to load.
        (KIT + "Traceback\nImportError: cannot import name 'X' from 'y'\n", FailurePhase.IMPORT),
        ("Traceback\nRuntimeError: no rigid body\n", FailurePhase.INIT),
        (KIT + "Traceback\nRuntimeError: no rigid body\n", FailurePhase.INIT),
        ("Traceback\n" + STEP_FRAME + "RuntimeError: diverged\n", FailurePhase.RUNTIME),
        (KIT + "Traceback\n" + STEP_FRAME + "ImportError: lazy\n", FailurePhase.RUNTIME),
        ("Fatal Python error: Segmentation fault\n" + DUMP_FRAME, FailurePhase.RUNTIME),
        ("Traceback\n" + STEP_FRAME + "CUDA_ERROR_ILLEGAL_ADDRESS\n", FailurePhase.DRIVER),
        # The image cannot run it at all: never retried, whatever else the log shows.
        (
            "[ERROR] Unable to find any Python executable at path: '/w/_isaac_sim/python.sh'\n",
            FailurePhase.ENVIRONMENT,
        ),
        ("Do you accept the EULA? (Yes/No): Traceback\nEOFError: EOF\n", FailurePhase.ENVIRONMENT),
        (
            "[Error] [rtx.shaderdb] Failed to initialize rtx::shaderdb::ContextManager\n"
            + KIT
            + "Traceback\nRuntimeError: CudaError: cudaErrorIllegalAddress\n",
            FailurePhase.ENVIRONMENT,
        ),
        # Warp could not create its kernel cache; the lazy task loader's error came last.
        (
            "PermissionError: [Errno 13] Permission denied: '/perfgate/cache/warp/1.9.0'\n"
            "Traceback\nAttributeError: module 'isaaclab.envs.mdp' has no attribute 'joint_pos'\n",
            FailurePhase.ENVIRONMENT,
        ),
        (
            "PermissionError: [Errno 13] Permission denied: '/isaac-sim/kit/cache/shadercache'\n",
            FailurePhase.ENVIRONMENT,
        ),
    ],
)
def test_phase_follows_what_the_runtime_benchmark_prints(log: str, phase: FailurePhase) -> None:
    assert classify(log) == phase
