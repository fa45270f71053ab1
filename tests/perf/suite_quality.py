"""A suite of benchmarks from one launch, family-wise (``nox -s quality``).

One bucket selects ``BENCHMARKS`` benchmarks (``metrics: [{benchmarks: PATTERN}]``); each
is judged against its own window by the calibrated rule, the false-alarm rate split over
them as ``judge.bucket_policy.policy_for`` splits it for the selected bucket. Noise: each
benchmark has its own CV, drawn between 1 and 3 %, and every launch moves all of its
benchmarks by one shared factor (``LAUNCH_CV``): the launch-level correlation a suite
from one process has. A window is 20 runs of 2 samples (launches); a run takes its
repeats, then one more launch while any benchmark's rule asks for one (every launch
measures every benchmark), up to ``max_repeats``, and the gate's final verdict follows.

Figures: the share of unchanged runs BLOCKed (family-wise, any benchmark), with the
rate unsplit beside it (what 300 comparisons at the bucket's rate each would do), and
the share of runs where one benchmark dropped 10 % (its CV drawn like the others') that
BLOCK that benchmark. Several runs are judged against each window (each run a fresh
draw), so a window's analysis is paid once.

Run: ``python tests/perf/suite_quality.py [--quick]``, or as part of ``nox -s quality``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.config import GatePolicy  # noqa: E402
from perfgate.judge.calibrated import calibrated_decide  # noqa: E402
from perfgate.judge.policies import CalibratedPolicy  # noqa: E402
from perfgate.judge.verdicts import Verdict  # noqa: E402
from perfgate.judge.window import WindowModel, analyse_window  # noqa: E402
from tests.perf.targets import (  # noqa: E402
    Options,
    SuiteReport,
    Target,
    rate_at_least,
    rate_at_most,
    upper95,
)

BENCHMARKS = 300
CV_RANGE = (0.01, 0.03)  # each benchmark's own per-launch noise
LAUNCH_CV = 0.01  # one launch moves every benchmark it measures by this much (shared)
WINDOW_RUNS, WINDOW_SAMPLES = 20, 2
RUNS_PER_WINDOW = 10  # runs judged against one window, each a fresh draw
DROP = 0.10
# Windows per suite: unchanged runs = windows x RUNS_PER_WINDOW.
FULL_WINDOWS, QUICK_WINDOWS = 400, 40
FALSE_BLOCK_BOUND_PCT, DETECTION_BOUND_PCT = 0.1, 95.0


@dataclass(frozen=True, kw_only=True)
class Tally:
    """Runs judged, and how many BLOCKed: unchanged (split rate, unsplit), with a drop."""

    runs: int = 0
    blocked: int = 0
    blocked_unsplit: int = 0
    dropped: int = 0
    detected: int = 0
    launches: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__})


def policies(benchmarks: int = BENCHMARKS) -> tuple[CalibratedPolicy, CalibratedPolicy]:
    """The rule each selected benchmark is judged with (the gate's rate split over the
    primary and ``benchmarks`` selected ones), and the same rule unsplit."""
    rate = GatePolicy().false_block_rate
    split = CalibratedPolicy(false_block_rate=rate / (benchmarks + 1))
    return split, CalibratedPolicy(false_block_rate=rate)


def _launches(rng: np.random.Generator, cvs: np.ndarray, count: int) -> np.ndarray:
    """``count`` launches of every benchmark: [launch, benchmark], level 1 (a throughput:
    higher is better, as the rule reads a time's inverse)."""
    shared = rng.normal(0.0, LAUNCH_CV, size=(count, 1))
    own = rng.normal(0.0, 1.0, size=(count, len(cvs))) * cvs[None, :]
    return np.exp(shared + own)


def _run(
    models: list[WindowModel], pool: np.ndarray, policy: CalibratedPolicy
) -> tuple[list[Verdict], int]:
    """One run of the suite: its repeats, then launches while any benchmark asks; the
    final verdict of each, and the launches taken."""
    m = policy.initial_repeats
    while m < policy.max_repeats and any(
        calibrated_decide(model, pool[:m, b].tolist(), policy=policy).need_more
        for b, model in enumerate(models)
    ):
        m += 1
    verdicts = [
        calibrated_decide(model, pool[:m, b].tolist(), policy=policy, final=True).verdict
        for b, model in enumerate(models)
    ]
    return verdicts, m


def _window(seed: int, benchmarks: int) -> Tally:
    """One window of the suite, and ``RUNS_PER_WINDOW`` unchanged runs and as many with one
    benchmark 10 % slower judged against it."""
    rng = np.random.default_rng(seed)
    split, unsplit = policies(benchmarks)
    cvs = rng.uniform(*CV_RANGE, size=benchmarks)
    history = _launches(rng, cvs, WINDOW_RUNS * WINDOW_SAMPLES)
    runs = history.reshape(WINDOW_RUNS, WINDOW_SAMPLES, benchmarks)
    # The rule's lines come from the rate; the window's analysis does not.
    windows = [runs[::-1, :, b].tolist() for b in range(benchmarks)]
    models = [analyse_window(w, policy=split) for w in windows]
    models_unsplit = [analyse_window(w, policy=unsplit) for w in windows]
    tally = Tally()
    for _ in range(RUNS_PER_WINDOW):
        pool = _launches(rng, cvs, split.max_repeats)
        verdicts, launches = _run(models, pool, split)
        naive, _ = _run(models_unsplit, pool, unsplit)
        slow = int(rng.integers(benchmarks))
        dropped = _launches(rng, cvs, split.max_repeats)
        dropped[:, slow] *= 1.0 - DROP  # figures where higher is better: 10 % less
        caught, _ = _run(models, dropped, split)
        tally += Tally(
            runs=1,
            blocked=Verdict.BLOCK in verdicts,
            blocked_unsplit=Verdict.BLOCK in naive,
            dropped=1,
            detected=caught[slow] is Verdict.BLOCK,
            launches=launches,
        )
    return tally


def _work(args: tuple[int, int, int]) -> Tally:
    """A chunk of windows, one process's share."""
    first, count, benchmarks = args
    total = Tally()
    for seed in range(first, first + count):
        total += _window(seed, benchmarks)
    return total


def measure(windows: int, jobs: int, benchmarks: int = BENCHMARKS, offset: int = 0) -> Tally:
    """Every window's runs, over ``jobs`` processes."""
    chunk = max(1, math.ceil(windows / max(jobs, 1) / 4))
    work = [
        (offset * 1_000_003 + first, min(chunk, windows - first), benchmarks)
        for first in range(0, windows, chunk)
    ]
    total = Tally()
    if jobs <= 1:
        for item in work:
            total += _work(item)
        return total
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for tally in pool.map(_work, work):
            total += tally
    return total


def _pct(events: int, trials: int) -> str:
    """'0.00 % (≤ 0.30 %)': a rate and its one-sided 95 % upper bound."""
    return f"{100 * events / max(trials, 1):.2f} % (≤ {100 * upper95(events, trials):.2f} %)"


def targets(t: Tally) -> list[Target]:
    """The family-wise false-BLOCK rate and the power on one benchmark's 10 % drop."""
    return [
        rate_at_most(
            f"suite of {BENCHMARKS}: unchanged runs BLOCKed (family-wise)",
            t.blocked, t.runs, FALSE_BLOCK_BOUND_PCT,
            f"{t.blocked}/{t.runs} = {_pct(t.blocked, t.runs)}",
        ),
        rate_at_least(
            f"suite of {BENCHMARKS}: one benchmark 10 % slower BLOCKed",
            t.detected, t.dropped, DETECTION_BOUND_PCT,
            f"{t.detected}/{t.dropped} = {100 * t.detected / max(t.dropped, 1):.1f} %",
        ),
    ]  # fmt: skip


def render(t: Tally, elapsed: float) -> list[str]:
    """The suite's figures, one a line."""
    return [
        f"suite of {BENCHMARKS} benchmarks from one launch (CV 1-3 % each, {LAUNCH_CV:.0%} "
        f"shared per launch), {t.runs} runs against {t.runs // RUNS_PER_WINDOW} windows, "
        f"{elapsed:.0f} s",
        f"  unchanged runs BLOCKed, rate split over the suite: {_pct(t.blocked, t.runs)}",
        f"  unchanged runs BLOCKed, the bucket's rate for each: {_pct(t.blocked_unsplit, t.runs)}",
        f"  one benchmark 10 % slower, BLOCKed: {t.detected}/{t.dropped} "
        f"({100 * t.detected / max(t.dropped, 1):.1f} %)",
        f"  launches per unchanged run: {t.launches / max(t.runs, 1):.2f}",
    ]


def quality(options: Options) -> SuiteReport:
    """The suite as ``nox -s quality`` runs it: printed, its figures and targets."""
    windows = QUICK_WINDOWS if options.quick else FULL_WINDOWS
    started = time.perf_counter()
    t = measure(windows, options.jobs, offset=options.seed_offset)
    print()
    for line in render(t, time.perf_counter() - started):
        print(line)
    figures = {
        "runs": t.runs,
        "false_block_pct": 100 * t.blocked / max(t.runs, 1),
        "false_block_upper95_pct": 100 * upper95(t.blocked, t.runs),
        "false_block_unsplit_pct": 100 * t.blocked_unsplit / max(t.runs, 1),
        "detected_10pct": 100 * t.detected / max(t.dropped, 1),
        "launches_per_run": t.launches / max(t.runs, 1),
    }
    return SuiteReport(name="suite", figures=figures, targets=tuple(targets(t)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--windows", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    windows = args.windows or (QUICK_WINDOWS if args.quick else FULL_WINDOWS)
    started = time.perf_counter()
    t = measure(windows, args.jobs)
    for line in render(t, time.perf_counter() - started):
        print(line)
    missed = [target for target in targets(t) if target.fails(args.quick)]
    for target in targets(t):
        print(f"  {target.status(args.quick)}: {target.name} {target.target}: {target.detail}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
