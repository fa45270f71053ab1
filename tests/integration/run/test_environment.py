"""Context from a real git checkout, hardware from nvidia-smi, `validate` as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.context import detect
from perfgate.run import hardware
from tests.paths import ROOT as REPO


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_local_context_comes_from_the_git_checkout(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "topic")
    git(
        tmp_path,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "c",
    )
    context = detect({}, cwd=tmp_path, default_target="main")
    assert context.commit == git(tmp_path, "rev-parse", "HEAD")
    assert (context.branch, context.target_branch, context.event) == ("topic", "main", "local")


def fake_nvidia_smi(bin_dir: Path, script: str) -> None:
    """An executable named nvidia-smi: a real GPU cannot exist on this machine."""
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\nimport sys\n{script}\n", encoding="utf-8")
    smi.chmod(0o755)


def test_gpu_is_detected_through_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nvidia_smi(tmp_path / "bin", "print('NVIDIA L40S, 550.54.15, 46068, 8.9')")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    found = hardware.detect()
    assert (found.slug, found.gpu_count, found.compute_capability) == ("l40s", 1, "8.9")


def test_old_driver_without_compute_cap_still_counts_as_that_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nvidia_smi(
        tmp_path / "bin",
        "if 'compute_cap' in ' '.join(sys.argv):\n"
        "    print('Field \"compute_cap\" is not a valid field to query.'); sys.exit(2)\n"
        "print('NVIDIA RTX PRO 6000 Blackwell Server Edition, 570.1, 97887')",
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    found = hardware.detect()
    assert (found.slug, found.gpu_memory_mib, found.compute_capability) == (
        "rtx_pro_6000_blackwell",
        97887,
        None,
    )


def test_failing_nvidia_smi_falls_back_to_a_cpu_slug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nvidia_smi(tmp_path / "bin", "print('NVIDIA-SMI has failed'); sys.exit(9)")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    found = hardware.detect()
    assert found.slug.startswith("cpu-") and found.gpu_name is None


def test_validate_as_a_process_exits_4_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "perfgate.yaml"
    bad.write_text("version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: physx}]\n")
    completed = subprocess.run(
        [sys.executable, "-m", "perfgate", "validate", "--config", str(bad)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 4
    assert completed.stderr.splitlines() == [
        f"perfgate: error: {bad}:4: buckets[0].backends[0].physics: unknown physics backend "
        "'physx' for driver 'demo'; use one of: numpy, python"
    ]
