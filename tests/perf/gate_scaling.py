"""The gate and the store under load, side by side in one run (``nox -s perf``).

1. Gate against the raw read: the whole gate (``python -m perfgate gate``: load the
   artifacts, read every window from git, judge, write the report) against one
   ``git cat-file --batch`` reading the same buckets' live segments, on a store of
   1,000 buckets x 2,000 samples as publishes built it and after ``git gc``; with the
   peak RSS of the gate (and the git processes it starts).
2. Flat in history: the gate at 20,000 against 2,000 samples per bucket (100 buckets).
3. Publishers: 16 at once against 16 one after another, on a local bare origin.

Machines are noisy: each figure is the best of a few alternating runs, and the figures to
read are the ratios. The commit measured, the machine and its load averages print beside
them, and beside each wall time its CPU time (user and system, of the process and the git
processes it waited for), which a busy machine inflates far less. Stores are cached
(``--cache``), so a rerun skips building them. ``--quick`` runs small sizes (for CI: the
harness works, the figures print). Rerun the full sizes (``nox -s perf-gate``) whenever
the judge or the store changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.perf.provenance import commit, load, machine  # noqa: E402
from tests.perf.stores import Built, StoreSpec, cached_store  # noqa: E402
from tests.publishers import origin_with_history, run_burst  # noqa: E402

BEGAN = time.perf_counter()


def say(message: str) -> None:
    """Progress, with the time since the start."""
    print(f"[{time.perf_counter() - BEGAN:6.1f} s] {message}", flush=True)


@dataclass(frozen=True, kw_only=True)
class Run:
    """One timed process: wall seconds, CPU seconds (user and system) and peak RSS (MB), of it
    and the processes it waited for."""

    seconds: float
    cpu_s: float
    rss_mb: float


# Times one command and reports its peak RSS. It runs in a small interpreter of its own:
# a process started straight from this one would inherit this process's high-water RSS
# through exec, and report that instead of its own.
LAUNCHER = """
import json, os, subprocess, sys, time
argv = json.loads(sys.argv[1])
began = time.perf_counter()
process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
stderr = process.stderr.read()
_, status, usage = os.wait4(process.pid, 0)
seconds = time.perf_counter() - began
process.returncode = os.waitstatus_to_exitcode(status)
print(json.dumps({"seconds": seconds, "rss_kb": usage.ru_maxrss,
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "code": process.returncode, "stderr": stderr.decode()[-2000:]}))
"""


# ``python -m perfgate gate``, with GitHub's 256-job matrix limit lifted: it binds only the
# rendered workflow, and the gate's cost is measured past it.
GATE = """
import json, sys
import perfgate.config.checks
perfgate.config.checks.MAX_BUCKETS = 1_000_000
from perfgate.cli import main
raise SystemExit(main(json.loads(sys.argv[1])))
"""


def timed(argv: list[str], cwd: Path, stdin: bytes | None = None) -> Run:
    """Run ``argv``; its wall time and the largest RSS of it or any child it waited for.

    Python may cache compiled bytecode, as on any machine that does not forbid it
    (PYTHONDONTWRITEBYTECODE): otherwise every run would compile perfgate again, and the
    best of a few runs would not be a warm one.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GITHUB_") and k != "PYTHONDONTWRITEBYTECODE"}  # fmt: skip
    answer = subprocess.run(
        [sys.executable, "-S", "-c", LAUNCHER, json.dumps(argv)],
        cwd=cwd, env=env, input=stdin or b"", capture_output=True, check=True,
    )  # fmt: skip
    found = json.loads(answer.stdout)
    if found["code"] != 0:
        raise SystemExit(f"{' '.join(argv)} failed with exit {found['code']}: {found['stderr']}")
    return Run(seconds=found["seconds"], cpu_s=found["cpu_s"], rss_mb=found["rss_kb"] / 1024)


