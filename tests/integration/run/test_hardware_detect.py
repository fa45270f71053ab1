"""hardware.detect() against a stand-in nvidia-smi on PATH (test machines have no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.config import RunnerIdentity
from perfgate.context import RunContext
from perfgate.result import CiInfo
from perfgate.run import hardware
from tests.fake_smi import install

L40S = {
    "name": ["NVIDIA L40S"],
    "driver_version": ["550.54.15"],
    "memory.total": ["46068"],
    "compute_cap": ["8.9"],
    "clocks.sm": ["2520"],
    "clocks.mem": ["9001"],
    "clocks.max.sm": ["2520"],
    "clocks.max.mem": ["9001"],
    "clocks_event_reasons.active": ["0x0000000000000004"],
}


def test_detect_reads_model_clocks_and_throttle_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, L40S)
    found = hardware.detect()
    assert found.slug == "l40s"
    assert (found.driver_version, found.gpu_memory_mib, found.compute_capability) == (
        "550.54.15",
        46068,
        "8.9",
    )
    assert found.clocks_mhz == {"sm": 2520, "memory": 9001, "max_sm": 2520, "max_memory": 9001}
    assert found.throttle_reasons == ("sw_power_cap",)


def test_old_driver_falls_back_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {
        k: v for k, v in L40S.items() if k not in ("compute_cap", "clocks_event_reasons.active")
    }
    data["clocks_throttle_reasons.active"] = ["0x0000000000000000"]
    install(tmp_path, monkeypatch, data)
    found = hardware.detect()
    assert (found.slug, found.compute_capability, found.gpu_memory_mib) == ("l40s", None, 46068)
    assert found.throttle_reasons == ()


def test_without_nvidia_smi_the_cpu_names_the_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    found = hardware.detect()
    assert found.slug.startswith("cpu-")
    assert found.gpu_count == 0 and found.clocks_mhz is None


def test_failing_nvidia_smi_falls_back_to_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, {"name": []})  # every query fails: the fields are unknown
    assert hardware.detect().slug.startswith("cpu-")


TWO_GPUS = {
    "name": ["NVIDIA L40S", "NVIDIA L40S"],
    "index": ["0", "1"],
    "uuid": [
        "GPU-aaaaaaaa-0000-1111-2222-333344445555",
        "GPU-bbbbbbbb-0000-1111-2222-333344445555",
    ],
}


def _machine(env: dict[str, str]) -> tuple[str | None, str | None]:
    run = RunContext(commit=None, branch=None, target_branch=None, event="local",
                     ci=CiInfo(runner_name="arc-runner-x7k2p"))  # fmt: skip
    named, notice = hardware.identify_machine(run, RunnerIdentity.GPU, env)
    return named.ci.machine, notice


def test_gpu_identity_names_the_visible_gpus_and_hides_their_uuids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, TWO_GPUS)
    both, notice = _machine({})
    first, _ = _machine({"CUDA_VISIBLE_DEVICES": "0"})
    second, _ = _machine({"CUDA_VISIBLE_DEVICES": TWO_GPUS["uuid"][1]})
    assert notice is None
    assert len({both, first, second}) == 3
    assert all(m is not None and m.startswith("gpu-") and "aaaa" not in m for m in (both, first))
    # Another job on the same machine names it the same way: the identity recurs.
    assert _machine({"CUDA_VISIBLE_DEVICES": "0"})[0] == first


def test_gpu_identity_without_a_gpu_keeps_the_runner_name_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    machine, notice = _machine({})
    assert machine is None
    assert notice is not None and "arc-runner-x7k2p" in notice and "no GPU UUID" in notice


def test_runner_identity_reads_no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path, monkeypatch, TWO_GPUS)
    run = RunContext(commit=None, branch=None, target_branch=None, event="local")
    assert hardware.identify_machine(run, RunnerIdentity.RUNNER, {}) == (run, None)
