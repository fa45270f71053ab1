"""What hostile input costs perfgate (``nox -s perf``): refusals are cheap, output is streamed.

Side by side in one run, each a real ``python -m perfgate`` process:

- ``validate`` of a YAML alias bomb and of a 20 MB config with 570 000 buckets, against
  ``validate`` of the shipped perfgate.yaml (the ratio is the cost of refusing);
- the peak resident memory of ``bench`` over a benchmark that prints 300 MB, against one
  that prints 1 MB (the ratio is what the output costs perfgate's memory).

``--tree PATH`` measures another checkout (say, the one before a change). Every process
runs under a time limit and an address-space limit, so a tree that does not refuse in
time is reported as such instead of taking the machine down.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT_S = 30.0
MEMORY_LIMIT = 2 * 1024**3

BOMB = """version: 1
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
buckets: []
"""

# Prints N MB to stdout in 1 MB writes, then writes its result file.
NOISY = """import json, sys
from pathlib import Path
line = (b"x" * 1023 + b"\\n") * 1024
for _ in range(int(sys.argv[1])):
    sys.stdout.buffer.write(line)
Path(sys.argv[2]).write_text(json.dumps({"fps": 100.0}))
"""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def perfgate(tree: Path, cwd: Path, *args: str) -> tuple[int | None, float, float]:
    """(exit code or None on timeout, wall seconds, peak RSS in MB) of one perfgate process.

    A fresh wrapper process waits for perfgate, so its children's peak RSS is perfgate's
    (or a descendant's: the benchmark's own is a few MB).
    """
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "began = time.perf_counter()\n"
        "try:\n"
        f"    code = subprocess.run(sys.argv[1:], timeout={TIME_LIMIT_S}).returncode\n"
        "except subprocess.TimeoutExpired:\n"
        "    code = None\n"
        "seconds = time.perf_counter() - began\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(code, seconds, peak, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "perfgate", *args],
        cwd=cwd, env=env, capture_output=True, text=True, preexec_fn=_limits, check=False,
    )  # fmt: skip
    code, seconds, peak = done.stderr.strip().splitlines()[-1].split()
    return (None if code == "None" else int(code)), float(seconds), float(peak)


def huge_config(path: Path, buckets: int = 570_000) -> None:
    """A config of ``buckets`` tiny buckets (about 20 MB)."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write("version: 1\nbuckets:\n")
        for index in range(buckets):
            handle.write(f"  - {{task: t{index}, backends: [{{physics: x}}]}}\n")


def noisy_config(path: Path, megabytes: int, script: Path) -> None:
    """One command bucket whose benchmark prints ``megabytes`` MB."""
    path.write_text(
        "version: 1\n"
        "defaults: {driver: command, retries: 0, timeout_minutes: 5}\n"
        "buckets:\n"
        "  - task: noisy\n"
        "    backends: [{physics: cpu}]\n"
        "    metric: {path: fps}\n"
        "    command:\n"
        f"      argv: [{sys.executable}, {script}, '{megabytes}', '{{output_dir}}/r.json']\n"
        "      output: '{output_dir}/r.json'\n",
        encoding="utf-8",
    )


def describe(code: int | None, seconds: float) -> str:
    """One figure: the time, or that the time limit ran out."""
    if code is None:
        return f"not refused within {TIME_LIMIT_S:.0f} s (killed)"
    return f"exit {code} in {seconds:.2f} s"


def main() -> int:
    """Measure and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", type=Path, default=ROOT, help="perfgate checkout to measure")
    parser.add_argument("--megabytes", type=int, default=300, help="benchmark output size")
    args = parser.parse_args()
    tree = args.tree.resolve()
    with tempfile.TemporaryDirectory(prefix="perfgate-limits-") as tmp:
        work = Path(tmp)
        (work / "bomb.yaml").write_text(BOMB, encoding="utf-8")
        huge_config(work / "huge.yaml")
        size_mb = (work / "huge.yaml").stat().st_size / 1e6
        base = perfgate(tree, work, "validate", "--config", str(ROOT / "perfgate.yaml"))
        bomb = perfgate(tree, work, "validate", "--config", "bomb.yaml")
        huge = perfgate(tree, work, "validate", "--config", "huge.yaml")
        print(f"validate perfgate.yaml:      {describe(base[0], base[1])}, peak {base[2]:.0f} MB")
        for name, (code, seconds, peak) in (("alias bomb", bomb), (f"{size_mb:.0f} MB", huge)):
            bound = ">= " if code is None else ""
            print(
                f"validate {name + ':':19s}{describe(code, seconds)}, peak {peak:.0f} MB "
                f"({bound}x{seconds / base[1]:.1f} the time of a valid config)"
            )
        (work / "noisy.py").write_text(NOISY, encoding="utf-8")
        peaks = {}
        for megabytes in (1, args.megabytes):
            run = work / f"run-{megabytes}"
            run.mkdir()
            noisy_config(run / "perfgate.yaml", megabytes, work / "noisy.py")
            began = time.perf_counter()
            code, _, peak = perfgate(tree, run, "bench", "--no-judge")
            peaks[megabytes] = peak
            print(
                f"bench printing {megabytes:4d} MB: exit {code}, peak RSS {peak:.0f} MB "
                f"({time.perf_counter() - began:.1f} s)"
            )
        print(
            f"x{args.megabytes} output: peak RSS x{peaks[args.megabytes] / peaks[1]:.2f} "
            f"(+{peaks[args.megabytes] - peaks[1]:.0f} MB)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
