"""Hardware fingerprint: the GPU model slug that partitions the baseline store.

Only the slug partitions the store. Driver, memory, compute capability, clocks and active
throttle reasons are recorded in each result so a report can show what the run had. The
machine (which GPUs, not which model) names a run for the runner model when runner names
do not recur (gate.runner_identity: gpu).
"""

from __future__ import annotations

import hashlib
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from perfgate.config import RunnerIdentity
from perfgate.context import RunContext
from perfgate.result import Hardware

# nvidia-smi names that do not slugify to the conventional short form.
_GPU_SLUG_OVERRIDES = {
    "nvidia l40s": "l40s",
}
# Board variants that share a silicon and power envelope, so share a baseline partition.
_EDITION_SUFFIXES = (" server edition", " workstation edition")

BASE_FIELDS = ("name", "driver_version", "memory.total", "compute_cap")
CLOCK_FIELDS = ("clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem")
CLOCK_KEYS = ("sm", "memory", "max_sm", "max_memory")
# Renamed in driver 535 (clocks_event_reasons); older drivers only know the throttle spelling.
THROTTLE_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# NVML clocks-event reason bits (nvmlClocksEventReason*).
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_UNAVAILABLE = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}


def slugify(text: str) -> str:
    """Lower-case, runs of anything else collapsed to one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def gpu_slug(name: str) -> str:
    """Canonical slug for an nvidia-smi GPU name: ``NVIDIA L40S`` -> ``l40s``.

    ``NVIDIA RTX PRO 6000 Blackwell Server Edition`` and its Workstation Edition share
    ``rtx_pro_6000_blackwell``; a Max-Q board keeps ``_max_q``, since it runs at a lower power.
    """
    lowered = " ".join(name.lower().split())
    if lowered in _GPU_SLUG_OVERRIDES:
        return _GPU_SLUG_OVERRIDES[lowered]
    for suffix in _EDITION_SUFFIXES:
        lowered = lowered.removesuffix(suffix)
    return slugify(lowered.removeprefix("nvidia ")) or "unknown_gpu"


def cpu_name() -> str:
    """The CPU model name from /proc/cpuinfo, else what the platform module knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _cell(text: str) -> str | None:
    value = text.strip()
    return None if value.lower() in _UNAVAILABLE else value


def parse_csv(csv_text: str) -> list[list[str | None]]:
    """nvidia-smi ``--format=csv,noheader,nounits`` rows; unavailable cells are None."""
    return [
        [_cell(cell) for cell in line.split(",")] for line in csv_text.splitlines() if line.strip()
    ]


def parse_int(value: str | None) -> int | None:
    """A non-negative count or clock from a CSV cell ("2520", "2520.5"); None otherwise."""
    return int(float(value)) if value and re.fullmatch(r"[0-9]+(\.[0-9]+)?", value) else None


def parse_nvidia_smi(csv_text: str, cpu: str) -> Hardware | None:
    """Build a fingerprint from nvidia-smi's CSV (name, driver, memory MiB, compute capability)."""
    rows = parse_csv(csv_text)
    if not rows or len(rows[0]) < 2 or not rows[0][0]:
        return None
    first = rows[0] + [None] * (4 - len(rows[0]))
    name = first[0] or ""
    return Hardware(
        slug=gpu_slug(name),
        gpu_name=name,
        gpu_count=len(rows),
        driver_version=first[1],
        gpu_memory_mib=parse_int(first[2]),
        compute_capability=first[3],
        cpu_name=cpu,
    )


def parse_clocks(csv_text: str) -> dict[str, int | None] | None:
    """The first GPU's clocks (``clocks.sm, clocks.mem, clocks.max.sm, clocks.max.mem``)."""
    rows = parse_csv(csv_text)
    if not rows or len(rows[0]) != len(CLOCK_KEYS):
        return None
    clocks = {key: parse_int(value) for key, value in zip(CLOCK_KEYS, rows[0], strict=True)}
    return clocks if any(v is not None for v in clocks.values()) else None


