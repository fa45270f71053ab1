"""No all-clear over NaN (R3): a figure that is not a finite number is a HARD_FAILURE."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perfgate.config import load_config
from perfgate.judge.gate import build_report, latest_per_bucket
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.report.verdict import report_json
from tests.factories import make_result, windows_of

WINDOW = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


def strict(text: str) -> object:
    """json.loads that refuses NaN and Infinity, as every JSON reader outside Python does."""

    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def config(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ngate: {mode: blocking}\n"
        "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n",
        encoding="utf-8",
    )
    return load_config(path)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_figure_against_a_full_window_is_a_hard_failure(config, value) -> None:  # type: ignore[no-untyped-def]
    result = make_result("cartpole/numpy", value)
    report = build_report(
        config=config, expected=config.buckets, results=[result],
        windows=windows_of({"cartpole/numpy": WINDOW}),
    )  # fmt: skip
    assert report.overall is Verdict.HARD_FAILURE
    assert report.exit_code == 2
    assert not any(line.startswith("✅") for line in report.headlines)
    (row,) = report.rows
    assert row.reasons == (Reason.NONFINITE_METRIC.value,)
    # verdict.json is JSON: a non-finite figure is written as null, never as NaN.
    data = strict(json.dumps(report_json(report), allow_nan=False))
    assert isinstance(data, dict) and data["rows"][0]["value"] is None


def test_verdict_json_is_strict_even_when_statistics_overflow(config) -> None:  # type: ignore[no-untyped-def]
    """A finite figure so large its change overflows still writes strict JSON."""
    result = make_result("cartpole/numpy", 1e308)
    report = build_report(
        config=config, expected=config.buckets, results=[result],
        windows=windows_of({"cartpole/numpy": [1e-10] * 7}),
    )  # fmt: skip
    data = strict(json.dumps(report_json(report), allow_nan=False))
    assert isinstance(data, dict)
    assert data["rows"][0]["baseline"]["change_pct"] is None


def test_a_run_attempt_in_other_digits_never_crashes_the_ordering() -> None:
    """'²'.isdigit() is True but int('²') fails: such an attempt counts as no number."""
    odd = make_result("cartpole/numpy", 1.0, run_attempt="²", finished_at="2026-11-30T00:00:09")
    plain = make_result("cartpole/numpy", 2.0, run_attempt="1")
    assert latest_per_bucket([odd, plain])["cartpole/numpy"] is plain
