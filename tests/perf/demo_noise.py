"""The demo instrument's own noise: its sample CV as it was and as it is, side by side.

*before*: the demo as it was (wall-clock step timing, a second of steps, the median
step's throughput); *after*: as perfgate.yaml now runs it (steps timed in CPU time, its
``measure_seconds``, the figure its metric path names: the best short block of steps).
Each bucket of the demo matrix runs ``--samples`` times each way, interleaved so both
face the same machine, once on the machine as it is and once beside a parallel CPU load
(``--load`` busy processes, one per core by default). Every sample is a real run of
``python -m perfgate.run.demo``; the CV (and the robust CV, the scaled MAD over the
median) is of the figure the gate judges.

Run: ``python tests/perf/demo_noise.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.config import load_config  # noqa: E402
from perfgate.judge.numerics import MAD_TO_SIGMA  # noqa: E402

# (timer, measure seconds, the statistic the gate judges): the demo before this change.
BEFORE = ("wall", 1.0, "median")


def _busy(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    """One core's worth of load until told to stop."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _sample(argv: list[str], out: Path, statistic: str) -> float:
    """One run of the demo; its ``runtime.total_fps`` figure ``statistic``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT)
    bundle = json.loads(next(out.glob("benchmark_runtime_*.json")).read_text(encoding="utf-8"))
    for path in out.glob("*.json"):
        path.unlink()
    return float(bundle["runtime"]["total_fps"][statistic])


def _cv(values: list[float]) -> float:
    """The coefficient of variation, %."""
    return statistics.stdev(values) / statistics.fmean(values) * 100.0


def _robust_cv(values: list[float]) -> float:
    """The scaled MAD over the median, %: one sample the machine slowed as a whole moves it
    little (the gate's own noise estimate is robust the same way)."""
    centre = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - centre) for v in values) / centre * 100.0


def main(argv: list[str] | None = None) -> int:
    """Measure and print the CV table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8, help="samples per bucket and timer")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1, help="busy processes")
    args = parser.parse_args(argv)
    config = load_config(ROOT / "perfgate.yaml")
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="perfgate-demo-noise-") as tmp:
        out = Path(tmp)
        for loaded in (False, True):
            stop = multiprocessing.Event()
            workers = [multiprocessing.Process(target=_busy, args=(stop,)) for _ in range(
                args.load if loaded else 0)]  # fmt: skip
            for worker in workers:
                worker.start()
            try:
                for bucket in config.buckets:
                    demo = bucket.demo
                    base = [
                        sys.executable, "-m", "perfgate.run.demo", "--task", bucket.task,
                        "--physics", bucket.physics, "--num-envs", str(bucket.num_envs),
                        "--steps", str(bucket.steps), "--warmup-steps", str(bucket.warmup_steps),
                        "--seed", str(bucket.seed), "--output-path", str(out),
                        "--warmup-seconds", str(demo.warmup_seconds if demo else 0.0),
                    ]  # fmt: skip
                    timer, seconds, statistic = BEFORE
                    before = [*base, "--timer", timer, "--measure-seconds", str(seconds)]
                    timer_now = (demo.timer if demo else None) or "cpu"
                    seconds_now = demo.measure_seconds if demo else 0.0
                    after = [*base, "--timer", timer_now, "--measure-seconds", str(seconds_now)]
                    now = bucket.metric.path.rsplit(".", 1)[-1]
                    figures: dict[str, list[float]] = {"before": [], "after": []}
                    for _ in range(args.samples):
                        figures["before"].append(_sample(before, out, statistic))
                        figures["after"].append(_sample(after, out, now))
                    rows.append((loaded, bucket.id, figures))
            finally:
                stop.set()
                for worker in workers:
                    worker.join()
    load = f"{args.load} busy processes on {os.cpu_count()} cores"
    print(f"demo sample CV, {args.samples} samples per cell, before (wall-clock, median step, "
          f"1 s) and after (as perfgate.yaml runs it) interleaved; "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    print(f"{'load':<28}{'bucket':<18}{'CV% before':>11}{'after':>7}{'robust CV% before':>19}"
          f"{'after':>7}")  # fmt: skip
    for loaded, bucket, figures in rows:
        where = load if loaded else "as the machine is"
        before, after = figures["before"], figures["after"]
        print(f"{where:<28}{bucket:<18}{_cv(before):11.1f}{_cv(after):7.1f}"
              f"{_robust_cv(before):19.1f}{_robust_cv(after):7.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
