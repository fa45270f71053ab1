"""Parsing nvidia-smi output into the hardware fingerprint (captured output text)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from perfgate.result import Hardware
from perfgate.run.hardware import decode_throttle, gpu_slug, parse_clocks, parse_nvidia_smi

# nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader,nounits
L40S_BASE = "NVIDIA L40S, 550.54.15, 46068, 8.9\n"
TWO_BLACKWELL = (
    "NVIDIA RTX PRO 6000 Blackwell Server Edition, 575.57.08, 97887, 12.0\n"
    "NVIDIA RTX PRO 6000 Blackwell Server Edition, 575.57.08, 97887, 12.0\n"
)


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx_pro_6000_blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx_pro_6000_blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx_pro_6000_blackwell_max_q"),
        ("NVIDIA RTX PRO 6000 Blackwell", "rtx_pro_6000_blackwell"),
        ("NVIDIA  L40S ", "l40s"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm4_80gb"),
        ("NVIDIA H100 80GB HBM3", "h100_80gb_hbm3"),
        ("???", "unknown_gpu"),
        ("NVIDIA GeForce RTX 4090", "geforce_rtx_4090"),
        ("Tesla T4", "tesla_t4"),
    ],
)
def test_gpu_names_map_to_canonical_slugs(name: str, slug: str) -> None:
    assert gpu_slug(name) == slug


def test_base_query_gives_model_driver_memory_and_capability() -> None:
    found = parse_nvidia_smi(L40S_BASE, "AMD EPYC 9354")
    assert found == Hardware(
        slug="l40s",
        gpu_name="NVIDIA L40S",
        gpu_count=1,
        driver_version="550.54.15",
        gpu_memory_mib=46068,
        compute_capability="8.9",
        cpu_name="AMD EPYC 9354",
    )


def test_every_gpu_row_is_counted() -> None:
    found = parse_nvidia_smi(TWO_BLACKWELL, "cpu")
    assert found is not None
    assert (found.slug, found.gpu_count, found.compute_capability) == (
        "rtx_pro_6000_blackwell",
        2,
        "12.0",
    )


def test_old_driver_without_compute_capability() -> None:
    found = parse_nvidia_smi("Tesla V100-SXM2-16GB, 470.57.02, 16160\n", "cpu")
    assert found is not None
    assert (found.slug, found.compute_capability) == ("tesla_v100_sxm2_16gb", None)


def test_unavailable_cells_are_none_not_text() -> None:
    found = parse_nvidia_smi("NVIDIA L40S, 550.54.15, [N/A], [Not Supported]\n", "cpu")
    assert found is not None
    assert (found.gpu_memory_mib, found.compute_capability) == (None, None)


@pytest.mark.parametrize("text", ["", "\n\n", "No devices were found"])
def test_output_without_a_gpu_row_is_no_gpu(text: str) -> None:
    assert parse_nvidia_smi(text, "cpu") is None


def test_clocks_current_and_maximum() -> None:
    assert parse_clocks("2520, 9001, 2520, 9001\n") == {
        "sm": 2520,
        "memory": 9001,
        "max_sm": 2520,
        "max_memory": 9001,
    }
    assert parse_clocks("[N/A], [N/A], [N/A], [N/A]\n") is None


@pytest.mark.parametrize(
    ("mask", "reasons"),
    [
        ("0x0000000000000000", ()),
        ("0x0000000000000001", ("gpu_idle",)),
        ("0x0000000000000004", ("sw_power_cap",)),
        ("0x0000000000000044", ("sw_power_cap", "hw_thermal_slowdown")),
        ("0x0000000000001000", ("0x1000",)),
        ("[Not Supported]", None),
        (None, None),
    ],
)
def test_throttle_mask_decodes_to_reason_names(
    mask: str | None, reasons: tuple[str, ...] | None
) -> None:
    assert decode_throttle(mask) == reasons


def test_fingerprint_round_trips_through_json() -> None:
    hardware = Hardware(
        slug="l40s", clocks_mhz={"sm": 2520, "memory": None}, throttle_reasons=("sw_power_cap",)
    )
    data = json.loads(json.dumps(asdict(hardware)))  # as Result.to_json stores it
    assert data["throttle_reasons"] == ["sw_power_cap"]
    assert Hardware(**data) == hardware


def test_a_gpu_fingerprint_describes_itself_for_the_run_context() -> None:
    gpu = Hardware(
        slug="l40s",
        gpu_name="NVIDIA L40S",
        gpu_count=1,
        driver_version="550.54.15",
        gpu_memory_mib=46068,
        cpu_name="x",
        clocks_mhz={"sm": 2100, "memory": 9001, "max_sm": 2520, "max_memory": 9001},
        throttle_reasons=("hw_thermal_slowdown",),
    )
    assert gpu.describe() == (
        "l40s (1x NVIDIA L40S, driver 550.54.15, 46068 MiB, SM max 2520 MHz, "
        "throttle: hw_thermal_slowdown)"
    )
    assert (
        Hardware(slug="cpu-amd_epyc", cpu_name="AMD EPYC").describe() == "cpu-amd_epyc (AMD EPYC)"
    )
