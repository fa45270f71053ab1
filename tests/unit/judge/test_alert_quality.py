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
