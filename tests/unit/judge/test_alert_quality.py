"""The alert-quality suite's targets list: the shape ``nox -s quality -- --json`` joins."""

from __future__ import annotations

from tests.perf import alert_quality


def test_targets_are_name_value_target_met_entries_for_every_pool() -> None:
    entries = alert_quality.measured_targets(series=2, jobs=1)
    assert len(entries) == 2 * len(alert_quality.POOLS)
    for entry in entries:
        assert set(entry) == {"name", "value", "target", "met"}
        assert isinstance(entry["met"], bool) and isinstance(entry["value"], float)
    names = [e["name"] for e in entries]
    assert any("5 % drops alerted within 3 pushes" in n for n in names)
    assert any("false alerts per 1,000 bucket-pushes" in n for n in names)
