"""perfgate.yaml's ``metrics:``: further metrics per bucket, merged by name, each checked."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from perfgate.config import PRIMARY, Direction, FloorKind, Metric, load_config
from perfgate.errors import ConfigError

STARTUP = (
    "runtime.startup_time_s.app_launch",
    "runtime.startup_time_s.env_creation",
    "runtime.startup_time_s.first_step",
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "perfgate.yaml"
    path.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def config_with(tmp_path: Path, defaults: str, bucket: str = "") -> Path:
    """A one-task config: ``defaults`` (indented two spaces) and ``bucket`` keys (any indent)."""
    entry = "".join(f"    {line}\n" for line in dedent(bucket).splitlines())
    return write(
        tmp_path,
        "version: 1\ndefaults:\n  driver: isaaclab\n"
        + defaults
        + "buckets:\n  - task: Isaac-Cartpole-Direct\n    backends: [{physics: physx}]\n"
        + entry,
    )


DEFAULT_METRICS = """\
  metrics:
    - name: startup_s
      sum: [runtime.startup_time_s.app_launch, runtime.startup_time_s.env_creation,
            runtime.startup_time_s.first_step]
      direction: lower
      unit: s
      min_drop_pct: 10
    - {name: gpu_mem_gb, path: resources.gpu_mem_gb.peak, direction: lower, unit: GB,
       required: false, gate: false}
"""


def test_metrics_are_read_with_their_own_settings_beside_the_primary(tmp_path: Path) -> None:
    bucket = load_config(config_with(tmp_path, DEFAULT_METRICS)).buckets[0]
    assert bucket.metric.name == PRIMARY
    startup, memory = bucket.metrics
    assert startup == Metric(
        name="startup_s",
        path=" + ".join(STARTUP),
        sum=STARTUP,
        direction=Direction.LOWER,
        unit="s",
        min_drop_pct=10.0,
    )
    assert startup.paths == STARTUP and startup.required and startup.gates
    assert memory.paths == ("resources.gpu_mem_gb.peak",)
    assert (memory.required, memory.gates, memory.min_drop_pct) == (False, False, None)
    assert [m.name for m in bucket.all_metrics] == [PRIMARY, "startup_s", "gpu_mem_gb"]


def test_a_bucket_overrides_a_default_metric_key_by_key_and_adds_its_own(tmp_path: Path) -> None:
    bucket_lines = """\
        metrics:
          - {name: startup_s, min_drop_pct: 15}
          - {name: step_fps, path: runtime.environment_step_timing.environment_step_fps.mean,
             direction: higher, unit: FPS}
    """
    bucket = load_config(config_with(tmp_path, DEFAULT_METRICS, bucket_lines)).buckets[0]
    startup, memory, step = bucket.metrics
    assert (startup.min_drop_pct, startup.sum, startup.direction) == (
        15.0,
        STARTUP,
        Direction.LOWER,
    )
    assert memory.name == "gpu_mem_gb"
    assert (step.name, step.direction) == ("step_fps", Direction.HIGHER)


@pytest.mark.parametrize(
    ("metrics", "where", "message"),
    [
        (
            "  metrics: [{name: primary, path: a.b, direction: lower}]\n",
            r"defaults\.metrics\[0\]\.name",
            "is the name of the 'metric' block",
        ),
        (
            "  metrics: [{name: x, path: a.b, direction: lower}, {name: x, path: a.c, "
            "direction: lower}]\n",
            r"defaults\.metrics\[1\]\.name",
            "'x' is declared twice",
        ),
        (
            "  metrics: [{name: x, path: a.b, sum: [a.c, a.d], direction: lower}]\n",
            r"defaults\.metrics\[0\]",
            "exactly one of 'path'",
        ),
        ("  metrics: [{name: x, direction: lower}]\n", r"metrics\[0\]", "exactly one of 'path'"),
        ("  metrics: [{name: x, path: a.b}]\n", r"defaults\.metrics\[0\]", "needs a direction"),
        (
            "  metrics: [{name: x, path: runtime.total_fps.mean, direction: lower}]\n",
            r"defaults\.metrics\[0\]",
            "which metric 'primary' reads already",
        ),
        (
            "  metrics: [{name: X-1, path: a.b, direction: lower}]\n",
            r"defaults\.metrics\[0\]\.name",
            "is not allowed",
        ),
        (
            f"  metrics: [{{name: x, path: {'a' * 257}, direction: lower}}]\n",
            r"defaults\.metrics\[0\]\.path",
            "257 characters long; use at most 256",
        ),
        (
            "  metrics: [{name: x, path: a.b, direction: lower, gates: false}]\n",
            r"defaults\.metrics\[0\]",
            "unknown key 'gates'",
        ),
    ],
)
def test_a_metric_that_cannot_be_judged_is_refused_naming_its_key(
    tmp_path: Path, metrics: str, where: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"{where}.*{message}"):
        load_config(config_with(tmp_path, metrics))


def test_a_floor_applies_to_the_metric_it_names(tmp_path: Path) -> None:
    floors = dedent("""\
        floors:
          l40s:
            physx:
              - {name: fps-floor, value: 100}
              - {name: slow-start, value: 60, metric: startup_s, verdict: WARN}
    """)
    bucket = load_config(config_with(tmp_path, DEFAULT_METRICS, floors)).buckets[0]
    assert [f.name for f in bucket.floors_for("l40s")] == ["fps-floor"]
    (slow,) = bucket.floors_for("l40s", "startup_s")
    assert (slow.value, slow.kind, slow.metric) == (60.0, FloorKind.WARN, "startup_s")
    assert bucket.floors_for("l40s", "gpu_mem_gb") == ()


def test_a_floor_naming_an_unknown_metric_is_refused(tmp_path: Path) -> None:
    floors = "floors: {l40s: {physx: [{name: f, value: 1, metric: startup}]}}\n"
    with pytest.raises(
        ConfigError,
        match=r"floors\.l40s\.physx\[0\]\.metric: no metric 'startup' in this bucket; "
        "use one of: primary, startup_s, gpu_mem_gb",
    ):
        load_config(config_with(tmp_path, DEFAULT_METRICS, floors))


def test_a_config_without_metrics_has_the_primary_alone(tmp_path: Path) -> None:
    bucket = load_config(config_with(tmp_path, "")).buckets[0]
    assert bucket.metrics == () and bucket.all_metrics == (bucket.metric,)
    assert bucket.metric == Metric()
