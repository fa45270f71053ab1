"""A per-bucket noise calibration: runner-to-runner noise measured by qualification (R5, R15).

``perfgate qualify --write-calibration PATH`` measures it (allocations x samples on the
runner pool); ``gate.calibration: PATH`` in perfgate.yaml makes the gate read it, so a
calibrated bucket's thresholds come from its measured noise instead of a constant. An
entry applies only to results of the same bucket, hardware and experiment (launch and
benchmark hashes): noise measured for another experiment says nothing about this one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from perfgate.config import Config, FileRef, GatePolicy, QualifyPolicy
from perfgate.errors import ConfigError
from perfgate.judge.numerics import MAD_TO_SIGMA, robust_scale, scale_ceiling, scale_upper
from perfgate.judge.policies import CalibratedPolicy, Calibration, Policy, ReferencePolicy
from perfgate.result import Result
from perfgate.util import jsonfile

SCHEMA_VERSION = 1
KIND = "perfgate-noise-calibration"
# A calibration holds one short entry per bucket and hardware.
MAX_BYTES = 4 * 1024 * 1024
# How sure the gate must be that an entry's noise is more than the window can have before
# it judges the window by its own noise instead: the gate's default false-alarm rate.
WINDOW_CHECK_RATE = GatePolicy.false_block_rate


@dataclass(frozen=True, kw_only=True)
class BucketNoise:
    """One bucket's noise on one hardware, as a qualification measured it."""

    bucket: str
    hardware: str
    launch_hash: str
    benchmark_hash: str
    # Per-sample sigma within one allocation (robust), % of the level, and its df.
    noise_pct: float
    df: float
    # Sigma shared by one allocation's samples (runner-to-runner), % of the level, and its df.
    run_noise_pct: float
    run_df: float
    modes: int
    # What the reference rule's noise should never fall below: the pool's unscaled MAD, %.
    noise_floor_pct: float
    samples: int = 0
    allocations: int = 0
    runners: int = 0
    commit: str | None = None
    target_branch: str | None = None
    measured_at: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """(bucket, hardware): a file holds one entry per bucket and hardware."""
        return (self.bucket, self.hardware)

    def for_rule(self) -> Calibration:
        """The ``calibration=`` input of the calibrated verdict rule."""
        return Calibration(noise_pct=self.noise_pct, df=self.df, run_noise_pct=self.run_noise_pct)

    def applied_to(self, policy: Policy) -> tuple[Policy, Calibration | None]:
        """``policy`` told this noise: the reference rule as its noise floor, the calibrated
        rule as its A/A calibration (the ``calibration=`` it is then judged with)."""
        if isinstance(policy, ReferencePolicy):
            return replace(policy, noise_floor_pct=self.noise_floor_pct), None
        return policy, self.for_rule()

    def measures(self, result: Result) -> bool:
        """True when this entry measured ``result``'s experiment: bucket, hardware, hashes."""
        return self.experiment == (
            result.bucket.id,
            result.hardware.slug,
            result.identity.launch_hash,
            result.identity.benchmark_hash,
        )

    @property
    def experiment(self) -> tuple[str, str, str, str]:
        """(bucket, hardware, launch hash, benchmark hash): what this entry measured."""
        return (self.bucket, self.hardware, self.launch_hash, self.benchmark_hash)

    @property
    def sample_sigma(self) -> float:
        """The spread of one sample this entry claims, in log units: per-sample and
        runner-to-runner noise together (or, if larger, its noise floor made sigma)."""
        per_run = math.hypot(math.log1p(self.noise_pct / 100), math.log1p(self.run_noise_pct / 100))
        return max(per_run, math.log1p(MAD_TO_SIGMA * self.noise_floor_pct / 100))

    def beyond(self, runs: Sequence[Sequence[float]], policy: Policy) -> str | None:
        """Why this entry's noise is far above what the window ``runs`` (nearest first, as
        ``policy`` reads it) shows, else None.

        The window's samples, spread over runs and runners as the pool's were, show the
        same noise; an entry claiming more than the window's noise can be (its upper
        confidence bound at ``WINDOW_CHECK_RATE``) would only widen the lines, so a
        regression could pass as noise.
        """
        if isinstance(policy, CalibratedPolicy):
            runs = runs[: policy.max_runs]  # the runs the rule reads
        logs = [math.log(v) for run in runs for v in run if math.isfinite(v) and v > 0]
        if len(logs) < 3:
            return None  # the rule cannot judge such a window anyway
        centre = statistics.median(logs)
        sigma, df = robust_scale([x - centre for x in logs], groups=1)
        bound = scale_upper(sigma, df, WINDOW_CHECK_RATE)
        if self.sample_sigma <= bound:
            return None
        return (
            f"its noise ({math.expm1(self.sample_sigma) * 100:.3g} % a sample, runner to "
            f"runner included) is far above the window's ({math.expm1(sigma) * 100:.2g} % over "
            f"{len(logs)} samples, at most {math.expm1(bound) * 100:.2g} % at "
            f"{1 - WINDOW_CHECK_RATE:.1%} confidence)"
        )


