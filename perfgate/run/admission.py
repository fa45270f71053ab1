"""Admission control: is the machine fit to measure, before and after each sample?

A rolling baseline compares this runner's figure with other runners on other days; a
sample taken while the GPU was throttled, hot, shared with another process or changing
driver measures the machine, not the code. Before each sample perfgate reads the GPU's
state (the nvidia-smi query hardware detection uses) and waits, within a budget, for an
unfit GPU to become fit; after the sample it reads it again. A sample either read shows
unfit is *contaminated*: it is measured again while the run's re-measure budget lasts,
and otherwise kept in the artifact with its reasons, set aside: never in a window, never
behind a BLOCK. CPU-only runners get the equivalents (the CPU frequency governor, the load
average) where ``admission.cpu`` asks for them, and are otherwise recorded, not checked.

The policy is ``admission:`` in perfgate.yaml; the checks are pure (``assess``), the reads
are at the edge (``read_state``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from perfgate.config import AdmissionMode, AdmissionPolicy
from perfgate.result import (
    AdmissionStatus,
    GpuReading,
    Hardware,
    MachineState,
    SampleAdmission,
)
from perfgate.run.hardware import (
    CLOCK_FIELDS,
    THROTTLE_FIELDS,
    decode_throttle,
    parse_csv,
    parse_int,
    query,
    visible_gpus,
)

T = TypeVar("T")

#: What admission control asks nvidia-smi, one row per GPU. The throttle field was renamed
#: in driver 535 (clocks_event_reasons); older drivers know the throttle spelling.
GPU_FIELDS = (
    "index",
    "uuid",
    "driver_version",
    *CLOCK_FIELDS,
    THROTTLE_FIELDS[0],
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "ecc.errors.uncorrected.volatile.total",
)
_FIELD_FALLBACKS = {THROTTLE_FIELDS[0]: THROTTLE_FIELDS[1]}
APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")

#: How a report names each clock-event reason: "GPU throttled: HW slowdown".
THROTTLE_LABELS = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "applications clocks setting",
    "sw_power_cap": "SW power cap",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "SW thermal slowdown",
    "hw_thermal_slowdown": "HW thermal slowdown",
    "hw_power_brake_slowdown": "HW power brake slowdown",
    "display_clock_setting": "display clock setting",
}

_GOVERNORS = Path("/sys/devices/system/cpu")
_LOADAVG = Path("/proc/loadavg")


# -- reading the machine (I/O) ------------------------------------------------------------


def _float(cell: str | None) -> float | None:
    try:
        return float(cell) if cell is not None else None
    except ValueError:
        return None


class GpuProbe:
    """Reads the GPUs' state through nvidia-smi; learns once which fields the driver knows."""

    def __init__(self, smi: str, visible: frozenset[str] | None = None) -> None:
        self.smi = smi
        self.visible = visible
        self._fields: tuple[str, ...] | None = None

    def _working_fields(self) -> tuple[str, ...]:
        """The fields this driver answers: all at once when it can, else field by field."""
        if self._fields is None:
            if query(self.smi, GPU_FIELDS) is not None:
                self._fields = GPU_FIELDS
            else:
                known = []
                for field in GPU_FIELDS:
                    for name in (field, _FIELD_FALLBACKS.get(field)):
                        if name is not None and query(self.smi, ("index", name)) is not None:
                            known.append(name)
                            break
                self._fields = tuple(known)
        return self._fields

    def __call__(self) -> MachineState | None:
        """The state now; None when nvidia-smi does not answer (a GPU fallen off the bus)."""
        fields = self._working_fields()
        text = query(self.smi, fields) if fields else None
        if text is None:
            return None
        gpus, uuids, driver = [], {}, None
        for row in parse_csv(text):
            cell = dict(zip(fields, row, strict=False))
            index, uuid = cell.get("index"), cell.get("uuid")
            if self.visible is not None and index not in self.visible and uuid not in self.visible:
                continue
            driver = driver or cell.get("driver_version")
            reasons = next((cell[f] for f in THROTTLE_FIELDS if f in cell), None)
            gpus.append(
                GpuReading(
                    index=parse_int(index),
                    sm_mhz=parse_int(cell.get("clocks.sm")),
                    memory_mhz=parse_int(cell.get("clocks.mem")),
                    max_sm_mhz=parse_int(cell.get("clocks.max.sm")),
                    max_memory_mhz=parse_int(cell.get("clocks.max.mem")),
                    throttle_reasons=decode_throttle(reasons),
                    temperature_c=_float(cell.get("temperature.gpu")),
                    power_w=_float(cell.get("power.draw")),
                    power_limit_w=_float(cell.get("power.limit")),
                    ecc_uncorrected=parse_int(cell.get("ecc.errors.uncorrected.volatile.total")),
                )
            )
            if uuid:
                uuids[uuid] = index
        return MachineState(
            gpus=tuple(gpus), driver_version=driver, processes=self._processes(set(uuids))
        )

    def _processes(self, uuids: set[str]) -> tuple[str, ...]:
        """Compute processes on the checked GPUs: ``python3 (pid 4242, 812 MiB)``."""
        text = query(self.smi, APP_FIELDS, kind="compute-apps")
        found = []
        for row in parse_csv(text or ""):
            if len(row) != len(APP_FIELDS) or (uuids and row[0] not in uuids):
                continue
            _, pid, name, memory = row
            if pid is None or not pid.isdigit():
                continue  # "No running processes found" and the like
            used = f", {memory} MiB" if memory else ""
            found.append(f"{Path(name or '?').name} (pid {pid}{used})")
        return tuple(found)