def gate(repo: Path, report: Path, max_samples: int) -> Run:
    """The whole gate over the store's artifacts; every bucket must get a full window."""
    argv = ["gate", "--results", str(repo / "results"), "--report-dir", str(report),
            "--config", str(repo / "perfgate.yaml"), "--local-baseline"]  # fmt: skip
    run = timed([sys.executable, "-c", GATE, json.dumps(argv)], cwd=repo)
    rows = json.loads((report / "verdict.json").read_text())["rows"]
    short = [r["bucket"] for r in rows if (r["baseline"] or {}).get("samples") != max_samples]
    if short:
        raise SystemExit(f"{len(short)} bucket(s) without a full window, e.g. {short[0]}")
    return run


def raw_read(repo: Path, built: Built) -> Run:
    """One ``git cat-file --batch`` reading every bucket's live segment."""
    specs = "".join(f"{spec}\n" for spec in built.live_specs(repo)).encode()
    return timed(["git", "cat-file", "--batch"], cwd=repo, stdin=specs)


def best(runs: list[Run]) -> Run:
    """The fastest run, with the largest RSS seen (memory is not noise)."""
    return Run(seconds=min(r.seconds for r in runs), cpu_s=min(r.cpu_s for r in runs),
               rss_mb=max(r.rss_mb for r in runs))  # fmt: skip


def compare_gate_to_raw(built: Built, rounds: int, tmp: Path) -> dict[str, tuple[Run, Run]]:
    """Gate and raw read, alternating, on the store as built and after ``git gc``."""
    found = {}
    for label, repo in (("as built", built.as_built), ("after git gc", built.after_gc)):
        raws, gates = [], []
        for round_ in range(rounds):
            raws.append(raw_read(repo, built))
            gates.append(gate(repo, tmp / f"report-{round_}", max_samples=20))
            say(f"  {label}: raw {raws[-1].seconds:.2f} s, gate {gates[-1].seconds:.2f} s "
                f"({gates[-1].rss_mb:.0f} MB)")  # fmt: skip
        found[label] = (best(raws), best(gates))
    return found


def compare_history(
    short: Built, long: Built, rounds: int, tmp: Path
) -> dict[str, tuple[Run, Run]]:
    """The gate on a short and a long history, alternating, as built and after ``git gc``."""
    found = {}
    for label, pick in (("as built", "as_built"), ("after git gc", "after_gc")):
        shorts, longs = [], []
        for round_ in range(rounds):
            shorts.append(gate(getattr(short, pick), tmp / f"s-{round_}", max_samples=20))
            longs.append(gate(getattr(long, pick), tmp / f"l-{round_}", max_samples=20))
            say(f"  {label}: {short.spec.history} samples {shorts[-1].seconds:.2f} s, "
                f"{long.spec.history} samples {longs[-1].seconds:.2f} s")  # fmt: skip
        found[label] = (best(shorts), best(longs))
    return found


def compare_publishers(
    count: int, buckets: int, rounds: int, tmp: Path
) -> tuple[float, float, int, int]:
    """Wall time of ``count`` publishers at once and one after another (the best of
    ``rounds`` alternating bursts each, every burst on a fresh origin); lost and duplicated
    samples summed over every burst."""
    walls: dict[str, list[float]] = {"serial": [], "concurrent": []}
    lost = duplicated = 0
    for round_ in range(rounds):
        for mode in walls:
            where = tmp / f"{mode}-{round_}"
            origin, shas = origin_with_history(where)
            burst = run_burst(origin, where / "work", publishers=count, buckets=buckets,
                              commits=shas, concurrent=mode == "concurrent")  # fmt: skip
            if any(burst.exit_codes):
                raise SystemExit(f"{mode} publishers failed: exit codes {burst.exit_codes}")
            walls[mode].append(burst.wall_s)
            lost, duplicated = lost + burst.lost, duplicated + burst.duplicated
            say(f"  {count} publishers {mode}: {burst.wall_s:.1f} s, "
                f"{burst.lost} lost, {burst.duplicated} duplicated")  # fmt: skip
    return min(walls["concurrent"]), min(walls["serial"]), lost, duplicated


