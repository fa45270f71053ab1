"""A benchmark's output costs perfgate bounded memory, however much it prints (R14).

The whole log is streamed to a file; only markers and the tail stay in memory. Measured
on a real ``python -m perfgate bench`` process; ``nox -s perf`` reports the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

MEGABYTES = 128
NOISY = """import json, sys
from pathlib import Path
line = (b"x" * 1023 + b"\\n") * 1024
for _ in range({megabytes}):
    sys.stdout.buffer.write(line)
sys.stdout.buffer.write(b"the last line\\n")
Path(sys.argv[1]).write_text(json.dumps({{"fps": 100.0}}))
"""
# A fresh process whose only child is perfgate: its children's peak RSS is perfgate's (the
# benchmark, a descendant too, holds a few MB).
PEAK = """import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def test_printing_128_mb_costs_perfgate_far_less_than_128_mb(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(NOISY.format(megabytes=MEGABYTES), encoding="utf-8")
    (tmp_path / "perfgate.yaml").write_text(
        "version: 1\n"
        "defaults: {driver: command, retries: 0, timeout_minutes: 5, repeats: 1}\n"
        "buckets:\n"
        "  - task: noisy\n"
        "    backends: [{physics: cpu}]\n"
        "    metric: {path: fps}\n"
        "    command:\n"
        f"      argv: [{json.dumps(sys.executable)}, noisy.py, '{{output_dir}}/r.json']\n"
        "      output: '{output_dir}/r.json'\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", PEAK, sys.executable, "-m", "perfgate", "bench", "--no-judge"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    code, peak_mb = (int(word) for word in done.stdout.split())
    assert code == 0, done.stderr
    artifact = json.loads((tmp_path / ".perfgate/results/noisy__cpu.json").read_text())
    assert artifact["metric"]["value"] == 100.0
    assert artifact["log_tail"].endswith("the last line\n")
    log = tmp_path / ".perfgate/work/runs/noisy__cpu/sample-0/attempt-1/log.txt"
    assert log.stat().st_size > MEGABYTES * 1024 * 1024  # the whole log is kept, on disk
    assert peak_mb < MEGABYTES * 3 // 4, f"perfgate peaked at {peak_mb} MB"
