"""What the trend site costs at scale (``nox -s perf``): build time and size on disk.

Builds the synthetic stores of gate_scaling.py (B buckets x H samples each over 200
commits of main, archived segments included) and times ``read_history`` plus
``build_site`` over each, side by side in one run; prints seconds, MB and peak memory.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.baselines.history import read_history  # noqa: E402
from perfgate.baselines.store import BaselineStore  # noqa: E402
from perfgate.config import load_config  # noqa: E402
from perfgate.report.trend import build_site  # noqa: E402
from tests.perf.gate_scaling import build  # noqa: E402


def time_site(repo: Path, config_path: Path, out: Path) -> tuple[float, int, int]:
    """Seconds, bytes and pages of one site build over this store."""
    config = load_config(config_path)
    began = time.perf_counter()
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    history = read_history(
        store, config.buckets, target_branch="main", min_samples=config.gate.baseline.min_samples
    )
    site = build_site(history, gate=config.gate, out=out)
    return time.perf_counter() - began, site.bytes, site.pages


def main() -> int:
    """Build the grid of stores, time a site over each, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--buckets", type=int, default=1000)
    parser.add_argument("--history", type=int, default=2000)
    args = parser.parse_args()
    b, h = args.buckets, args.history
    grid = [(b // 10, h), (b, h // 10), (b, h)]
    with tempfile.TemporaryDirectory(prefix="perfgate-trend-perf-") as tmp:
        for buckets, history in grid:
            repo, config, _ = build(Path(tmp), buckets, history)
            seconds, size, pages = time_site(repo, config, Path(tmp) / "site")
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"buckets={buckets:5d} history={history:5d}  site {seconds:6.1f} s, "
                  f"{size / 1e6:7.1f} MB, {pages} pages ({seconds / buckets * 1000:.0f} ms and "
                  f"{size / buckets / 1e3:.0f} kB per bucket; peak RSS so far {peak:.0f} MB)",
                  flush=True)  # fmt: skip
            shutil.rmtree(repo)
            shutil.rmtree(Path(tmp) / "site")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
