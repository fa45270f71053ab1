"""perfgate.yaml: the demo matrix expands as R1 says; every bad input is one clear line, exit 4
(perfgate/config/load.py, expand.py and checks.py through ``load_config`` and the CLI)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent

import pytest

from perfgate import cli
from perfgate.backends import VOCABULARIES
from perfgate.config import (
    AdmissionMode,
    AdmissionPolicy,
    AlertsSpec,
    BaselinePolicy,
    Bucket,
    Config,
    ConfirmMode,
    Direction,
    FloorKind,
    Metric,
    Mode,
    PolicyName,
    RunnerIdentity,
    load_config,
)
from perfgate.config.bucket import DemoSpec
from perfgate.errors import ConfigError
from tests.paths import ROOT as REPO


def test_demo_config_expands_to_one_bucket_per_task_and_backend() -> None:
    config = load_config(REPO / "perfgate.yaml")
    assert config.bucket_ids() == (
        "cartpole/numpy",
        "cartpole/python",
        "pendulum/numpy",
        "pendulum/python",
    )
    by_id = {bucket.id: bucket for bucket in config.buckets}
    assert by_id["cartpole/numpy"].backend_key == "numpy"
    assert by_id["cartpole/numpy"].file_stem == "cartpole__numpy"
    # defaults fill what an entry leaves out; an entry's own value wins.
    assert by_id["cartpole/python"].num_envs == 1024
    assert by_id["pendulum/python"].num_envs == 2048
    assert {b.timeout_minutes for b in config.buckets} == {2.0}
    assert by_id["pendulum/numpy"].metric == Metric(
        path="runtime.total_fps.best_block", direction=Direction.HIGHER, unit="env-steps/s"
    )
    # Every run takes three samples, up to ten to confirm, for at most a minute; the demo
    # times at least half a second of steps after a warm-up.
    assert {(b.repeats, b.max_repeats, b.repeat_budget_minutes) for b in config.buckets} == {
        (3, 10, 1.0)
    }
    assert {b.demo for b in config.buckets} == {DemoSpec(measure_seconds=0.5, warmup_seconds=0.2)}
    assert {b.threads for b in config.buckets} == {None}  # the demo driver's single thread
    assert config.gate.policy is PolicyName.CALIBRATED
    assert (config.gate.false_block_rate, config.gate.confirm) == (0.001, ConfirmMode.PAIRED)
    assert (config.gate.baseline.min_runs, config.gate.baseline.max_runs) == (3, 20)
    # Paired confirmation: up to 16 pairs, none started after two minutes.
    assert {(b.max_pairs, b.pair_budget_minutes) for b in config.buckets} == {(16, 2.0)}
    # Admission control as the defaults have it; a CPU runner's checks are recorded only.
    assert config.admission == AdmissionPolicy()
    # Floors and noise floors land only on the backend they are keyed by.
    (floor,) = by_id["cartpole/numpy"].floors_for("cpu-intel_xeon")
    assert (floor.name, floor.value, floor.kind) == ("sanity-floor", 1000.0, FloorKind.BLOCK)
    assert by_id["cartpole/python"].floors_for("cpu-intel_xeon") == ()
    assert by_id["cartpole/numpy"].floors_for("l40s") == ()
    assert by_id["pendulum/python"].noise_floor_for("cpu-x", default=1.0) == 2.0
    assert by_id["pendulum/numpy"].noise_floor_for("cpu-x", default=1.0) == 1.0
    assert config.gate.mode is Mode.ADVISORY
    assert config.gate.oracle.noise_floor_pct == 1.0
    assert (config.gate.baseline.min_samples, config.gate.baseline.max_samples) == (5, 20)


@pytest.mark.slow  # starts git
def test_a_bucket_is_found_by_its_id_and_an_undeclared_id_finds_none() -> None:
    config = load_config(REPO / "perfgate.yaml")
    assert config.find("pendulum/numpy") is config.buckets[2]
    assert config.find("pendulum/torch") is None
    assert config.find(None) is None


def test_matrix_json_lists_every_bucket_with_the_interface_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["matrix", "--json", "--config", str(REPO / "perfgate.yaml")]) == 0
    matrix = json.loads(capsys.readouterr().out)
    assert [entry["id"] for entry in matrix] == [
        "cartpole/numpy",
        "cartpole/python",
        "pendulum/numpy",
        "pendulum/python",
    ]
    for entry in matrix:
        assert {"id", "task", "backend", "driver", "timeout_minutes", "runner", "tags"} <= set(
            entry
        )
        assert entry["runner"] == ["ubuntu-latest"]
    # Every field a bucket resolves to, defaults merged: nothing a tool needs is left out.
    pendulum = matrix[2]
    assert (pendulum["num_envs"], pendulum["steps"], pendulum["warmup_steps"]) == (2048, 1000, 100)
    assert pendulum["metric"] == {
        "path": "runtime.total_fps.best_block", "direction": "higher", "unit": "env-steps/s",
        "name": "primary", "sum": [], "required": True, "gates": True, "min_drop_pct": None,
        "noise_floor_pct": None, "select": [], "family": None,
    }  # fmt: skip
    assert pendulum["metrics"] == []
    assert (pendulum["repeats"], pendulum["max_repeats"]) == (3, 10)
    assert pendulum["demo"] == {"measure_seconds": 0.5, "warmup_seconds": 0.2, "timer": None}
    assert matrix[0]["floors"]["cpu-*"][0] == {"name": "sanity-floor", "value": 1000.0,
                                               "kind": "BLOCK", "metric": "primary"}  # fmt: skip
    assert set(Bucket.__dataclass_fields__) <= set(pendulum)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "perfgate.yaml"
    path.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_render_backend_joins_the_backend_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        buckets:
          - task: Isaac-Cartpole-Direct
            driver: isaaclab
            backends:
              - {physics: physx}
              - {physics: newton, render: warp_renderer}
        """,
    )
    buckets = load_config(path).buckets
    assert [b.id for b in buckets] == [
        "Isaac-Cartpole-Direct/physx",
        "Isaac-Cartpole-Direct/newton_warp_renderer",
    ]
    assert (buckets[1].physics, buckets[1].render) == ("newton", "warp_renderer")


