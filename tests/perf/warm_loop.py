"""How much a warm `nox -s bench` costs over `python -m perfgate bench` (issue: a fast loop).

Runs both on the demo matrix, alternating, in one process tree, and prints the median
wall time of each and their ratio. The nox session is warmed first, so what is measured
is what a developer waits for on the second and later runs: nox's start-up and its
install check, against the benchmark itself.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = 1.5


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    """Measure, print the table and whether the ratio meets its target."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default: 5)")
    args = parser.parse_args()
    # The nox on PATH: under `nox -s perf` this interpreter is a session's, without nox.
    found = shutil.which("nox")
    if found is None:
        print("warm loop: skipped, no `nox` on PATH (python -m pip install nox)")
        return 0
    nox = [found, "-s", "bench", "--", "--no-judge"]
    _timed(nox)  # warm: the virtualenv exists and the install marker is current
    # The virtualenv `nox -s bench` shares with the other verbs' sessions (noxfile.RUN).
    shared = ROOT / ".nox" / "perfgate-run"
    python = shared / "bin" / "python"
    direct = [str(python), "-m", "perfgate", "bench", "--no-judge"]
    marker = shared / ".perfgate-installed"
    through_nox, plain, reinstalling = [], [], []
    for _ in range(args.runs):
        through_nox.append(_timed(nox))
        plain.append(_timed(direct))
        marker.unlink()  # what every warm run cost before the install check: a pip install
        reinstalling.append(_timed(nox))
    a, b, c = (statistics.median(x) for x in (through_nox, plain, reinstalling))
    print(f"warm nox -s bench                 {a:6.2f} s (median of {args.runs})")
    print(f"python -m perfgate bench          {b:6.2f} s")
    print(f"nox -s bench, reinstalling        {c:6.2f} s (every run before the install check)")
    print(f"warm nox / python -m perfgate     {a / b:6.2f}x  (target <= {TARGET}x)")
    print(f"reinstalling nox / python -m ...  {c / b:6.2f}x")
    return 0 if a / b <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
