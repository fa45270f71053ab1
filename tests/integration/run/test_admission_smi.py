"""Admission control reads the GPU through a stand-in nvidia-smi on PATH (no GPU here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfgate.config import AdmissionPolicy
from perfgate.result import AdmissionStatus, Hardware
from perfgate.run.admission import AdmissionControl, GpuProbe, assess
from tests.fake_smi import HW_SLOWDOWN, L40S, install

TWO_GPUS = {key: [*values, values[0]] for key, values in L40S.items()}
TWO_GPUS["index"] = ["0", "1"]
TWO_GPUS["uuid"] = ["GPU-aaaa", "GPU-bbbb"]


def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any],
          visible: frozenset[str] | None = None) -> GpuProbe:  # fmt: skip
    install(tmp_path, monkeypatch, data)
    return GpuProbe("nvidia-smi", visible)


def test_an_idle_gpu_is_read_and_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = probe(tmp_path, monkeypatch, L40S)()
    assert state is not None
    (gpu,) = state.gpus
    assert (gpu.index, gpu.sm_mhz, gpu.max_sm_mhz, gpu.throttle_reasons) == (
        0, 210, 2520, ("gpu_idle",),
    )  # fmt: skip
    assert (gpu.temperature_c, gpu.power_w, gpu.power_limit_w, gpu.ecc_uncorrected) == (
        34.0, 36.5, 350.0, 0,
    )  # fmt: skip
    assert (state.driver_version, state.processes) == ("550.54.15", ())
    assert assess(state, state, AdmissionPolicy(), gpu=True)[0] is AdmissionStatus.ADMITTED


def test_a_foreign_process_on_the_visible_gpu_contaminates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {**TWO_GPUS, "compute_apps": [["GPU-bbbb", 4242, "/usr/bin/python3", 812]]}
    # The benchmark sees only GPU 0: the process on GPU 1 is someone else's business.
    mine = probe(tmp_path, monkeypatch, data, visible=frozenset({"0"}))()
    assert mine is not None and [g.index for g in mine.gpus] == [0] and mine.processes == ()
    both = GpuProbe("nvidia-smi")()
    assert both is not None and both.processes == ("python3 (pid 4242, 812 MiB)",)
    assert assess(both, both, AdmissionPolicy(), gpu=True)[1] == (
        "another compute process on the GPU: python3 (pid 4242, 812 MiB)",
    )


def test_an_older_driver_is_read_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unknown = ("clocks_event_reasons.active", "ecc.errors.uncorrected.volatile.total")
    data = {k: v for k, v in L40S.items() if k not in unknown}
    data["clocks_throttle_reasons.active"] = [HW_SLOWDOWN]
    state = probe(tmp_path, monkeypatch, data)()
    assert state is not None
    assert state.gpus[0].throttle_reasons == ("hw_slowdown",)
    assert state.gpus[0].ecc_uncorrected is None  # not reported: not checked


def test_a_gpu_that_stops_answering_contaminates_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = install(tmp_path, monkeypatch, L40S)
    control = AdmissionControl(
        AdmissionPolicy(wait_seconds=0), Hardware(slug="l40s", gpu_count=1),
        probe=GpuProbe("nvidia-smi"),
    )  # fmt: skip

    def sample() -> float:
        path.write_text(json.dumps({"name": ["NVIDIA L40S"]}))  # every field now fails
        return 1.0

    _, record = control.measure(0, sample)
    assert record.status is AdmissionStatus.CONTAMINATED
    assert record.reasons == ("GPU state unreadable after the sample (nvidia-smi failed)",)
    assert record.before is not None and record.after is None
