"""The quality run's targets: one shape for every suite's, as --json writes them."""

from __future__ import annotations

import math

from tests.perf.targets import Options, at_least, at_most, rate_at_least, rate_at_most, upper95


def test_a_target_says_its_value_its_bound_and_whether_it_is_met() -> None:
    met = at_most("false BLOCK <= 0.1 %", 0.05, 0.1, "%")
    missed = at_least("5 % drops BLOCKed >= 80 %", 75.0, 80.0, "%", detail="75.0 % of 40")
    assert met.to_json() == {
        "name": "false BLOCK <= 0.1 %", "value": 0.05, "target": "<= 0.1 %", "met": True,
        "decided": True, "detail": "0.05 %",
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


def test_nine_of_twelve_cannot_decide_an_eighty_percent_target() -> None:
    target = rate_at_least("5 % drops BLOCKed >= 80 %", 9, 12, 80.0, "75.0 % of 12")
    assert not target.met and not target.decided
    assert not target.fails(quick=True) and target.status(quick=True) == "undecided"
    assert target.fails(quick=False) and target.status(quick=False) == "MISSED"


def test_a_rate_far_from_its_bound_is_decided_either_way() -> None:
    missed = rate_at_least("10 % drops BLOCKed >= 99 %", 80, 100, 99.0, "80 %")
    met = rate_at_least("10 % drops BLOCKed >= 99 %", 100, 100, 99.0, "100 %")
    assert missed.decided and missed.fails(quick=True)
    assert met.met and met.status(quick=True) == "met"


def test_one_false_block_in_nine_hundred_runs_cannot_decide_a_tenth_of_a_percent() -> None:
    target = rate_at_most("false BLOCK <= 0.1 %", 1, 900, 0.1, "0.111 %")
    assert not target.met and not target.decided
    assert target.to_json()["decided"] is False
    assert rate_at_most("false BLOCK <= 0.1 %", 30, 900, 0.1, "3.3 %").decided