def main() -> int:
    """Build (or reuse) the stores, measure side by side, print the figures and the targets."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs per figure")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "perfgate-perf",
        help="where built stores are kept between runs (default: %(default)s)",
    )
    args = parser.parse_args()
    if args.quick:
        big = StoreSpec(buckets=100, history=500, publishes=2)
        short, long = (StoreSpec(buckets=20, history=h, publishes=5) for h in (500, 5000))
        publishers, rounds = 8, min(args.rounds, 2)
    else:
        big = StoreSpec(buckets=1000, history=2000, publishes=2)
        short, long = (StoreSpec(buckets=100, history=h, publishes=20) for h in (2000, 20000))
        publishers, rounds = 16, args.rounds
    measured = f"perfgate {commit(ROOT)}, on {machine()}"
    say(measured)
    say(f"stores in {args.cache}")
    built = {spec: cached_store(spec, args.cache, say) for spec in (big, short, long)}
    loads = [load()]
    with tempfile.TemporaryDirectory(prefix="perfgate-perf-") as scratch:
        tmp = Path(scratch)
        say(f"gate against the raw read, {big.buckets} buckets x {big.history} samples")
        raw_vs_gate = compare_gate_to_raw(built[big], rounds, tmp / "big")
        say(f"history: {short.history} against {long.history} samples, {short.buckets} buckets")
        history = compare_history(built[short], built[long], rounds, tmp / "history")
        say(f"publishers: {publishers} at once against one after another")
        concurrent, serial, lost, duplicated = compare_publishers(
            publishers, 8, rounds, tmp / "pub"
        )
    loads.append(load())

    print()
    print(measured)
    print(f"load average (1 / 5 / 15 min): {loads[0]} as measuring began, {loads[1]} at its end")
    print(f"{big.buckets} buckets x {big.history} samples (best of {rounds}):")
    for label, (raw, gate_run) in raw_vs_gate.items():
        print(f"  {label:13} gate {gate_run.seconds:5.2f} s  raw read {raw.seconds:5.2f} s  "
              f"gate/raw {gate_run.seconds / raw.seconds:4.2f}  "
              f"peak RSS gate {gate_run.rss_mb:4.0f} MB, raw {raw.rss_mb:4.0f} MB")  # fmt: skip
        print(f"  {'':13} CPU  {gate_run.cpu_s:5.2f} s  CPU      {raw.cpu_s:5.2f} s  "
              f"CPU      {gate_run.cpu_s / raw.cpu_s:4.2f}")  # fmt: skip
    print(f"{short.buckets} buckets, {long.history} against {short.history} samples per bucket:")
    for label, (short_run, long_run) in history.items():
        print(f"  {label:13} {long_run.seconds:5.2f} s against {short_run.seconds:5.2f} s  "
              f"{long.history // 1000}k/{short.history // 1000 or short.history}"
              f"{'k' if short.history >= 1000 else ''} "
              f"{long_run.seconds / short_run.seconds:4.2f}  "
              f"(CPU {long_run.cpu_s:5.2f} s against {short_run.cpu_s:5.2f} s, "
              f"{long_run.cpu_s / short_run.cpu_s:4.2f})")  # fmt: skip
    print(f"{publishers} publishers (best of {rounds}): at once {concurrent:.1f} s, one after "
          f"another {serial:.1f} s ({concurrent / serial:.2f}); {lost} lost, {duplicated} "
          "duplicated")  # fmt: skip

    gc_raw, gc_gate = raw_vs_gate["after git gc"]
    built_raw, built_gate = raw_vs_gate["as built"]
    targets = [
        ("gate/raw <= 3 (as built)", built_gate.seconds / built_raw.seconds <= 3),
        ("gate/raw <= 3 (after git gc)", gc_gate.seconds / gc_raw.seconds <= 3),
        ("peak RSS <= 300 MB", max(built_gate.rss_mb, gc_gate.rss_mb) <= 300),
        ("history ratio <= 1.2 (after git gc)",
         history["after git gc"][1].seconds / history["after git gc"][0].seconds <= 1.2),
        (f"{publishers} publishers at once <= 2x one after another, 0 lost",
         concurrent <= 2 * serial and lost == 0 and duplicated == 0),
    ]  # fmt: skip
    print()
    if args.quick:
        print("quick sizes: the harness ran; the targets are judged at the full sizes only")
        return 0
    for name, met in targets:
        print(f"  {'met' if met else 'NOT MET':7}  {name}")
    return 0 if all(met for _, met in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
