"""The policies of perfgate.yaml: gate, baseline window, qualification, admission, report,
alerts (R4, R5, R8, R9, R15, R18)."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Mode(StrEnum):
    """The rollout stage the reports name (R8); the exit code tells the verdict in both.

    Advisory: the check is not yet required in branch protection, so a red job informs and
    does not stop a merge. Blocking: branch protection requires it.
    """

    ADVISORY = "advisory"
    BLOCKING = "blocking"


class ActionRef(StrEnum):
    """How rendered workflows reference perfgate's composite actions."""

    SELF = "self"  # $/actions/NAME: this repository at the running commit, no checkout needed
    LOCAL = "local"  # ./actions/NAME after the checkout: GitHub Enterprise Server, older runners


class PolicyName(StrEnum):
    """Which rule turns a run's samples and its window into a verdict (R5)."""

    CALIBRATED = "calibrated"  # thresholds from a target false-alarm rate (judge/rule.py)
    REFERENCE = "reference"  # the seed's median - k x MAD rule, exactly


class ConfirmMode(StrEnum):
    """How the bench confirms a suspicious run before it may be BLOCKed."""

    # The merge base and the change, alternately on this runner, when the window cannot clear
    # the run; outside a git checkout (no merge base to measure) it falls back to REPEAT.
    PAIRED = "paired"
    REPEAT = "repeat"  # re-measure on the same runner while the rule asks (up to max_repeats)
    OFF = "off"  # only the initial repeats


class RunnerIdentity(StrEnum):
    """What names the machine a sample was measured on, for the runner-offset model."""

    RUNNER = "runner"  # the CI runner's name (RUNNER_NAME): recurs on persistent runners
    # The visible GPUs' UUIDs, hashed: recurs where runner names are ephemeral (one per job).
    GPU = "gpu"


class AdmissionMode(StrEnum):
    """What admission control does with a sample taken on an unfit machine."""

    ENFORCE = "enforce"  # re-measured, then set aside: never in a window, never behind a BLOCK
    RECORD = "record"  # checked and recorded; nothing is set aside
    OFF = "off"  # not checked


@dataclass(frozen=True, kw_only=True)
class OraclePolicy:
    """Constants of the window verdict (R5); ``k_*`` are the reference policy's alone."""

    k_warn: float = 2.5
    k_block: float = 4.0
    # Both policies: the smallest drop that may BLOCK (and, calibrated, gain that is IMPROVED).
    min_drop_pct: float = 3.0
    noise_floor_pct: float = 0.0
    # Calibrated policy: a whole run moves with its runner's state by at least this much.
    run_noise_floor_pct: float = 0.0


@dataclass(frozen=True, kw_only=True)
class BaselinePolicy:
    """Where baselines live and how large a window must be (R4, R9)."""

    branch: str = "perf-baselines"
    remote: str = "origin"
    min_samples: int = 5
    # The reference policy's window: the nearest samples.
    max_samples: int = 20
    # The calibrated policy's window: the nearest runs, every sample of each.
    min_runs: int = 3
    max_runs: int = 20
    # Runs of history (beyond the window) that runner offsets and whole-run falls are
    # learned from; 0 judges every run against its window as its runner measured it.
    history_runs: int = 200
    # A publish retries lost races and network failures until this much time has passed.
    publish_deadline_minutes: float = 10.0
    # Deprecated (a fixed count is what lost samples); read only to say it is ignored.
    push_retries: int | None = None


@dataclass(frozen=True, kw_only=True)
class FileRef:
    """A file perfgate.yaml names, and where it names it (for errors about the file)."""

    path: Path
    # ``perfgate.yaml:12: gate.calibration``: file, line and key path of the reference.
    where: str
    # The directory the file must lie in once links are resolved (None: anywhere).
    root: Path | None = None


