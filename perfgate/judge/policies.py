"""The two verdict policies (``gate.policy`` in perfgate.yaml) and a bucket's noise calibration.

* ``ReferencePolicy``: the seed's rule, reproduced exactly (``judge.reference``).
* ``CalibratedPolicy`` (the default): a robust, sigma-consistent test between the window
  and the run's samples (``judge.window`` analyses the window, ``judge.calibrated`` judges
  the run against it).

A setting perfgate.yaml has defaults to the config's (``judge.bucket_policy`` builds both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from perfgate.config import BaselinePolicy, Bucket, GatePolicy, OraclePolicy


@dataclass(frozen=True, kw_only=True)
class ReferencePolicy:
    """The seed's constants (``gate.policy: reference``), reproduced exactly."""

    k_warn: float = OraclePolicy.k_warn
    k_block: float = OraclePolicy.k_block
    # The smallest regression that may BLOCK (gate.oracle.min_drop_pct).
    min_drop_pct: float = OraclePolicy.min_drop_pct
    noise_floor_pct: float = OraclePolicy.noise_floor_pct
    min_samples: int = BaselinePolicy.min_samples
    max_samples: int = BaselinePolicy.max_samples
    #: The policy's name as written in perfgate.yaml.
    name: ClassVar[str] = "reference"


@dataclass(frozen=True, kw_only=True)
class CalibratedPolicy:
    """The calibrated rule (``gate.policy: calibrated``, the default)."""

    false_block_rate: float = GatePolicy.false_block_rate  # P(BLOCK | unchanged) per bucket-run
    # The smallest regression worth a BLOCK (and gain an IMPROVED).
    min_drop_pct: float = OraclePolicy.min_drop_pct
    history_runs: int = BaselinePolicy.history_runs  # runner offsets learned from (0: none)
    noise_floor_pct: float = OraclePolicy.noise_floor_pct  # sample noise never taken below
    min_samples: int = BaselinePolicy.min_samples  # window samples needed to judge (R4)
    min_runs: int = BaselinePolicy.min_runs  # window runs needed to judge at all
    max_runs: int = BaselinePolicy.max_runs  # nearest runs considered (all their samples)
    initial_repeats: int = Bucket.repeats  # samples every run takes
    max_repeats: int = Bucket.max_repeats  # budget when the first samples are suspicious
    min_block_samples: int = 3  # never BLOCK on fewer run samples (heavy tails, flukes)
    rank_rate: float = 0.005  # distribution-free cap on the false-alarm rate (rank test)
    last_look_share: float = 0.5  # of both rates, spent at the last look (see look_share)
    warn_rate: float = 0.05  # one-sided rate of the warn line ("suspicion")
    confidence: float = 0.95  # two-sided level of the reported interval
    shift_rate: float = 0.002  # false level-shift rate per window
    run_noise_rate: float = 0.05  # pre-test level for noise shared by a run's samples
    min_run_noise: float = 0.35  # ... assumed at least this fraction of the sample noise
    run_noise_floor_pct: float = OraclePolicy.run_noise_floor_pct  # ... and this % (drift)
    min_shift_pct: float = 1.5  # smaller steps are left to the robust estimators
    min_post_shift_samples: int = 3  # samples after a shift needed to judge against it
    mode_separation: float = 6.0  # modes must be this many sigma apart (+ 15/n)
    min_mode_share: float = 0.1  # ... and each hold this share (and >= 2 samples)
    max_modes: int = 3
    #: The policy's name as written in perfgate.yaml.
    name: ClassVar[str] = "calibrated"

    @property
    def block_looks(self) -> int:
        """Looks at which a BLOCK is possible; the false-alarm rate is split over them."""
        first = max(self.initial_repeats, min(self.min_block_samples, self.max_repeats))
        return max(1, self.max_repeats - first + 1)

    def look_share(self, last: bool) -> float:
        """Share of the false-alarm budget one look may spend (Bonferroni, sums to 1).

        The last look gets ``last_look_share``; the earlier ones split the rest evenly.
        Early looks only stop clear cases sooner, so they need little of the budget; the
        last look decides the marginal ones, so it gets the most.
        """
        looks = self.block_looks
        if looks == 1:
            return 1.0
        return self.last_look_share if last else (1.0 - self.last_look_share) / (looks - 1)


Policy = ReferencePolicy | CalibratedPolicy


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """A bucket's A/A noise calibration (from ``qualify``): per-sample and per-run noise."""

    noise_pct: float  # per-sample sigma, % of the level
    df: float  # degrees of freedom behind noise_pct
    run_noise_pct: float = 0.0  # extra sigma shared by all samples of one run (runner effect)
