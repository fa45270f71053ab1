"""What a person reads at the end of a local run: the table's reasons, and why the exit code
is what it is (R8), in terms that match the other surfaces."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.cli.common import closing_lines
from perfgate.config import Config, load_config
from perfgate.judge.gate import GateReport, build_report
from perfgate.report.summary import summary_markdown
from perfgate.report.terminal import terminal_table
from perfgate.report.verdict import row_json
from perfgate.result import FailurePhase
from tests.factories import make_result, windows_of

STEADY = [99.0, 100.0, 101.0, 100.0, 99.0, 101.0]
# What a benchmark that raised KeyError leaves: its traceback, and no output file.
KEY_ERROR_LOG = (
    "fake-bench: ready\nTraceback (most recent call last):\n"
    '  File "/x/bench.py", line 9, in main\n    print(settings["task"])\nKeyError: \'task\'\n'
)
NO_FILE = "no file matches the output '{output_dir}/result.json'"
NOT_RETRIED = (
    "not retried: KeyError at bench.py:9 in main before any measurement repeats with the same "
    "code and inputs"
)


def config(tmp_path: Path, gate: str = "mode: advisory") -> Config:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        f"version: 1\ngate: {{{gate}, confirm: repeat}}\n"
        "defaults: {repeats: 3}\n"
        "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}, {physics: python}]\n",
        encoding="utf-8",
    )
    return load_config(path)


def report(
    cfg: Config, *, crashed: bool = False, slow: bool = False, windows: bool = True
) -> GateReport:
    results = [
        make_result("cartpole/numpy", samples=[80.0, 80.1, 79.9] if slow else [100.0, 100.2, 99.8]),
        make_result(
            "cartpole/python",
            None if crashed else 100.0,
            samples=() if crashed else [100.0, 100.1, 99.9],
            exit_code=1 if crashed else 0,
            phase=FailurePhase.INIT if crashed else None,
            error=NO_FILE if crashed else None,
            log_tail=KEY_ERROR_LOG if crashed else "",
        ),
    ]
    if crashed:
        health = replace(results[1].health, not_retried=NOT_RETRIED)
        results[1] = replace(results[1], health=health)
    return build_report(
        config=cfg,
        expected=cfg.buckets,
        results=results,
        windows=windows_of({b.id: STEADY for b in cfg.buckets} if windows else {}),
    )


def test_a_crashed_bucket_is_explained_by_its_crash_not_by_the_file_it_left_missing(
    tmp_path: Path,
) -> None:
    gate = report(config(tmp_path), crashed=True)
    (row,) = [r for r in gate.rows if r.bucket.id == "cartpole/python"]
    assert "KeyError: 'task'" in row.headline and NO_FILE not in row.headline
    table = terminal_table(gate, width=100)
    line = next(line for line in table.splitlines() if line.startswith("cartpole/python"))
    assert line.split()[1] == "HARD_FAILURE" and "UNHEALTHY_RUN" in line
    assert (
        "cartpole/python: HARD_FAILURE: unhealthy run (exit=1, phase=init): KeyError: 'task'"
        in (" ".join(table.split()))
    )
    assert "not retried: KeyError at bench.py:9" in " ".join(table.split())
    assert "KeyError: 'task'" in summary_markdown(gate)


def test_the_table_from_rows_already_built_is_the_table_built_alone(tmp_path: Path) -> None:
    # The gate builds verdict.json's rows once and hands them to the table.
    gate = report(config(tmp_path), crashed=True, slow=True)
    rows = [row_json(row) for row in gate.rows]
    assert terminal_table(gate, width=100, rows_json=rows) == terminal_table(gate, width=100)
    with pytest.raises(ValueError):
        terminal_table(gate, width=100, rows_json=rows[:1])  # rows of another report


@pytest.mark.parametrize(
    ("gate", "slow", "crashed", "code", "says"),
    [
        # R8: the exit code tells the verdict in every mode.
        ("mode: advisory", True, False, 1, ["exit 1: BLOCK, a confirmed regression",
                                             "gate.mode is advisory: in CI this check fails too"]),
        ("mode: advisory", False, True, 2, ["exit 2: HARD_FAILURE, a benchmark failed",
                                             "gate.mode is advisory: in CI this check fails too"]),
        ("mode: blocking", False, True, 2, ["exit 2: HARD_FAILURE, a benchmark failed"]),
        ("mode: advisory, always_pass: true", True, False, 0,
         ["exit 0 although the verdict is BLOCK: gate.always_pass is set"]),
        ("mode: blocking", False, False, 0,
         ["exit 0: the verdict is PASS: every bucket reported and none regressed"]),
    ],
)  # fmt: skip
def test_the_closing_lines_say_why_the_exit_code_is_what_it_is(
    tmp_path: Path, gate: str, slow: bool, crashed: bool, code: int, says: list[str]
) -> None:
    cfg = config(tmp_path, gate)
    result = report(cfg, slow=slow, crashed=crashed)
    lines = closing_lines(result, local_bench=True, gate=cfg.gate)
    assert result.exit_code == code
    assert len(lines) == len(says)
    for line, expected in zip(lines, says, strict=True):
        assert line.startswith(expected), line
    if "advisory" in gate and code:
        assert "blocking in perfgate.yaml makes" not in " ".join(lines)
        assert "Advisory rollout:** a regression exits 1 and a failed benchmark exits 2" in (
            summary_markdown(result)
        )


def test_the_no_baseline_hint_counts_the_runs_the_window_rule_needs(tmp_path: Path) -> None:
    """5 samples in 3 runs, 3 samples a run: the fourth recorded run is the first judged."""
    cfg = config(tmp_path)
    hint, exit_line = closing_lines(report(cfg, windows=False), local_bench=True, gate=cfg.gate)
    assert "3 recorded runs fill a window: 5 samples in 3 runs" in hint
    assert exit_line.startswith("exit 0: the verdict is WARN, which never fails the run")
    assert cfg.gate.runs_to_fill(3) == 3 and cfg.gate.runs_to_fill(1) == 5
