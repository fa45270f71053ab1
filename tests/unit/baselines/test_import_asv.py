"""An asv results directory read as runs: one machine and one environment at a time, each
results file a run at its commit read by the asv adapter (units from benchmarks.json), and
a directory that is not asv's refused naming the file, the field and the fix. (The real
asv writes the directory in tests/integration/baselines/test_import_history.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfgate.baselines.imports.asv import read_asv
from perfgate.baselines.imports.history import HistoryError
from perfgate.config import OutputFormat

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
           "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
           "samples", "profile"]  # fmt: skip


def results_file(commit: str, env: str, figure: float | None, *, date: int) -> dict[str, Any]:
    """A results file of asv's format 2, one benchmark with its result and samples."""
    samples = None if figure is None else [[figure * 0.99, figure, figure * 1.01]]
    row = [[figure], [], "v1", date, 0.5, None, None, None, None, [1], [3], samples, None]
    return {"commit_hash": commit, "env_name": env, "date": date,
            "params": {"machine": "box", "python": "3.11"}, "python": "3.11",
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS,
            "results": {"bench.time_parse": row}, "durations": {}, "version": 2}  # fmt: skip


def results_dir(tmp_path: Path, runs: dict[str, dict[str, Any]], machine: str = "box") -> Path:
    root = tmp_path / "results"
    (root / machine).mkdir(parents=True)
    (root / machine / "machine.json").write_text(
        json.dumps({"machine": machine, "arch": "x86_64", "num_cpu": "2", "version": 1}),
        encoding="utf-8",
    )
    (root / "benchmarks.json").write_text(
        json.dumps({"bench.time_parse": {"unit": "seconds", "type": "time"}, "version": 2}),
        encoding="utf-8",
    )
    for name, data in runs.items():
        (root / machine / name).write_text(json.dumps(data), encoding="utf-8")
    return root


def test_each_results_file_is_a_run_at_its_commit_in_the_declared_unit(tmp_path: Path) -> None:
    root = results_dir(tmp_path, {
        "aaaa1111-existing-py.json": results_file("a" * 40, "existing-py", 0.010, date=1000),
        "bbbb2222-existing-py.json": results_file("b" * 40, "existing-py", None, date=2000),
    })  # fmt: skip
    history = read_asv(root)
    assert (history.kind, history.machine, history.notes) == ("asv", "box", ())
    first, failed = history.runs
    assert (first.commit, first.formats, first.tool) == ("a" * 40, (OutputFormat.ASV,), "asv")
    (parse,) = first.suite
    assert (parse.name, parse.unit, parse.stats().value) == ("bench.time_parse", "s", 0.010)
    assert first.timestamp == "1970-01-01T00:00:01+00:00"
    assert "the benchmark failed" in (failed.suite[0].error or "")


def test_one_environment_at_a_time(tmp_path: Path) -> None:
    root = results_dir(tmp_path, {
        "aaaa1111-py311.json": results_file("a" * 40, "py311", 0.01, date=1000),
        "aaaa1111-py312.json": results_file("a" * 40, "py312", 0.02, date=1000),
    })  # fmt: skip
    with pytest.raises(HistoryError, match=r"2 environments \(py311, py312\).*--asv-env NAME"):
        read_asv(root)
    (run,) = read_asv(root, env="py312").runs
    assert run.suite[0].stats().value == 0.02
    with pytest.raises(HistoryError, match="no runs in the environment 'py39'"):
        read_asv(root, env="py39")


def test_one_machine_at_a_time(tmp_path: Path) -> None:
    root = results_dir(tmp_path, {"a-e.json": results_file("a" * 40, "e", 0.01, date=1)})
    other = root / "laptop"
    other.mkdir()
    (other / "machine.json").write_text(json.dumps({"machine": "laptop"}), encoding="utf-8")
    with pytest.raises(HistoryError, match=r"2 machines \(box, laptop\).*--machine NAME"):
        read_asv(root)
    assert read_asv(root, machine="box").machine == "box"


def test_a_machine_folder_without_machine_json_names_it(tmp_path: Path) -> None:
    root = results_dir(tmp_path, {"a-e.json": results_file("a" * 40, "e", 0.01, date=1)})
    (root / "box" / "machine.json").unlink()
    with pytest.raises(HistoryError, match=r"results/box has no machine\.json: asv writes one"):
        read_asv(root)


def test_a_directory_with_no_machine_is_not_an_asv_results_directory(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"has no MACHINE/machine\.json: not an asv results"):
        read_asv(tmp_path)
    with pytest.raises(HistoryError, match="is not a directory"):
        read_asv(tmp_path / "nothing")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda text: text[: len(text) // 2], r"a-e\.json is not asv's results file: not valid"),
        (lambda text: text.replace('"version": 2', '"version": 1'), "format version 1 is not 2"),
        (lambda text: text.replace('"commit_hash"', '"commit"'), "'commit_hash' is missing"),
        (lambda text: json.dumps({"machine": "box"}), "is not an asv results file"),
    ],
)  # fmt: skip
def test_a_results_file_asv_did_not_write_names_the_file_and_field(
    tmp_path: Path, change: Any, message: str
) -> None:
    root = results_dir(tmp_path, {"a-e.json": results_file("a" * 40, "e", 0.01, date=1)})
    path = root / "box" / "a-e.json"
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(HistoryError, match=message):
        read_asv(root)


def test_a_machine_file_without_its_name_names_the_field(tmp_path: Path) -> None:
    root = results_dir(tmp_path, {"a-e.json": results_file("a" * 40, "e", 0.01, date=1)})
    (root / "box" / "machine.json").write_text(json.dumps({"arch": "x86_64"}), encoding="utf-8")
    with pytest.raises(HistoryError, match=r"machine\.json: 'machine' is missing"):
        read_asv(root)
