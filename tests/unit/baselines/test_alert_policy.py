"""The alert rule a series is judged with: every setting from perfgate.yaml's alerts (R18)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfgate.baselines.alerting import alert_policy
from perfgate.config import AlertsSpec, load_config
from perfgate.judge.alerts import AlertPolicy

CONFIG = """\
version: 1
gate: {oracle: {min_drop_pct: 4.0}}
alerts:
  false_alert_rate: 0.002
  confirm_runs: 4
  window_runs: 80
  min_runs: 12
  min_level_runs: 4
  rank_rate: 0.01
  leave_one_out_rate: 0.02
  persist_z: 1.5
  recovered_share: 0.25
  confidence: 0.9
defaults:
  metrics: [{name: startup_s, path: runtime.startup_s, direction: lower, min_drop_pct: 8}]
buckets: [{task: cartpole, backends: [{physics: numpy}]}]
"""


def test_every_setting_of_the_alert_rule_is_read_from_the_alerts_block(tmp_path: Path) -> None:
    """Each of the rule's settings but the minimum drop is a key of ``alerts:``, and the
    rule is built from all of them; the minimum drop is the metric's, else the gate's."""
    settings = {f.name for f in dataclasses.fields(AlertPolicy)} - {"min_drop_pct"}
    assert settings <= {f.name for f in dataclasses.fields(AlertsSpec)}
    path = tmp_path / "perfgate.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    config = load_config(path)
    (bucket,) = config.buckets
    primary = alert_policy(config, bucket, "primary")
    for name in settings:
        assert (
            getattr(primary, name) == getattr(config.alerts, name) != getattr(AlertsSpec(), name)
        ), name
    assert primary.min_drop_pct == 4.0
    assert alert_policy(config, bucket, "startup_s").min_drop_pct == 8.0
    # No alerts block: the rule's own defaults, which are the config's.
    path.write_text("version: 1\nbuckets: [{task: cartpole, backends: [{physics: numpy}]}]\n")
    plain = load_config(path)
    assert alert_policy(plain, plain.buckets[0], "primary") == AlertPolicy()
