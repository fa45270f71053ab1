"""The isaaclab driver end to end against a stand-in ``isaaclab`` executable.

No GPU, Isaac Sim or Isaac Lab exists on test machines, so tests/fixtures/isaaclab_standin.py
plays ``isaaclab benchmark runtime``: it takes the real CLI's arguments, prints the phase
log lines and writes RuntimeBundles of the real shape. Everything else is real: config
loading, subprocesses, timeouts, retries, artifacts and their schema.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from perfgate.cli import main
from perfgate.config import Bucket, load_config
from perfgate.context import RunContext
from perfgate.result import FailurePhase, Hardware, Result, read_result, validate_result
from perfgate.run.bench import BenchSettings, run_bucket
from tests.paths import FIXTURES, ROOT

pytestmark = pytest.mark.integration

STANDIN = FIXTURES / "isaaclab_standin.py"
NINE_BUCKETS = FIXTURES / "isaaclab" / "perfgate.yaml"


def bucket_for(tmp_path: Path, *, retries: int = 0, timeout_minutes: float = 1.0) -> Bucket:
    """One Cartpole/newton bucket whose executable is the stand-in."""
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        f"""
version: 1
defaults:
  driver: isaaclab
  retries: {retries}
  timeout_minutes: {timeout_minutes}
  num_envs: 256
  steps: 50
  warmup_steps: 10
  seed: 7
  isaaclab:
    executable: [{json.dumps(sys.executable)}, {json.dumps(str(STANDIN))}]
buckets:
  - task: Isaac-Cartpole-Direct
    backends: [{{physics: newton}}]
""",
        encoding="utf-8",
    )
    return load_config(config).buckets[0]


def settings(tmp_path: Path) -> BenchSettings:
    checkout = tmp_path / "checkout"
    checkout.mkdir(exist_ok=True)
    return BenchSettings(
        checkout=checkout,
        work_root=tmp_path / "work",
        out_dir=tmp_path / "results",
        hardware=Hardware(slug="l40s", gpu_name="NVIDIA L40S", gpu_count=1, cpu_name="x"),
        context=RunContext(commit=None, branch=None, target_branch="develop", event="local"),
    )


def run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    *,
    retries: int = 0,
    timeout_minutes: float = 1.0,
) -> Result:
    monkeypatch.setenv("ISAACLAB_STANDIN_MODE", mode)
    monkeypatch.setenv("ISAACLAB_STANDIN_STATE", str(tmp_path / "standin-state"))
    bucket = bucket_for(tmp_path, retries=retries, timeout_minutes=timeout_minutes)
    result = run_bucket(bucket, settings(tmp_path))
    assert validate_result(result.to_json()) == []
    return result


def test_success_reads_the_figure_and_runtime_contract_from_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "success")
    assert result.health.healthy and result.health.phase is None
    bundle = json.loads(
        next((tmp_path / "work").rglob("benchmark_runtime_Isaac-Cartpole-Direct.json")).read_text()
    )
    assert result.metric.value == bundle["runtime"]["total_fps"]["mean"]
    assert result.metric.std == bundle["runtime"]["total_fps"]["std"]
    fields = result.identity.runtime["fields"]
    assert fields["versions.newton"] == bundle["versions"]["newton"]
    assert "versions.isaaclab_physx" not in fields  # newton bucket: the newton contract only
    assert result.identity.launch["presets"] == ["newton_mjwarp"]


def test_crash_at_import_is_an_import_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "crash_import")
    assert result.health.phase is FailurePhase.IMPORT
    assert result.health.exit_code == 1
    assert result.metric.value is None
    # isaaclab itself is the source under test, not an image package with a pin: no excuse.
    assert result.health.stale_image is None


def test_crash_after_init_is_an_init_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "crash_init")
    assert result.health.phase is FailurePhase.INIT
    assert result.metric.value is None


def test_crash_while_stepping_is_a_runtime_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "crash_runtime")
    assert result.health.phase is FailurePhase.RUNTIME


def test_a_hang_is_killed_at_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(tmp_path, monkeypatch, "hang", timeout_minutes=0.02)
    assert result.health.phase is FailurePhase.HANG
    assert result.health.timed_out
    assert result.metric.value is None


def test_exit_137_is_an_oom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(tmp_path, monkeypatch, "oom")
    assert result.health.phase is FailurePhase.OOM
    assert result.health.exit_code == 137


def test_a_bundle_that_echoes_another_launch_is_a_config_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "mismatch")
    assert result.health.phase is FailurePhase.CONFIG_MISMATCH
    assert result.health.config_mismatch is not None
    assert "run.num_envs=4096 (requested 256)" in result.health.config_mismatch
    assert not result.health.healthy


def test_a_bundle_without_the_metric_is_an_output_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "no_metric")
    assert result.health.phase is FailurePhase.OUTPUT
    assert result.health.exit_code == 0
    assert result.metric.value is None
    assert result.health.error is not None and "runtime.total_fps.mean" in result.health.error


def test_second_attempt_reports_its_own_figures_not_the_failed_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(tmp_path, monkeypatch, "fail_first", retries=1)
    assert result.health.attempts == 2 and result.health.retried
    assert result.health.phase is None
    assert [a.phase for a in result.timings.attempts] == [FailurePhase.RUNTIME, None]
    # The first attempt wrote a bundle with 1000x the environments before crashing.
    assert result.metric.value is not None and result.metric.value < 1_000_000
    assert list((tmp_path / "work" / "runs").glob("*/attempt-1/output/*.json")) == []


def pin_warp(tmp_path: Path, version: str) -> None:
    """A checkout whose pyproject.toml pins warp-lang exactly (the stale-image evidence)."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text(
        f'[project]\nname = "x"\ndependencies = ["warp-lang=={version}"]\n', encoding="utf-8"
    )