@dataclass(frozen=True, kw_only=True)
class NoiseUse:
    """What became of a calibration for one bucket run: the entry applied, or why none was."""

    applied: BucketNoise | None = None
    # Why the entry for this experiment was not applied: far above the window's own noise.
    beyond: str | None = None
    # An entry for this bucket and hardware measured another experiment.
    stale: bool = False


@dataclass(frozen=True, kw_only=True)
class NoiseCalibration:
    """Every calibrated bucket of a calibration file."""

    buckets: tuple[BucketNoise, ...]
    path: Path | None = None

    def for_result(self, result: Result) -> BucketNoise | None:
        """The entry that measured ``result``'s experiment, if any."""
        return next((entry for entry in self.buckets if entry.measures(result)), None)

    def for_experiment(self, experiment: tuple[str, str, str, str]) -> BucketNoise | None:
        """The entry that measured ``experiment`` (bucket, hardware, launch and benchmark hash)."""
        return next((entry for entry in self.buckets if entry.experiment == experiment), None)

    def stale_for(self, result: Result) -> BucketNoise | None:
        """An entry for ``result``'s bucket and hardware measured for another experiment."""
        key = (result.bucket.id, result.hardware.slug)
        return next(
            (e for e in self.buckets if e.key == key and not e.measures(result)),
            None,
        )

    def use_for(self, result: Result, runs: Sequence[Sequence[float]], rule: Policy) -> NoiseUse:
        """The entry for ``result``'s experiment, unless the window ``runs`` shows it wrong."""
        measured = self.for_result(result)
        # Noise the window cannot have would only widen the lines (R5, R14).
        why = measured.beyond(runs, rule) if measured is not None else None
        if measured is not None and why is None:
            return NoiseUse(applied=measured)
        return NoiseUse(beyond=why, stale=self.stale_for(result) is not None)

    def notes(self, uses: Mapping[str, NoiseUse]) -> list[str]:
        """What the report says of how this calibration was used, by bucket (``uses``)."""
        notes = []
        calibrated = [bucket for bucket, use in uses.items() if use.applied is not None]
        beyond = [f"{bucket}: {use.beyond}" for bucket, use in uses.items() if use.beyond]
        stale = [bucket for bucket, use in uses.items() if use.stale]
        if calibrated:
            notes.append(
                f"noise from the calibration {self.path} (measured runner-to-runner "
                f"noise) for: {', '.join(calibrated)}"
            )
        if beyond:
            notes.append(
                "calibration entries not applied, the window's own noise judged instead: "
                + "; ".join(beyond)
                + "; qualify the pool again with --write-calibration if it changed"
            )
        if stale:
            notes.append(
                "calibration entries measured another experiment (launch or benchmark hash) "
                f"and were not applied for: {', '.join(stale)}; qualify the pool again with "
                "--write-calibration"
            )
        return notes

    def merged(self, entries: Iterable[BucketNoise]) -> NoiseCalibration:
        """This calibration with ``entries`` replacing those of the same bucket and hardware."""
        fresh = {entry.key: entry for entry in entries}
        kept = [entry for entry in self.buckets if entry.key not in fresh]
        ordered = sorted([*kept, *fresh.values()], key=lambda e: e.key)
        return NoiseCalibration(buckets=tuple(ordered), path=self.path)

    def to_json(self) -> dict[str, Any]:
        """The file's document."""
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "buckets": [asdict(entry) for entry in self.buckets],
        }


