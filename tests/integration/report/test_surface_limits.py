"""Every surface stays under its platform's limit, however long an artifact's text (R14).

Result artifacts are untrusted and may hold megabyte-long strings (a CPU name, an error)
within their 4 MiB cap. GitHub refuses a step summary over 1 MiB, and post-report refuses
a verdict.json over 2 MiB: free text is clipped where artifacts are read, and each surface
is cut to its limit with a note a reader sees.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.github.handoff import MAX_VERDICT_BYTES, validate_verdict
from perfgate.result import Hardware, read_result, write_result
from tests.factories import make_result

STEP_SUMMARY_LIMIT = 1024 * 1024  # GitHub's limit for one step's summary
MEGABYTE = 1_000_000
CONFIG = """\
version: 1
buckets:
  - task: cartpole
    backends: [{physics: numpy}, {physics: python}]
  - task: pendulum
    backends: [{physics: numpy}, {physics: python}]
"""


def test_megabyte_long_artifact_text_keeps_every_surface_under_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step-summary.md"))
    buckets = ["cartpole/numpy", "cartpole/python", "pendulum/numpy", "pendulum/python"]
    for index, bucket in enumerate(buckets):
        failed = index % 2 == 1
        result = make_result(
            bucket,
            None if failed else 100.0,
            exit_code=1 if failed else 0,
            error="E" * MEGABYTE if failed else None,
            config_mismatch="M" * MEGABYTE if failed else None,
        )
        hardware = Hardware(slug="cpu-test", cpu_name=f"CPU{index} " + "C" * MEGABYTE)
        metric = dataclasses.replace(result.metric, unit="U" * 100_000)
        write_result(
            dataclasses.replace(result, hardware=hardware, metric=metric), tmp_path / "results"
        )
    artifact = read_result(tmp_path / "results" / "cartpole__python.json")
    assert len(artifact.health.error or "") < 2000 and "characters clipped" in str(
        artifact.health.error
    )
    assert len(artifact.hardware.cpu_name or "") < 2000

    # Two HARD_FAILUREs: exit 2 in every mode (R8).
    assert main(["gate", "--results", "results", "--report-dir", "report"]) == 2
    summary = (tmp_path / "report" / "summary.md").read_bytes()
    step = (tmp_path / "step-summary.md").read_bytes()
    verdict_bytes = (tmp_path / "report" / "verdict.json").read_bytes()
    assert len(summary) < STEP_SUMMARY_LIMIT and len(step) < STEP_SUMMARY_LIMIT
    assert len(verdict_bytes) < MAX_VERDICT_BYTES
    verdict = json.loads(verdict_bytes)
    assert validate_verdict(verdict, buckets) == []
    assert [row["verdict"] for row in verdict["rows"]] == [
        "WARN", "HARD_FAILURE", "WARN", "HARD_FAILURE"
    ]  # fmt: skip
    # The reader sees where text was cut.
    assert "CCCC…" in summary.decode() and "characters clipped" in json.dumps(verdict)