def test_stale_image_crash_is_excused_only_with_version_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin_warp(tmp_path, "1.9.0")
    result = run(tmp_path, monkeypatch, "stale_import")
    assert result.health.phase is FailurePhase.IMPORT
    stale = result.health.stale_image
    assert stale is not None
    assert (stale.package, stale.symbol, stale.installed, stale.pinned) == (
        "warp",
        "tile_matmul",
        "1.8.1",
        "1.9.0",
    )


def test_stale_image_is_not_claimed_when_the_pin_matches_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin_warp(tmp_path, "1.8.1")
    result = run(tmp_path, monkeypatch, "stale_import")
    assert result.health.phase is FailurePhase.IMPORT
    assert result.health.stale_image is None


@pytest.fixture
def standin_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in installed as ``isaaclab`` on PATH, the driver's default executable."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(STANDIN, bin_dir / "isaaclab")
    (bin_dir / "isaaclab").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ISAACLAB_STANDIN_STATE", str(tmp_path / "standin-state"))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    return bin_dir


def test_nine_bucket_matrix_benches_end_to_end(tmp_path: Path, standin_on_path: Path) -> None:
    out = tmp_path / "results"
    code = main(
        [
            "bench",
            "--config",
            str(NINE_BUCKETS),
            "--out",
            str(out),
            "--work-dir",
            str(tmp_path / "w"),
        ]
    )
    assert code == 0
    config = load_config(NINE_BUCKETS)
    artifacts = sorted(out.glob("*.json"))
    assert len(artifacts) == 9
    figures = {}
    for bucket in config.buckets:
        path = out / f"{bucket.file_stem}.json"
        assert validate_result(json.loads(path.read_text())) == []
        result = read_result(path)
        assert result.health.healthy, (bucket.id, result.health)
        bundle_path = next(
            (tmp_path / "w" / "runs" / bucket.file_stem).glob("attempt-1/output/*.json")
        )
        bundle = json.loads(bundle_path.read_text())
        assert result.metric.value == bundle["runtime"]["total_fps"]["mean"]
        assert bundle["run"]["num_envs"] == bucket.num_envs
        figures[bucket.id] = result.metric.value
    assert len(set(figures.values())) == 9  # each bucket's own bundle was read
    camera = read_result(
        out / "Isaac-Reorient-Cube-Shadow-Camera-Benchmark-Direct__newton_newton_renderer.json"
    )
    assert camera.identity.launch["presets"] == ["newton_mjwarp", "newton", "rgb"]
    assert "versions.isaaclab_ov" in camera.identity.runtime["fields"]


def test_matrix_with_failing_buckets_still_writes_every_artifact(
    tmp_path: Path, standin_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "ISAACLAB_STANDIN_MODES",
        json.dumps({"Isaac-Velocity-Flat-G1": "crash_init", "Isaac-Cartpole-Direct": "fail_first"}),
    )
    out = tmp_path / "results"
    code = main(
        ["bench", "--config", str(NINE_BUCKETS), "--out", str(out), "--tag", "always",
         "--work-dir", str(tmp_path / "w")]
    )  # fmt: skip
    assert code == 0
    g1 = read_result(out / "Isaac-Velocity-Flat-G1__physx.json")
    assert g1.health.phase is FailurePhase.INIT and g1.health.attempts == 2
    # The stand-in fails the first call per task: the first Cartpole bucket absorbs it.
    cartpole = read_result(out / "Isaac-Cartpole-Direct__physx.json")
    assert cartpole.health.healthy and cartpole.health.retried
    assert not (
        out / "Isaac-Reorient-Cube-Shadow-Camera-Benchmark-Direct__physx_rtx_renderer.json"
    ).exists()