def test_defaults_merge_under_entries_and_metric_merges_key_by_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        defaults:
          timeout_minutes: 7
          steps: 50
          tags: [nightly]
          metric: {path: results.fps, unit: frames/s}
        buckets:
          - task: cartpole
            steps: 80
            metric: {direction: lower}
            backends: [{physics: numpy}]
          - task: pendulum
            backends: [{physics: python}]
        """,
    )
    cartpole, pendulum = load_config(path).buckets
    assert cartpole.metric == Metric(path="results.fps", direction=Direction.LOWER, unit="frames/s")
    assert pendulum.metric == Metric(
        path="results.fps", direction=Direction.HIGHER, unit="frames/s"
    )
    assert (cartpole.steps, pendulum.steps) == (80, 50)
    assert cartpole.timeout_minutes == pendulum.timeout_minutes == 7.0
    assert cartpole.tags == ("nightly",)
    # Settings nobody declared come from perfgate's own defaults.
    assert (cartpole.retries, cartpole.seed, cartpole.driver) == (1, 42, "demo")


def test_qualify_block_and_calibration_key_are_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        gate:
          calibration: ci/noise.json
        qualify:
          allocations: 6
          samples: 4
          min_runners: 2
          max_pooled_cv_pct: 3.5
          max_block_band_pct: 8
        buckets:
          - task: cartpole
            backends: [{physics: numpy}]
        """,
    )
    config = load_config(path)
    assert config.gate.calibration is not None
    assert config.gate.calibration.path == tmp_path / "ci" / "noise.json"
    assert config.gate.calibration.where == f"{path}:3: gate.calibration"
    policy = config.qualify
    assert (policy.allocations, policy.samples, policy.min_runners) == (6, 4, 2)
    assert (policy.max_pooled_cv_pct, policy.max_block_band_pct) == (3.5, 8)
    # Limits not written keep the reference qualification's defaults.
    assert (policy.max_sample_deviation_pct, policy.max_runner_deviation_pct) == (5.0, 5.0)
    assert load_config(REPO / "perfgate.yaml").gate.calibration is None


