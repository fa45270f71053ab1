"""What the trend site costs at scale (``nox -s perf``): build time, size on disk, memory.

Uses the synthetic stores of tests/perf/stores.py (B buckets x H samples each, as
publishes leave them; cached like gate_scaling.py's) and runs ``python -m perfgate report``
over each, side by side in one run; prints seconds, MB on disk and the peak memory of the
report process (the judging processes' own memory is not in it; each holds one series).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.cli.report import usable_cpus  # noqa: E402
from tests.perf.provenance import commit, load, machine  # noqa: E402
from tests.perf.stores import StoreSpec, cached_store  # noqa: E402

# ``perfgate report`` with GitHub's 256-job matrix limit lifted: it binds only the rendered
# workflow, and the site is measured past it (as gate_scaling.py measures the gate).
# It prints its own peak memory last: the store builder's git children must not count.
LIFTED = (
    "import resource, sys, perfgate.config.checks; perfgate.config.checks.MAX_BUCKETS = 1_000_000; "
    "from perfgate.cli import main; code = main(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def site_cost(repo: Path, out: Path, jobs: int) -> tuple[float, int, float]:
    """Seconds, bytes on disk and peak RSS (MB) of one ``perfgate report`` over ``repo``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LIFTED, "report", "--out", str(out), "--local-baseline",
         "--jobs", str(jobs)],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"perfgate report failed: {done.stderr}")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    peak = int(done.stderr.split()[-1]) / 1024
    return seconds, size, peak


def main() -> int:
    """Build (or reuse) the stores, build a site over each, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "perfgate-perf",
        help="where built stores are kept between runs (default: %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=usable_cpus(),
        help="perfgate report --jobs (default: %(default)s)",
    )
    args, _ = parser.parse_known_args()
    b, h = (100, 500) if args.quick else (1000, 2000)
    grid = [StoreSpec(buckets=b, history=h // 10, publishes=2),
            StoreSpec(buckets=b, history=h, publishes=2)]  # fmt: skip
    print(f"perfgate {commit(ROOT)}, on {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="perfgate-trend-perf-") as tmp:
        for spec in grid:
            built = cached_store(spec, args.cache, lambda line: print(line, file=sys.stderr))
            out = Path(tmp) / "site"
            seconds, size, peak = site_cost(built.as_built, out, args.jobs)
            print(f"trend site, {spec.buckets} buckets x {spec.history} samples, "
                  f"{args.jobs} process(es): {seconds:6.1f} s, "
                  f"{size / 1e6:6.1f} MB on disk ({size / spec.buckets / 1e3:.0f} kB per bucket), "
                  f"peak RSS {peak:.0f} MB (load average {load()})", flush=True)  # fmt: skip
            shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
