"""``perfgate bench`` on a ``command`` bucket whose output is a benchmark tool's: the real
pytest-benchmark runs in the bucket's subprocess, its JSON is read by the adapter, and the
run is judged against the local baseline (lower is better: a slower test BLOCKs). A suite of
20 benchmarks, 19 selected by name pattern, is judged benchmark by benchmark, and unchanged
code is not BLOCKed (R20).

The benchmarks nap on a clock of their own, which pytest-benchmark reads through its
``--benchmark-timer`` option: a nap advances it without sleeping. A real ``time.sleep``
overshoots by whatever a busy machine's scheduler adds, and on a shared CI machine that
widened the recorded window until a doubled nap was honestly WARN or INCONCLUSIVE, not BLOCK;
the tests are about the tool's output and the judge reading it, not about the scheduler."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from perfgate.cli import main
from perfgate.util.git import git
from tests.git_support import commit_all

pytest.importorskip("pytest_benchmark", reason="pytest-benchmark is not installed (test group)")

NAP_CLOCK = """\
import time

_napped = 0.0


def clock():
    return time.perf_counter() + _napped


def nap(seconds):
    global _napped
    _napped += seconds
"""


BENCHMARK = """\
import os

import nap_clock


def test_nap(benchmark):
    nap = float(os.environ.get("NAP_S", "0.004"))
    benchmark.pedantic(nap_clock.nap, args=(nap,), rounds=5, iterations=1)
"""


SUITE = """\
import pytest

import nap_clock


@pytest.mark.parametrize("n", range(20))
def test_nap(benchmark, n):
    benchmark.pedantic(nap_clock.nap, args=(0.002 + n * 0.0001,), rounds=5, iterations=1)
"""


def checkout(
    root: Path, *, source: str = BENCHMARK, metric: str = "test_nap", selection: str = ""
) -> Path:
    """A repository with a pytest-benchmark file and a config reading its JSON: the primary
    reads ``metric``; a ``selection`` pattern makes every other benchmark it matches a
    metric."""
    root.mkdir(parents=True)
    (root / "bench_nap.py").write_text(source, encoding="utf-8")
    (root / "nap_clock.py").write_text(NAP_CLOCK, encoding="utf-8")
    defaults = {
        "driver": "command",
        "timeout_minutes": 2,
        "retries": 0,
        "repeats": 1,
        "max_repeats": 2,
        "metric": {"benchmark": metric, "unit": "ms"},
    }
    if selection:
        defaults["metrics"] = [{"name": "naps", "benchmarks": selection, "unit": "ms"}]
    config = {
        "version": 1,
        "defaults": defaults,
        "buckets": [{
            "task": "nap",
            "backends": [{"physics": "cpu"}],
            "command": {
                "argv": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "bench_nap.py", "--benchmark-timer=nap_clock.clock",
                         "--benchmark-json={output_dir}/bench.json"],
                "output": "{output_dir}/bench.json",
                "format": "pytest-benchmark",
            },
        }],
    }  # fmt: skip
    (root / "perfgate.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=root)
    commit_all(root, "nap benchmarks")
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
    monkeypatch.chdir(checkout(tmp_path / "repo", metric="test_sort"))
    assert main(bench_args(tmp_path, "--no-judge")) == 2  # a HARD_FAILURE
    data = json.loads((tmp_path / "out" / "nap__cpu.json").read_text(encoding="utf-8"))
    assert data["health"]["phase"] == "output"
    assert data["health"]["error"].endswith(
        "bench.json: no benchmark named 'test_sort'; the file has 'test_nap': set the "
        "metric's benchmark to one of them"
    )
    assert "no benchmark named 'test_sort'" in capsys.readouterr().err


def test_an_unchanged_suite_is_judged_benchmark_by_benchmark_and_not_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(
        checkout(tmp_path / "repo", source=SUITE, metric="test_nap[0]", selection="test_nap[[]*")
    )
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
    # Each benchmark is judged against its own window, read from the five recorded runs;
    # the rule may use fewer of them where it sees a level shift (against naps this even,
    # a busy machine's microseconds can show as one), never more.
    assert all(m["baseline"] for m in row["metrics"])
    windows = {m["baseline"]["samples"] for m in row["metrics"]}
    assert max(windows) == 5 and min(windows) >= 1