def decode_throttle(mask: str | None) -> tuple[str, ...] | None:
    """Names of the bits set in an active-reasons mask (``0x...4`` -> ``sw_power_cap``)."""
    if mask is None:
        return None
    try:
        value = int(mask.strip(), 16)
    except ValueError:
        return None
    names = [name for bit, name in THROTTLE_BITS.items() if value & bit]
    unknown = value & ~sum(THROTTLE_BITS)
    return (*names, f"0x{unknown:x}") if unknown else tuple(names)


def query(smi: str, fields: Sequence[str], *, kind: str = "gpu") -> str | None:
    """stdout of one ``nvidia-smi --query-<kind>`` (gpu, compute-apps); None when it fails
    (e.g. a field the driver lacks)."""
    try:
        completed = subprocess.run(
            [smi, f"--query-{kind}={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout if completed.returncode == 0 else None


def _query_gpu(smi: str, cpu: str) -> Hardware | None:
    # compute_cap needs driver >= 510; without it, ask for the rest.
    text = query(smi, BASE_FIELDS) or query(smi, BASE_FIELDS[:3])
    found = parse_nvidia_smi(text, cpu) if text else None
    if found is None:
        return None
    clocks_text = query(smi, CLOCK_FIELDS)
    throttle = None
    for field in THROTTLE_FIELDS:
        text = query(smi, (field,))
        if text is not None:
            rows = parse_csv(text)
            throttle = decode_throttle(rows[0][0] if rows else None)
            break
    return replace(
        found,
        clocks_mhz=parse_clocks(clocks_text) if clocks_text else None,
        throttle_reasons=throttle,
    )


def detect() -> Hardware:
    """Ask nvidia-smi for the GPU; fall back to a ``cpu-<model>`` slug without one."""
    cpu = cpu_name()
    smi = shutil.which("nvidia-smi")
    found = _query_gpu(smi, cpu) if smi is not None else None
    if found is not None:
        return found
    return Hardware(slug=f"cpu-{slugify(cpu)[:48].strip('_') or 'unknown'}", cpu_name=cpu)


def visible_gpus(env: Mapping[str, str]) -> frozenset[str] | None:
    """The GPUs a benchmark can use (``CUDA_VISIBLE_DEVICES``: indexes or UUIDs); None: all."""
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None or not raw.strip():
        return None
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def gpu_machine(smi: str, visible: frozenset[str] | None) -> str | None:
    """``gpu-<hash>`` of the visible GPUs' UUIDs; None when nvidia-smi reports none.

    Hashed: a UUID is a board's serial-like identifier, and the baseline branch is read by
    anyone who can read the repository; the hash still recurs wherever the GPUs do.
    """
    text = query(smi, ("index", "uuid"))
    uuids = sorted(
        uuid
        for index, uuid in (row for row in parse_csv(text or "") if len(row) == 2)
        if uuid and (visible is None or index in visible or uuid in visible)
    )
    if not uuids:
        return None
    return "gpu-" + hashlib.sha256(",".join(uuids).encode()).hexdigest()[:12]


def identify_machine(
    run: RunContext, identity: RunnerIdentity, env: Mapping[str, str]
) -> tuple[RunContext, str | None]:
    """``run`` with its machine named as ``identity`` asks, and a notice when it cannot be."""
    if identity is RunnerIdentity.RUNNER:
        return run, None
    smi = shutil.which("nvidia-smi")
    machine = gpu_machine(smi, visible_gpus(env)) if smi is not None else None
    if machine is None:
        fallback = (
            f"its runner's name ({run.ci.runner_name}), which the runner model learns from "
            "only if it recurs"
            if run.ci.runner_name
            else "nothing: the runner model judges it as the pool's typical runner"
        )
        return run, (
            "gate.runner_identity: gpu, but nvidia-smi reported no GPU UUID here: this run's "
            f"machine is named by {fallback}"
        )
    return replace(run, ci=replace(run.ci, machine=machine)), None
