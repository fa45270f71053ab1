"""The era roll's decisions, pure: what a push does for its era, and the roll's config."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.era_roll import (
    RECORDING_MARGIN_S,
    RollAction,
    RollRequest,
    plan_roll,
    registry_env,
    reseed_minutes,
    roll_deadline,
    roll_values,
    seed_key_for,
)
from perfgate.baselines.reseed import ReseedBucket, ReseedPlan
from perfgate.baselines.samples import Sample
from perfgate.baselines.verify import BucketReadiness, Readiness, classify
from perfgate.config import Bucket, ImageRoll, ImageSpec, load_config
from perfgate.config.image import ROLL_PLACEHOLDERS, ImageBuild
from perfgate.errors import ConfigError, UsageError
from perfgate.run.image import Era
from perfgate.run.launch import bucket_hashes

Buckets = tuple[Bucket, ...]
ERA = Era(key="0123456789abcdef", contract={"image_era_version": 1, "fields": {"V": "6"}})
ROLL = ImageRoll(
    build=ImageBuild(argv=("docker", "build", "-t", "{image}", "."), image="lab:{era_short}"),
    refs=("reg/lab:sha-{sha7}", "reg/lab:era-{era_short}-{branch_slug}"),
    login=("login-cmd",),
)
SPEC = ImageSpec(env_file="e", env_keys=("V",), tags={"main": "reg/lab:latest"}, roll=ROLL)
CONFIG = """
version: 1
defaults: {timeout_minutes: 4, retries: 2}
buckets:
  - task: cartpole
    backends: [{physics: numpy}, {physics: python}]
