"""The A/A check (issues 11, 24): unchanged code judged against its own recorded runs.

In a fresh clone of this repository (committed tree only), record ``--recorded`` local
baselines (``nox -s bench -- --record``), then run ``nox -s bench`` ``--runs`` more
times on the same, unchanged code, timing each run, and count the verdicts of every
bucket run. The check holds when no bucket run is BLOCKed, at most ``--max-inconclusive``
(1) is INCONCLUSIVE, and the median judged run takes at most ``--max-seconds`` (30).
Every verdict, with the change and the samples each run took, is printed, with each run's
seconds.

``--slowdown PCT`` makes it an A/B check: after recording, a branch commits a demo whose
every timed step does PCT % less work a second (it burns CPU time after the step, so a
loaded machine cannot hide it), and the judged runs are that branch's pull request against
the recorded main. The check then holds when every bucket run is BLOCKed, and ``perfgate
compare --measure main <branch>`` calls every bucket worse, as the gate does.

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


# The demo's timed step, and what the slower branch puts after it: CPU time in proportion
# to the step's own, inside the timed region.
STEP = "        step(actions)\n"
SLOWER_STEP = (
    "        step(actions)\n"
    "        _until = clock() + {extra!r} * (clock() - began)  # the slowdown under test\n"
    "        while clock() < _until:\n"
    "            pass\n"
)


def _env(clone: Path) -> dict[str, str]:
    """The clone's own perfgate first on the path, outside any CI."""
    env = {**os.environ, "PYTHONPATH": str(clone), "PERFGATE_TARGET_BRANCH": "main"}
    return {k: v for k, v in env.items() if not k.startswith("GITHUB_")}


def _bench(clone: Path, *, record: bool, direct: bool) -> dict[str, Any]:
    """One bench run in the clone; its verdict.json."""
    extra = ["--record"] if record else []
    if direct:
        argv = [sys.executable, "-m", "perfgate", "bench", "--quiet", *extra]
    else:
        argv = [sys.executable, "-m", "nox", "-s", "bench", "--", "--quiet", *extra]
    # The clone's own perfgate judges the clone (it is installed editable by nox; --direct
    # puts it first on the path).
    env = _env(clone)
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
    # The figure that decided: the pairs' when they did, else the window's.
    paired = (row.get("confirmation") or {}).get("paired") or {}
    change = paired.get("effect_pct", stats.get("effect_pct", stats.get("change_pct")))
    samples = stats.get("run_samples")
    text = str(row["verdict"])
    if isinstance(change, int | float):
        text += f" {change:+.1f}%"
    if isinstance(samples, int):
        text += f" ({samples})"
    return text


def _slow_down(clone: Path, pct: float) -> str:
    """Commit, on a new branch, a demo whose throughput is ``pct`` % lower; its name."""
    demo = clone / "perfgate" / "run" / "demo.py"
    original = demo.read_text(encoding="utf-8")
    if original.count(STEP) != 1:
        raise SystemExit(f"{demo}: the demo's timed step call moved; update SLOWER_STEP")
    # Throughput falls by pct % when each step takes 1 / (1 - pct/100) as long.
    extra = round(1.0 / (1.0 - pct / 100.0) - 1.0, 6)
    demo.write_text(original.replace(STEP, SLOWER_STEP.format(extra=extra)), encoding="utf-8")
    branch = f"slower-{pct:g}"
    for argv in (["switch", "--quiet", "-c", branch], ["commit", "--quiet", "-am", branch]):
        subprocess.run(["git", "-c", "user.name=aa", "-c", "user.email=aa@example.invalid",
                        *argv], cwd=clone, check=True)  # fmt: skip
    return branch


def _compare_calls(clone: Path, branch: str) -> dict[str, str]:
    """``perfgate compare --measure main <branch>``: its call per bucket."""
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "compare", "--measure", "main", branch, "--json"],
        cwd=clone, env=_env(clone), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"compare --measure failed with exit {done.returncode}")
    rows = json.loads(done.stdout)["rows"]
    return {str(row["bucket"]): f"{row['change']} {row['change_pct']:+.1f}%" for row in rows}


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
    parser.add_argument(
        "--slowdown",
        type=float,
        default=None,
        help="judge a branch whose demo is this many %% slower (an A/B check)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="perfgate-aa-"))
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "--quiet", str(args.source), str(clone)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=clone, check=True, capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    kind = "A/A" if args.slowdown is None else f"A/B ({args.slowdown:g} % slower)"
    print(f"{kind} check of {args.source} at {head}: {args.recorded} recorded, {args.runs} judged")
    for index in range(args.recorded):
        _bench(clone, record=True, direct=args.direct)
        print(f"  recorded run {index + 1} of {args.recorded}", flush=True)
    branch = None if args.slowdown is None else _slow_down(clone, args.slowdown)
    calls: dict[str, str] = {}
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
        if branch is not None:
            calls = _compare_calls(clone, branch)
            print("  compare --measure main " + branch + ": "
                  + "  ".join(f"{b} {c}" for b, c in calls.items()))  # fmt: skip
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
    wanted = "0" if branch is None else f"all {total}"
    print(f"BLOCK: {blocks} (target {wanted})   INCONCLUSIVE: {unsure} (target <= "
          f"{args.max_inconclusive})   PASS-level: {passed / max(total, 1):.1%}")  # fmt: skip
    print(f"judged runs{beside}: median {median:.1f} s (target <= {args.max_seconds:g}), "
          f"{min(seconds):.1f} to {max(seconds):.1f} s")  # fmt: skip
    print(f"{time.perf_counter() - started:.0f} s in all")
    if args.keep:
        print(f"clone kept at {clone}")
    else:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    if branch is None:
        held = blocks == 0 and unsure <= args.max_inconclusive
    else:
        agree = bool(calls) and all(call.startswith("worse") for call in calls.values())
        print(f"compare --measure calls every bucket worse, as the gate: {agree}")
        held = blocks == total and agree
    held = held and median <= args.max_seconds
    print(f"{kind} check", "HOLDS" if held else "FAILS")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
