"""``perfgate bench`` on a suite: a real pytest-benchmark run of 20 benchmarks, 19 of them
selected by name pattern, each a metric judged against its own recorded window; unchanged
code is not BLOCKed (R5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from perfgate.cli import main
from perfgate.git import git
from tests.git_support import commit_all

pytest.importorskip("pytest_benchmark", reason="pytest-benchmark is not installed (test group)")

SUITE = """\
import time

import pytest


@pytest.mark.parametrize("n", range(20))
def test_nap(benchmark, n):
    benchmark.pedantic(time.sleep, args=(0.002 + n * 0.0001,), rounds=5, iterations=1)
"""


def checkout(root: Path) -> Path:
    """A repository with a 20-benchmark pytest-benchmark suite; the bucket's primary is the
    first benchmark, a selection takes the others."""
    root.mkdir(parents=True)
    (root / "bench_suite.py").write_text(SUITE, encoding="utf-8")
    config = {
        "version": 1,
        "defaults": {"driver": "command", "timeout_minutes": 2, "retries": 0, "repeats": 1,
                     "max_repeats": 2, "metric": {"benchmark": "test_nap[0]", "unit": "ms"},
                     "metrics": [{"name": "naps", "benchmarks": "test_nap[[]*", "unit": "ms"}]},
        "buckets": [{
            "task": "naps",
            "backends": [{"physics": "cpu"}],
            "command": {
                "argv": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "bench_suite.py", "--benchmark-json={output_dir}/bench.json"],
                "output": "{output_dir}/bench.json",
                "format": "pytest-benchmark",
            },
        }],
    }  # fmt: skip
    (root / "perfgate.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=root)
    commit_all(root, "nap suite")
    return root


def bench_args(tmp_path: Path, *more: str) -> list[str]:
    return ["bench", "--quiet", "--out", str(tmp_path / "out"), "--work-dir",
            str(tmp_path / "work"), "--report-dir", str(tmp_path / "report"), *more]  # fmt: skip


def test_an_unchanged_suite_is_judged_benchmark_by_benchmark_and_not_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(checkout(tmp_path / "repo"))
    for _ in range(5):  # five recorded runs of one sample: a window for every benchmark
        assert main(bench_args(tmp_path, "--record")) == 0
    capsys.readouterr()
    assert main(bench_args(tmp_path, "--json")) == 0  # no BLOCK
    out = json.loads(capsys.readouterr().out)
    (result,) = out["results"]
    assert sorted(result["metrics"]) == sorted(f"test_nap[{n}]" for n in range(1, 20))
    assert {m["unit"] for m in result["metrics"].values()} == {"ms"}
    assert result["identity"]["launch"]["units"] == {"primary": "ms", "naps": "ms"}
    (row,) = out["verdict"]["rows"]
    assert len(row["metrics"]) == 20 and row["verdict"] != "BLOCK"
    windows = {m["baseline"]["samples"] for m in row["metrics"] if m["baseline"]}
    assert windows == {5}  # each benchmark's own window of five recorded runs
