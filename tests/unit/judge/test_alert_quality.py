"""The alert-quality suite's targets: the shape ``nox -s quality -- --json`` joins."""

from __future__ import annotations

from tests.perf import alert_quality


def test_targets_are_name_value_target_met_entries_for_every_pool() -> None:
    results = alert_quality.score(series=2, jobs=1)
    entries = [target.to_json() for target in alert_quality.targets(results)]
    assert len(entries) == 2 * len(alert_quality.POOLS)
    for entry in entries:
        assert {"name", "value", "target", "met"} <= set(entry)
        assert isinstance(entry["met"], bool) and isinstance(entry["value"], float)
    names = [e["name"] for e in entries]
    assert any("5 % drops alerted within 3 pushes" in n for n in names)
    assert any("false alerts per 1,000 bucket-pushes" in n for n in names)


def test_the_quality_run_includes_the_alert_suite() -> None:
    from tests.perf.targets import SUITES

    assert "tests.perf.alert_quality" in SUITES


def test_a_push_stores_the_samples_perfgate_takes_and_its_cost_is_reported() -> None:
    from perfgate.config import AlertsSpec, Bucket
    from tests.perf.targets import Options

    # The suite simulates the product's push: by default (alerts.push_repeats unset) 6
    # samples, never a count of its own.
    assert AlertsSpec().push_samples(Bucket.repeats) == alert_quality.PUSH_REPEATS == 6
    assert alert_quality.BUCKET_REPEATS == Bucket.repeats < 6
    options = Options(series=2, quick=True, jobs=1, setup_minutes=5.0, launch_minutes=10.0)
    (pool,) = alert_quality.POOLS[:1]
    # At the bucket's repeats the same draws cost what the bucket's runs cost.
    plain = alert_quality.score(series=2, jobs=1, pools=(pool,), repeats=Bucket.repeats)
    plain_cost = alert_quality.push_cost(plain[pool.name]["alerts"], options)
    assert plain_cost["cost_over_bucket_repeats"] == 1.0
    # The default takes more launches, and says what they cost.
    pushed = alert_quality.score(series=2, jobs=1, pools=(pool,))[pool.name]["alerts"]
    cost = alert_quality.push_cost(pushed, options)
    assert cost["launches_per_push"] >= 6
    assert cost["minutes_per_push"] == 5.0 + 10.0 * cost["launches_per_push"]
    assert cost["cost_over_bucket_repeats"] > 1.0
