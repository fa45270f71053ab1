"""The spend ledger: one line per published bucket run, summed per day, bucket and run (R17)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from perfgate.baselines.ledger import SpendRecord, appended, record_of, summarise
from perfgate.errors import GateMalfunction
from perfgate.result import FailurePhase, SpendKind
from tests.factories import make_result, make_spend_record
from tests.factories import make_spend as spend


def test_a_result_s_line_names_its_ci_run_and_attempt_and_keeps_every_kind_of_spend() -> None:
    cost = spend(setup_s=300.0, retry=600.0)
    result = replace(make_result(run_id="42", run_attempt="2"), spend=cost)
    line = record_of(result)
    assert line is not None
    assert line.run == "42.2" and line.bucket == "cartpole/numpy" and line.hardware == "cpu-test"
    assert line.path == "spend/cpu-test/2026-11-30.ndjson"
    assert SpendRecord.from_line(line.to_line()) == line
    assert line.spend.of(SpendKind.RETRY).seconds == 600.0


def test_a_failed_run_has_a_line_and_a_result_without_spend_has_none() -> None:
    failed = replace(make_result(value=None, exit_code=1, phase=FailurePhase.INIT), spend=spend())
    assert record_of(failed) is not None, "a failed run still cost its runner"
    assert record_of(make_result()) is None


def test_outside_ci_a_run_is_named_by_when_it_began() -> None:
    result = replace(make_result(run_id=None, run_attempt=None), spend=spend())
    line = record_of(result)
    assert line is not None and line.run == result.timings.started_at


def test_a_publish_retried_never_counts_a_bucket_run_twice() -> None:
    first = [
        make_spend_record("7.1", "a/x", "2026-12-01", spend()),
        make_spend_record("7.1", "b/x", "2026-12-01", spend()),
    ]
    text, added = appended("", first)
    assert added == 2
    again, added = appended(text, [*first, make_spend_record("8.1", "a/x", "2026-12-02", spend())])
    assert added == 1
    assert again.startswith(text) and again.count("\n") == 3


def test_a_seed_s_many_runs_of_one_bucket_in_one_ci_run_are_each_kept() -> None:
    one = make_spend_record("7.1", "a/x", "2026-12-01", spend())
    other = replace(one, finished_at="2026-12-01T11:00:00+00:00")
    _, added = appended("", [one, other])
    assert added == 2


def test_a_ledger_file_s_corrupt_line_is_kept_and_new_lines_follow_it() -> None:
    text, added = appended("not json", [make_spend_record("7.1", "a/x", "2026-12-01", spend())])
    assert added == 1
    assert text.splitlines()[0] == "not json"


GOOD = make_spend_record("7.1", "a/x", "2026-12-01", spend()).to_line()


NOT_RECORDS = [
    "{}",
    '{"run": 1}',
    "[1]",
    "nope",
    GOOD.replace("2026-12-01", "yesterday"),
    GOOD.replace('"seconds": 1200.0', '"seconds": NaN'),
    GOOD.replace('"seconds": 1200.0', '"seconds": -5.0'),
]


@pytest.mark.parametrize("line", NOT_RECORDS)
def test_a_line_that_is_not_a_record_is_refused_with_a_reason(line: str) -> None:
    with pytest.raises(ValueError, match="not a spend record"):
        SpendRecord.from_line(line)


def test_the_sums_per_day_bucket_and_ci_run_add_up_to_the_whole() -> None:
    records = [
        # CI run 1: a job's setup (5 min) on its first bucket, two launches of 10 min each.
        make_spend_record("1.1", "a/x", "2026-12-01", spend(setup_s=300.0)),
        make_spend_record("1.1", "b/x", "2026-12-01", spend(launch_s=300.0)),
        # CI run 2 the next day: a retry of 10 min beside it.
        make_spend_record("2.1", "a/x", "2026-12-02", spend(setup_s=420.0, retry=600.0)),
        make_spend_record("2.1", "b/x", "2026-12-02", spend(launch_s=360.0)),
    ]
    summary = summarise(records)
    assert summary.minutes == pytest.approx(5 + 20 + 10 + 7 + 20 + 10 + 12)
    assert summary.by_day[date(2026, 12, 1)].minutes == pytest.approx(35.0)
    assert summary.by_day[date(2026, 12, 2)].runs == 2
    assert summary.by_bucket["a/x"].minutes == pytest.approx(5 + 20 + 7 + 20 + 10)
    assert summary.per_run == pytest.approx((35.0, 49.0))
    assert summary.per_run_percentile(0.95) == pytest.approx(49.0)
    # Setup as the jobs that recorded one took it; the median launch of each bucket.
    assert summary.setup_minutes == pytest.approx(6.0)
    assert summary.launch_minutes == pytest.approx({"a/x": 10.0, "b/x": 5.5})


def test_since_keeps_the_days_from_it_on() -> None:
    records = [
        make_spend_record("1.1", "a/x", "2026-12-01", spend()),
        make_spend_record("2.1", "a/x", "2026-12-03", spend()),
    ]
    summary = summarise(records, since=date(2026, 12, 2))
    assert list(summary.by_day) == [date(2026, 12, 3)]
    assert summary.per_run == pytest.approx((20.0,))


def test_no_setup_recorded_is_said_as_none_not_zero() -> None:
    summary = summarise([make_spend_record("1.1", "a/x", "2026-12-01", spend())])
    assert summary.setup_minutes is None
    assert summarise([]).per_run_percentile(0.95) is None


def test_a_hardware_name_that_would_leave_the_ledger_is_refused() -> None:
    line = replace(make_spend_record("7.1", "a/x", "2026-12-01", spend()), hardware="../samples")
    with pytest.raises(GateMalfunction, match="plain names"):
        _ = line.path
