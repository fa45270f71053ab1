"""A stand-in nvidia-smi on PATH for tests (test machines have no GPU), and its data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import FIXTURES

FAKE = FIXTURES / "nvidia-smi" / "fake_nvidia_smi.py"

#: An idle, cool, unthrottled L40S as nvidia-smi reports it: what hardware detection and
#: admission control ask for.
L40S: dict[str, Any] = {
    "name": ["NVIDIA L40S"],
    "index": ["0"],
    "uuid": ["GPU-5a1b2c3d-0000-1111-2222-333344445555"],
    "driver_version": ["550.54.15"],
    "memory.total": ["46068"],
    "compute_cap": ["8.9"],
    "clocks.sm": ["210"],
    "clocks.mem": ["405"],
    "clocks.max.sm": ["2520"],
    "clocks.max.mem": ["9001"],
    "clocks_event_reasons.active": ["0x0000000000000001"],  # idle
    "temperature.gpu": ["34"],
    "power.draw": ["36.5"],
    "power.limit": ["350.00"],
    "ecc.errors.uncorrected.volatile.total": ["0"],
}
HW_SLOWDOWN = "0x0000000000000008"


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]) -> Path:
    """Put the fake nvidia-smi first on PATH, answering from ``data``; its data file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # This interpreter runs it: PATH below is too narrow to find one by name.
    body = FAKE.read_text(encoding="utf-8").split("\n", 1)[1]
    (bin_dir / "nvidia-smi").write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    (bin_dir / "nvidia-smi").chmod(0o755)
    path = tmp_path / "smi.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("FAKE_SMI_DATA", str(path))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return path
