"""Hardware fingerprint: the GPU model slug that partitions the baseline store."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# nvidia-smi names that do not slugify to the conventional short form.
_GPU_SLUG_OVERRIDES = {
    "nvidia l40s": "l40s",
    "nvidia rtx pro 6000 blackwell server edition": "rtx_pro_6000_blackwell",
    "nvidia rtx pro 6000 blackwell workstation edition": "rtx_pro_6000_blackwell",
}


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """What the benchmark ran on. Only ``slug`` partitions the store; the rest is context."""

    slug: str
    gpu_name: str | None = None
    gpu_count: int = 0
    driver_version: str | None = None
    gpu_memory_mib: int | None = None
    compute_capability: str | None = None
    cpu_name: str = ""

    def to_json(self) -> dict[str, Any]:
        """The fingerprint as stored in a result artifact."""
        return {
            "slug": self.slug,
            "gpu_name": self.gpu_name,
            "gpu_count": self.gpu_count,
            "driver_version": self.driver_version,
            "gpu_memory_mib": self.gpu_memory_mib,
            "compute_capability": self.compute_capability,
            "cpu_name": self.cpu_name,
        }


def slugify(text: str) -> str:
    """Lower-case, runs of anything else collapsed to one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def gpu_slug(name: str) -> str:
    """Canonical slug for an nvidia-smi GPU name: ``NVIDIA L40S`` -> ``l40s``."""
    lowered = " ".join(name.lower().split())
    if lowered in _GPU_SLUG_OVERRIDES:
        return _GPU_SLUG_OVERRIDES[lowered]
    return slugify(lowered.removeprefix("nvidia ")) or "unknown_gpu"


def cpu_name() -> str:
    """The CPU model name from /proc/cpuinfo, else what the platform module knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def parse_nvidia_smi(csv_text: str, cpu: str) -> Hardware | None:
    """Build a fingerprint from nvidia-smi's CSV (name, driver, memory MiB, compute capability)."""
    rows = [
        [cell.strip() for cell in line.split(",")] for line in csv_text.splitlines() if line.strip()
    ]
    if not rows or len(rows[0]) < 2:
        return None
    name, driver = rows[0][0], rows[0][1]
    memory = rows[0][2] if len(rows[0]) > 2 else ""
    capability = rows[0][3] if len(rows[0]) > 3 else None
    return Hardware(
        slug=gpu_slug(name),
        gpu_name=name,
        gpu_count=len(rows),
        driver_version=driver or None,
        gpu_memory_mib=int(float(memory)) if re.fullmatch(r"[0-9.]+", memory) else None,
        compute_capability=capability or None,
        cpu_name=cpu,
    )


# compute_cap is unknown to older drivers, whose nvidia-smi then rejects the whole query;
# without the fallback such a GPU machine would be filed under a cpu slug.
_SMI_QUERIES = (
    "name,driver_version,memory.total,compute_cap",
    "name,driver_version,memory.total",
)


def detect() -> Hardware:
    """Ask nvidia-smi for the GPU; fall back to a ``cpu-<model>`` slug without one."""
    cpu = cpu_name()
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return _cpu_hardware(cpu)
    for fields in _SMI_QUERIES:
        try:
            completed = subprocess.run(
                [smi, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            break
        if completed.returncode == 0:
            found = parse_nvidia_smi(completed.stdout, cpu)
            if found is not None:
                return found
    return _cpu_hardware(cpu)


def _cpu_hardware(cpu: str) -> Hardware:
    return Hardware(slug=f"cpu-{slugify(cpu)[:48].strip('_') or 'unknown'}", cpu_name=cpu)
