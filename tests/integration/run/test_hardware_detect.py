"""hardware.detect() against a stand-in nvidia-smi on PATH (test machines have no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