"""

IMAGE = "image: {{env_file: e, env_keys: [V], tags: {{main: m}}, roll: {roll}}}\n"


@pytest.fixture
def buckets(tmp_path: Path) -> Buckets:
    path = tmp_path / "perfgate.yaml"
    path.write_text(CONFIG)
    return load_config(path).buckets


def request(buckets: Buckets, force: str | None = None, spec: ImageSpec = SPEC) -> RollRequest:
    return RollRequest(
        spec=spec,
        era=ERA,
        commit="abcdef1234567890" * 2 + "abcdefgh",
        branch="main",
        buckets=buckets,
        min_samples=5,
        force=force,
    )


def never() -> list[BucketReadiness]:
    raise AssertionError("readiness is read only when bootstrapping")


def ready(bucket: str, status: Readiness, samples: int) -> BucketReadiness:
    return BucketReadiness(bucket=bucket, status=status, samples=samples, min_samples=5,
                           fingerprints=1, other_samples=0, fingerprint=None)  # fmt: skip


def test_a_recorded_era_does_nothing(buckets: Buckets) -> None:
    manifest = {"eras": {ERA.key: {"image": "reg/lab@sha256:1", "commit": "c" * 40}}}
    plan = plan_roll(request(buckets), manifest, never)
    assert plan.action is RollAction.NOTHING and not plan.records
    assert plan.image == "reg/lab@sha256:1"
    assert plan.commands == () and plan.reseed.buckets == ()


def test_a_new_era_builds_tags_and_pushes_every_ref_then_reseeds_every_bucket(
    buckets: Buckets,
) -> None:
    manifest = {"eras": {"another": {"image": "reg/lab@sha256:0"}}}
    plan = plan_roll(request(buckets), manifest, never)
    assert plan.action is RollAction.ROLL
    sha7, short = "abcdef1", ERA.key[:12]
    refs = (f"reg/lab:sha-{sha7}", f"reg/lab:era-{short}-main")
    assert plan.refs == refs and plan.image == refs[0]
    assert [(c.step, c.argv) for c in plan.commands] == [
        ("login", ("login-cmd",)),
        ("build", ("docker", "build", "-t", f"lab:{short}", ".")),
        *(("tag", ("docker", "tag", f"lab:{short}", ref)) for ref in refs),
        *(("push", ("docker", "push", ref)) for ref in refs),
    ]
    assert plan.reseed.commit == request(buckets).commit and plan.reseed.target_branch == "main"
    assert [(b.id, b.samples) for b in plan.reseed.buckets] == [
        ("cartpole/numpy", 5),
        ("cartpole/python", 5),
    ]


def test_bootstrap_records_the_branch_tag_and_reseeds_only_what_cannot_gate(
    buckets: Buckets,
) -> None:
    rows = [
        ready("cartpole/numpy", Readiness.READY, 7),
        ready("cartpole/python", Readiness.WARMING, 2),
    ]
    plan = plan_roll(request(buckets), None, lambda: rows)
    assert plan.action is RollAction.BOOTSTRAP
    assert plan.image == "reg/lab:latest"
    assert [c.step for c in plan.commands] == ["login"]  # nothing is built
    assert [(b.id, b.have, b.samples) for b in plan.reseed.buckets] == [("cartpole/python", 2, 3)]
    with pytest.raises(UsageError, match=r"no image\.tags pattern matches 'release/1'"):
        plan_roll(replace(request(buckets), branch="release/1"), None, lambda: rows)


def test_force_rebuilds_a_recorded_era_and_without_a_manifest_builds_rather_than_bootstraps(
    buckets: Buckets,
) -> None:
    manifest = {"eras": {ERA.key: {"image": "reg/lab@sha256:1"}}}
    rebuild = plan_roll(request(buckets, force="CUDA fix"), manifest, never)
    assert rebuild.action is RollAction.REBUILD and rebuild.recorded == manifest["eras"][ERA.key]
    assert "build" in [c.step for c in rebuild.commands]
    assert plan_roll(request(buckets, force="first"), None, never).action is RollAction.ROLL


def test_a_new_era_without_a_roll_block_is_a_config_error(buckets: Buckets) -> None:
    bare = ImageSpec(env_file="e", env_keys=("V",), tags={"main": "x"})
    with pytest.raises(ConfigError, match=r"image\.roll"):
        plan_roll(request(buckets, spec=bare), {"eras": {}}, never)


def test_registry_commands_never_see_the_git_credentials() -> None:
    env = {
        "GITHUB_TOKEN": "t",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.x.extraheader",
        "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic x",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc",
        "NGC_API_KEY": "registry",
        "PATH": "/bin",
    }
    assert registry_env(env) == {"NGC_API_KEY": "registry", "PATH": "/bin"}


def test_runner_time_bound_covers_every_sample_and_retry(buckets: Buckets) -> None:
    plan = ReseedPlan(commit="c", target_branch="main", min_samples=5,
                      buckets=(ReseedBucket(id="cartpole/numpy", have=0, samples=5),
                               ReseedBucket(id="cartpole/python", have=3, samples=2)))  # fmt: skip
    # 7 runs of 2 repeats x 4m; x3 attempts
    assert reseed_minutes(plan, buckets) == (56.0, 168.0)


def test_seed_key_follows_the_recorded_image() -> None:
    assert seed_key_for(ERA, "a@sha256:1") != seed_key_for(ERA, "a@sha256:2")
    assert seed_key_for(ERA, "a@sha256:1").startswith(f"era-{ERA.key[:12]}-")


def test_roll_placeholders_are_exactly_what_the_config_accepts() -> None:
    assert set(roll_values("release/1.0", ERA, "f" * 40)) == ROLL_PLACEHOLDERS


def _sample(bucket: Bucket, runtime: str, stamp: str, index: int) -> Sample:
    launch_hash, benchmark_hash = bucket_hashes(bucket)
    return Sample(sample_id=f"{runtime}{index}", trusted_source="seed", timestamp=stamp,
                  value=10.0, hardware="h", task="cartpole", backend_key="numpy",
                  commit="c" * 40, branch="main", target_branch="main", launch_hash=launch_hash,
                  benchmark_hash=benchmark_hash, runtime_hash=runtime, baseline_epoch=1,
                  metric_path="m", direction="higher", unit="u")  # fmt: skip


def test_newest_runtime_readiness_ignores_a_larger_group_of_an_older_image(
    buckets: Buckets,
) -> None:
    """After a roll the old image's full window cannot judge the new image's results."""
    numpy = buckets[0]
    samples = [_sample(numpy, "old", f"2026-01-0{i}T00:00:00+00:00", i) for i in range(1, 7)]
    samples += [_sample(numpy, "new", f"2026-02-0{i}T00:00:00+00:00", i) for i in range(1, 3)]
    largest = classify(numpy, samples, target_branch="main", min_samples=5)
    assert (largest.status, largest.samples) == (Readiness.READY, 6)
    newest = classify(numpy, samples, target_branch="main", min_samples=5, newest_runtime=True)
    assert (newest.status, newest.samples) == (Readiness.WARMING, 2)


@pytest.mark.parametrize(
    ("roll", "message"),
    [
        ("{build: {argv: [b], image: 'x:{sha8}'}, refs: [r]}", r"roll\.build\.image: .*\{sha8\}"),
        ("{build: {argv: [b, '{ref}'], image: x}, refs: [r]}", r"roll\.build\.argv\[1\]"),
        ("{build: {argv: [b], image: x}, refs: ['r:{image}']}", r"roll\.refs\[0\]"),
        ("{build: {argv: [b], image: x}, refs: [r], push: [p, '{tag}']}", r"roll\.push\[1\]"),
        ("{build: {argv: [b], image: x}, refs: [r], secrets: [GITHUB_PAT]}", "GITHUB_ prefix"),
        ("{build: {argv: [b], image: x}, refs: []}", r"roll\.refs: .*at least 1"),
        ("{build: {argv: [b], image: x}, refs: [r], secrets: ['A B']}", r"roll\.secrets\[0\]"),
    ],
)
def test_roll_block_is_validated_where_it_is_written(
    tmp_path: Path, roll: str, message: str
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(CONFIG + IMAGE.format(roll=roll))
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_roll_block_defaults_to_docker_tag_and_push_on_a_hosted_runner(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    block = "{build: {argv: [b, '{image}'], image: 'x:{era_short}'}, refs: ['r:sha-{sha7}']}"
    path.write_text(CONFIG + IMAGE.format(roll=block))
    image = load_config(path).image
    assert image is not None and image.roll is not None
    assert image.roll.tag == ("docker", "tag", "{image}", "{ref}")
    assert image.roll.push == ("docker", "push", "{ref}")
    assert (image.roll.login, image.roll.secrets) == (None, ())
    assert image.roll.runner == ("ubuntu-latest",)
    assert image.digest == ("docker", "buildx", "imagetools", "inspect", "{image}")


def test_the_registry_commands_stop_before_the_roll_jobs_timeout_leaving_time_to_record() -> None:
    roll = ImageRoll(build=ImageBuild(argv=("b",), image="i"), refs=("r",), timeout_minutes=120)
    assert roll_deadline(roll, now=1000.0) == 1000.0 + 120 * 60 - RECORDING_MARGIN_S
    # A short job keeps half of its time for the commands, whatever the margin.
    short = replace(roll, timeout_minutes=4)
    assert roll_deadline(short, now=0.0) == 120.0
