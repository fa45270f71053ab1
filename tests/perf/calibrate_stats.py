"""Derive and check the constants of perfgate/judge/numerics.py and modes.py by Monte Carlo
(numpy; offline).

1. ``_SCALE_TABLE``: for n normal residuals about their median, the mean of the robust
   scale (its small-sample bias) and the degrees of freedom nu that match var(ln scale)
   to a chi-square: nu = 1 / (2 var(ln s)).
2. A check of the whole statistic: on normal windows, how often the robust t of one look
   falls below the Student-t critical value it is compared with (should match the level).
3. A check of ``find_modes``: how often normal and t(3) windows are called multimodal.

Run: ``python tests/perf/calibrate_stats.py`` (about a minute).
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.judge.calibrated import _evidence  # noqa: E402
from perfgate.judge.modes import find_modes  # noqa: E402
from perfgate.judge.numerics import (  # noqa: E402
    _KAPPA,
    _WINSOR_C,
    MAD_TO_SIGMA,
    t_isf,
)
from perfgate.judge.policies import CalibratedPolicy  # noqa: E402
from perfgate.judge.window import analyse_window  # noqa: E402

SIZES = (3, 4, 5, 6, 8, 10, 15, 20, 30, 40, 60, 80)


def scale_table(reps: int = 400_000, seed: int = 1) -> list[tuple[int, float, float]]:
    """(n, bias, nu) of robust_scale, vectorised (same arithmetic as the module)."""
    rng = np.random.default_rng(seed)
    kappa = _KAPPA
    rows = []
    for n in SIZES:
        x = rng.standard_normal((reps, n))
        r = x - np.median(x, axis=1, keepdims=True)
        s0 = MAD_TO_SIGMA * np.median(np.abs(r), axis=1)
        limit = (_WINSOR_C * s0) ** 2
        raw = np.sqrt(np.minimum(r * r, limit[:, None]).mean(axis=1) / kappa)
        rows.append((n, float(raw.mean()), float(1.0 / (2.0 * np.var(np.log(raw))))))
    return rows


def look_calibration(trials: int = 10_000, seed: int = 2) -> None:
    """One look of the calibrated test on normal windows: observed vs nominal tail."""
    rng = random.Random(seed)
    # the pure per-sample model: no run-level noise assumed or tested for
    policy = CalibratedPolicy(min_run_noise=0.0, run_noise_rate=1e-12)
    for m in (2, 3, 6):
        for level in (0.05, 0.01):
            hits = 0
            for _ in range(trials):
                window = [[rng.gauss(0, 1) * 0.01 + 1.0 for _ in range(2)] for _ in range(20)]
                model = analyse_window(window, policy=policy)
                if model.problem is not None:  # a (false) level shift left too few samples
                    continue
                ev = _evidence(model, [math.log(rng.gauss(0, 1) * 0.01 + 1.0) for _ in range(m)])
                hits += ev.t <= -t_isf(level, ev.df)
            print(f"  m={m}  nominal {level:.3f}  observed {hits / trials:.4f}")


def mode_calibration(trials: int = 2000, seed: int = 3) -> None:
    """Share of unimodal windows find_modes splits, and of bimodal ones it finds."""
    rng = np.random.default_rng(seed)
    p = CalibratedPolicy()
    kw = {"separation": p.mode_separation, "min_share": p.min_mode_share, "max_modes": p.max_modes}
    for name, draw in (
        ("normal", lambda n: rng.standard_normal(n)),
        ("t(3)", lambda n: rng.standard_t(3, n)),
        ("30 % at -6 sigma", lambda n: rng.standard_normal(n) - 6.0 * (rng.random(n) < 0.3)),
        ("30 % at -10 sigma", lambda n: rng.standard_normal(n) - 10.0 * (rng.random(n) < 0.3)),
    ):
        for n in (10, 40, 80):
            split = sum(len(find_modes(draw(n).tolist(), **kw)) > 1 for _ in range(trials))
            print(f"  {name:<18} n={n:<3} multimodal in {split / trials:.4f}")


def main() -> int:
    """Print the table (paste into numerics._SCALE_TABLE) and the checks."""
    print("_SCALE_TABLE = (")
    for n, bias, nu in scale_table():
        print(f"    ({n}, {bias:.3f}, {nu:.1f}),")
    print(")")
    print("one look of the robust t on normal windows (20 runs x 2 samples):")
    look_calibration()
    print("mode detection:")
    mode_calibration()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
