"""The bench confirms a suspicious bucket against the window on the baseline branch (R5).

Real git (a local baseline branch), real benchmark processes (the fake benchmark at a
speed the test sets), the CLI as a developer runs it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.util.git import git
from tests.git_support import IDENTITY, commit_all
from tests.paths import FIXTURES


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout whose perfgate.yaml runs the fake benchmark at STATE/speed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", str(repo))
    state = tmp_path / "state"
    state.mkdir()
    argv = [sys.executable, str(FIXTURES / "fake_benchmark.py"), "speed_from_state",
            "{output_dir}/r.json", str(state)]  # fmt: skip
    (repo / "perfgate.yaml").write_text(
        "version: 1\n"
        "gate: {mode: blocking, confirm: repeat}\n"
        "defaults:\n"
        "  driver: command\n"
        "  retries: 0\n"
        f"  command: {{argv: {json.dumps(argv)}, output: '{{output_dir}}/r.json'}}\n"
        "  metric: {path: results.throughput.mean}\n"
        "buckets:\n  - task: sim\n    backends: [{physics: cpu}]\n",
        encoding="utf-8",
    )
    commit_all(repo, "init")
    monkeypatch.chdir(repo)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    return repo


def bench(repo: Path, speed: float, *extra: str) -> tuple[int, dict, dict]:  # type: ignore[type-arg]
    """One `perfgate bench` at ``speed``: exit code, the artifact, the verdict row."""
    (repo.parent / "state" / "speed").write_text(str(speed))
    out, report = repo.parent / "out", repo.parent / "report"
    code = main(["bench", "--quiet", "--out", str(out), "--report-dir", str(report), *extra])
    artifact = json.loads((out / "sim__cpu.json").read_text())
    row = json.loads((report / "verdict.json").read_text())["rows"][0]
    return code, artifact, row


def test_a_suspicious_run_is_measured_again_until_it_is_confirmed(repo: Path) -> None:
    for _ in range(5):
        code, artifact, _ = bench(repo, 100.0, "--record")
        assert code == 0
    # Unchanged: the two repeats settle it.
    code, artifact, row = bench(repo, 100.0)
    assert (code, row["verdict"]) == (0, "PASS")
    assert len(artifact["metric"]["samples"]) == 2
    assert artifact["sampling"]["stopped"] == "settled"
    # 20 % slower: the first samples are past the warn line, so the bench measures
    # again; a BLOCK needs three samples, and three confirm it.
    code, artifact, row = bench(repo, 80.0)
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert [s["sample_index"] for s in artifact["metric"]["samples"]] == [0, 1, 2]
    sampling = {
        k: artifact["sampling"][k] for k in ("confirm", "repeats", "max_repeats", "stopped")
    }
    assert sampling == {"confirm": "repeat", "repeats": 2, "max_repeats": 10, "stopped": "settled"}
    assert artifact["sampling"]["confirming_samples"] == 1
    assert row["confirmation"]["method"] == "repeats"
    assert row["statistics"]["run_samples"] == 3
    # The gate, re-judging the recorded samples, agrees.
    out = repo.parent / "out"
    assert main(["gate", "--results", str(out), "--report-dir", str(repo.parent / "g")]) == 1
    judged = json.loads((repo.parent / "g" / "verdict.json").read_text())["rows"][0]
    assert judged["statistics"] == row["statistics"]


def test_confirm_off_takes_the_repeats_and_cannot_block_on_two(repo: Path) -> None:
    config = repo / "perfgate.yaml"
    config.write_text(config.read_text().replace("confirm: repeat}", "confirm: off}"))
    for _ in range(5):
        bench(repo, 100.0, "--record")
    code, artifact, row = bench(repo, 80.0)
    assert len(artifact["metric"]["samples"]) == 2
    assert artifact["sampling"]["stopped"] == "planned"
    # Without confirmation the whole false-alarm budget is spent at the one look, so two
    # samples may block (a bucket that can never take three is not left unguarded).
    assert (code, row["verdict"]) == (1, "BLOCK")


def test_paired_without_a_merge_base_confirms_by_repeats(repo: Path) -> None:
    """One commit: nothing to pair with, so the run confirms against the window by repeats."""
    config = repo / "perfgate.yaml"
    config.write_text(config.read_text().replace("confirm: repeat}", "confirm: paired}"))
    git("commit", "-q", "--amend", "-am", "init", cwd=repo, env=IDENTITY)  # still no parent
    for _ in range(5):
        bench(repo, 100.0, "--record")
    code, artifact, row = bench(repo, 80.0)
    assert artifact["paired"]["status"] == "unavailable"
    assert "has no parent commit" in artifact["paired"]["reason"]
    assert artifact["sampling"]["confirm"] == "paired"
    assert len(artifact["metric"]["samples"]) == 3  # two repeats and one to confirm
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert "PAIRED_UNAVAILABLE" in row["reasons"]
    assert row["confirmation"]["method"] == "repeats"
    assert "has no parent commit" in row["confirmation"]["note"]


def calibrate(
    repo: Path,
    artifact: dict[str, Any],
    *,
    noise_pct: float,
    run_noise_pct: float,
    noise_floor_pct: float,
) -> None:
    """gate.calibration names noise.json: one entry for the artifact's experiment."""
    entry = {
        "bucket": "sim/cpu",
        "hardware": artifact["hardware"]["slug"],
        "launch_hash": artifact["identity"]["launch_hash"],
        "benchmark_hash": artifact["identity"]["benchmark_hash"],
        "noise_pct": noise_pct,
        "df": 20,
        "run_noise_pct": run_noise_pct,
        "run_df": 10,
        "modes": 1,
        "noise_floor_pct": noise_floor_pct,
    }
    document = {"schema_version": 1, "kind": "perfgate-noise-calibration", "buckets": [entry]}
    (repo / "noise.json").write_text(json.dumps(document), encoding="utf-8")
    config = repo / "perfgate.yaml"
    if "calibration:" not in config.read_text():
        config.write_text(
            config.read_text().replace(
                "confirm: repeat}", "confirm: repeat, calibration: noise.json}"
            )
        )


