"""The quality run's targets: one shape for every suite's, as --json writes them."""

from __future__ import annotations

import math

from tests.perf.targets import Options, at_least, at_most, upper95


def test_a_target_says_its_value_its_bound_and_whether_it_is_met() -> None:
    met = at_most("false BLOCK <= 0.1 %", 0.05, 0.1, "%")
    missed = at_least("5 % drops BLOCKed >= 80 %", 75.0, 80.0, "%", detail="75.0 % of 40")
    assert met.to_json() == {
        "name": "false BLOCK <= 0.1 %", "value": 0.05, "target": "<= 0.1 %", "met": True,
        "detail": "0.05 %",
    }  # fmt: skip
    assert (missed.met, missed.target, missed.detail) == (False, ">= 80 %", "75.0 % of 40")


def test_a_figure_over_no_runs_is_null_in_json_never_nan() -> None:
    target = at_most("cost", math.nan, 1.25, "x")
    assert target.to_json()["value"] is None and not target.met


def test_the_cost_model_is_setup_plus_launches() -> None:
    options = Options(series=1, quick=True, jobs=1, setup_minutes=5.7, launch_minutes=10.4)
    assert options.run_minutes(2) == 5.7 + 2 * 10.4


def test_the_upper_bound_of_no_events_shrinks_with_the_trials() -> None:
    assert upper95(0, 2000) > upper95(0, 20000) > 0.0
    assert upper95(5, 1000) > 5 / 1000