@dataclass(frozen=True, kw_only=True)
class GatePolicy:
    """The gate block of perfgate.yaml."""

    mode: Mode = Mode.ADVISORY
    # The explicit opt-in to green jobs: exit 0 whatever the verdict (R8).
    always_pass: bool = False
    target_branches: tuple[str, ...] = ("main",)
    protected_branches: tuple[str, ...] = ("main",)
    policy: PolicyName = PolicyName.CALIBRATED
    # Calibrated policy: the chance that unchanged code is BLOCKed, per bucket run.
    false_block_rate: float = 0.001
    confirm: ConfirmMode = ConfirmMode.PAIRED
    # Confirmation starts only when the window cannot rule out a drop this large (%): a
    # smaller one is left to post-merge detection. At least min_drop_pct.
    confirm_drop_pct: float = 5.0
    # Runner minutes of confirmation one run may spend across the whole matrix (None: each
    # bucket only within its own budgets), the most suspicious buckets first.
    budget_minutes: float | None = None
    runner_identity: RunnerIdentity = RunnerIdentity.RUNNER
    oracle: OraclePolicy = field(default_factory=OraclePolicy)
    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)
    # gate.calibration: the noise calibration file (None: every bucket uncalibrated).
    calibration: FileRef | None = None

    def runs_to_fill(self, repeats: int) -> int:
        """Recorded runs of ``repeats`` samples each that fill a window the rule can judge
        with (R4): enough samples, and for the calibrated rule enough runs."""
        window = self.baseline
        runs = math.ceil(window.min_samples / max(1, repeats))
        return runs if self.policy is PolicyName.REFERENCE else max(runs, window.min_runs)

    @property
    def window_needs(self) -> str:
        """What a window must hold before the rule judges with it (R4), in words."""
        window = self.baseline
        if self.policy is PolicyName.REFERENCE:
            return f"{window.min_samples} samples"
        return f"{window.min_samples} samples in {window.min_runs} runs"

    def is_protected(self, branch: str | None) -> bool:
        """True when pushes to ``branch`` may write baselines."""
        return branch is not None and any(
            fnmatch.fnmatchcase(branch, pattern) for pattern in self.protected_branches
        )

    def is_protected_push(self, event: str, branch: str | None) -> bool:
        """True for a push to a protected branch: the trusted runs whose samples are
        published as baselines (R9) and watched by post-merge alerts (R18)."""
        return event == "push" and self.is_protected(branch)


@dataclass(frozen=True, kw_only=True)
class QualifyPolicy:
    """Runner-pool qualification: its design and the limits a stable pool stays within (R15).

    The defaults are the reference qualification's: 5 allocations x 3 samples on at least
    3 runners, and 5 % / 5 % / 5 % / 10 % limits.
    """

    allocations: int = 5
    samples: int = 3
    min_runners: int = 3
    max_pooled_cv_pct: float = 5.0
    max_sample_deviation_pct: float = 5.0
    max_runner_deviation_pct: float = 5.0
    max_block_band_pct: float = 10.0
    # The report's "smallest detectable regression" is blocked with this probability.
    detection_power: float = 0.9


#: Clock-event reasons that mean the GPU ran slower than it can: a sample under one is not
#: a measurement of the code. SW power cap is a GPU's normal operating point under full load.
DEFAULT_THROTTLE_REASONS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
)


@dataclass(frozen=True, kw_only=True)
class GpuAdmission:
    """When a GPU is fit to measure on (``admission.gpu``)."""

    # A busy GPU (not idle) runs its SM and memory clocks at >= this % of their maxima.
    min_clock_pct: float = 90.0
    throttle_reasons: tuple[str, ...] = DEFAULT_THROTTLE_REASONS
    # Before a sample (an idle GPU): hotter will throttle, more power means someone else works.
    max_temperature_c: float | None = 85.0
    max_power_pct: float | None = 60.0
    foreign_processes: bool = True
    ignore_processes: tuple[str, ...] = ()
    ecc_errors: bool = True


