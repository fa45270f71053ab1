"""The A/A check (issues 11, 24): unchanged code judged against its own recorded runs.

In a fresh clone of this repository (committed tree only), record ``--recorded`` local
baselines (``nox -s bench -- --record``), then run ``nox -s bench`` ``--runs`` more
times on the same, unchanged code, timing each run, and count the verdicts of every
bucket run. The check holds when no bucket run is BLOCKed, at most ``--max-inconclusive``
(1) is INCONCLUSIVE, and the median judged run takes at most ``--max-seconds`` (30).
Every verdict, with the change and the samples each run took, is printed, with each run's
seconds.

``--load N`` keeps N busy processes running beside the judged runs (a parallel CPU load);
``--source DIR`` checks another checkout (``--source /path/to/main`` measures today's
defaults, to set beside this one's); ``--direct`` runs ``python -m perfgate bench``
instead of the nox session (what the session calls, without nox's start-up).

Run: ``python tests/perf/aa_check.py`` (a few minutes for the demo matrix).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PASS_LEVEL = ("PASS", "IMPROVED")


def _bench(clone: Path, *, record: bool, direct: bool) -> dict[str, Any]:
    """One bench run in the clone; its verdict.json."""
    extra = ["--record"] if record else []
    if direct:
        argv = [sys.executable, "-m", "perfgate", "bench", "--quiet", *extra]
    else:
        argv = [sys.executable, "-m", "nox", "-s", "bench", "--", "--quiet", *extra]
    # The clone's own perfgate judges the clone (it is installed editable by nox; --direct
    # puts it first on the path).
    env = {**os.environ, "PYTHONPATH": str(clone)}
    for name in [n for n in env if n.startswith("GITHUB_")]:
        del env[name]
    done = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, check=False)
    verdict = clone / ".perfgate" / "report" / "verdict.json"
    if done.returncode not in (0, 1) or not verdict.is_file():
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"bench failed with exit {done.returncode}")
    data: dict[str, Any] = json.loads(verdict.read_text(encoding="utf-8"))
    verdict.unlink()
    return data


def _cell(row: dict[str, Any]) -> str:
    """``PASS -1.2% (2)``: the verdict, the change and the samples the run took."""
    stats = row.get("statistics") or row.get("baseline") or {}
    change = stats.get("effect_pct", stats.get("change_pct"))
    samples = stats.get("run_samples")
    text = str(row["verdict"])
    if isinstance(change, int | float):
        text += f" {change:+.1f}%"
    if isinstance(samples, int):
        text += f" ({samples})"
    return text


def main(argv: list[str] | None = None) -> int:
    """Record, judge, print the verdicts and whether the check holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout to clone")
    parser.add_argument("--recorded", type=int, default=5, help="recorded runs (default 5)")
    parser.add_argument("--runs", type=int, default=10, help="judged runs (default 10)")
    parser.add_argument("--direct", action="store_true", help="python -m perfgate, not nox")
    parser.add_argument("--keep", action="store_true", help="keep the clone and say where")
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the judged runs")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="median judged run")
    parser.add_argument("--max-inconclusive", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="perfgate-aa-"))
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "--quiet", str(args.source), str(clone)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=clone, check=True, capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    print(f"A/A check of {args.source} at {head}: {args.recorded} recorded, {args.runs} judged")
    for index in range(args.recorded):
        _bench(clone, record=True, direct=args.direct)
        print(f"  recorded run {index + 1} of {args.recorded}", flush=True)
    counts: Counter[str] = Counter()
    seconds: list[float] = []
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        for index in range(args.runs):
            began = time.perf_counter()
            data = _bench(clone, record=False, direct=args.direct)
            seconds.append(time.perf_counter() - began)
            cells = {str(row["bucket"]): _cell(row) for row in data["rows"]}
            counts.update(str(row["verdict"]) for row in data["rows"])
            print(f"  run {index + 1:2d} ({seconds[-1]:5.1f} s): "
                  + "  ".join(f"{b} {c}" for b, c in cells.items()))  # fmt: skip
    finally:
        for process in load:
            process.kill()
    total = sum(counts.values())
    passed = sum(counts[v] for v in PASS_LEVEL)
    blocks, unsure = counts["BLOCK"], counts["INCONCLUSIVE"]
    median = statistics.median(seconds)
    beside = f" beside {args.load} busy processes" if args.load else ""
    print()
    print("verdicts over", total, "bucket runs:", ", ".join(f"{v} {n}" for v, n in counts.items()))
    print(f"BLOCK: {blocks} (target 0)   INCONCLUSIVE: {unsure} (target <= "
          f"{args.max_inconclusive})   PASS-level: {passed / max(total, 1):.1%}")  # fmt: skip
    print(f"judged runs{beside}: median {median:.1f} s (target <= {args.max_seconds:g}), "
          f"{min(seconds):.1f} to {max(seconds):.1f} s")  # fmt: skip
    print(f"{time.perf_counter() - started:.0f} s in all")
    if args.keep:
        print(f"clone kept at {clone}")
    else:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    held = blocks == 0 and unsure <= args.max_inconclusive and median <= args.max_seconds
    print("A/A check", "HOLDS" if held else "FAILS")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
