"""The hosted pre-flight, ``python -m perfgate validate --checkout``, against broken Isaac Lab
checkouts: what certainly stops a launch fails the job in seconds, once per problem with the
buckets it stops; what a static read cannot see is said to be unsure, and fails nothing.

The checkouts are tests/fixtures/isaaclab_standin.py's miniature Isaac Lab (the runtime
benchmark's own argparse in its entry file, gym.register calls in task packages, PresetCfg
declarations in env cfgs, where upstream keeps each), broken the way a pull request would.
The configuration is the shipped example's nine buckets.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.fixtures import isaaclab_standin as standin
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "isaaclab" / "perfgate.yaml"
CAMERA = "IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct"
EVERY_BUCKET = (
    "Isaac-Cartpole-Direct/{physx,newton}, Isaac-Velocity-Flat-G1/{physx,newton}, "
    f"IsaacContrib-Factory-GearMesh-Direct/physx, {CAMERA}/{{physx_rtx_renderer,"
    "physx_newton_renderer,newton_rtx_renderer,newton_newton_renderer}"
)


@dataclass(frozen=True, kw_only=True)
class Validated:
    """What ``validate --checkout`` did."""

    code: int
    out: str
    err: str

    @property
    def warnings(self) -> list[str]:
        """The warning lines it printed."""
        return [line for line in self.out.splitlines() if line.startswith("warning: ")]

    @property
    def problems(self) -> list[str]:
        """The lines of its error under the first, one per problem."""
        lines = self.err.splitlines()
        assert lines[0].startswith("perfgate: error: "), self.err
        return [line.strip() for line in lines[1:]]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The shipped Isaac Lab example, without its container block (no image here)."""
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    del data["defaults"]["container"]
    path = tmp_path / "perfgate.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def validate(config: Path, checkout: Path) -> Validated:
    """``python -m perfgate validate --config CONFIG --checkout CHECKOUT`` as the config job
    runs it (off GitHub: plain warning lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "validate", "--config", str(config),
         "--checkout", str(checkout)],
        capture_output=True, text=True, cwd=config.parent, env=env, timeout=120, check=False,
    )  # fmt: skip
    return Validated(code=done.returncode, out=done.stdout, err=done.stderr)


def planned(config: Path, checkout: Path) -> None:
    """The intact checkout passes silently: what a broken one says is the breakage."""
    intact = validate(config, checkout)
    assert intact.code == 0 and intact.warnings == [], intact.out + intact.err
    assert f"{checkout}: every bucket's launch is planned" in intact.out


def rename_in_sources(checkout: Path, old: str, new: str) -> None:
    """Rename ``old`` to ``new`` wherever ``source/`` spells it (a task id's rename)."""
    for path in (checkout / "source").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if old in text:
            path.write_text(text.replace(old, new), encoding="utf-8")


def drop_argument(entry: Path, flag: str) -> None:
    """Delete the ``parser.add_argument(flag, ...)`` statement from ``entry``."""
    text = entry.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and node.value.args[0].value == flag
        ):
            lines = text.splitlines(keepends=True)
            del lines[node.lineno - 1 : node.end_lineno]
            entry.write_text("".join(lines), encoding="utf-8")
            return
    raise AssertionError(f"{entry} adds no {flag}")


def drop_preset(checkout: Path, name: str) -> None:
    """Delete every PresetCfg field ``name`` (and a ``default`` naming it) from ``source/``."""
    for path in (checkout / "source").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        kept = [
            line
            for line in text.splitlines(keepends=True)
            if not line.strip().startswith((f"{name}:", f"{name} =", f"default = {name}"))
        ]
        if len(kept) != len(text.splitlines()):
            path.write_text("".join(kept), encoding="utf-8")


def test_a_renamed_task_id_fails_its_buckets_once_without_a_warning(
    config: Path, tmp_path: Path
) -> None:
    checkout = standin.write_checkout(tmp_path / "isaaclab")
    planned(config, checkout)
    rename_in_sources(checkout, '"Isaac-Velocity-Flat-G1"', '"Isaac-Velocity-Flat-Unitree-G1"')
    found = validate(config, checkout)
    # Every id there is a literal gym.register id: the finding is sure, so it fails the job
    # (before: exit 0 and a warning; the GPU job then stopped with NameNotFound, twice).
    assert found.code == 4, found.err
    assert found.warnings == []
    assert found.err.startswith(f"perfgate: error: 2 of 9 bucket(s) cannot launch on {checkout}:")
    assert found.problems == [
        f"Isaac-Velocity-Flat-G1/{{physx,newton}}: {checkout}/source registers none of "
        "Isaac-Velocity-Flat-G1, Isaac-Velocity-Flat-G1-v0 (the closest it registers: "
        "Isaac-Velocity-Flat-Unitree-G1): every gym.register id there is literal, so the "
        "benchmark would stop with NameNotFound; add the task's current id to "
        "isaaclab.task_aliases in perfgate.yaml, or restore the id"
    ]


@pytest.mark.parametrize("flag", ["--seed", "--benchmark_formatter"])
def test_a_flag_every_launch_passes_missing_from_the_argparse_fails_every_bucket_once(
    config: Path, tmp_path: Path, flag: str
) -> None:
    checkout = standin.write_checkout(tmp_path / "isaaclab")
    planned(config, checkout)
    entry = checkout / standin.ENTRYPOINT
    drop_argument(entry, flag)
    found = validate(config, checkout)
    assert found.code == 4, found.out + found.err
    assert found.warnings == []
    assert found.problems == [
        f"{EVERY_BUCKET}: {entry} parses no {flag}; every launch passes it: restore it in the "
        "benchmark's argparse, or run this benchmark with the command driver"
    ]


