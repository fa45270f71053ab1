"""Admission control's checks alone (pure), and its loop around a sample (fake probe)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfgate.config import AdmissionMode, AdmissionPolicy
from perfgate.config.policy import CpuAdmission, GpuAdmission
from perfgate.result import AdmissionStatus, GpuReading, Hardware, MachineState
from perfgate.run.admission import AdmissionControl, assess, read_cpu_state
from perfgate.run.hardware import visible_gpus

POLICY = AdmissionPolicy()
IDLE = GpuReading(
    index=0, sm_mhz=210, memory_mhz=405, max_sm_mhz=2520, max_memory_mhz=9001,
    throttle_reasons=("gpu_idle",), temperature_c=34.0, power_w=36.0, power_limit_w=350.0,
    ecc_uncorrected=0,
)  # fmt: skip
FIT = MachineState(gpus=(IDLE,), driver_version="550.54.15")
GPU = Hardware(slug="l40s", gpu_name="NVIDIA L40S", gpu_count=1)
CPU = Hardware(slug="cpu-x", cpu_name="x")


def gpu(**changes: object) -> MachineState:
    return dataclasses.replace(FIT, gpus=(dataclasses.replace(IDLE, **changes),))


def test_a_fit_gpu_is_admitted() -> None:
    assert assess(FIT, FIT, POLICY, gpu=True) == (AdmissionStatus.ADMITTED, ())


def test_each_unfit_state_names_its_reason() -> None:
    cases = {
        "GPU throttled: HW slowdown": gpu(
            throttle_reasons=("hw_slowdown",), sm_mhz=2500, memory_mhz=9001
        ),
        "GPU throttled: SW thermal slowdown, HW power brake slowdown": gpu(
            throttle_reasons=("sw_thermal_slowdown", "hw_power_brake_slowdown", "gpu_idle")
        ),
        "GPU clocks low: SM 1200 of 2520 MHz (under 90 %)": gpu(
            throttle_reasons=(), sm_mhz=1200, memory_mhz=9001
        ),
        "another compute process on the GPU: python3 (pid 4242, 812 MiB)": dataclasses.replace(
            FIT, processes=("python3 (pid 4242, 812 MiB)",)
        ),
    }
    for reason, state in cases.items():
        assert assess(FIT, state, POLICY, gpu=True) == (AdmissionStatus.CONTAMINATED, (reason,))
        assert assess(state, FIT, POLICY, gpu=True) == (AdmissionStatus.CONTAMINATED, (reason,))


def test_heat_and_power_count_before_a_sample_only() -> None:
    hot = gpu(temperature_c=91.0, power_w=300.0)
    status, reasons = assess(hot, FIT, POLICY, gpu=True)
    assert status is AdmissionStatus.CONTAMINATED
    assert reasons == (
        "GPU too hot before the sample: 91 °C (at most 85)",
        "GPU busy before the sample: 300 W of 350 W (over 60 %)",
    )
    # After a sample its own load explains both.
    assert assess(FIT, hot, POLICY, gpu=True)[0] is AdmissionStatus.ADMITTED


def test_what_changed_during_the_sample() -> None:
    errors = gpu(ecc_uncorrected=2)
    assert assess(FIT, errors, POLICY, gpu=True)[1] == (
        "GPU: 2 new uncorrected ECC error(s) during the sample",
    )
    updated = dataclasses.replace(FIT, driver_version="555.42.02")
    assert assess(FIT, updated, POLICY, gpu=True)[1] == (
        "GPU driver changed during the sample: 550.54.15 → 555.42.02",
    )
    no_ecc = dataclasses.replace(POLICY, gpu=GpuAdmission(ecc_errors=False))
    assert assess(FIT, errors, no_ecc, gpu=True)[0] is AdmissionStatus.ADMITTED


def test_an_unreadable_gpu_is_a_finding() -> None:
    status, reasons = assess(FIT, None, POLICY, gpu=True)
    assert (status, reasons) == (
        AdmissionStatus.CONTAMINATED,
        ("GPU state unreadable after the sample (nvidia-smi failed)",),
    )


def test_policy_turns_checks_off_or_records_only() -> None:
    throttled = gpu(throttle_reasons=("sw_power_cap",), sm_mhz=2400, memory_mhz=9001)
    assert assess(FIT, throttled, POLICY, gpu=True)[0] is AdmissionStatus.ADMITTED
    strict = dataclasses.replace(POLICY, gpu=GpuAdmission(throttle_reasons=("sw_power_cap",)))
    assert assess(FIT, throttled, strict, gpu=True)[0] is AdmissionStatus.CONTAMINATED
    record = dataclasses.replace(strict, mode=AdmissionMode.RECORD)
    assert assess(FIT, throttled, record, gpu=True) == (
        AdmissionStatus.FLAGGED,
        ("GPU throttled: SW power cap",),
    )
    off = dataclasses.replace(strict, mode=AdmissionMode.OFF)
    assert assess(FIT, throttled, off, gpu=True) == (AdmissionStatus.NOT_CHECKED, ())
    locked = dataclasses.replace(POLICY, gpu=GpuAdmission(min_clock_pct=0))
    slow_clock = gpu(throttle_reasons=(), sm_mhz=1200, memory_mhz=9001)
    assert assess(FIT, slow_clock, locked, gpu=True)[0] is AdmissionStatus.ADMITTED


def test_several_gpus_are_named_and_ignored_processes_are_not_foreign() -> None:
    throttled = dataclasses.replace(IDLE, index=1, throttle_reasons=("gpu_idle", "hw_slowdown"))
    two = dataclasses.replace(FIT, gpus=(IDLE, throttled), processes=("dcgm-exporter (pid 7)",))
    ignore = dataclasses.replace(POLICY, gpu=GpuAdmission(ignore_processes=("dcgm-exporter",)))
    assert assess(FIT, two, ignore, gpu=True)[1] == ("GPU 1 throttled: HW slowdown",)


def test_a_cpu_runner_is_recorded_not_checked_unless_asked() -> None:
    busy = MachineState(governors=("powersave",), load_1m=7.5, cpus=2)
    assert assess(busy, busy, POLICY, gpu=False) == (AdmissionStatus.NOT_CHECKED, ())
    asked = dataclasses.replace(
        POLICY, cpu=CpuAdmission(governor="performance", max_load_per_cpu=1.0)
    )
    assert assess(busy, busy, asked, gpu=False) == (
        AdmissionStatus.CONTAMINATED,
        (
            "CPU frequency governor powersave, not performance",
            "CPU busy before the sample: load 7.5 on 2 CPU(s) (at most 1 per CPU)",
        ),
    )
    calm = MachineState(governors=("performance",), load_1m=0.5, cpus=2)
    assert assess(calm, calm, asked, gpu=False)[0] is AdmissionStatus.ADMITTED
    unreported = MachineState(governors=None, load_1m=None, cpus=2)
    assert assess(unreported, unreported, asked, gpu=False)[0] is AdmissionStatus.NOT_CHECKED


def test_cpu_state_reads_governors_and_the_load_average(tmp_path: Path) -> None:
    for cpu, governor in (("cpu0", "performance"), ("cpu1", "powersave")):
        path = tmp_path / cpu / "cpufreq" / "scaling_governor"
        path.parent.mkdir(parents=True)
        path.write_text(f"{governor}\n")
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("1.25 0.80 0.60 2/123 4567\n")
    state = read_cpu_state(tmp_path, loadavg)
    assert (state.governors, state.load_1m) == (("performance", "powersave"), 1.25)
    assert read_cpu_state(tmp_path / "none", tmp_path / "none").governors is None


def test_visible_gpus_follow_cuda_visible_devices() -> None:
    assert visible_gpus({}) is None
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1, GPU-abc"}) == {"1", "GPU-abc"}


class Clock:
    """A clock that only moves when something sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_an_unfit_gpu_is_waited_for_within_the_budget() -> None:
    states = iter([gpu(temperature_c=90.0), gpu(temperature_c=88.0), FIT, FIT])
    clock = Clock()
    policy = dataclasses.replace(POLICY, wait_seconds=60.0, poll_seconds=10.0)
    control = AdmissionControl(
        policy, GPU, probe=lambda: next(states), clock=clock, sleep=clock.sleep
    )
    value, record = control.measure(0, lambda: 42.0)
    assert (value, record.status, record.waited_s) == (42.0, AdmissionStatus.ADMITTED, 20.0)
    assert control.wait_left == 40.0 and control.spent_s == 20.0


def test_the_wait_budget_runs_out_and_the_sample_is_contaminated() -> None:
    clock = Clock()
    policy = dataclasses.replace(POLICY, wait_seconds=15.0, poll_seconds=10.0, remeasure=1)
    hot = gpu(temperature_c=90.0)
    control = AdmissionControl(policy, GPU, probe=lambda: hot, clock=clock, sleep=clock.sleep)
    _, record = control.measure(0, lambda: 1.0)
    assert (record.status, record.waited_s) == (AdmissionStatus.CONTAMINATED, 15.0)
    _, again = control.measure(1, lambda: 1.0)
    assert again.waited_s == 0.0  # the run's wait budget is spent
    assert control.may_remeasure(3.0) and not control.may_remeasure(3.0)
    assert control.spent_s == 18.0


def test_admission_off_reads_nothing() -> None:
    def probe() -> MachineState:
        raise AssertionError("admission.mode: off reads nothing")

    off = dataclasses.replace(POLICY, mode=AdmissionMode.OFF)
    control = AdmissionControl(off, CPU, probe=probe)
    assert control.measure(3, lambda: 1.0)[1].status is AdmissionStatus.NOT_CHECKED
