"""Each adapter reads what the real tool wrote: the tool runs here, in a subprocess.

A test skips, saying which tool is missing, only where that tool is not installed: the
Python tools and hyperfine (astral-dev-toolchain-hyperfine's binary) come with the dev
environment's ``test`` group; criterion needs cargo and Debian's criterion crate
(``apt-get install librust-criterion-dev``), built offline.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.config import Direction, Metric, OutputFormat
from perfgate.run.drivers import adapters
from perfgate.run.drivers.adapters import figure
from perfgate.run.drivers.adapters.base import Suite, SuiteError
from tests.git_support import IDENTITY

BIN = Path(sys.executable).parent


def needs_module(name: str, package: str) -> None:
    """Skip unless the Python module ``name`` is importable."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{package} is not installed (pip install {package}, or the test group)")


def tool(name: str, package: str) -> str:
    """The executable ``name`` beside this Python, else on PATH; skip when neither has it."""
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.skip(f"{name} is not installed ({package})")
    return found


def run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1)
) -> None:
    """Run a tool (its own failures exit ``ok`` too: a failed benchmark is tested); its
    output shown when it fails otherwise."""
    done = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in ok, done.stdout + done.stderr


def names(suite: Suite) -> dict[str, adapters.Benchmark]:
    return {benchmark.name: benchmark for benchmark in suite}


def seconds(name: str) -> Metric:
    return Metric(path=name, direction=Direction.LOWER, unit="s")


def test_pytest_benchmark_rounds_and_a_test_that_raised(tmp_path: Path) -> None:
    needs_module("pytest_benchmark", "pytest-benchmark")
    (tmp_path / "test_sorting.py").write_text(
        "def test_sort(benchmark):\n"
        "    benchmark(sorted, list(range(500, 0, -1)))\n"
        "def test_boom(benchmark):\n"
        "    def boom():\n"
        "        raise ValueError('boom')\n"
        "    benchmark(boom)\n",
        encoding="utf-8",
    )
    out = tmp_path / "bench.json"
    run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_sorting.py",
            f"--benchmark-json={out}",
            "--benchmark-min-rounds=5",
            "--benchmark-max-time=0.02",
        ],
        tmp_path,
    )
    suite = adapters.read(OutputFormat.PYTEST_BENCHMARK, out)
    (sort,) = suite
    assert (sort.name, sort.unit, sort.direction, sort.error) == ("test_sort", "s", "lower", None)
    assert len(sort.samples) >= 5
    stats = figure(suite, seconds("test_sort"), out)
    assert stats.value is not None and 0 < stats.value < 0.01
    with pytest.raises(
        SuiteError, match="no benchmark named 'test_boom'; the file has 'test_sort'"
    ):
        figure(suite, seconds("test_boom"), out)


def test_google_benchmark_repetitions_and_an_error(tmp_path: Path) -> None:
    needs_module("google_benchmark", "google-benchmark")
    script = tmp_path / "bench.py"
    script.write_text(
        "import google_benchmark as benchmark\n"
        "@benchmark.register\n"
        "def sum_list(state):\n"
        "    while state:\n"
        "        sum(range(100))\n"
        "@benchmark.register\n"
        "def no_device(state):\n"
        "    while state:\n"
        "        state.skip_with_error('no device')\n"
        "        break\n"
        "if __name__ == '__main__':\n"
        "    benchmark.main()\n",
        encoding="utf-8",
    )
    out = tmp_path / "gbench.json"
    run(
        [
            sys.executable,
            str(script),
            "--benchmark_repetitions=3",
            "--benchmark_min_time=0.01s",
            f"--benchmark_out={out}",
            "--benchmark_out_format=json",
        ],
        tmp_path,
    )
    suite = names(adapters.read(OutputFormat.GOOGLE_BENCHMARK, out))
    assert set(suite) == {"sum_list", "no_device"}  # the aggregate rows are no benchmarks
    total = suite["sum_list"]
    assert (total.unit, len(total.samples)) == ("ns", 3)
    rows = json.loads(out.read_text())["benchmarks"]
    repetitions = [r["real_time"] for r in rows if r["name"] == "sum_list"]
    assert total.samples == tuple(repetitions)
    assert figure(tuple(suite.values()), seconds("sum_list"), out).value == pytest.approx(
        sorted(repetitions)[1] * 1e-9
    )
    with pytest.raises(SuiteError, match=r"benchmark 'no_device' failed: .* no device"):
        figure(tuple(suite.values()), seconds("no_device"), out)