VALID_BUCKET = """
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""

# (name, file text, line, key path, text that says what to do)
BAD_CONFIGS = [
    (
        "malformed_yaml",
        "version: 1\nbuckets:\n  - task: [cartpole\n    backends: []\n",
        4,
        None,
        "not valid YAML",
    ),
    (
        "tab_indent",
        "version: 1\nbuckets:\n\t- task: cartpole\n",
        3,
        None,
        "not valid YAML",
    ),
    (
        "wrong_type_in_bucket",
        "version: 1\nbuckets:\n  - task: cartpole\n    num_envs: many\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].num_envs",
        "expected an integer",
    ),
    (
        "bool_for_number",
        "version: 1\nbuckets:\n  - task: cartpole\n    timeout_minutes: yes\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].timeout_minutes",
        "expected a number",
    ),
    (
        "string_for_list",
        "version: 1\nbuckets:\n  - task: cartpole\n    tags: nightly\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].tags",
        "expected a list",
    ),
    (
        "buckets_is_a_mapping",
        "version: 1\nbuckets: {cartpole: numpy}\n",
        2,
        "buckets",
        "expected a list",
    ),
    (
        "empty_gate_block",
        "version: 1\ngate:\n" + VALID_BUCKET,
        2,
        "gate",
        "is empty; expected a mapping",
    ),
    (
        "wrong_version",
        "version: 2\n" + VALID_BUCKET,
        1,
        "version",
        "use 1",
    ),
    (
        "unknown_top_level_key",
        "version: 1\nbukets: []\n" + VALID_BUCKET,
        2,
        "bukets",
        "allowed keys: admission, alerts, buckets, defaults, gate, image, qualify, report, version",
    ),
    (
        "unknown_admission_key",
        "version: 1\nadmission:\n  gpu:\n    max_temp: 80\n" + VALID_BUCKET,
        4,
        "admission.gpu.max_temp",
        "allowed keys: ecc_errors, foreign_processes, ignore_processes, max_power_pct, "
        "max_temperature_c, min_clock_pct, throttle_reasons",
    ),
    (
        "unknown_throttle_reason",
        "version: 1\nadmission:\n  gpu: {throttle_reasons: [hw_slowdown, thermal]}\n"
        + VALID_BUCKET,
        3,
        "admission.gpu.throttle_reasons[1]",
        "use one of: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown",
    ),
    (
        "admission_clock_over_100",
        "version: 1\nadmission:\n  gpu:\n    min_clock_pct: 120\n" + VALID_BUCKET,
        4,
        "admission.gpu.min_clock_pct",
        "100",
    ),
    (
        "admission_negative_remeasure",
        "version: 1\nadmission: {remeasure: -1}\n" + VALID_BUCKET,
        2,
        "admission.remeasure",
        "0",
    ),
    (
        "max_pairs_under_three",
        "version: 1\ndefaults: {max_pairs: 2}\n" + VALID_BUCKET,
        2,
        "defaults.max_pairs",
        "3",
    ),
    (
        "unknown_gate_key",
        "version: 1\ngate:\n  mdoe: blocking\n" + VALID_BUCKET,
        3,
        "gate.mdoe",
        "allowed keys: always_pass, baseline, budget_minutes, calibration, confirm, "
        "confirm_drop_pct, false_block_rate, mode, oracle, policy, protected_branches, "
        "runner_identity, target_branches",
    ),
    (
        "qualify_limit_not_a_number",
        "version: 1\nqualify:\n  max_pooled_cv_pct: low\n" + VALID_BUCKET,
        3,
        "qualify.max_pooled_cv_pct",
        "expected a number",
    ),
    (
        "qualify_unknown_limit",
        "version: 1\nqualify:\n  max_cv_pct: 4\n" + VALID_BUCKET,
        3,
        "qualify.max_cv_pct",
        "allowed keys: allocations, detection_power, max_block_band_pct",
    ),
    (
        "qualify_one_allocation",
        "version: 1\nqualify:\n  allocations: 1\n" + VALID_BUCKET,
        3,
        "qualify.allocations",
        "use a value >= 2",
    ),
    (
        "qualify_more_runners_than_allocations",
        "version: 1\nqualify:\n  allocations: 3\n  min_runners: 4\n" + VALID_BUCKET,
        4,
        "qualify.min_runners",
        "raise allocations or lower min_runners",
    ),
    (
        "calibration_outside_the_tree",
        "version: 1\ngate:\n  calibration: ../noise.json\n" + VALID_BUCKET,
        3,
        "gate.calibration",
        "must name a path inside the repository",
    ),
    (
        "unknown_oracle_key",
        "version: 1\ngate:\n  oracle:\n    kwarn: 2\n" + VALID_BUCKET,
        4,
        "gate.oracle.kwarn",
        "allowed keys: k_block, k_warn, min_drop_pct, noise_floor_pct, run_noise_floor_pct",
    ),
    (
        "bad_gate_mode",
        "version: 1\ngate:\n  mode: strict\n" + VALID_BUCKET,
        3,
        "gate.mode",
        "use one of: advisory, blocking",
    ),
    (
        "unknown_bucket_key",
        "version: 1\nbuckets:\n  - task: cartpole\n    stepz: 3\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].stepz",
        "allowed keys: backends, baseline_epoch",
    ),
    (
        "unknown_defaults_key",
        "version: 1\ndefaults:\n  task: cartpole\n" + VALID_BUCKET,
        3,
        "defaults.task",
        "allowed keys: baseline_epoch, cache, command, container, demo",
    ),
    (
        "unknown_backend_entry_key",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends:\n"
        "      - {physics: numpy, rendr: x}\n",
        5,
        "buckets[0].backends[0].rendr",
        "allowed keys: physics, render",
    ),
    (
        "missing_task",
        "version: 1\nbuckets:\n  - backends: [{physics: numpy}]\n",
        3,
        "buckets[0]",
        "missing required key 'task'",
    ),
    (
        "unknown_physics_backend",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends:\n      - {physics: numpy}\n"
        "      - {physics: physx}\n",
        6,
        "buckets[0].backends[1].physics",
        "use one of: numpy, python",
    ),
    (
        "render_backend_on_a_driver_without_one",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends:\n"
        "      - {physics: numpy, render: rtx_renderer}\n",
        5,
        "buckets[0].backends[0].render",
        "remove 'render'",
    ),
    (
        "unknown_isaaclab_render_backend",
        "version: 1\nbuckets:\n  - task: Isaac-Cartpole-Direct\n    driver: isaaclab\n"
        "    backends:\n      - {physics: physx, render: rtx}\n",
        6,
        "buckets[0].backends[0].render",
        "use one of: newton_renderer, ovrtx_renderer, rtx_renderer, warp_renderer",
    ),
    (
        "backend_not_an_identifier",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: NumPy}]\n",
        4,
        "buckets[0].backends[0].physics",
        "lower-case letters, digits and underscores",
    ),
    (
        "unknown_demo_task",
        "version: 1\nbuckets:\n  - task: cartwheel\n    backends: [{physics: numpy}]\n",
        3,
        "buckets[0].task",
        "use one of: cartpole, pendulum",
    ),
    (
        "unknown_driver",
        "version: 1\ndefaults:\n  driver: mujoco\n" + VALID_BUCKET,
        3,
        "defaults.driver",
        "use one of: demo, command, isaaclab",
    ),
    (
        "floors_keyed_by_a_backend_the_task_lacks",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
        '    floors:\n      "cpu-*":\n        pyhton:\n          - {name: f, value: 1}\n',
        7,
        "buckets[0].floors.cpu-*.pyhton",
        "not one of this task's backends (numpy)",
    ),
    (
        "noise_floor_keyed_by_a_backend_the_task_lacks",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
        '    noise_floor_pct:\n      "cpu-*": {pyhton: 2.0}\n',
        6,
        "buckets[0].noise_floor_pct.cpu-*.pyhton",
        "not one of this task's backends (numpy)",
    ),
    (
        "floor_verdict_not_allowed",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
        '    floors: {"cpu-*": {numpy: [{name: f, value: 1, verdict: block}]}}\n',
        5,
        "buckets[0].floors.cpu-*.numpy[0].verdict",
        "use one of: BLOCK, WARN, REPORT",
    ),
    (
        "empty_matrix",
        "version: 1\nbuckets: []\n",
        2,
        "buckets",
        "declare at least one bucket",
    ),
    (
        "no_backends",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: []\n",
        4,
        "buckets[0].backends",
        "at least 1 item",
    ),
    (
        "duplicate_bucket_id_across_entries",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
        "  - task: cartpole\n    backends: [{physics: python}, {physics: numpy}]\n",
        6,
        "buckets[1].backends[1]",
        "duplicate bucket id 'cartpole/numpy' (first declared at buckets[0].backends[0], line 4)",
    ),
    (
        "duplicate_bucket_id_within_an_entry",
        "version: 1\nbuckets:\n  - task: cartpole\n    backends:\n      - {physics: numpy}\n"
        "      - {physics: numpy}\n",
        6,
        "buckets[0].backends[1]",
        "duplicate bucket id 'cartpole/numpy'",
    ),
    (
        "duplicate_yaml_key",
        "version: 1\nbuckets:\n  - task: cartpole\n    steps: 10\n    steps: 20\n"
        "    backends: [{physics: numpy}]\n",
        5,
        "buckets[0].steps",
        "duplicate key (first at line 4); keep one of them",
    ),
    (
        "min_samples_above_max_samples",
        "version: 1\ngate:\n  baseline:\n    min_samples: 30\n    max_samples: 20\n" + VALID_BUCKET,
        4,
        "gate.baseline.min_samples",
        "raise max_samples or lower min_samples",
    ),
    (
        "warn_factor_above_block_factor",
        "version: 1\ngate:\n  oracle:\n    k_warn: 5\n    k_block: 2\n" + VALID_BUCKET,
        4,
        "gate.oracle.k_warn",
        "make k_block >= k_warn",
    ),
    (
        "command_driver_without_command",
        "version: 1\nbuckets:\n  - task: mine\n    driver: command\n"
        "    backends: [{physics: cpu}]\n",
        3,
        "buckets[0]",
        "needs a 'command' block with argv and output",
    ),
    (
        "command_block_on_another_driver",
        "version: 1\nbuckets:\n  - task: cartpole\n    command: {argv: [x], output: o.json}\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].command",
        "remove it or set driver: command",
    ),
    (
        "command_without_output",
        "version: 1\nbuckets:\n  - task: mine\n    driver: command\n    command:\n"
        "      argv: [./bench]\n    backends: [{physics: cpu}]\n",
        5,
        "buckets[0].command",
        "missing required key 'output'",
    ),
    (
        "not_a_mapping",
        "- version: 1\n",
        1,
        "(top level)",
        "expected a mapping with 'version: 1' and a 'buckets' list",
    ),
    (
        "python_object_tag",
        "version: 1\nbuckets:\n  - task: !!python/object:os.system x\n"
        "    backends: [{physics: numpy}]\n",
        3,
        None,
        "use plain strings, numbers, lists and mappings",
    ),
    (
        "yaml_merge_key",
        "version: 1\nx: &shared {steps: 3}\nbuckets:\n  - <<: *shared\n    task: cartpole\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0]",
        "put shared settings under 'defaults'",
    ),
    (
        "complex_key",
        "version: 1\nbuckets:\n  - ? [a, b]\n    : 1\n    task: cartpole\n"
        "    backends: [{physics: numpy}]\n",
        3,
        "buckets[0]",
        "a key must be a plain name",
    ),
    (
        "unknown_policy",
        "version: 1\ngate:\n  policy: strict\n" + VALID_BUCKET,
        3,
        "gate.policy",
        "use one of: calibrated, reference",
    ),
    (
        "false_block_rate_zero",
        "version: 1\ngate:\n  false_block_rate: 0\n" + VALID_BUCKET,
        3,
        "gate.false_block_rate",
        "use a value > 0",
    ),
    (
        "false_block_rate_above_the_warn_rate",
        "version: 1\ngate:\n  false_block_rate: 0.2\n" + VALID_BUCKET,
        3,
        "gate.false_block_rate",
        "use a value <= 0.05",
    ),
    (
        "false_block_rate_not_finite",
        "version: 1\ngate:\n  false_block_rate: .nan\n" + VALID_BUCKET,
        3,
        "gate.false_block_rate",
        "not a finite number",
    ),
    (
        "unknown_confirm_mode",
        "version: 1\ngate:\n  confirm: twice\n" + VALID_BUCKET,
        3,
        "gate.confirm",
        "use one of: paired, repeat, off",
    ),
    (
        "min_runs_over_max_runs",
        "version: 1\ngate:\n  baseline: {min_runs: 8, max_runs: 5}\n" + VALID_BUCKET,
        3,
        "gate.baseline.min_runs",
        "raise max_runs or lower min_runs",
    ),
    (
        "zero_repeats",
        "version: 1\nbuckets:\n  - task: cartpole\n    repeats: 0\n"
        "    backends: [{physics: numpy}]\n",
        4,
        "buckets[0].repeats",
        "use a value >= 1",
    ),
    (
        "max_repeats_under_repeats_in_a_bucket",
        "version: 1\nbuckets:\n  - task: cartpole\n    repeats: 4\n    max_repeats: 3\n"
        "    backends: [{physics: numpy}]\n",
        5,
        "buckets[0].max_repeats",
        "raise max_repeats to at least repeats",
    ),
    (
        "repeats_over_the_default_max_repeats",
        "version: 1\ndefaults:\n  repeats: 12\n" + VALID_BUCKET,
        3,
        "defaults.repeats",
        "max_repeats (10) is under repeats (12)",
    ),
    (
        "budget_not_positive",
        "version: 1\ndefaults:\n  repeat_budget_minutes: 0\n" + VALID_BUCKET,
        3,
        "defaults.repeat_budget_minutes",
        "use a value > 0",
    ),
    (
        "zero_threads",
        "version: 1\ndefaults:\n  threads: 0\n" + VALID_BUCKET,
        3,
        "defaults.threads",
        "use a value >= 1",
    ),
    (
        "negative_measure_seconds",
        "version: 1\ndefaults:\n  demo: {measure_seconds: -1}\n" + VALID_BUCKET,
        3,
        "defaults.demo.measure_seconds",
        "use a value >= 0",
    ),
    (
        "push_repeats_zero",
        "version: 1\nalerts:\n  push_repeats: 0\n" + VALID_BUCKET,
        3,
        "alerts.push_repeats",
        "use a value >= 1",
    ),
    (
        "push_repeats_over_100",
        "version: 1\nalerts:\n  push_repeats: 101\n" + VALID_BUCKET,
        3,
        "alerts.push_repeats",
        "use a value <= 100",
    ),
    (
        "push_repeats_not_a_count",
        "version: 1\nalerts:\n  confirm_runs: 3\n  push_repeats: 2.5\n" + VALID_BUCKET,
        4,
        "alerts.push_repeats",
        "expected an integer",
    ),
    (
        "push_repeats_misspelt",
        "version: 1\nalerts:\n  push_samples: 4\n" + VALID_BUCKET,
        3,
        "alerts.push_samples",
        "allowed keys: bisect_max_minutes, confidence, confirm_runs, false_alert_rate, "
        "leave_one_out_rate, min_level_runs, min_runs, persist_z, push_repeats, rank_rate, "
        "recovered_share, window_runs",
    ),
    (
        "demo_block_on_another_driver",
        "version: 1\nbuckets:\n  - task: t\n    driver: command\n"
        "    command: {argv: [x], output: '{output_dir}/r.json'}\n"
        "    demo: {measure_seconds: 1}\n    backends: [{physics: cpu}]\n",
        6,
        "buckets[0].demo",
        "only applies to driver 'demo'",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "key_path", "fix"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_CONFIGS],
)
def test_bad_config_is_one_line_naming_file_line_key_path_and_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    line: int,
    key_path: str | None,
    fix: str,
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(text, encoding="utf-8")
    assert cli.main(["validate", "--config", str(path)]) == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    message = lines[0]
    assert message.startswith(f"perfgate: error: {path}:{line}: "), message
    if key_path is not None:
        assert f":{line}: {key_path}: " in message, message
    assert fix in message


def test_missing_config_file_names_the_file_and_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert cli.main(["validate", "--config", str(missing)]) == 4
    (message,) = capsys.readouterr().err.splitlines()
    assert str(missing) in message and "--config" in message


def test_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_bytes(b"version: 1\n# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(path)


def test_empty_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a mapping with 'version: 1'"):
        load_config(path)


@pytest.mark.slow  # validate reads the baseline store for its budget check (git)
def test_valid_config_reports_its_bucket_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text("version: 1\n" + VALID_BUCKET, encoding="utf-8")
    assert cli.main(["validate", "--config", str(path)]) == 0
    first, *worst = capsys.readouterr().out.strip().splitlines()
    assert first == f"{path}: ok, 1 buckets"
    assert [line.split(":")[0] for line in worst[:3]] == [
        "worst case, a pull request", "worst case, a push",
        "worst case, a merged pull request (its run and its push)",
    ]  # fmt: skip


def test_demo_vocabulary_matches_the_demo_benchmark() -> None:
    # backends.py repeats the demo's names so validation need not import numpy.
    from perfgate.run import demo

    vocabulary = VOCABULARIES["demo"]
    assert vocabulary.tasks == frozenset(demo.TASKS)
    for backends in demo.TASKS.values():
        assert frozenset(backends) == vocabulary.physics


@pytest.mark.parametrize(
    ("source", "pinned"),
    [
        ("perfgate==0.1.0", True),
        (
            "perfgate @ git+https://github.com/acme/perfgate@"
            + "0123456789abcdef" * 2
            + "01234567",
            True,
        ),
        ("perfgate", False),
        ("perfgate>=0.1", False),
        ("perfgate @ git+https://github.com/acme/perfgate@main", False),
    ],
)
def test_workflows_perfgate_source_must_be_pinned(
    tmp_path: Path, source: str, pinned: bool
) -> None:
    """CI installs perfgate from workflows.perfgate_source: a moving requirement is refused."""
    path = write(
        tmp_path,
        f"""
        version: 1
        workflows:
          perfgate_source: {json.dumps(source)}
        buckets:
          - task: cartpole
            backends: [{{physics: numpy}}]
        """,
    )
    if pinned:
        assert load_config(path).perfgate_source == source
    else:
        with pytest.raises(ConfigError, match=r"workflows\.perfgate_source: .* is not pinned"):
            load_config(path)


def test_the_report_block_names_pages_and_the_published_url(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\nreport: {pages: true, url: 'https://acme.github.io/lab'}\n"
        "buckets: [{task: cartpole, backends: [{physics: numpy}]}]\n",
        encoding="utf-8",
    )
    report = load_config(path).report
    assert report.pages is True
    assert report.page_url("cartpole__numpy") == (
        "https://acme.github.io/lab/buckets/cartpole__numpy.html"
    )
    path.write_text(
        "version: 1\nreport: {url: 'javascript:alert(1)'}\n"
        "buckets: [{task: cartpole, backends: [{physics: numpy}]}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"report\.url"):
        load_config(path)


def test_push_repeats_are_six_by_default_and_read_from_the_alerts_block(tmp_path: Path) -> None:
    """A protected push takes at least 6 samples unless the alerts block says otherwise;
    1 leaves every push at its bucket's own repeats."""
    path = tmp_path / "perfgate.yaml"
    path.write_text("version: 1\n" + VALID_BUCKET, encoding="utf-8")
    unset = load_config(path).alerts
    assert unset == AlertsSpec()
    assert unset.push_repeats == 6
    assert (unset.push_samples(1), unset.push_samples(2), unset.push_samples(9)) == (6, 6, 9)
    path.write_text("version: 1\nalerts: {push_repeats: 1}\n" + VALID_BUCKET, encoding="utf-8")
    own = load_config(path).alerts
    assert (own.push_samples(1), own.push_samples(2), own.push_samples(9)) == (1, 2, 9)
    path.write_text("version: 1\nalerts: {push_repeats: 4}\n" + VALID_BUCKET, encoding="utf-8")
    alerts = load_config(path).alerts
    assert alerts.push_repeats == 4
    # Never fewer than a bucket's own repeats.
    assert (alerts.push_samples(2), alerts.push_samples(9)) == (4, 9)