def read_cpu_state(root: Path = _GOVERNORS, loadavg: Path = _LOADAVG) -> MachineState:
    """The CPU frequency governors in use and the 1-minute load average (None: not reported)."""
    governors = sorted(
        {
            path.read_text(encoding="utf-8", errors="replace").strip()
            for path in root.glob("cpu[0-9]*/cpufreq/scaling_governor")
            if path.is_file()
        }
    )
    try:
        load: float | None = float(loadavg.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        load = None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return MachineState(governors=tuple(governors) or None, load_1m=load, cpus=cpus)


# -- the checks (pure) --------------------------------------------------------------------


def _gpu_name(gpu: GpuReading, state: MachineState) -> str:
    return "GPU" if len(state.gpus) <= 1 or gpu.index is None else f"GPU {gpu.index}"


def _over(value: float | None, limit: float | None) -> bool:
    """``value`` is known and past a set ``limit``."""
    return value is not None and limit is not None and value > limit


def _ignored(process: str, ignore: Sequence[str]) -> bool:
    return process.split(" (pid ", 1)[0] in ignore


def unfit(
    state: MachineState | None, policy: AdmissionPolicy, *, gpu: bool, before: bool
) -> list[str]:
    """Why ``state`` is not fit to measure on, as a reader says it (empty: fit).

    ``before``: the state before a sample, when the GPU should be idle and cool; after a
    sample its own load explains heat, power and the load average, so those are not held
    against it then.
    """
    if not gpu:
        return [] if state is None else _cpu_unfit(state, policy, before=before)
    if state is None:
        when = "before" if before else "after"
        return [f"GPU state unreadable {when} the sample (nvidia-smi failed)"]
    rules = policy.gpu
    reasons = []
    for reading in state.gpus:
        name = _gpu_name(reading, state)
        active = reading.throttle_reasons or ()
        throttled = [THROTTLE_LABELS.get(r, r) for r in active if r in rules.throttle_reasons]
        if throttled:
            reasons.append(f"{name} throttled: {', '.join(throttled)}")
        # An idle GPU drops its clocks by design: only a busy one's clocks say anything.
        for clock, top, what in (
            (reading.sm_mhz, reading.max_sm_mhz, "SM"),
            (reading.memory_mhz, reading.max_memory_mhz, "memory"),
        ):
            floor = rules.min_clock_pct / 100.0 * top if top else None
            if "gpu_idle" not in active and floor and clock is not None and clock < floor:
                reasons.append(
                    f"{name} clocks low: {what} {clock} of {top} MHz "
                    f"(under {rules.min_clock_pct:g} %)"
                )
        if before and _over(reading.temperature_c, rules.max_temperature_c):
            reasons.append(
                f"{name} too hot before the sample: {reading.temperature_c:g} °C "
                f"(at most {rules.max_temperature_c:g})"
            )
        limit = reading.power_limit_w
        most = (
            rules.max_power_pct / 100.0 * limit
            if rules.max_power_pct is not None and limit
            else None
        )
        if before and _over(reading.power_w, most):
            reasons.append(
                f"{name} busy before the sample: {reading.power_w:g} W of {limit:g} W "
                f"(over {rules.max_power_pct:g} %)"
            )
    if rules.foreign_processes:
        others = [p for p in state.processes if not _ignored(p, rules.ignore_processes)]
        if others:
            reasons.append(f"another compute process on the GPU: {', '.join(others)}")
    return reasons


def _cpu_unfit(state: MachineState, policy: AdmissionPolicy, *, before: bool) -> list[str]:
    rules = policy.cpu
    reasons = []
    if rules.governor is not None and state.governors is not None:
        wrong = [g for g in state.governors if g != rules.governor]
        if wrong:
            reasons.append(f"CPU frequency governor {', '.join(wrong)}, not {rules.governor}")
    load, cpus = state.load_1m, state.cpus or 1
    most = rules.max_load_per_cpu * cpus if rules.max_load_per_cpu is not None else None
    if before and _over(load, most):
        reasons.append(
            f"CPU busy before the sample: load {load:g} on {cpus} CPU(s) "
            f"(at most {rules.max_load_per_cpu:g} per CPU)"
        )
    return reasons


def _checked(state: MachineState | None, policy: AdmissionPolicy, *, gpu: bool) -> bool:
    """Whether any check could be made at all (a CPU runner whose checks are off: no)."""
    if gpu:
        return True  # an unreadable GPU is itself a finding
    rules = policy.cpu
    return state is not None and (
        (rules.governor is not None and state.governors is not None)
        or (rules.max_load_per_cpu is not None and state.load_1m is not None)
    )


def _during(
    before: MachineState | None, after: MachineState | None, policy: AdmissionPolicy
) -> list[str]:
    """What changed while the sample ran: another driver, new uncorrected ECC errors."""
    if before is None or after is None:
        return []
    reasons = []
    if before.driver_version and after.driver_version != before.driver_version:
        reasons.append(
            f"GPU driver changed during the sample: {before.driver_version} → "
            f"{after.driver_version or 'unknown'}"
        )
    counts = {g.index: g.ecc_uncorrected for g in before.gpus}
    for reading in after.gpus if policy.gpu.ecc_errors else ():
        was, now = counts.get(reading.index), reading.ecc_uncorrected
        if was is not None and now is not None and now > was:
            reasons.append(
                f"{_gpu_name(reading, after)}: {now - was} new uncorrected ECC error(s) "
                "during the sample"
            )
    return reasons


def assess(
    before: MachineState | None,
    after: MachineState | None,
    policy: AdmissionPolicy,
    *,
    gpu: bool,
) -> tuple[AdmissionStatus, tuple[str, ...]]:
    """The sample's status and every reason the machine was unfit, each said once."""
    if policy.mode is AdmissionMode.OFF:
        return AdmissionStatus.NOT_CHECKED, ()
    found = unfit(before, policy, gpu=gpu, before=True)
    found += unfit(after, policy, gpu=gpu, before=False)
    if gpu:
        found += _during(before, after, policy)
    reasons = tuple(dict.fromkeys(found))
    if reasons:
        enforced = policy.mode is AdmissionMode.ENFORCE
        return (AdmissionStatus.CONTAMINATED if enforced else AdmissionStatus.FLAGGED), reasons
    if not (_checked(before, policy, gpu=gpu) or _checked(after, policy, gpu=gpu)):
        return AdmissionStatus.NOT_CHECKED, ()
    return AdmissionStatus.ADMITTED, ()


# -- around each sample --------------------------------------------------------------------


class AdmissionControl:
    """One bucket run's admission control: the checks around each sample and its budgets.

    The wait (``wait_seconds``) and the re-measures (``remeasure``) are budgets of the whole
    bucket run, its paired comparison included, so the runner time they cost is bounded.
    """

    def __init__(
        self,
        policy: AdmissionPolicy,
        hardware: Hardware,
        *,
        probe: Callable[[], MachineState | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy
        self.gpu = hardware.gpu_count > 0
        self.probe = probe if probe is not None else default_probe(self.gpu)
        self.clock = clock
        self.sleep = sleep
        self.wait_left = policy.wait_seconds
        self.remeasures_left = policy.remeasure
        # Runner time admission control cost this run: waits and re-measured samples.
        self.spent_s = 0.0

    @property
    def active(self) -> bool:
        """False when admission.mode is off: nothing is read."""
        return self.policy.mode is not AdmissionMode.OFF

    def measure(self, index: int, sample: Callable[[], T]) -> tuple[T, SampleAdmission]:
        """Check the machine, wait (within the budget) until it is fit, take the sample,
        check again; the sample and its record."""
        if not self.active:
            return sample(), SampleAdmission(sample_index=index, status=AdmissionStatus.NOT_CHECKED)
        before = self.probe()
        started = self.clock()
        while unfit(before, self.policy, gpu=self.gpu, before=True) and self.wait_left > 0:
            pause = min(self.policy.poll_seconds, self.wait_left)
            self.sleep(pause)
            self.wait_left -= pause
            before = self.probe()
        waited = self.clock() - started
        self.spent_s += waited
        taken = sample()
        after = self.probe()
        status, reasons = assess(before, after, self.policy, gpu=self.gpu)
        record = SampleAdmission(
            sample_index=index,
            status=status,
            reasons=reasons,
            waited_s=round(waited, 3),
            before=before,
            after=after,
        )
        return taken, record

    def may_remeasure(self, wall_s: float) -> bool:
        """Take one re-measure from the budget for a set-aside sample that took ``wall_s``."""
        if self.remeasures_left <= 0:
            return False
        self.remeasures_left -= 1
        self.spent_s += wall_s
        return True


def default_probe(gpu: bool) -> Callable[[], MachineState | None]:
    """nvidia-smi on PATH for a GPU runner (limited to ``CUDA_VISIBLE_DEVICES``), else /proc."""
    if not gpu:
        return read_cpu_state
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return lambda: None
    return GpuProbe(smi, visible_gpus(os.environ))
