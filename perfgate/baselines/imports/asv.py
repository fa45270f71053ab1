"""An asv results directory: ``MACHINE/machine.json`` names each machine, each
``MACHINE/COMMIT-ENV.json`` (results format 2) is one run of the suite at a commit in one
environment, and ``benchmarks.json`` beside the machines' folders gives the units.

The run's benchmarks are read by the asv adapter the ``command`` driver uses (each
parameter combination its own benchmark, samples where asv recorded them), so an imported
figure is the one a bucket of ``format: asv`` reads. One machine and one environment are
imported at a time: another machine is other hardware, another environment (Python,
dependencies) another experiment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.baselines.imports.history import History, HistoryError, HistoryRun, iso_from_millis
from perfgate.config import OutputFormat
from perfgate.run.drivers.adapters import asv as adapter
from perfgate.run.drivers.adapters.base import SuiteError
from perfgate.util import jsonfile
from perfgate.util.jsonfile import finite_number

KIND = "asv"
MACHINE_FILE = "machine.json"
BENCHMARKS_FILE = "benchmarks.json"


def read_asv(results: Path, *, machine: str | None = None, env: str | None = None) -> History:
    """Every run of one machine and environment in the asv results directory ``results``
    (``machine``, ``env``: which, required when it holds several)."""
    if not results.is_dir():
        raise HistoryError(
            f"{results} is not a directory: pass asv's results directory (results_dir in "
            "asv.conf.json, 'results' by default)"
        )
    folders = _machine_folders(results)
    if machine is None and len(folders) > 1:
        raise HistoryError(
            f"{results} holds the results of {len(folders)} machines ({', '.join(folders)}); "
            "each is its own hardware: import one with --machine NAME"
        )
    if machine is not None and machine not in folders:
        raise HistoryError(
            f"{results} has no results of machine {machine!r} (it has {', '.join(folders)}); "
            "check --machine"
        )
    folder = folders[machine or next(iter(folders))]
    name = _machine_name(folder / MACHINE_FILE)
    units = _units(results / BENCHMARKS_FILE)
    loaded = [(path, _results(path)) for path in _result_files(folder)]
    envs = sorted({data["env_name"] for _, data in loaded})
    if env is None and len(envs) > 1:
        raise HistoryError(
            f"{folder} holds runs in {len(envs)} environments ({', '.join(envs)}); each is its "
            "own experiment: import one with --asv-env NAME"
        )
    if env is not None and env not in envs:
        raise HistoryError(
            f"{folder} has no runs in the environment {env!r} (it has {', '.join(envs)}); "
            "check --asv-env"
        )
    chosen = env or (envs[0] if envs else None)
    runs = tuple(
        _run(path, data, name, units) for path, data in loaded if data["env_name"] == chosen
    )
    notes = () if units else (
        f"{results / BENCHMARKS_FILE} is missing: units come from the benchmarks' names "
        "(time_: seconds, mem_/peakmem_: bytes, others 'unit')",
    )  # fmt: skip
    return History(path=str(results), kind=KIND, runs=runs, machine=name, notes=notes)


def _machine_folders(results: Path) -> dict[str, Path]:
    """Each machine's folder by name; one holding results without machine.json is an error."""
    folders = {}
    for folder in sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (folder / MACHINE_FILE).is_file():
            folders[folder.name] = folder
        elif any(folder.glob("*.json")):
            raise HistoryError(
                f"{folder} has no {MACHINE_FILE}: asv writes one beside each machine's results "
                "(it names the machine, the hardware the runs were measured on); copy the whole "
                "results directory, or run `asv machine` there"
            )
    if not folders:
        raise HistoryError(
            f"{results} has no MACHINE/{MACHINE_FILE}: not an asv results directory; pass asv's "
            "results directory (results_dir in asv.conf.json)"
        )
    return folders


def _load(path: Path, what: str) -> Any:
    try:
        return jsonfile.read(path, non_finite=True)
    except jsonfile.JsonError as exc:
        raise HistoryError(
            f"{path} is not asv's {what}: {exc}; a truncated file was cut short while copied or "
            "written: copy it again, or remove it"
        ) from None


def _machine_name(path: Path) -> str:
    data = _load(path, "machine file")
    name = data.get("machine") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise HistoryError(
            f"{path}: 'machine' is missing: asv's machine file names the machine; run "
            "`asv machine` to write it again"
        )
    return name


def _units(path: Path) -> dict[str, str]:
    """Each benchmark's unit as benchmarks.json declares it; none without the file."""
    return adapter.declared_units(_load(path, "benchmark list")) if path.is_file() else {}


def _result_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.name != MACHINE_FILE)


def _results(path: Path) -> dict[str, Any]:
    """A results file, checked for the fields a run needs."""
    data = _load(path, "results file")
    if not adapter.recognises(data):
        raise HistoryError(
            f"{path} is not an asv results file (no 'result_columns' and 'results'); only "
            f"results files and {MACHINE_FILE} belong in a machine's folder"
        )
    if data.get("version") != 2:
        raise HistoryError(
            f"{path}: results format version {data.get('version')!r} is not 2; `asv update` "
            "rewrites older results in format 2"
        )
    for field, kind in (("commit_hash", str), ("env_name", str)):
        if not isinstance(data.get(field), kind) or not data[field]:
            raise HistoryError(f"{path}: '{field}' is missing; asv writes it in every results file")
    if finite_number(data.get("date")) is None:
        raise HistoryError(
            f"{path}: 'date' is {data.get('date')!r}, not milliseconds since the epoch"
        )
    return dict(data)


def _run(path: Path, data: dict[str, Any], machine: str, units: dict[str, str]) -> HistoryRun:
    try:
        suite = adapter.parse(data, path, units)
    except SuiteError as exc:
        raise HistoryError(str(exc)) from None
    date = float(data["date"])
    return HistoryRun(
        where=str(path),
        commit=data["commit_hash"],
        timestamp=iso_from_millis(date),
        key=f"{machine}/{data['env_name']}/{data['commit_hash']}@{date:.0f}",
        formats=(OutputFormat.ASV,),
        tool=KIND,
        suite=suite,
    )