def test_an_admission_block_overrides_its_defaults_key_by_key(tmp_path: Path) -> None:
    """What is written wins; what is left out keeps its readable default."""
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        dedent(
            """\
            version: 1
            admission:
              mode: record
              wait_seconds: 0
              gpu: {throttle_reasons: [sw_power_cap], ignore_processes: [dcgm-exporter]}
              cpu: {governor: performance}
            """
        )
        + VALID_BUCKET,
        encoding="utf-8",
    )
    admission = load_config(path).admission
    assert (admission.mode, admission.wait_seconds, admission.remeasure) == (
        AdmissionMode.RECORD, 0.0, 3,
    )  # fmt: skip
    assert admission.gpu.throttle_reasons == ("sw_power_cap",)
    assert admission.gpu.ignore_processes == ("dcgm-exporter",)
    assert (admission.gpu.min_clock_pct, admission.gpu.max_temperature_c) == (90.0, 85.0)
    assert (admission.cpu.governor, admission.cpu.max_load_per_cpu) == ("performance", None)
    path.write_text("version: 1\nadmission: {mode: off}\n" + VALID_BUCKET, encoding="utf-8")
    assert load_config(path).admission.mode is AdmissionMode.OFF  # a bare off is false


@pytest.mark.parametrize("written", ["off", "'off'", "false"])
def test_confirm_off_reads_as_off_however_yaml_types_it(tmp_path: Path, written: str) -> None:
    """YAML 1.1 reads a bare `off` as false; both spellings mean no confirmation samples."""
    path = tmp_path / "perfgate.yaml"
    path.write_text(f"version: 1\ngate:\n  confirm: {written}\n{VALID_BUCKET}", encoding="utf-8")
    assert load_config(path).gate.confirm is ConfirmMode.OFF
    path.write_text(f"version: 1\ngate:\n  confirm: true\n{VALID_BUCKET}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"use one of: paired, repeat, off$"):
        load_config(path)


def test_runner_identity_defaults_to_the_runner_and_reads_gpu(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text("version: 1\n" + VALID_BUCKET, encoding="utf-8")
    assert load_config(path).gate.runner_identity is RunnerIdentity.RUNNER
    path.write_text(f"version: 1\ngate:\n  runner_identity: gpu\n{VALID_BUCKET}", encoding="utf-8")
    assert load_config(path).gate.runner_identity is RunnerIdentity.GPU


@pytest.mark.parametrize("deadline", ["0", "-1", "301", "soon"])
def test_the_publish_deadline_must_be_a_sane_number_of_minutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], deadline: str
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        f"version: 1\ngate:\n  baseline:\n    publish_deadline_minutes: {deadline}\n"
        + VALID_BUCKET,
        encoding="utf-8",
    )
    assert cli.main(["validate", "--config", str(path)]) == 4
    assert f"{path}:4: gate.baseline.publish_deadline_minutes: " in capsys.readouterr().err