def test_container_bucket_runs_through_docker_with_the_resolved_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No Docker engine here: a fake `docker` records the command it was given and fails.
    record = tmp_path / "docker-argv.json"
    fake = tmp_path / "docker"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'token': os.environ.get('HF_TOKEN')}}, "
        f"open({str(record)!r}, 'w'))\nsys.exit(125)\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        f"""
version: 1
defaults:
  driver: isaaclab
  retries: 0
  container:
    docker: {json.dumps(str(fake))}
    env: [HF_TOKEN]
    checkout_mount: /workspace/isaaclab
buckets:
  - task: Isaac-Cartpole-Direct
    backends: [{{physics: physx}}]
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("PERFGATE_IMAGE", "registry.example/isaac-lab@sha256:abc")
    monkeypatch.setenv("HF_TOKEN", "do-not-print")
    result = run_bucket(load_config(config).buckets[0], settings(tmp_path))
    recorded = json.loads(record.read_text())
    argv = recorded["argv"]
    assert argv[:3] == ["run", "--rm", "--init"]
    image_at = argv.index("registry.example/isaac-lab@sha256:abc")
    assert argv[image_at + 1 : image_at + 4] == ["isaaclab", "benchmark", "runtime"]
    assert argv[argv.index("--output_path") + 1] == "/perfgate/output"
    assert "HF_TOKEN" in argv and "do-not-print" not in " ".join(argv)
    assert recorded["token"] == "do-not-print"  # passed by name, through the environment
    assert result.health.exit_code == 125 and result.health.phase is not None


EXAMPLE = ROOT / "examples" / "isaaclab" / "perfgate.yaml"


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


def test_shipped_isaaclab_example_benches_against_the_standin(
    tmp_path: Path, standin_on_path: Path
) -> None:
    # The example runs each bucket in the CI image through `docker run`. No Docker engine
    # exists here, so this copy drops only the container block and runs the stand-in
    # `isaaclab` directly; every other setting is the shipped one. The docker wrapping of
    # the same example is asserted in the next test.
    shipped = load_config(EXAMPLE)
    assert all(b.container is not None for b in shipped.buckets)
    assert all(b.isaaclab is not None and b.isaaclab.executable == ("isaaclab",)
               for b in shipped.buckets)  # fmt: skip
    path = example_with_container(tmp_path, None)
    config = load_config(path)
    assert [b.id for b in config.buckets] == [b.id for b in shipped.buckets]
    out = tmp_path / "results"
    argv = ["bench", "--config", str(path), "--out", str(out), "--work-dir", str(tmp_path / "w")]
    assert main([*argv, "--no-judge"]) == 0
    for bucket in config.buckets:
        result = read_result(out / f"{bucket.file_stem}.json")
        assert result.health.healthy, (bucket.id, result.health)
        assert result.metric.value is not None and result.metric.value > 0


def test_shipped_isaaclab_example_runs_the_checkout_inside_the_resolved_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No Docker engine here: a fake `docker` records its command line and fails, as in
    # test_container_bucket_runs_through_docker_with_the_resolved_image above.
    record = tmp_path / "docker-argv.json"
    fake = tmp_path / "docker"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump(sys.argv[1:], open({str(record)!r}, 'w'))\nsys.exit(125)\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    shipped = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["defaults"]["container"]
    path = example_with_container(tmp_path, {**shipped, "docker": [str(fake)]})
    image = "nvcr.io/nvidian/isaac-lab@sha256:" + "e" * 64
    monkeypatch.setenv("PERFGATE_IMAGE", image)  # what resolve-image wrote in the bench job
    run_bucket(load_config(path).buckets[0], settings(tmp_path))
    argv = json.loads(record.read_text())
    checkout = (tmp_path / "checkout").resolve()
    assert f"{checkout}:/workspace/isaaclab" in argv
    assert argv[argv.index("--workdir") + 1] == "/workspace/isaaclab"
    image_at = argv.index(image)
    assert argv[image_at + 1 : image_at + 4] == ["isaaclab", "benchmark", "runtime"]
    eula = argv.index("ACCEPT_EULA=Y")
    assert argv[eula - 1] == "--env" and eula < image_at