# gate.calibration: the bench's confirmation and the gate both judge a calibrated bucket
# with its measured runner-to-runner noise (R15).
def test_a_calibration_changes_what_the_bench_and_the_gate_call_a_regression(
    repo: Path,
) -> None:
    # Five runs on runners whose levels differ by a few per cent, as a pool's do.
    for level in (100.0, 104.0, 97.0, 103.0, 96.0):
        assert bench(repo, level, "--record")[0] == 0
    code, artifact, row = bench(repo, 90.0)
    # Uncalibrated, five runs cannot tell runner noise from a regression: 10 % slower, below
    # every run of the window, is "could not tell" (never a pass), and does not block.
    assert (code, row["verdict"]) == (0, "INCONCLUSIVE")
    assert "UNRESOLVED" in row["reasons"]
    # The pool's qualification measured 2.5 % runner-to-runner noise for this experiment,
    # over twenty samples: known that well, the noise leaves a 10 % drop no room.
    calibrate(repo, artifact, noise_pct=0.5, run_noise_pct=2.5, noise_floor_pct=1.5)
    code, artifact, row = bench(repo, 90.0)
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert row["statistics"]["run_noise_pct"] == pytest.approx(2.5)
    verdict = json.loads((repo.parent / "report" / "verdict.json").read_text())
    assert any("noise from the calibration" in note for note in verdict["notes"])
    # The gate, re-judging the recorded samples with the same calibration, agrees.
    out, again = repo.parent / "out", repo.parent / "gate"
    assert main(["gate", "--results", str(out), "--report-dir", str(again)]) == 1
    judged = json.loads((again / "verdict.json").read_text())["rows"][0]
    assert judged["statistics"] == row["statistics"]


def test_a_calibration_cannot_hide_a_regression(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1000 % noise (the schema's maximum) turned a 30 % drop into PASS: no qualification
    that passes can write it; and noise the window cannot have is not applied, by the
    bench's confirmation and by the gate, and the summary says so."""
    for _ in range(5):
        assert bench(repo, 100.0, "--record")[0] == 0
    _, artifact, _ = bench(repo, 100.0)
    calibrate(repo, artifact, noise_pct=1000.0, run_noise_pct=1000.0, noise_floor_pct=1000.0)
    capsys.readouterr()
    assert main(["validate"]) == 4
    assert "more noise than a qualification that passes can measure" in capsys.readouterr().err
    # The most a passing qualification can measure is still far above this quiet window.
    calibrate(repo, artifact, noise_pct=15.0, run_noise_pct=15.0, noise_floor_pct=4.0)
    code, artifact, row = bench(repo, 70.0)
    assert (code, row["verdict"]) == (1, "BLOCK")
    summary = (repo.parent / "report" / "summary.md").read_text(encoding="utf-8")
    assert "calibration entries not applied" in summary and "far above" in summary
    out, again = repo.parent / "out", repo.parent / "gate"
    assert main(["gate", "--results", str(out), "--report-dir", str(again)]) == 1
    judged = json.loads((again / "verdict.json").read_text())["rows"][0]
    assert judged["statistics"] == row["statistics"]
