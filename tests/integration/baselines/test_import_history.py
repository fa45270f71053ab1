"""``perfgate import-history`` in a real clone of a bare origin: a data.js written the way
github-action-benchmark writes it, and a results directory the real asv wrote, are mapped
onto the buckets that name their benchmarks, written through the store's append (checked
as a publish), re-imported without adding anything, and judged from: once the hardware is
declared, the first ``bench`` has a window; without the declaration the samples sit in a
partition of their own and the bench has none."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.run.hardware import detect
from perfgate.util.git import git
from tests.git_support import IDENTITY, Clone, MakeClone, commit_all

# The bucket's command: the figure comes from the environment, written as the custom list.
BENCH = """\
import json, os, sys
out = sys.argv[1]
figure = float(os.environ.get("PARSE_MS", "10.0"))
with open(out, "w") as handle:
    json.dump([{"name": "parse", "unit": "ms", "value": figure}], handle)
"""

# Suspicion re-measures by repeats: a paired confirmation would run the merge base with the
# same slow environment and rightly clear it.
CONFIG = {
    "version": 1,
    "gate": {"confirm": "repeat"},
    "defaults": {"driver": "command", "timeout_minutes": 2, "retries": 0, "repeats": 1,
                 "max_repeats": 2, "metric": {"benchmark": "parse", "unit": "ms"}},
    "buckets": [{
        "task": "parse",
        "backends": [{"physics": "cpu"}],
        "command": {
            "argv": [sys.executable, "bench.py", "{output_dir}/out.json"],
            "output": "{output_dir}/out.json",
            "format": "customSmallerIsBetter",
        },
    }],
}  # fmt: skip

# The history's figures of `parse`, one run per commit (ms).
FIGURES = (10.0, 10.1, 9.9, 10.05, 9.95, 10.02)


def clone_with_history(origin_clone: MakeClone) -> tuple[Clone, list[str]]:
    """A clone whose main holds the bucket and six more commits, pushed."""
    clone = origin_clone(
        files={"bench.py": BENCH, "perfgate.yaml": yaml.safe_dump(CONFIG)}, message="bench"
    )
    commits = []
    for index in range(len(FIGURES)):
        (clone.path / "CHANGES").write_text(f"{index}\n", encoding="utf-8")
        commits.append(commit_all(clone.path, f"change {index}"))
    git("push", "-q", "origin", "main", cwd=clone.path)
    return clone, commits


def run_entry(commit: str, index: int, benches: list[dict[str, Any]]) -> dict[str, Any]:
    """One run as the action keeps it (``extract.ts``'s Benchmark)."""
    user = {"email": "t@example.invalid", "name": "t", "username": "t"}
    return {
        "commit": {
            "author": user,
            "committer": user,
            "distinct": True,
            "id": commit,
            "message": f"change {index}",
            "timestamp": f"2024-05-0{index + 1}T10:00:00+02:00",
            "tree_id": "0" * 40,
            "url": f"https://github.com/o/r/commit/{commit}",
        },
        "date": 1714550400000 + index * 86_400_000,
        "tool": "customSmallerIsBetter",
        "benches": benches,
    }


def write_data_js(path: Path, commits: list[str]) -> Path:
    """The data.js the action's ``storeDataJs`` writes: its prefix, then the JSON indented."""
    runs = [
        run_entry(commit, index, [
            {"name": "parse", "value": figure, "unit": "ms", "range": "± 0.1"},
            {"name": "render", "value": 3.0, "unit": "ms", "extra": "no bucket"},
        ])
        for index, (commit, figure) in enumerate(zip(commits, FIGURES, strict=True))
    ]  # fmt: skip
    runs.append(run_entry(commits[-1], 7, [{"name": "parse", "value": None, "unit": "ms"}]))
    runs.append(run_entry(commits[-1], 8, [{"name": "parse", "value": 120.0, "unit": "ops/s"}]))
    runs.append(run_entry("f" * 40, 9, [{"name": "parse", "value": 10.0, "unit": "ms"}]))
    data = {"lastUpdate": 1714550400000, "repoUrl": "https://github.com/o/r",
            "entries": {"Benchmark": runs}}  # fmt: skip
    path.write_text("window.BENCHMARK_DATA = " + json.dumps(data, indent=2), encoding="utf-8")
    return path


def bench(tmp_path: Path, *more: str) -> list[str]:
    return ["bench", "--quiet", "--json", "--out", str(tmp_path / "out"), "--work-dir",
            str(tmp_path / "work"), "--report-dir", str(tmp_path / "report"), *more]  # fmt: skip


def stored(clone: Clone) -> list[dict[str, Any]]:
    """Every sample line on the local baseline branch."""
    store = BaselineStore(clone.path, branch="perf-baselines")
    tip = store.refresh()
    assert tip is not None
    files = git("ls-tree", "-r", "--name-only", tip, cwd=clone.path).split()
    lines = [
        line
        for name in files
        if name.endswith(".ndjson")
        for line in git("show", f"{tip}:{name}", cwd=clone.path).splitlines()
    ]
    return [json.loads(line) for line in lines]


def test_an_imported_data_js_lets_the_first_bench_judge_once_its_hardware_is_declared(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, commits = clone_with_history(origin_clone)
    data_js = write_data_js(tmp_path / "data.js", commits)
    here = detect().slug

    # The dry run (the default) says what maps and what does not, and writes nothing.
    assert main(["import-history", "--data-js", str(data_js), "--hardware", here]) == 0
    out = capsys.readouterr().out
    assert "parse/cpu" in out and "dry run: nothing was written" in out
    assert "render: no metric of perfgate.yaml names this benchmark (6 runs)" in out
    assert "benches[0].value is None, not a finite number: not imported" in out
    assert "the history's figures are in 'ops/s', the metric is in 'ms': a unit mismatch" in out
    assert f"commit {'f' * 12} is not in this repository" in out
    assert git("branch", "--list", "perf-baselines", cwd=clone.path) == ""

    argv = ["import-history", "--data-js", str(data_js), "--hardware", here, "--execute"]
    assert main(argv) == 0
    assert "imported 6 sample(s)" in capsys.readouterr().err
    samples = stored(clone)
    assert len(samples) == 6
    assert {s["trusted_source"] for s in samples} == {"import"}
    assert {s["hardware"] for s in samples} == {here}
    assert sorted(s["commit"] for s in samples) == sorted(commits)
    assert sorted(s["value"] for s in samples) == sorted(FIGURES)

    # Importing again adds nothing: the ids are the runs', never the clock's.
    assert main(argv) == 0
    assert "imported 0 sample(s)" in capsys.readouterr().err
    assert len(stored(clone)) == 6

    # The first bench of the bucket is judged against the imported window.
    capsys.readouterr()
    assert main(bench(tmp_path)) == 0
    (row,) = json.loads(capsys.readouterr().out)["verdict"]["rows"]
    assert row["verdict"] == "PASS"
    assert (row["baseline"]["samples"], row["baseline"]["runs"]) == (6, 6)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PARSE_MS", "13.0")  # 30 % slower
        assert main(bench(tmp_path)) == 1
    (row,) = json.loads(capsys.readouterr().out)["verdict"]["rows"]
    assert row["verdict"] == "BLOCK"
    # The gate judges that artifact against the same imported window.
    report = tmp_path / "gate"
    assert main(["gate", "--results", str(tmp_path / "out"), "--report-dir", str(report)]) == 1
    verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    assert verdict["overall_verdict"] == "BLOCK"
    assert verdict["rows"][0]["baseline"]["samples"] == 6


def test_an_import_without_a_hardware_declaration_feeds_no_window(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, commits = clone_with_history(origin_clone)
    data_js = write_data_js(tmp_path / "data.js", commits)
    assert main(["import-history", "--data-js", str(data_js), "--execute"]) == 0
    out = capsys.readouterr().out
    assert "the hardware partition 'unknown-imported'" in out
    assert "import with --hardware <their slug>" in out
    assert {s["hardware"] for s in stored(clone)} == {"unknown-imported"}
    # The partition fills a window of its own, which only a run on that hardware reads.
    verify = ["verify-baselines", "--hardware", "unknown-imported", "--require"]
    assert main(verify) == 0
    assert "READY" in capsys.readouterr().out

    assert main(bench(tmp_path)) == 0
    (row,) = json.loads(capsys.readouterr().out)["verdict"]["rows"]
    assert (row["verdict"], row["reasons"]) == ("WARN", ["NO_BASELINE"])


def test_a_truncated_data_js_is_refused_naming_the_file(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, commits = clone_with_history(origin_clone)
    whole = write_data_js(tmp_path / "data.js", commits).read_text(encoding="utf-8")
    cut = tmp_path / "cut.js"
    cut.write_text(whole[: len(whole) // 2], encoding="utf-8")
    assert main(["import-history", "--data-js", str(cut), "--execute"]) == 4
    err = capsys.readouterr().err
    assert f"{cut}: the data after 'window.BENCHMARK_DATA =' is not whole JSON" in err
    assert "truncated" in err
    assert git("branch", "--list", "perf-baselines", cwd=clone.path) == ""


# An asv project: one timed benchmark, run in the existing environment (this Python).
ASV_BENCH = """\
import time


def time_nap():
    time.sleep(0.02)
"""

# The asv bucket reads what a real asv run wrote: its command copies the results tree asv
# wrote for the history (benchmarks.json, machine.json and the newest results file stay
# where the adapter finds them).
COPY = "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], dirs_exist_ok=True)"


def asv_config(results: Path) -> dict[str, Any]:
    return {
        "version": 1,
        "gate": {"confirm": "repeat"},
        "defaults": {"driver": "command", "timeout_minutes": 2, "retries": 0, "repeats": 1,
                     "max_repeats": 2, "metric": {"benchmark": "bench.time_nap", "unit": "ms"}},
        "buckets": [{
            "task": "nap",
            "backends": [{"physics": "cpu"}],
            "command": {
                "argv": [sys.executable, "-c", COPY, str(results), "{output_dir}/results"],
                "output": "{output_dir}/results/box/*-*.json",
                "format": "asv",
            },
        }],
    }  # fmt: skip


def asv_history(origin_clone: MakeClone, tmp_path: Path, runs: int) -> tuple[Clone, Path]:
    """A clone with an asv project and ``runs`` commits on main, each measured by the real
    asv into ``tmp_path/results`` (machine ``box``, the existing environment)."""
    asv = shutil.which("asv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if asv is None:
        pytest.skip("asv is not installed (pip install asv, or the test group)")
    results = tmp_path / "results"
    conf = {"version": 1, "project": "demo", "repo": ".", "environment_type": "existing",
            "benchmark_dir": "benchmarks", "results_dir": str(results),
            "html_dir": str(tmp_path / "html"), "branches": ["main"]}  # fmt: skip
    clone = origin_clone(
        files={
            "asv.conf.json": json.dumps(conf),
            "benchmarks/__init__.py": "",
            "benchmarks/bench.py": ASV_BENCH,
            "perfgate.yaml": yaml.safe_dump(asv_config(results)),
        },
        message="asv benchmarks",
    )
    env = {**os.environ, **IDENTITY, "HOME": str(tmp_path / "home")}  # asv's machine file
    subprocess.run([asv, "machine", "--yes", "--machine", "box"], cwd=clone.path, env=env,
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    for index in range(runs):
        (clone.path / "CHANGES").write_text(f"{index}\n", encoding="utf-8")
        sha = commit_all(clone.path, f"change {index}")
        subprocess.run(
            [asv, "run", "--quick", "--machine", "box", "-E", f"existing:{sys.executable}",
             "--set-commit-hash", sha],
            cwd=clone.path, env=env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    git("push", "-q", "origin", "main", cwd=clone.path)
    return clone, results


def test_an_asv_results_directory_from_the_real_asv_is_imported_under_its_machine(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, results = asv_history(origin_clone, tmp_path, runs=5)
    here = detect().slug

    # Undeclared, the runs would go to the machine's own partition: asv-box.
    assert main(["import-history", "--asv", str(results)]) == 0
    out = capsys.readouterr().out
    assert "asv history" in out and "5 run(s) on machine 'box'" in out
    assert "the hardware partition 'asv-box'" in out
    assert "nap/cpu" in out and "bench.time_nap" in out

    argv = ["import-history", "--asv", str(results), "--hardware", here, "--execute"]
    assert main(argv) == 0
    assert "imported 5 sample(s)" in capsys.readouterr().err
    samples = stored(clone)
    assert {(s["trusted_source"], s["hardware"], s["unit"]) for s in samples} == {
        ("import", here, "ms")
    }
    assert all(20.0 <= s["value"] < 200.0 for s in samples)  # asv's seconds, in ms
    assert main(argv) == 0
    assert "imported 0 sample(s)" in capsys.readouterr().err

    # The first bench reads what asv wrote and is judged against the imported window.
    capsys.readouterr()
    assert main(bench(tmp_path)) == 0
    (row,) = json.loads(capsys.readouterr().out)["verdict"]["rows"]
    # What it reads is asv's last run, which the window holds too: judged against itself and
    # four more it never blocks. (A loaded machine can split the sleep's timings into two
    # modes, and a figure between them is rightly INCONCLUSIVE, so no PASS is asked for.)
    assert any(math.isclose(row["value"], s["value"]) for s in samples), (row, samples)
    assert row["verdict"] not in {"BLOCK", "HARD_FAILURE"}, row
    assert (row["baseline"]["samples"], row["baseline"]["runs"]) == (5, 5)


def test_an_asv_directory_without_machine_json_is_refused_naming_it(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin_clone(files={"perfgate.yaml": yaml.safe_dump(asv_config(tmp_path / "results"))})
    folder = tmp_path / "results" / "box"
    folder.mkdir(parents=True)
    (folder / "0123abcd-existing.json").write_text("{}", encoding="utf-8")
    assert main(["import-history", "--asv", str(tmp_path / "results")]) == 4
    assert f"{folder} has no machine.json: asv writes one" in capsys.readouterr().err


def test_an_import_pushed_lands_on_the_origins_baseline_branch_once(
    origin_clone: MakeClone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, commits = clone_with_history(origin_clone)
    data_js = write_data_js(tmp_path / "data.js", commits)
    argv = ["import-history", "--data-js", str(data_js), "--execute", "--push"]
    assert main(argv) == 0
    assert "imported 6 sample(s)" in capsys.readouterr().err
    tip = git("rev-parse", "perf-baselines", cwd=clone.origin).strip()
    assert main(argv) == 0
    assert "imported 0 sample(s) onto perf-baselines (6 already present)" in (
        capsys.readouterr().err
    )
    assert git("rev-parse", "perf-baselines", cwd=clone.origin).strip() == tip
