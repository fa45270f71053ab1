"""The isaaclab driver end to end against a stand-in Isaac Lab checkout.

No GPU, Isaac Sim or Isaac Lab exists on test machines, so tests/fixtures/isaaclab_standin.py
writes a miniature checkout (its ./isaaclab.sh, the current entrypoint or the older
--num_frames script, task registrations and preset declarations where upstream keeps them)
and plays what Isaac Lab's own files do. Everything else is real: config loading,
subprocesses, timeouts, retries, git worktrees, artifacts and their schema.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baselines.samples import sample_path
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.config import Bucket, load_config
from perfgate.context import RunContext
from perfgate.github.post import plan_statuses
from perfgate.result import (
    CacheState,
    FailurePhase,
    Hardware,
    Result,
    read_result,
    validate_result,
)
from perfgate.run.bench import run_bucket
from perfgate.run.launch import BenchSettings
from perfgate.util.git import git
from tests.fixtures import isaaclab_standin as standin
from tests.git_support import IDENTITY, commit_all, empty_origin
from tests.paths import FIXTURES, ROOT

STANDIN = FIXTURES / "isaaclab_standin.py"
NINE_BUCKETS = FIXTURES / "isaaclab" / "perfgate.yaml"
EXAMPLE = ROOT / "examples" / "isaaclab" / "perfgate.yaml"
CAMERA = "IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct"
OLD_CAMERA = "Isaac-Reorient-Cube-Shadow-Camera-Benchmark-Direct"


@pytest.fixture(autouse=True)
def standin_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `isaaclab` on PATH (the checkout's ./isaaclab.sh must do), Isaac Sim installed as a
    virtualenv with its EULA accepted, a state dir, no CI env."""
    python_only = tmp_path / "python-only"
    python_only.mkdir()
    (python_only / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{python_only}:/usr/bin:/bin")
    monkeypatch.setenv("VIRTUAL_ENV", str(standin.host_virtualenv(tmp_path / "venv")))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.setenv("OMNI_KIT_ACCEPT_EULA", "YES")
    monkeypatch.setenv("ISAACLAB_STANDIN_STATE", str(tmp_path / "standin-state"))
    # Set here, so whatever a test sets is undone after it.
    monkeypatch.setenv("ISAACLAB_STANDIN_MODE", "success")
    for name in ("ISAACLAB_STANDIN_MODES", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    assert shutil.which("isaaclab") is None


def config_file(tmp_path: Path, body: str, *, retries: int = 0, timeout: float = 1.0) -> Path:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        f"""
version: 1
defaults:
  driver: isaaclab
  retries: {retries}
  timeout_minutes: {timeout}
  repeats: 1
  num_envs: 256
  steps: 50
  warmup_steps: 10
  seed: 7
  isaaclab:
    extra_args: [--visualizer, none]
buckets:
{body}""",
        encoding="utf-8",
    )
    return path


CARTPOLE = "  - task: Isaac-Cartpole-Direct\n    backends: [{physics: physx}, {physics: newton}]\n"


def settings(tmp_path: Path, checkout: Path) -> BenchSettings:
    return BenchSettings(
        checkout=checkout,
        work_root=tmp_path / "work",
        out_dir=tmp_path / "results",
        hardware=Hardware(slug="l40s", gpu_name="NVIDIA L40S", gpu_count=1, cpu_name="x"),
        context=RunContext(commit=None, branch=None, target_branch="develop", event="local"),
    )


def bench(
    tmp_path: Path,
    bucket_id: str = "Isaac-Cartpole-Direct/newton",
    *,
    mode: str = "success",
    body: str = CARTPOLE,
    flavour: str = "current",
    retries: int = 0,
    timeout: float = 1.0,
) -> Result:
    """Run one bucket of ``body`` in a fresh stand-in checkout of ``flavour``."""
    os.environ["ISAACLAB_STANDIN_MODE"] = mode
    checkout = standin.write_checkout(tmp_path / "checkout", flavour=flavour)
    config = load_config(config_file(tmp_path, body, retries=retries, timeout=timeout))
    bucket = next(b for b in config.buckets if b.id == bucket_id)
    result = run_bucket(bucket, settings(tmp_path, checkout))
    assert validate_result(result.to_json()) == []
    return result


def bundle_of(tmp_path: Path, bucket: Bucket | None = None) -> dict[str, object]:
    where = tmp_path / "work" / "runs" / (bucket.file_stem if bucket else "")
    found = sorted(where.rglob("benchmark_runtime_*.json"))
    assert len(found) == 1, found
    data: dict[str, object] = json.loads(found[0].read_text())
    return data


def log_of(tmp_path: Path) -> str:
    return "".join(p.read_text() for p in sorted((tmp_path / "work").rglob("log.txt")))


def test_success_through_the_checkouts_launcher_reads_figure_contract_and_startup(
    tmp_path: Path,
) -> None:
    # No `isaaclab` on PATH: the driver runs the checkout's ./isaaclab.sh.
    result = bench(tmp_path)
    assert result.health.healthy, result.health
    bundle = bundle_of(tmp_path)
    runtime = bundle["runtime"]
    assert isinstance(runtime, dict)
    assert result.metric.value == runtime["total_fps"]["mean"]
    assert result.metric.std == runtime["total_fps"]["std"]
    fields = result.identity.runtime["fields"]
    assert fields["versions.newton"] == "0.2.0"
    assert "versions.isaaclab_physx" not in fields  # newton bucket: the newton contract only
    assert result.identity.launch["presets"] == ["newton_mjwarp"]
    startup = runtime["startup_time_s"]
    assert result.metric.figures == {
        **{f"runtime.startup_time_s.{k}": v for k, v in startup.items()},
        "resources.gpu_mem_gb.peak": 6.2,
    }
    assert set(startup) == {
        "python_imports", "task_config", "app_launch", "env_creation", "first_step"
    }  # fmt: skip


def test_launcher_falls_back_to_the_isaaclab_console_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = standin.write_checkout(tmp_path / "checkout")
    (checkout / "isaaclab.sh").unlink()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(STANDIN, bin_dir / "isaaclab")
    (bin_dir / "isaaclab").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    bucket = load_config(config_file(tmp_path, CARTPOLE)).buckets[1]
    result = run_bucket(bucket, settings(tmp_path, checkout))
    assert result.health.healthy, result.health


def test_physx_is_pinned_so_a_newton_default_cannot_slip_in(tmp_path: Path) -> None:
    # Current Cartpole defaults to Newton MJWarp: an unpinned physx bucket would run Newton.
    result = bench(tmp_path, "Isaac-Cartpole-Direct/physx")
    assert result.health.healthy, result.health
    assert result.identity.launch["presets"] == ["isaacsim_physx"]
    run = bundle_of(tmp_path)["run"]
    assert isinstance(run, dict) and run["config"]["physics_backend"] == "physx"
    # Isaac Sim PhysX needs Kit: the launcher line is on stderr, which the log keeps.
    assert "[ISAACLAB] KitLauncher initialization complete" in log_of(tmp_path)


@pytest.mark.parametrize("backend", ["physx_newton_renderer", "newton_newton_renderer"])
def test_newton_renderer_buckets_render_with_newton_on_the_requested_physics(
    tmp_path: Path, backend: str
) -> None:
    # `presets=newton` would select Newton *physics* (the deprecated alias of newton_mjwarp).
    body = (
        f"  - task: {CAMERA}\n    backends:\n"
        "      - {physics: physx, render: newton_renderer}\n"
        "      - {physics: newton, render: newton_renderer}\n"
    )
    result = bench(tmp_path, f"{CAMERA}/{backend}", body=body)
    assert result.health.healthy, result.health
    config = bundle_of(tmp_path)["run"]["config"]  # type: ignore[index]
    assert config["rendering_backend"] == "newton"
    assert config["physics_backend"] == (
        "physx" if backend.startswith("physx") else "newton_mjwarp"
    )


@pytest.mark.parametrize(
    ("bucket_id", "mode", "phase"),
    [
        # Newton runs start no Kit and print no launcher line.
        ("Isaac-Cartpole-Direct/newton", "crash_import", FailurePhase.IMPORT),
        ("Isaac-Cartpole-Direct/newton", "crash_env", FailurePhase.INIT),
        ("Isaac-Cartpole-Direct/newton", "crash_step", FailurePhase.RUNTIME),
        ("Isaac-Cartpole-Direct/newton", "import_in_step", FailurePhase.RUNTIME),
        ("Isaac-Cartpole-Direct/newton", "segfault", FailurePhase.RUNTIME),
        # Kit runs print the KitLauncher line, then exit 1 through Kit's fast shutdown.
        ("Isaac-Cartpole-Direct/physx", "crash_env", FailurePhase.INIT),
        ("Isaac-Cartpole-Direct/physx", "crash_step", FailurePhase.RUNTIME),
        ("Isaac-Cartpole-Direct/physx", "segfault", FailurePhase.RUNTIME),
    ],
)
def test_failure_phase_follows_what_the_cli_prints(
    tmp_path: Path, bucket_id: str, mode: str, phase: FailurePhase
) -> None:
    result = bench(tmp_path, bucket_id, mode=mode)
    assert result.health.phase is phase, log_of(tmp_path)
    assert result.health.exit_code != 0
    assert result.metric.value is None


def test_crash_at_import_is_not_excused_without_a_pin(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="crash_import")
    assert result.health.phase is FailurePhase.IMPORT and result.health.exit_code == 1
    # isaaclab itself is the source under test, not an image package with a pin.
    assert result.health.stale_image is None


def test_a_hang_is_killed_at_the_timeout(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="hang", timeout=0.02)
    assert result.health.phase is FailurePhase.HANG
    assert result.health.timed_out and result.metric.value is None


def test_a_sigkill_while_stepping_is_an_oom(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="oom")
    assert result.health.phase is FailurePhase.OOM
    assert result.health.exit_code == -9


def test_a_preset_the_task_does_not_declare_fails_before_launch_as_import(tmp_path: Path) -> None:
    # Factory hard-codes PhysX: pinning isaacsim_physx is an unknown preset there, which
    # is why the shipped configs send it no presets.
    body = "  - task: IsaacContrib-Factory-GearMesh-Direct\n    backends: [{physics: physx}]\n"
    result = bench(tmp_path, "IsaacContrib-Factory-GearMesh-Direct/physx", body=body)
    assert result.health.phase is FailurePhase.IMPORT
    assert "ValueError: Unknown preset(s): isaacsim_physx" in result.log_tail
    assert "KitLauncher" not in result.log_tail


def test_a_bundle_that_echoes_another_launch_is_a_config_mismatch(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="mismatch")
    assert result.health.phase is FailurePhase.CONFIG_MISMATCH
    assert result.health.config_mismatch is not None
    assert "run.num_envs=4096 (requested 256)" in result.health.config_mismatch


def test_a_bundle_without_the_metric_is_an_output_failure(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="no_metric")
    assert result.health.phase is FailurePhase.OUTPUT and result.health.exit_code == 0
    assert result.health.error is not None and "runtime.total_fps.mean" in result.health.error


def test_second_attempt_reports_its_own_figures_not_the_failed_first(tmp_path: Path) -> None:
    result = bench(tmp_path, mode="fail_first", retries=1)
    assert result.health.attempts == 2 and result.health.retried
    assert result.health.phase is None
    # The first attempt (the cold cache's warm-up) wrote its bundle, with 1000x the
    # environments, then crashed; the retry started from an emptied cache, warmed it up
    # again, then measured.
    assert [(a.number, a.warmup, a.cache, a.phase) for a in result.timings.attempts] == [
        (1, True, CacheState.COLD, FailurePhase.INIT),
        (2, True, CacheState.COLD, None),
        (2, False, CacheState.WARM, None),
    ]
    assert result.metric.value is not None and result.metric.value < 1_000_000
    assert list((tmp_path / "work" / "runs").rglob("attempt-1/**/*.json")) == []


def test_the_schema_file_is_read_among_other_formatters_outputs(tmp_path: Path) -> None:
    # Several formatters: benchmark_runtime_<task>_<time>_<hex>_schema.json and _summary.json
    # (a phase list, written after the bundle).
    body = CARTPOLE + "    isaaclab: {extra_args: [--benchmark_formatter, 'schema,summary']}\n"
    result = bench(tmp_path, body=body)
    assert result.health.healthy, result.health
    names = sorted(p.name for p in (tmp_path / "work").rglob("benchmark_runtime_*.json"))
    assert [n.rsplit("_", 1)[-1] for n in names] == ["schema.json", "summary.json"]


def pin_warp(checkout: Path, version: str) -> None:
    """The checkout's pyproject.toml pins warp-lang exactly (the stale-image evidence)."""
    (checkout / "pyproject.toml").write_text(
        f'[project]\nname = "x"\ndependencies = ["warp-lang=={version}"]\n', encoding="utf-8"
    )


@pytest.mark.parametrize(("pinned", "excused"), [("1.9.0", True), ("1.8.1", False)])
def test_stale_image_crash_is_excused_only_with_version_evidence(
    tmp_path: Path, pinned: str, excused: bool
) -> None:
    os.environ["ISAACLAB_STANDIN_MODE"] = "stale_import"
    checkout = standin.write_checkout(tmp_path / "checkout")
    pin_warp(checkout, pinned)
    bucket = load_config(config_file(tmp_path, CARTPOLE)).buckets[1]
    result = run_bucket(bucket, settings(tmp_path, checkout))
    assert result.health.phase is FailurePhase.IMPORT
    stale = result.health.stale_image
    if not excused:
        assert stale is None
        return
    assert stale is not None
    assert (stale.package, stale.symbol, stale.installed, stale.pinned) == (
        "warp",
        "tile_matmul",
        "1.8.1",
        "1.9.0",
    )


def test_a_checkout_without_a_runtime_benchmark_is_a_hard_failure_naming_what_was_sought(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "not-isaaclab"
    checkout.mkdir()
    bucket = load_config(config_file(tmp_path, CARTPOLE)).buckets[0]
    result = run_bucket(bucket, settings(tmp_path, checkout))
    assert validate_result(result.to_json()) == []
    assert not result.health.healthy
    assert result.health.phase is FailurePhase.IMPORT
    assert result.health.error is not None
    assert standin.ENTRYPOINT in result.health.error and standin.SCRIPT in result.health.error


LIFT = (
    "  - task: Isaac-Lift-Cube-Franka\n"
    "    isaaclab: {task_aliases: [Isaac-Lift-Cube-Franka-v0]}\n"
    "    backends: [{physics: newton}]\n"
)


def test_a_task_the_sources_certainly_do_not_register_is_never_launched(tmp_path: Path) -> None:
    result = bench(tmp_path, "Isaac-Lift-Cube-Franka/newton", body=LIFT)
    # Every gym.register id there is literal: the launch would stop with NameNotFound, so
    # it is a HARD_FAILURE before any launch (no exit code, no retry, no GPU minute).
    assert result.health.phase is FailurePhase.IMPORT and result.health.exit_code is None
    assert result.health.attempts == 1 and not result.health.retried
    assert result.health.error is not None
    assert "registers none of Isaac-Lift-Cube-Franka, Isaac-Lift-Cube-Franka-v0" in (
        result.health.error
    )


def test_a_task_registered_where_no_read_can_see_is_run_and_the_benchmark_answers(
    tmp_path: Path,
) -> None:
    # Ids handed to a registering helper: the read cannot tell, so the bucket's task runs.
    checkout = standin.write_checkout(tmp_path / "checkout", registration="helper")
    config = load_config(config_file(tmp_path, LIFT))
    result = run_bucket(config.buckets[0], settings(tmp_path, checkout))
    # Launched: the stand-in's gym says it has no such environment (an import failure).
    assert result.health.phase is FailurePhase.IMPORT and result.health.exit_code == 1
    assert "NameNotFound: Environment `Isaac-Lift-Cube-Franka` doesn't exist." in result.log_tail
    # The ids it does register run.
    cartpole = load_config(config_file(tmp_path, CARTPOLE)).buckets[0]
    assert run_bucket(cartpole, settings(tmp_path, checkout)).health.healthy


def test_an_id_registered_through_an_f_string_runs(tmp_path: Path) -> None:
    """The gym.register scan sees literal ids only; the benchmark registers this one."""
    checkout = standin.write_checkout(tmp_path / "checkout")
    init = checkout / standin.TASKS_ROOT / "core" / "cartpole" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    init.write_text(
        text.replace('id="Isaac-Cartpole-Direct"', 'id=f"Isaac-{NAME}-Direct"').replace(
            "gym.register(", 'NAME = "Cartpole"\ngym.register(', 1
        ),
        encoding="utf-8",
    )
    body = "  - task: Isaac-Cartpole-Direct\n    isaaclab: {task_aliases: [Isaac-Cartpole-v0]}\n"
    config = load_config(config_file(tmp_path, body + "    backends: [{physics: newton}]\n"))
    result = run_bucket(config.buckets[0], settings(tmp_path, checkout))
    assert result.health.healthy, result.log_tail


def run_matrix(tmp_path: Path, config: Path, flavour: str, *extra: str, exit_code: int = 0) -> Path:
    """``perfgate bench`` of ``config`` from a stand-in checkout of ``flavour`` (its cwd)."""
    checkout = standin.write_checkout(tmp_path / f"checkout-{flavour}", flavour=flavour)
    out = tmp_path / f"results-{flavour}"
    cwd = Path.cwd()
    os.chdir(checkout)
    try:
        argv = ["bench", "--config", str(config), "--out", str(out), "--no-judge"]
        code = main([*argv, "--work-dir", str(tmp_path / f"work-{flavour}"), *extra])
    finally:
        os.chdir(cwd)
    assert code == exit_code
    return out


def test_nine_buckets_are_healthy_on_current_isaac_lab_and_on_the_older_cli(
    tmp_path: Path,
) -> None:
    config = load_config(NINE_BUCKETS)
    identities: dict[str, dict[str, tuple[str, str]]] = {}
    for flavour in ("current", "frames"):
        out = run_matrix(tmp_path, NINE_BUCKETS, flavour)
        figures = {}
        for bucket in config.buckets:
            result = read_result(out / f"{bucket.file_stem}.json")
            assert result.health.healthy, (flavour, bucket.id, result.health)
            work = tmp_path / f"work-{flavour}" / "runs" / bucket.file_stem
            bundle = json.loads(next(work.glob("sample-0/attempt-1/output/*.json")).read_text())
            assert result.metric.value == bundle["runtime"]["total_fps"]["mean"]
            assert bundle["run"]["num_envs"] == bucket.num_envs
            figures[bucket.id] = result.metric.value
            identities.setdefault(bucket.id, {})[flavour] = (
                result.identity.launch_hash,
                result.identity.benchmark_hash,
            )
        assert len(set(figures.values())) == 9  # each bucket's own bundle was read
    # What the reference gate sends, with PhysX pinned (Factory declares no presets).
    presets = {
        b.id: read_result(tmp_path / "results-current" / f"{b.file_stem}.json").identity.launch[
            "presets"
        ]
        for b in config.buckets
    }
    assert presets[f"{CAMERA}/physx_newton_renderer"] == [
        "isaacsim_physx",
        "newton_renderer",
        "rgb",
    ]
    assert presets[f"{CAMERA}/newton_newton_renderer"] == [
        "newton_mjwarp",
        "newton_renderer",
        "rgb",
    ]
    assert presets[f"{CAMERA}/newton_rtx_renderer"] == ["newton_mjwarp", "isaacsim_rtx"]
    assert presets["IsaacContrib-Factory-GearMesh-Direct/physx"] == []
    # The older CLI ran its own ids and flags, yet every bucket kept its identity.
    assert all(ids["current"] == ids["frames"] for ids in identities.values()), identities
    old_run = json.loads(
        next(
            (tmp_path / "work-frames" / "runs").rglob(f"benchmark_runtime_{OLD_CAMERA}_*")
        ).read_text()
    )
    assert old_run["extra"] == {"warmup_frames": 100}


def test_matrix_with_failing_buckets_still_writes_every_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "ISAACLAB_STANDIN_MODES",
        json.dumps({"Isaac-Velocity-Flat-G1": "crash_env", "Isaac-Cartpole-Direct": "fail_first"}),
    )
    # A bucket failed: exit 2 (R8), with every other bucket's artifact written.
    out = run_matrix(tmp_path, NINE_BUCKETS, "current", "--tag", "always", exit_code=2)
    g1 = read_result(out / "Isaac-Velocity-Flat-G1__physx.json")
    assert g1.health.phase is FailurePhase.INIT and g1.health.attempts == 2
    # The stand-in fails the first call per task: the first Cartpole bucket absorbs it.
    cartpole = read_result(out / "Isaac-Cartpole-Direct__physx.json")
    assert cartpole.health.healthy and cartpole.health.retried
    assert not (out / f"{CAMERA.replace('/', '__')}__physx_rtx_renderer.json").exists()


def example_with_container(tmp_path: Path, container: dict[str, object] | None) -> Path:
    """The shipped example with its ``defaults.container`` replaced (None: removed)."""
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    if container is None:
        del data["defaults"]["container"]
    else:
        data["defaults"]["container"] = container
    path = tmp_path / "perfgate.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_shipped_isaaclab_example_benches_against_the_standin(tmp_path: Path) -> None:
    # The example runs each bucket in the CI image through `docker run`. No Docker engine
    # exists here, so this copy drops only the container block and runs the checkout's
    # ./isaaclab.sh directly; every other setting is the shipped one. The docker wrapping
    # of the same example is asserted in the next test.
    shipped = load_config(EXAMPLE)
    assert all(b.container is not None for b in shipped.buckets)
    path = example_with_container(tmp_path, None)
    config = load_config(path)
    assert [b.id for b in config.buckets] == [b.id for b in shipped.buckets]
    out = run_matrix(tmp_path, path, "current")
    for bucket in config.buckets:
        result = read_result(out / f"{bucket.file_stem}.json")
        assert result.health.healthy, (bucket.id, result.health)
        assert result.metric.value is not None and result.metric.value > 0


def fake_docker(tmp_path: Path) -> tuple[Path, Path]:
    """No Docker engine here: a `docker` that records its command line and exits 125."""
    record = tmp_path / "docker-argv.json"
    fake = tmp_path / "docker"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'token': os.environ.get('HF_TOKEN'), "
        f"'eula': os.environ.get('OMNI_KIT_ACCEPT_EULA')}}, "
        f"open({str(record)!r}, 'w'))\nsys.exit(125)\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    return fake, record


def test_container_bucket_runs_through_docker_with_the_resolved_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, record = fake_docker(tmp_path)
    body = "  - task: Isaac-Cartpole-Direct\n    backends: [{physics: physx}]\n"
    path = config_file(tmp_path, body)
    data = yaml.safe_load(path.read_text())
    data["defaults"]["container"] = {
        "docker": str(fake),
        "env": ["HF_TOKEN"],
        "checkout_mount": "/workspace/isaaclab",
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    image = "registry.example/isaac-lab@sha256:" + "abc" * 21 + "d"
    monkeypatch.setenv("PERFGATE_IMAGE", image)
    monkeypatch.setenv("HF_TOKEN", "do-not-print")
    checkout = standin.write_checkout(tmp_path / "checkout")
    result = run_bucket(load_config(path).buckets[0], settings(tmp_path, checkout))
    recorded = json.loads(record.read_text())
    argv = recorded["argv"]
    assert argv[:3] == ["run", "--rm", "--init"]
    image_at = argv.index(image)
    assert argv[image_at + 1 : image_at + 4] == ["./isaaclab.sh", "benchmark", "runtime"]
    assert argv[argv.index("--output_path") + 1] == "/perfgate/output"
    assert "PYTHONFAULTHANDLER" in argv  # the name only; the value travels in the env
    assert "HF_TOKEN" in argv and "do-not-print" not in " ".join(argv)
    assert recorded["token"] == "do-not-print"  # passed by name, through the environment
    assert result.health.exit_code == 125 and result.health.phase is not None


def test_shipped_isaaclab_example_runs_the_checkout_inside_the_resolved_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, record = fake_docker(tmp_path)
    shipped = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["defaults"]["container"]
    path = example_with_container(tmp_path, {**shipped, "docker": [str(fake)]})
    image = "nvcr.io/nvidian/isaac-lab@sha256:" + "e" * 64
    monkeypatch.setenv("PERFGATE_IMAGE", image)  # what resolve-image wrote in the bench job
    checkout = standin.write_checkout(tmp_path / "checkout")
    run_bucket(load_config(path).buckets[0], settings(tmp_path, checkout))
    argv = json.loads(record.read_text())["argv"]
    assert f"{checkout.resolve()}:/workspace/isaaclab" in argv
    assert argv[argv.index("--workdir") + 1] == "/workspace/isaaclab"
    image_at = argv.index(image)
    assert argv[image_at + 1 : image_at + 4] == ["./isaaclab.sh", "benchmark", "runtime"]
    # The driver's profile: the image's user, the link the checkout hides, the EULA.
    assert argv[argv.index("--user") + 1] == "1000:1000"
    assert (checkout / "_isaac_sim").readlink() == Path("/isaac-sim")
    eula = argv.index("OMNI_KIT_ACCEPT_EULA")
    assert argv[eula - 1] == "--env" and eula < image_at
    assert json.loads(record.read_text())["eula"] == "yes"  # the value, by the environment


def test_seeding_replays_an_older_cli_and_a_renamed_task_into_one_baseline(
    tmp_path: Path,
) -> None:
    """Two commits of one Isaac Lab history: the older CLI and ids, then current develop."""
    _, repo = empty_origin(tmp_path, branch="develop", clone="repo")
    shutil.copy(NINE_BUCKETS, repo / "perfgate.yaml")
    commits = []
    for flavour in ("frames", "current"):
        for old in (repo / "source", repo / "scripts"):
            shutil.rmtree(old, ignore_errors=True)
        standin.write_checkout(repo, flavour=flavour)
        commits.append(commit_all(repo, f"isaac lab, {flavour} cli"))
    git("push", "-q", "origin", "develop", cwd=repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(IDENTITY, PYTHONPATH=str(ROOT))
    bucket = f"{CAMERA}/physx_rtx_renderer"
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "seed", "--push", "--branch", "develop", "--last", "2",
         "--samples", "1", "--bucket", bucket, "--execute"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    store = BaselineStore(repo, branch="perf-baselines", remote="origin")
    tip = store.refresh()
    assert tip is not None
    hardware = git("ls-tree", "--name-only", f"{tip}:samples", cwd=repo).split()[0]
    files = git("ls-tree", "-r", "--name-only", f"{tip}:samples/{hardware}", cwd=repo).split()
    assert [f for f in files if f.endswith(".ndjson")] == [f"{bucket}.ndjson"]
    path = sample_path(hardware, CAMERA, "physx_rtx_renderer")
    samples = store.read([path], tip)[path]
    # Each commit's run took the example's two repeats.
    assert sorted(s.commit for s in samples) == sorted(commits * 2)
    assert len({(s.launch_hash, s.benchmark_hash, s.runtime_hash) for s in samples}) == 1


def committed_checkout(root: Path) -> Path:
    """A stand-in checkout, committed on ``main`` in a repository of its own."""
    repo = standin.write_checkout(root)
    git("init", "-q", "-b", "main", cwd=repo)
    commit_all(repo, "isaac lab")
    return repo


@pytest.mark.parametrize(
    ("phase", "metric"), [("SCENE", "startup_s"), ("IMPORT", "imports_s")], ids=["scene", "import"]
)
def test_a_slower_startup_blocks_on_its_own_metric_while_fps_holds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    phase: str,
    metric: str,
) -> None:
    """The shipped example gates startup apart from FPS: a slower scene build or import
    with unchanged FPS is a BLOCK of that metric alone (the stand-in's FPS is exact)."""
    config = example_with_container(tmp_path, None)
    repo = committed_checkout(tmp_path / "repo")
    monkeypatch.chdir(repo)
    bucket = "Isaac-Cartpole-Direct/physx"
    args = ["bench", "--config", str(config), "--bucket", bucket, "--quiet",
            "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"),
            "--report-dir", str(tmp_path / "report")]  # fmt: skip
    # Startup as long as a real scene build and import (simulated, not spent), so the few
    # milliseconds a loaded machine adds to the stand-in's own launch stay under the noise
    # floor instead of looking like a level shift in the window.
    monkeypatch.setenv("ISAACLAB_STANDIN_SCENE_S", "10.0")
    monkeypatch.setenv("ISAACLAB_STANDIN_IMPORT_S", "10.0")
    for _ in range(5):  # five recorded runs of one sample (the example's repeats): a window
        assert main([*args, "--record"]) == 0
    monkeypatch.setenv(f"ISAACLAB_STANDIN_{phase}_S", "15.0")  # +5 s, FPS unchanged
    capsys.readouterr()
    assert main([*args, "--json"]) == 1  # a BLOCK exits 1, advisory as the example is
    out = json.loads(capsys.readouterr().out)
    row = out["verdict"]["rows"][0]
    verdicts = {m["name"]: m["verdict"] for m in row["metrics"]}
    assert row["verdict"] == "BLOCK", row["details"]
    assert [name for name, verdict in verdicts.items() if verdict == "BLOCK"] == [metric]
    assert verdicts["primary"] == "PASS" and set(verdicts) == {
        "primary", "startup_s", "imports_s", "gpu_mem_gb"
    }  # fmt: skip
    # The bench measured again on suspicion before the startup metric could block.
    (result,) = out["results"]
    assert len(result["metric"]["samples"]) >= 3
    assert len(result["metrics"][metric]["samples"]) == len(result["metric"]["samples"])
    assert out["verdict"]["description"].startswith(
        f"1 regression(s) — regressed: {bucket} {metric} +"
    )
    status = plan_statuses(out["verdict"], None)[1]
    assert status.description.startswith(f"BLOCK: {metric} +")
    # The baseline branch holds a line per sample and metric, each naming its metric.
    hardware = result["hardware"]["slug"]
    path = sample_path(hardware, "Isaac-Cartpole-Direct", "physx")
    lines = [
        json.loads(line) for line in git("show", f"perf-baselines:{path}", cwd=repo).splitlines()
    ]
    assert sorted({line["metric"] for line in lines}) == sorted(verdicts)
    assert len(lines) == 5 * 1 * 4  # five runs of one sample, four metrics each


def test_further_metrics_are_read_from_each_sample_and_a_missing_required_one_fails(
    tmp_path: Path,
) -> None:
    startup = "[runtime.startup_time_s.app_launch, runtime.startup_time_s.env_creation]"
    body = CARTPOLE + (
        "    metrics:\n"
        f"      - {{name: startup_s, sum: {startup}, direction: lower, unit: s}}\n"
        "      - {name: vram_gb, path: resources.vram_gb.peak, direction: lower,"
        " required: false}\n"
    )
    result = bench(tmp_path, body=body)
    assert result.health.healthy, result.health
    bundle = bundle_of(tmp_path)
    times = bundle["runtime"]["startup_time_s"]  # type: ignore[index]
    reading = result.metrics["startup_s"]
    assert reading.value == times["app_launch"] + times["env_creation"]
    assert [s.sample_index for s in reading.samples] == [0]
    # An optional metric the bundle lacks is recorded as absent; the run stays healthy.
    assert result.metrics["vram_gb"].value is None and result.metrics["vram_gb"].samples == ()

    required = body.replace(", required: false}", "}")
    failed = bench(tmp_path / "required", body=required)
    assert failed.health.phase is FailurePhase.OUTPUT
    assert failed.health.error is not None
    assert failed.health.error.startswith("metric 'vram_gb' (resources.vram_gb.peak) is missing")


def test_cold_and_warm_samples_never_share_a_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """R16: a cold launch compiles every kernel inside its startup, so a warm bucket's runs
    are another experiment: cold history never judges them, for startup or anything else."""
    data = yaml.safe_load(example_with_container(tmp_path, None).read_text(encoding="utf-8"))
    data["defaults"]["repeats"] = 1
    data["defaults"]["cache"] = "cold"
    cold = tmp_path / "cold.yaml"
    cold.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    del data["defaults"]["cache"]  # the isaaclab driver's default: warm
    warm = tmp_path / "warm.yaml"
    warm.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    repo = committed_checkout(tmp_path / "repo")
    monkeypatch.chdir(repo)
    bucket = "Isaac-Cartpole-Direct/newton"

    def bench_json(config: Path, *more: str) -> dict[str, Any]:
        capsys.readouterr()
        args = ["bench", "--config", str(config), "--bucket", bucket, "--quiet", "--json",
                "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"),
                "--report-dir", str(tmp_path / "report"), *more]  # fmt: skip
        assert main(args) == 0
        document: dict[str, Any] = json.loads(capsys.readouterr().out)
        return document

    for _ in range(5):  # a full window of cold runs
        bench_json(cold, "--record")
    out = bench_json(warm)
    (result,) = out["results"]
    assert [s["cache"] for s in result["metric"]["samples"]] == ["warm"]
    assert [a["warmup"] for a in result["timings"]["attempts"] if "warmup" in a] == [True]
    row = out["verdict"]["rows"][0]
    # Five cold runs on the branch, and not one of them in the warm run's windows.
    assert all(m["reasons"][0] == "NO_BASELINE" for m in row["metrics"]), row["metrics"]
    hardware = result["hardware"]["slug"]
    stored = git("show", f"perf-baselines:{sample_path(hardware, *bucket.split('/'))}", cwd=repo)
    assert {json.loads(line)["cache"] for line in stored.splitlines()} == {"cold"}