def test_hyperfine_runs_and_a_failing_command(tmp_path: Path) -> None:
    hyperfine = tool("hyperfine", "pip install astral-dev-toolchain-hyperfine")
    out = tmp_path / "hyperfine.json"
    run(
        [
            hyperfine,
            "--shell=none",
            "--runs",
            "4",
            "--warmup",
            "1",
            "--ignore-failure",
            "--export-json",
            str(out),
            "-n",
            "nap",
            "sleep 0.01",
            "-n",
            "fails",
            "false",
        ],
        tmp_path,
    )
    suite = names(adapters.read(OutputFormat.HYPERFINE, out))
    assert (suite["nap"].unit, len(suite["nap"].samples)) == ("s", 4)
    assert all(0.009 < value < 1.0 for value in suite["nap"].samples)
    assert suite["fails"].error is not None and "exit" in suite["fails"].error
    with pytest.raises(SuiteError, match="benchmark 'fails' failed"):
        figure(tuple(suite.values()), seconds("fails"), out)


def test_pyperf_values_without_warmups(tmp_path: Path) -> None:
    needs_module("pyperf", "pyperf")
    script = tmp_path / "bench.py"
    script.write_text(
        "import pyperf\n"
        "runner = pyperf.Runner()\n"
        "runner.timeit('sort', stmt='sorted(x)', setup='x = list(range(100, 0, -1))')\n",
        encoding="utf-8",
    )
    out = tmp_path / "pyperf.json"
    run(
        [
            sys.executable,
            str(script),
            "--processes",
            "2",
            "--values",
            "3",
            "--warmups",
            "1",
            "--loops",
            "64",
            "--quiet",
            "-o",
            str(out),
        ],
        tmp_path,
    )
    (sort,) = adapters.read(OutputFormat.PYPERF, out)
    data = json.loads(out.read_text())
    values = [v for run in data["benchmarks"][0]["runs"] for v in run.get("values", [])]
    assert (sort.name, sort.unit, sort.samples) == ("sort", "s", tuple(values))
    assert len(values) == 6  # two processes, three values each; their warmups left out


