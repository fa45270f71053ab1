"""Hardware fingerprint: nvidia-smi CSV and the GPU slug that partitions the store."""

from __future__ import annotations

import pytest

from perfgate.hardware import Hardware, gpu_slug, parse_nvidia_smi


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx_pro_6000_blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx_pro_6000_blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell", "rtx_pro_6000_blackwell"),
        ("NVIDIA  L40S ", "l40s"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm4_80gb"),
        ("NVIDIA GeForce RTX 4090", "geforce_rtx_4090"),
        ("Tesla T4", "tesla_t4"),
        ("???", "unknown_gpu"),
    ],
)
def test_gpu_slug(name: str, slug: str) -> None:
    assert gpu_slug(name) == slug


def test_parse_nvidia_smi_counts_gpus_and_reads_the_first() -> None:
    csv = "NVIDIA L40S, 550.54.15, 46068, 8.9\nNVIDIA L40S, 550.54.15, 46068, 8.9\n"
    assert parse_nvidia_smi(csv, cpu="AMD EPYC 7763") == Hardware(
        slug="l40s",
        gpu_name="NVIDIA L40S",
        gpu_count=2,
        driver_version="550.54.15",
        gpu_memory_mib=46068,
        compute_capability="8.9",
        cpu_name="AMD EPYC 7763",
    )


def test_parse_nvidia_smi_without_memory_or_capability() -> None:
    hardware = parse_nvidia_smi("NVIDIA L40S, 535.1, [N/A]\n", cpu="x")
    assert hardware is not None
    assert (hardware.slug, hardware.gpu_memory_mib, hardware.compute_capability) == (
        "l40s",
        None,
        None,
    )


@pytest.mark.parametrize("text", ["", "\n", "No devices were found"])
def test_parse_nvidia_smi_without_a_gpu_row_is_none(text: str) -> None:
    assert parse_nvidia_smi(text, cpu="x") is None
