"""The two verdict policies (``gate.policy`` in perfgate.yaml) and a bucket's noise calibration.

* ``ReferencePolicy``: the seed's rule, reproduced exactly (``judge.reference``).
* ``CalibratedPolicy`` (the default): a robust, sigma-consistent test between the window
  and the run's samples (``judge.window`` analyses the window, ``judge.calibrated`` judges
  the run against it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ReferencePolicy:
    """The seed's constants (``gate.policy: reference``), reproduced exactly."""

    k_warn: float = 2.5
    k_block: float = 4.0
    min_block_regression_pct: float = 3.0
    noise_floor_pct: float = 0.0
    min_samples: int = 5
    max_samples: int = 20

    @property
    def name(self) -> str:
        """Policy name as written in perfgate.yaml."""
        return "reference"


@dataclass(frozen=True, kw_only=True)
class CalibratedPolicy:
    """The calibrated rule (``gate.policy: calibrated``, the default)."""

    false_alarm_rate: float = 0.001  # P(BLOCK | unchanged code) per bucket-run
    min_drop_pct: float = 3.0  # smallest regression worth a BLOCK (and an IMPROVED)
    history_runs: int = 200  # runs of history runner offsets are learned from (0: none)
    noise_floor_pct: float = 0.0  # per-sample noise is never taken below this
    min_samples: int = 5  # window samples needed to judge at all (R4)
    min_runs: int = 3  # window runs needed to judge at all
    max_runs: int = 20  # nearest runs considered (all their samples)
    initial_repeats: int = 2  # samples every run takes
    max_repeats: int = 10  # budget when the first samples are suspicious
    min_block_samples: int = 3  # never BLOCK on fewer run samples (heavy tails, flukes)
    rank_rate: float = 0.005  # distribution-free cap on the false-alarm rate (rank test)
    last_look_share: float = 0.5  # of both rates, spent at the last look (see look_share)
    warn_rate: float = 0.05  # one-sided rate of the warn line ("suspicion")
    confidence: float = 0.95  # two-sided level of the reported interval
    shift_rate: float = 0.002  # false level-shift rate per window
    run_noise_rate: float = 0.05  # pre-test level for noise shared by a run's samples
    min_run_noise: float = 0.35  # ... assumed at least this fraction of the sample noise
    run_noise_floor_pct: float = 0.0  # ... and at least this % (a shared machine's drift)
    min_shift_pct: float = 1.5  # smaller steps are left to the robust estimators
    min_post_shift_samples: int = 3  # samples after a shift needed to judge against it
    mode_separation: float = 6.0  # modes must be this many sigma apart (+ 15/n)
    min_mode_share: float = 0.1  # ... and each hold this share (and >= 2 samples)
    max_modes: int = 3

    @property
    def name(self) -> str:
        """Policy name as written in perfgate.yaml."""
        return "calibrated"

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
