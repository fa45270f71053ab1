"""``perfgate bench`` on a ``command`` bucket whose output is a benchmark tool's: the real
pytest-benchmark runs in the bucket's subprocess, its JSON is read by the adapter, and the
run is judged against the local baseline (lower is better: a slower test BLOCKs)."""

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

BENCHMARK = """\
import os
import time


def test_nap(benchmark):
    nap = float(os.environ.get("NAP_S", "0.004"))
    benchmark.pedantic(time.sleep, args=(nap,), rounds=5, iterations=1)
"""


def checkout(root: Path, benchmark: str = "test_nap") -> Path:
    """A repository with one pytest-benchmark test and a config reading its JSON."""
    root.mkdir(parents=True)
    (root / "bench_nap.py").write_text(BENCHMARK, encoding="utf-8")
    config = {
        "version": 1,
        "defaults": {"driver": "command", "timeout_minutes": 2, "retries": 0, "repeats": 1,
                     "max_repeats": 2, "metric": {"benchmark": benchmark, "unit": "ms"}},
        "buckets": [{
            "task": "nap",
            "backends": [{"physics": "cpu"}],
            "command": {
                "argv": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "bench_nap.py", "--benchmark-json={output_dir}/bench.json"],
                "output": "{output_dir}/bench.json",
                "format": "pytest-benchmark",
            },
        }],
    }  # fmt: skip
    (root / "perfgate.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=root)
    commit_all(root, "nap benchmark")
    return root


def bench_args(tmp_path: Path, *more: str) -> list[str]:
    return ["bench", "--quiet", "--out", str(tmp_path / "out"), "--work-dir",
            str(tmp_path / "work"), "--report-dir", str(tmp_path / "report"), *more]  # fmt: skip


def test_a_slower_pytest_benchmark_blocks_against_its_recorded_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(checkout(tmp_path / "repo"))
    for _ in range(5):  # five recorded runs of one sample: a window
        assert main(bench_args(tmp_path, "--record")) == 0
    monkeypatch.setenv("NAP_S", "0.008")  # each round twice as long
    capsys.readouterr()
    assert main(bench_args(tmp_path, "--json")) == 1  # BLOCK exits 1
    out = json.loads(capsys.readouterr().out)
    (row,) = out["verdict"]["rows"]
    assert (row["bucket"], row["verdict"]) == ("nap/cpu", "BLOCK")
    (result,) = out["results"]
    metric = result["metric"]
    assert (metric["path"], metric["direction"], metric["unit"]) == ("test_nap", "lower", "ms")
    assert 8.0 <= metric["value"] < 20.0  # the rounds' median, in ms
    assert result["identity"]["launch"]["format"] == "pytest-benchmark"


def test_a_benchmark_missing_from_the_tools_output_fails_the_bucket_naming_what_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(checkout(tmp_path / "repo", benchmark="test_sort"))
    assert main(bench_args(tmp_path, "--no-judge")) == 2  # a HARD_FAILURE
    data = json.loads((tmp_path / "out" / "nap__cpu.json").read_text(encoding="utf-8"))
    assert data["health"]["phase"] == "output"
    assert data["health"]["error"].endswith(
        "bench.json: no benchmark named 'test_sort'; the file has 'test_nap': set the "
        "metric's benchmark to one of them"
    )
    assert "no benchmark named 'test_sort'" in capsys.readouterr().err