@dataclass(frozen=True, kw_only=True)
class CpuAdmission:
    """When a CPU-only runner is fit to measure on (``admission.cpu``); None: recorded only."""

    governor: str | None = None
    max_load_per_cpu: float | None = None


@dataclass(frozen=True, kw_only=True)
class AdmissionPolicy:
    """The ``admission`` block: is the machine fit to measure, before and after each sample?"""

    mode: AdmissionMode = AdmissionMode.ENFORCE
    gpu: GpuAdmission = field(default_factory=GpuAdmission)
    cpu: CpuAdmission = field(default_factory=CpuAdmission)
    # A bucket run waits at most this long in all for an unfit machine, then measures anyway.
    wait_seconds: float = 60.0
    poll_seconds: float = 5.0
    # Contaminated samples a bucket run replaces in all; later ones stay, set aside.
    remeasure: int = 3


@dataclass(frozen=True, kw_only=True)
class ReportSpec:
    """The ``report`` block: where the trend site goes after each publish."""

    # Deploy to GitHub Pages; otherwise the push workflow uploads the site as an artifact.
    pages: bool = False
    # The published site's root: the PR summary links each bucket to its page there.
    url: str | None = None

    def page_url(self, file_stem: str) -> str | None:
        """The URL of a bucket's page on the published site, when one is configured."""
        if self.url is None:
            return None
        return f"{self.url.rstrip('/')}/buckets/{file_stem}.html"


@dataclass(frozen=True, kw_only=True)
class AlertsSpec:
    """The ``alerts`` block: post-merge regression alerts on protected branches (R18).

    The rule's settings (``judge.alerts``, which says how each is used) come first; the
    smallest change alerted is not one of them: it is the metric's minimum drop.
    """

    # The chance that unchanged code is alerted as a regression, per bucket-push.
    false_alert_rate: float = 0.001
    # Pushes at the new level, the change's own included, before a regression is alerted:
    # the runs since a candidate change that are tested, at each push.
    confirm_runs: int = 3
    # Runs before a change that make its level: the nearest ones, back to this many.
    window_runs: int = 100
    # The level needs this many runs in all, and this many since its segment started.
    min_runs: int = 10
    min_level_runs: int = 3
    # The rank line's own rate: a distribution-free cap on false alerts, whatever the
    # noise of whole runs (the t line holds the rate for near-normal run noise).
    rank_rate: float = 0.005
    # The leave-one-out line's rate: the runs since a change, the one farthest below the
    # level left out, must still be a drop of the minimum past a t line at this rate, so
    # one run in a slow machine state cannot carry an alert over runs that are merely low.
    leave_one_out_rate: float = 0.005
    # Every run since a change must be at least this many of its noise past the level.
    persist_z: float = 1.0
    # A regression is recovered when the level is back within this share of the minimum.
    recovered_share: float = 0.5
    # Two-sided level of the interval an alert reports.
    confidence: float = 0.95
    # A suspect range is bisected only when the bisection's runner-minute bound is within
    # this (0: never).
    bisect_max_minutes: float = 600.0
    # Samples a bucket run takes, at least, when it is a push to a protected branch (the
    # runs that are published and watched). A push of a bucket's two samples carries too
    # little to tell a 5 % drop from a run in a slow machine state within 3 pushes (the
    # alert suite, ``nox -s quality``: 83 to 93 % on its 2 %-noise pools); 6 alerts every one
    # on three seed sets, at 2.58x a push's runner minutes. Pull-request windows then hold
    # runs of more samples: on the runner economics suite no false BLOCK or INCONCLUSIVE
    # is added and every pull-request target holds on a held-out set (1 to 3 points fewer
    # 5 % drops BLOCKed at PR time on the 2 % pools). 1: a push takes the bucket's repeats.
    push_repeats: int = 6

    def push_samples(self, repeats: int) -> int:
        """The samples a protected push takes of a bucket whose runs take ``repeats``."""
        return max(repeats, self.push_repeats)