def test_a_removed_preset_fails_the_buckets_that_send_it(config: Path, tmp_path: Path) -> None:
    checkout = standin.write_checkout(tmp_path / "isaaclab")
    planned(config, checkout)
    drop_preset(checkout, "newton_renderer")
    found = validate(config, checkout)
    # Before: exit 0, nothing said, and newton_renderer still planned for both buckets.
    assert found.code == 4, found.out + found.err
    assert found.warnings == []
    assert found.problems == [
        f"{CAMERA}/{{physx_newton_renderer,newton_newton_renderer}}: {checkout}/source "
        "declares no preset newton_renderer (it declares isaacsim_physx, isaacsim_rtx, "
        "newton_mjwarp, ovrtx, rgb): the benchmark would stop with Unknown preset(s); restore "
        "the preset, or give the bucket the checkout's names in isaaclab.presets"
    ]


@pytest.mark.parametrize(
    ("flavour", "flag", "alternatives", "kept"),
    [
        ("current", "--warmup_steps", "--warmup_steps/--warmup_frames", "--num_steps"),
        ("frames", "--num_frames", "--num_steps/--num_frames", "--warmup_frames"),
    ],
)
def test_a_missing_step_flag_is_named_once_and_the_flag_still_there_is_not(
    config: Path, tmp_path: Path, flavour: str, flag: str, alternatives: str, kept: str
) -> None:
    # The older era registers the ids the example lists as aliases.
    checkout = standin.write_checkout(tmp_path / "isaaclab", flavour=flavour)
    planned(config, checkout)
    entry = checkout / (standin.ENTRYPOINT if flavour == "current" else standin.SCRIPT)
    drop_argument(entry, flag)
    found = validate(config, checkout)
    # Before: one line of about 3,000 characters, "defines no step flags" nine times over.
    assert found.code == 4
    assert found.problems == [
        f"{EVERY_BUCKET}: {entry} parses no {alternatives}; every launch passes it: restore it "
        "in the benchmark's argparse, or run this benchmark with the command driver"
    ]
    assert kept not in found.err and "step flags" not in found.err
    assert found.err.count(str(entry)) == 1


def test_ids_a_read_cannot_see_are_said_to_be_unsure_and_fail_nothing(
    config: Path, tmp_path: Path
) -> None:
    # Tasks registered through a helper: gym.register(id=task_id) inside it, each id passed
    # to the helper. Renaming one is invisible to a static read, so it is a doubt, not a
    # failure; the sure findings beside it still fail.
    checkout = standin.write_checkout(tmp_path / "isaaclab", registration="helper")
    planned(config, checkout)
    rename_in_sources(checkout, "'Isaac-Velocity-Flat-G1'", "'Isaac-Velocity-Flat-Unitree-G1'")
    found = validate(config, checkout)
    assert found.code == 0, found.err
    tasks = Path(standin.TASKS_ROOT)
    assert found.warnings == [
        f"warning: Isaac-Velocity-Flat-G1/{{physx,newton}}: {checkout}/source registers none "
        "of Isaac-Velocity-Flat-G1, Isaac-Velocity-Flat-G1-v0 by a literal gym.register id, "
        "and may register Isaac-Velocity-Flat-G1 through gym.register(id=task_id) at "
        f"{tasks}/benchmark/shadow_hand_camera/__init__.py:5, "
        f"{tasks}/contrib/factory/__init__.py:5 and 2 more, whose id a read cannot see: check "
        "the id, or add the task's current id to isaaclab.task_aliases"
    ]
    drop_argument(checkout / standin.ENTRYPOINT, "--seed")
    both = validate(config, checkout)
    assert both.code == 4 and len(both.warnings) == 1 and len(both.problems) == 1
    assert "parses no --seed" in both.problems[0]


def test_an_f_string_id_that_may_register_the_task_is_unsure(config: Path, tmp_path: Path) -> None:
    checkout = standin.write_checkout(tmp_path / "isaaclab")
    planned(config, checkout)
    # A loop over an f-string id, as task packages outside upstream register variants.
    init = checkout / standin.TASKS_ROOT / "core" / "cartpole" / "__init__.py"
    module = "isaaclab_tasks.core.cartpole"
    init.write_text(
        "import gymnasium as gym\n\n"
        'for _name in ("Cartpole",):\n'
        "    gym.register(\n"
        '        id=f"Isaac-{_name}-Direct",\n'
        f'        entry_point="{module}.env:Env",\n'
        "        disable_env_checker=True,\n"
        f'        kwargs={{"env_cfg_entry_point": "{module}.env_cfg:EnvCfg"}},\n'
        "    )\n",
        encoding="utf-8",
    )
    found = validate(config, checkout)
    assert found.code == 0, found.err
    where = Path(standin.TASKS_ROOT, "core", "cartpole", "__init__.py")
    assert found.warnings == [
        f"warning: Isaac-Cartpole-Direct/{{physx,newton}}: {checkout}/source registers none of "
        "Isaac-Cartpole-Direct, Isaac-Cartpole-Direct-v0 by a literal gym.register id, and may "
        "register Isaac-Cartpole-Direct through gym.register(id=f'Isaac-{_name}-Direct') at "
        f"{where}:4, whose id a read cannot see: check the id, or add the task's current id "
        "to isaaclab.task_aliases"
    ]


def test_a_checkout_without_the_runtime_benchmark_fails_once(config: Path, tmp_path: Path) -> None:
    empty = tmp_path / "not-isaaclab"
    empty.mkdir()
    found = validate(config, empty)
    assert found.code == 4
    (problem,) = found.problems
    assert problem.startswith(f"{EVERY_BUCKET}: {empty} offers no Isaac Lab runtime benchmark")
