"""The isaaclab driver's decisions: presets, command line, launch echo, runtime contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.config import Bucket, load_config
from perfgate.errors import ConfigError
from perfgate.run.drivers import get_driver
from perfgate.run.drivers.isaaclab import echo_mismatches, find_bundle, hydra_args, runtime_paths
from perfgate.run.execution import AttemptDirs

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
  - task: Camera
    backends:
      - {physics: physx, render: rtx_renderer}
      - {physics: newton, render: rtx_renderer}
      - {physics: physx, render: newton_renderer}
      - {physics: newton, render: newton_renderer}
"""


def buckets(tmp_path: Path, text: str = CONFIG) -> dict[str, Bucket]:
    path = tmp_path / "perfgate.yaml"
    path.write_text(text, encoding="utf-8")
    return {b.id: b for b in load_config(path).buckets}


@pytest.mark.parametrize(
    ("bucket_id", "expected"),
    [
        ("Isaac-Cartpole-Direct/physx", ()),
        ("Isaac-Cartpole-Direct/newton", ("presets=newton_mjwarp",)),
        ("Camera/physx_rtx_renderer", ("presets=isaacsim_rtx",)),
        ("Camera/newton_rtx_renderer", ("presets=newton_mjwarp,isaacsim_rtx",)),
        ("Camera/physx_newton_renderer", ("presets=newton,rgb",)),
        ("Camera/newton_newton_renderer", ("presets=newton_mjwarp,newton,rgb",)),
    ],
)
def test_hydra_presets_follow_the_backend(
    tmp_path: Path, bucket_id: str, expected: tuple[str, ...]
) -> None:
    assert hydra_args(buckets(tmp_path)[bucket_id]) == expected


def test_command_line_is_the_supported_cli_with_measured_steps(tmp_path: Path) -> None:
    bucket = buckets(tmp_path)["Camera/newton_rtx_renderer"]
    dirs = AttemptDirs(number=1, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    invocation = get_driver("isaaclab").invocation(bucket, dirs, tmp_path)
    assert invocation.argv == (
        "isaaclab", "benchmark", "runtime",
        "--task", "Camera",
        "--num_envs", "512",
        "--num_steps", "200",
        "--warmup_steps", "100",
        "--seed", "42",
        "--benchmark_formatter", "schema",
        "--output_path", str(tmp_path / "out"),
        "--visualizer", "none",
        "presets=newton_mjwarp,isaacsim_rtx",
    )  # fmt: skip
    assert invocation.outputs == (str(tmp_path / "out"),)


def test_executable_may_be_an_argument_list(tmp_path: Path) -> None:
    text = CONFIG.replace("extra_args: [--visualizer, none]", "executable: [uv, run, isaaclab]")
    bucket = buckets(tmp_path, text)["Isaac-Cartpole-Direct/physx"]
    dirs = AttemptDirs(number=1, output_dir=tmp_path / "o", cache_dir=tmp_path / "c")
    argv = get_driver("isaaclab").invocation(bucket, dirs, tmp_path).argv
    assert argv[:5] == ("uv", "run", "isaaclab", "benchmark", "runtime")


def test_render_backend_without_known_presets_needs_them_declared(tmp_path: Path) -> None:
    text = CONFIG.replace(
        "render: rtx_renderer}\n      - {physics: newton, render: rtx",
        "render: warp_renderer}\n      - {physics: newton, render: rtx",
        1,
    )
    bucket = buckets(tmp_path, text)["Camera/physx_warp_renderer"]
    with pytest.raises(ConfigError, match=r"isaaclab\.presets"):
        hydra_args(bucket)


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
    backends = "    backends: [{physics: physx}, {physics: newton}]"
    text = CONFIG.replace(backends, f"{backends}\n    isaaclab: {{executable: ./isaaclab.sh}}")
    spec = buckets(tmp_path, text)["Isaac-Cartpole-Direct/physx"].isaaclab
    assert spec is not None
    assert spec.executable == ("./isaaclab.sh",)
    assert spec.extra_args == ("--visualizer", "none")


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
    assert set(runtime_paths(all_buckets["Camera/newton_newton_renderer"])) == always | {
        "versions.isaaclab_newton",
        "versions.newton",
        "versions.isaaclab_ov",
    }


def echo(**overrides: Any) -> dict[str, Any]:
    bundle: dict[str, Any] = {
        "run": {
            "task": "Camera",
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


def test_launch_echo_of_the_requested_run_matches(tmp_path: Path) -> None:
    assert echo_mismatches(echo(), buckets(tmp_path)["Camera/newton_rtx_renderer"]) == []


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"run__seed": 0}, "run.seed=0 (requested 42)"),
        ({"run__task": "Other"}, "run.task='Other'"),
        ({"runtime__iterations_completed": 300}, "runtime.iterations_completed=300"),
        ({"run__config__physics_backend": "physx"}, "run.config.physics_backend='physx'"),
        ({"run__config__rendering_backend": "none"}, "run.config.rendering_backend='none'"),
        ({"run__config__presets": ["newton_mjwarp"]}, "lacks ['isaacsim_rtx']"),
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
    problems = echo_mismatches(echo(**override), buckets(tmp_path)["Camera/newton_rtx_renderer"])
    assert any(problem in p for p in problems), problems


def test_prerelease_newton_spelling_is_accepted(tmp_path: Path) -> None:
    bundle = echo(run__config__physics_backend="newton")
    assert echo_mismatches(bundle, buckets(tmp_path)["Camera/newton_rtx_renderer"]) == []


def test_bundle_is_found_with_or_without_the_formatter_suffix(tmp_path: Path) -> None:
    assert find_bundle(tmp_path, "T") is None
    (tmp_path / "benchmark_runtime_T_summary.json").write_text("{}")
    (tmp_path / "benchmark_runtime_T_schema.json").write_text("{}")
    assert find_bundle(tmp_path, "T") == tmp_path / "benchmark_runtime_T_schema.json"
