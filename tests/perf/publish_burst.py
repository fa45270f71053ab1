"""A merge burst against the store (``nox -s perf``): 32 publishers at once, each its own
clone and process, 8 buckets each, three bursts in a row (R9).

Every burst must land every sample exactly once, with every publisher exiting 0, and
finish well inside the publish deadline (120 s for a burst of 32, far beyond what one
needs on an idle machine). With a fixed retry count, one in three bursts of 16 lost a
publisher's samples; that is the failure this keeps from coming back. The unit suite
keeps a smaller burst (tests/integration/baselines/test_store.py) with no clock in it.
``--quick`` runs one burst of 8 (for CI: the harness works, the figures print).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.publishers import origin_with_history, run_burst  # noqa: E402

PUBLISHERS, BUCKETS, BURSTS = 32, 8, 3
TARGET_S = 120.0


def main() -> int:
    """Run the bursts, print each one's figures, and exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one burst of 8, for CI")
    args, _ = parser.parse_known_args()
    publishers, bursts = (8, 1) if args.quick else (PUBLISHERS, BURSTS)
    failed = []
    with tempfile.TemporaryDirectory(prefix="perfgate-burst-") as scratch:
        for burst in range(bursts):
            root = Path(scratch) / f"burst-{burst}"
            origin, shas = origin_with_history(root)
            done = run_burst(
                origin, root / "work", publishers=publishers, buckets=BUCKETS, commits=shas
            )
            print(f"burst {burst + 1}/{bursts}: {publishers} publishers x {BUCKETS} buckets, "
                  f"{done.wall_s:.1f} s, {done.expected} samples, {done.lost} lost, "
                  f"{done.duplicated} duplicated, exit codes {sorted(set(done.exit_codes))}",
                  flush=True)  # fmt: skip
            if any(done.exit_codes) or done.lost or done.duplicated:
                failed.append(f"burst {burst + 1}: {done}")
            elif not args.quick and done.wall_s >= TARGET_S:
                failed.append(f"burst {burst + 1} took {done.wall_s:.1f} s (target {TARGET_S:g} s)")
    for problem in failed:
        print(f"NOT MET  {problem}")
    if not failed:
        print("met      every burst landed every sample once" + ("" if args.quick else
              f", each within {TARGET_S:g} s"))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