def test_a_dry_run_shows_the_exact_docker_run_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = standin.write_checkout(tmp_path / "checkout")
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("PERFGATE_IMAGE", "nvcr.io/nvidian/isaac-lab@sha256:" + "e" * 64)
    work = tmp_path / "work"
    bucket = f"{CAMERA}/physx_rtx_renderer"
    args = ["bench", "--config", str(EXAMPLE), "--bucket", bucket, "--work-dir", str(work)]
    assert main([*args, "--dry-run", "--json"]) == 0
    captured = capsys.readouterr()
    launch = json.loads(captured.out)["launches"][bucket]
    argv = launch["argv"]
    assert argv[:4] == ["docker", "run", "--rm", "--init"]
    assert argv[argv.index("--user") + 1] == "1000:1000"
    warm = work / "warm-cache" / bucket.replace("/", "__")
    assert f"{warm / 'kit'}:/isaac-sim/kit/cache" in argv
    assert f"{checkout.resolve()}:/workspace/isaaclab" in argv
    image_at = argv.index(os.environ["PERFGATE_IMAGE"])
    assert argv[image_at + 1 : image_at + 5] == ["./isaaclab.sh", "benchmark", "runtime", "--task"]
    assert launch["env"]["OMNI_KIT_ACCEPT_EULA"] == "yes"
    assert launch["cache"] == {"mode": "warm", "path": str(warm), "state": "cold",
                               "warmup_first": True}  # fmt: skip
    # The human side says the same, and nothing was made: no link, no work directory.
    assert "before launch: link _isaac_sim -> /isaac-sim in the checkout" in captured.err
    assert "an unmeasured warm-up launch fills it first" in captured.err
    assert not (checkout / "_isaac_sim").exists() and not work.exists()


def test_a_dry_run_on_a_checkout_without_a_runtime_benchmark_is_one_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = tmp_path / "not-isaaclab"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("PERFGATE_IMAGE", "nvcr.io/nvidian/isaac-lab@sha256:" + "e" * 64)
    bucket = f"{CAMERA}/physx_rtx_renderer"
    args = ["bench", "--config", str(EXAMPLE), "--bucket", bucket, "--dry-run"]
    assert main([*args, "--work-dir", str(tmp_path / "work")]) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("perfgate: error:")]
    assert line.startswith(f"perfgate: error: {bucket}: {checkout} offers no Isaac Lab runtime")
    assert standin.ENTRYPOINT in line and standin.SCRIPT in line
    assert "run from the root of a checkout that has it" in line