def test_the_publish_deadline_is_read_in_minutes(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    text = "version: 1\ngate: {baseline: {publish_deadline_minutes: 2.5}}\n" + VALID_BUCKET
    path.write_text(text, encoding="utf-8")
    assert load_config(path).gate.baseline.publish_deadline_minutes == 2.5
    assert BaselinePolicy().publish_deadline_minutes == 10


@pytest.mark.slow  # validate reads the baseline store for its budget check (git)
def test_push_retries_still_loads_but_a_notice_names_it_deprecated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ngate:\n  baseline:\n    push_retries: 5\n" + VALID_BUCKET, encoding="utf-8"
    )
    assert cli.main(["validate", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"notice: {path}:4: gate.baseline.push_retries is deprecated and ignored" in out
    assert "publish_deadline_minutes" in out
    assert load_config(path).notices and not load_config(REPO / "perfgate.yaml").notices


def test_an_alerts_block_whose_level_could_never_be_fitted_is_refused(tmp_path: Path) -> None:
    """min_level_runs <= min_runs <= window_runs, else nothing would ever be alerted."""
    path = tmp_path / "perfgate.yaml"
    for block, key in (
        ("{min_runs: 20, window_runs: 10}", r"alerts\.min_runs.*exceeds window_runs"),
        ("{min_level_runs: 12}", r"alerts\.min_level_runs.*exceeds min_runs \(10\)"),
    ):
        path.write_text(f"version: 1\nalerts: {block}\n" + VALID_BUCKET, encoding="utf-8")
        with pytest.raises(ConfigError, match=key):
            load_config(path)


@pytest.mark.parametrize(
    ("old_text", "old", "new", "read"),
    [
        ("gate:\n  false_alarm_rate: 0.002\n", "gate.false_alarm_rate", "gate.false_block_rate",
         lambda c: c.gate.false_block_rate == 0.002),
        ("gate:\n  oracle:\n    min_block_regression_pct: 4\n",
         "gate.oracle.min_block_regression_pct", "gate.oracle.min_drop_pct",
         lambda c: c.gate.oracle.min_drop_pct == 4.0),
    ],
)  # fmt: skip
def test_a_renamed_key_is_read_under_its_new_name_with_a_notice_naming_its_line(
    tmp_path: Path, old_text: str, old: str, new: str, read: Callable[[Config], bool]
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(f"version: 1\n{old_text}" + VALID_BUCKET, encoding="utf-8")
    config = load_config(path)
    assert read(config)
    line = 2 + old_text.count("\n") - 1
    assert config.notices == (f"{path}:{line}: {old} is read as {new}, its new name; rename it",)


def test_a_renamed_key_beside_its_new_name_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    text = "version: 1\ngate:\n  false_block_rate: 0.001\n  false_alarm_rate: 0.002\n"
    path.write_text(text + VALID_BUCKET, encoding="utf-8")
    both = r":4: gate\.false_alarm_rate: the old name of gate\.false_block_rate, which is set too"
    with pytest.raises(ConfigError, match=both + "; keep false_block_rate alone"):
        load_config(path)