def test_asv_results_with_parameters_samples_and_a_failure(tmp_path: Path) -> None:
    asv = tool("asv", "pip install asv")
    project = tmp_path / "project"
    (project / "benchmarks").mkdir(parents=True)
    (project / "asv.conf.json").write_text(
        json.dumps(
            {
                "version": 1,
                "project": "demo",
                "repo": ".",
                "environment_type": "existing",
                "benchmark_dir": "benchmarks",
                "results_dir": "results",
                "html_dir": "html",
                "branches": ["HEAD"],
            }
        ),
        encoding="utf-8",
    )
    (project / "benchmarks" / "__init__.py").write_text("", encoding="utf-8")
    (project / "benchmarks" / "bench.py").write_text(
        "class Suite:\n"
        "    params = [10, 100]\n"
        "    param_names = ['n']\n"
        "    def time_sort(self, n):\n"
        "        sorted(range(n, 0, -1))\n"
        "def time_broken():\n"
        "    raise RuntimeError('boom')\n"
        "def track_items():\n"
        "    return 42\n"
        "track_items.unit = 'items'\n",
        encoding="utf-8",
    )
    env = {**IDENTITY, "HOME": str(tmp_path / "home")}  # asv keeps its machine file in HOME
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "commit", "-qm", "benchmarks"],
        cwd=project,
        check=True,
        env={**os.environ, **IDENTITY},
    )
    run([asv, "machine", "--yes", "--machine", "box"], project, env)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, check=True, capture_output=True, text=True
    ).stdout.strip()
    run(
        [
            asv,
            "run",
            "--quick",
            "--record-samples",
            "--machine",
            "box",
            "-E",
            f"existing:{sys.executable}",
            "--set-commit-hash",
            head,
        ],
        project,
        env,
        ok=(2,),  # asv's exit when a benchmark failed, as time_broken does
    )
    (results,) = [p for p in (project / "results" / "box").glob("*-*.json")]
    suite = names(adapters.read(OutputFormat.ASV, results))
    assert set(suite) == {
        "bench.Suite.time_sort(10)",
        "bench.Suite.time_sort(100)",
        "bench.time_broken",
        "bench.track_items",
    }
    assert suite["bench.Suite.time_sort(10)"].unit == "s"
    assert figure(tuple(suite.values()), seconds("bench.Suite.time_sort(100)"), results).value
    assert (suite["bench.track_items"].unit, suite["bench.track_items"].summary) == ("items", 42.0)
    with pytest.raises(SuiteError, match=r"benchmark 'bench\.time_broken' failed: .*null"):
        figure(tuple(suite.values()), seconds("bench.time_broken"), results)
    with pytest.raises(SuiteError, match="asv's machine file"):
        adapters.read(OutputFormat.ASV, project / "results" / "box" / "machine.json")


CRATES = Path("/usr/share/cargo/registry")


def test_criterion_samples_are_read_from_its_own_files(tmp_path: Path) -> None:
    """Built offline against Debian's crates (crates.io is not reached)."""
    cargo = tool("cargo", "a Rust toolchain")
    if not any(CRATES.glob("criterion-0.3.*")):
        pytest.skip(
            "Debian's criterion crate is not installed (apt-get install librust-criterion-dev)"
        )
    project = tmp_path / "crate"
    (project / "benches").mkdir(parents=True)
    (project / "src").mkdir()
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(
        f'[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "{CRATES}"\n'
        "[net]\noffline = true\n",
        encoding="utf-8",
    )
    (project / "Cargo.toml").write_text(
        '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n'
        '[dev-dependencies]\ncriterion = { version = "0.3", default-features = false }\n'
        '[[bench]]\nname = "sort"\nharness = false\n',
        encoding="utf-8",
    )
    (project / "src" / "lib.rs").write_text("", encoding="utf-8")
    (project / "benches" / "sort.rs").write_text(
        "use criterion::{black_box, criterion_group, criterion_main, Criterion};\n"
        "use std::time::Duration;\n"
        "fn bench(c: &mut Criterion) {\n"
        '    c.bench_function("sort 100", |b| b.iter(|| {\n'
        "        let mut v: Vec<u32> = (0..100).rev().collect(); v.sort(); black_box(v)\n"
        "    }));\n"
        "}\n"
        "criterion_group! { name = benches; config = Criterion::default().sample_size(10)\n"
        "    .warm_up_time(Duration::from_millis(100))\n"
        "    .measurement_time(Duration::from_millis(300));\n"
        "    targets = bench }\n"
        "criterion_main!(benches);\n",
        encoding="utf-8",
    )
    run([cargo, "bench", "--bench", "sort"], project)
    folder = project / "target" / "criterion" / "sort 100" / "new"
    (sort,) = adapters.read(OutputFormat.CRITERION, folder / "estimates.json")
    sample = json.loads((folder / "sample.json").read_text())
    assert (sort.name, sort.unit, len(sort.samples)) == ("sort 100", "ns", 10)
    assert sort.samples == tuple(
        t / n for t, n in zip(sample["times"], sample["iters"], strict=True)
    )
    assert (
        0
        < figure(
            (sort,), Metric(path="sort 100", direction=Direction.LOWER, unit="ns"), folder
        ).value
        < 100_000
    )