def noise_ceiling_pct(qualify: QualifyPolicy) -> float:
    """The most noise (%) a qualification that passes ``qualify``'s limits can measure.

    A STABLE pool has every sample within ``max_sample_deviation_pct`` of the pooled
    median, so in log units every sample lies in a band of width ln((1+d)/(1-d)); no
    residual from an allocation's mean (nor any allocation mean from theirs) is wider, and
    the robust scale of such residuals is at most :func:`scale_ceiling` of it.
    """
    d = qualify.max_sample_deviation_pct / 100.0
    if d >= 1.0:
        return math.inf
    return math.expm1(scale_ceiling(math.log((1.0 + d) / (1.0 - d)))) * 100.0


def _problems(data: Any, qualify: QualifyPolicy) -> list[str]:
    errors = jsonfile.validator("calibration").iter_errors(data)
    problems = [
        jsonfile.problem(error) for error in sorted(errors, key=lambda e: list(e.absolute_path))
    ]
    if problems:
        return problems
    seen: set[tuple[str, str]] = set()
    ceiling = noise_ceiling_pct(qualify)
    for index, entry in enumerate(data["buckets"]):
        key = (entry["bucket"], entry["hardware"])
        if key in seen:
            problems.append(f"buckets.{index}: a second entry for {key[0]} on {key[1]}")
        seen.add(key)
        for name in ("noise_pct", "run_noise_pct", "noise_floor_pct"):
            if entry[name] > ceiling:
                problems.append(
                    f"buckets.{index}.{name}: {entry[name]:g} % ({key[0]} on {key[1]}) is more "
                    f"noise than a qualification that passes can measure ({ceiling:.1f} %, "
                    f"from qualify.max_sample_deviation_pct {qualify.max_sample_deviation_pct:g})"
                )
    return problems


def read_calibration(ref: FileRef, qualify: QualifyPolicy) -> NoiseCalibration:
    """Load and check the calibration perfgate.yaml names; any problem is a ConfigError
    naming the file and the key that asked for it (exit 4). No entry may claim more noise
    than a qualification passing ``qualify``'s limits could have written."""
    path = ref.path
    fix = (
        f"write it with `perfgate qualify --write-calibration {path}` and commit it, "
        "or remove gate.calibration"
    )
    if not path.is_file():
        raise ConfigError(f"{ref.where}: {path} not found; {fix}")
    if ref.root is not None and not path.resolve().is_relative_to(ref.root.resolve()):
        raise ConfigError(
            f"{ref.where}: {path} is a link to {path.resolve()}, outside the repository; "
            "commit the calibration itself at that path"
        )
    try:
        data = jsonfile.read(path, max_bytes=MAX_BYTES)
    except jsonfile.JsonError as exc:
        raise ConfigError(f"{ref.where}: {path} is not a readable calibration: {exc}") from None
    problems = _problems(data, qualify)
    if problems:
        raise ConfigError(f"{ref.where}: {path}: {problems[0]}; {fix}")
    return NoiseCalibration(
        buckets=tuple(BucketNoise(**entry) for entry in data["buckets"]), path=path
    )


def configured_calibration(config: Config) -> NoiseCalibration | None:
    """The calibration ``gate.calibration`` names, read and checked; None when it names none."""
    ref = config.gate.calibration
    return read_calibration(ref, config.qualify) if ref is not None else None


def write_calibration(
    calibration: NoiseCalibration, path: Path, qualify: QualifyPolicy | None = None
) -> Path:
    """Write the file (checked against its schema and ``qualify``'s ceiling first) atomically."""
    data = calibration.to_json()
    problems = _problems(data, qualify or QualifyPolicy())
    if problems:
        raise ConfigError(f"internal error: calibration for {path} is invalid: {problems[0]}")
    return jsonfile.write(path, data)
