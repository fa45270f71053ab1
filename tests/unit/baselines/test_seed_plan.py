"""Pure decisions of seeding, verifying and reseeding: selection, ids, readiness, plans."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.baselines.reseed import (
    ReseedBucket,
    ReseedPlan,
    parse_underfilled,
    plan_buckets,
    plan_from_report,
)
from perfgate.baselines.samples import Sample, WindowIdentity, samples_from_result, seed_sample_id
from perfgate.baselines.seed.plan import (
    PlanEntry,
    SeedOptions,
    SeedTarget,
    Selection,
    default_samples,
    format_minutes,
    parse_commit_branch,
    present_samples,
    runner_minutes,
    select_buckets,
)
from perfgate.baselines.seed.prepare import reseed_scope
from perfgate.baselines.verify import Readiness, classify
from perfgate.config import Bucket, Config, GatePolicy, Metric
from perfgate.errors import ConfigError, UsageError
from perfgate.run.launch import bucket_hashes
from tests.factories import make_result

C1, C2 = "1" * 40, "2" * 40


def bucket(task: str = "cartpole", physics: str = "numpy", **overrides: Any) -> Bucket:
    fields: dict[str, Any] = {
        "task": task, "physics": physics, "render": None, "driver": "demo",
        "runner": ("ubuntu-latest",), "timeout_minutes": 10.0, "retries": 1, "num_envs": 64,
        "steps": 100, "warmup_steps": 10, "seed": 42, "tags": ("always",),
        "baseline_epoch": 1, "metric": Metric(),
    }  # fmt: skip
    return Bucket(**{**fields, **overrides})


def config(*buckets: Bucket) -> Config:
    return Config(path=Path("perfgate.yaml"), gate=GatePolicy(), buckets=buckets)


def seeded(b: Bucket, *, commit: str = C1, index: int = 0, runtime: str = "r" * 16,
           key: str = "seed", target: str = "main", value: float = 100.0) -> Sample:  # fmt: skip
    launch, benchmark = bucket_hashes(b)
    identity = WindowIdentity(target_branch=target, launch_hash=launch, benchmark_hash=benchmark,
                              runtime_hash=runtime, baseline_epoch=b.baseline_epoch)  # fmt: skip
    sample_id = seed_sample_id(seed_key=key, commit=commit, bucket=b.id, hardware="cpu-test",
                               identity=identity, sample_index=index)  # fmt: skip
    return Sample(
        sample_id=sample_id, trusted_source="seed", timestamp="2026-11-30T00:00:00+00:00",
        value=value, hardware="cpu-test", task=b.task, backend_key=b.backend_key, commit=commit,
        branch=target, target_branch=target, launch_hash=launch, benchmark_hash=benchmark,
        runtime_hash=runtime, baseline_epoch=b.baseline_epoch, metric_path="m",
        direction="higher", unit="u", sample_index=index,
    )  # fmt: skip


NUMPY, PYTHON = bucket(), bucket(physics="python", tags=("nightly",))
PENDULUM = bucket(task="pendulum")


def test_no_allowlist_selects_every_bucket_and_backends_narrow_ids_and_tags() -> None:
    configs = {C1: config(NUMPY, PYTHON, PENDULUM)}
    assert select_buckets(configs, Selection())[C1] == (NUMPY, PYTHON, PENDULUM)
    both = Selection(ids=("cartpole/numpy",), tags=("nightly",))
    assert select_buckets(configs, both)[C1] == (NUMPY, PYTHON)
    narrowed = Selection(tags=("always", "nightly"), backends=("numpy",))
    assert select_buckets(configs, narrowed)[C1] == (NUMPY, PENDULUM)


def test_a_bucket_added_later_is_valid_and_skipped_where_it_did_not_exist() -> None:
    configs = {C1: config(NUMPY), C2: config(NUMPY, PENDULUM)}
    chosen = select_buckets(configs, Selection(ids=("pendulum/numpy",)))
    assert chosen == {C1: (), C2: (PENDULUM,)}


@pytest.mark.parametrize(
    ("selection", "named"),
    [
        (Selection(ids=("cartpole/numpyy",)), "cartpole/numpy, cartpole/python"),
        (Selection(tags=("nightlyy",)), "always, nightly"),
        (Selection(backends=("pyhton",)), "numpy, python"),
    ],
)
def test_an_allowlist_key_matching_nothing_is_an_error_naming_the_valid_ones(
    selection: Selection, named: str
) -> None:
    with pytest.raises(UsageError, match=named):
        select_buckets({C1: config(NUMPY, PYTHON)}, selection)


def test_commit_branch_needs_both_halves() -> None:
    assert parse_commit_branch("abc123:release/1.0") == ("abc123", "release/1.0")
    for bad in ("abc123", ":main", "abc123:"):
        with pytest.raises(UsageError, match="SHA:BRANCH"):
            parse_commit_branch(bad)


def test_default_samples_fill_one_minimum_window_across_the_commits() -> None:
    assert default_samples(5, 1) == 5
    assert default_samples(5, 2) == 3
    assert default_samples(5, 5) == 1
    assert default_samples(5, 9) == 1


def test_runner_estimate_counts_only_runs_left_and_their_retries() -> None:
    target = SeedTarget(commit=C1, target_branch="main")
    entry = PlanEntry(target=target, bucket=NUMPY, indices=(0, 1, 2), present={0: seeded(NUMPY)})
    # Two runs left, two repeats each, 10 minutes; one retry doubles it.
    assert runner_minutes([(entry.bucket, len(entry.missing))]) == (40.0, 80.0)
    assert format_minutes(95) == "1h 35m"
    assert format_minutes(7) == "7m"


def test_seed_id_ignores_figure_and_clock_but_not_index_key_or_target() -> None:
    a = seeded(NUMPY, value=100.0)
    assert seeded(NUMPY, value=123.0).sample_id == a.sample_id
    assert seeded(NUMPY, index=1).sample_id != a.sample_id
    assert seeded(NUMPY, key="seed-2").sample_id != a.sample_id
    assert seeded(NUMPY, target="release").sample_id != a.sample_id
    assert seeded(NUMPY, runtime="s" * 16).sample_id != a.sample_id


def test_sample_id_override_is_kept_and_publish_ids_are_unchanged() -> None:
    result = make_result("cartpole/numpy", 100.0)
    derived = samples_from_result(result, trusted_source="protected_branch")[0].sample_id
    assert samples_from_result(result, trusted_source="protected_branch")[0].sample_id == derived
    seeded_ids = samples_from_result(
        result, trusted_source="seed", sample_ids=lambda reading, metric: "x" * 24
    )
    assert [s.sample_id for s in seeded_ids] == ["x" * 24]


def test_present_samples_are_found_by_id_under_any_stored_runtime() -> None:
    target = SeedTarget(commit=C1, target_branch="main")
    stored = [seeded(NUMPY, index=0, runtime="p" * 16), seeded(NUMPY, index=2, runtime="q" * 16)]
    found = present_samples(
        stored, bucket=NUMPY, target=target, hardware="cpu-test", seed_key="seed",
        indices=(0, 1, 2),
    )  # fmt: skip
    assert sorted(found) == [0, 2]
    fresh_key = present_samples(
        stored, bucket=NUMPY, target=target, hardware="cpu-test", seed_key="again",
        indices=(0, 1, 2),
    )  # fmt: skip
    assert fresh_key == {}
    changed = replace(NUMPY, num_envs=128)  # a launch change: the old samples are not it
    unchanged = present_samples(
        stored, bucket=changed, target=target, hardware="cpu-test", seed_key="seed",
        indices=(0,),
    )  # fmt: skip
    assert unchanged == {}


def test_readiness_from_the_largest_single_fingerprint_group() -> None:
    samples = [seeded(NUMPY, index=i, runtime="p" * 16) for i in range(3)]
    samples += [seeded(NUMPY, index=i, runtime="q" * 16) for i in range(2)]
    result = classify(NUMPY, samples, target_branch="main", min_samples=3)
    assert (result.status, result.samples, result.fingerprints) == (Readiness.READY, 3, 2)
    assert result.fingerprint is not None and result.fingerprint.runtime_hash == "p" * 16
    # Five samples, but no single fingerprint reaches four: not ready.
    warming = classify(NUMPY, samples, target_branch="main", min_samples=4)
    assert (warming.status, warming.samples, warming.other_samples) == (Readiness.WARMING, 3, 2)
    assert classify(NUMPY, [], target_branch="main", min_samples=3).status is Readiness.EMPTY


def test_readiness_ignores_other_targets_old_experiments_and_commits_off_the_branch() -> None:
    samples = [seeded(NUMPY, index=i) for i in range(5)]
    assert classify(NUMPY, samples, target_branch="release", min_samples=5).status is (
        Readiness.EMPTY
    )
    relaunched = replace(NUMPY, steps=999)
    old = classify(relaunched, samples, target_branch="main", min_samples=5)
    assert (old.status, old.other_samples) == (Readiness.EMPTY, 5)
    bumped = replace(NUMPY, baseline_epoch=2)
    assert classify(bumped, samples, target_branch="main", min_samples=5).status is (
        Readiness.EMPTY
    )
    off_branch = classify(
        NUMPY, samples, target_branch="main", min_samples=5, ancestors=frozenset({C2})
    )
    assert off_branch.status is Readiness.EMPTY


def test_reseed_plan_asks_for_what_fills_the_window() -> None:
    buckets = plan_buckets(["a/x", "b/y", "a/x", "c/z"], {"a/x": 3, "b/y": 0, "c/z": 9}, 5)
    assert [(b.id, b.have, b.samples) for b in buckets] == [
        ("a/x", 3, 2),
        ("b/y", 0, 5),
        ("c/z", 9, 1),
    ]


def test_reseed_plan_from_report_and_back_through_json() -> None:
    report = {
        "commit": C1,
        "target_branch": "main",
        "hardware": ["l40s"],
        "underfilled": ["a/x"],
        "rows": [
            {"bucket": "a/x", "baseline": None},
            {"bucket": "b/y", "baseline": {"samples": 9}},
        ],
    }
    plan = plan_from_report(report, 5, "verdict.json")
    assert plan.bucket_ids == ("a/x",) and plan.buckets[0].samples == 5
    assert ReseedPlan.from_json(plan.to_json(), "plan.json") == plan
    with pytest.raises(ConfigError, match="no commit"):
        plan_from_report({**report, "commit": None}, 5, "verdict.json")
    with pytest.raises(ConfigError, match=r"plan\.json: not a reseed plan"):
        ReseedPlan.from_json({"schema_version": 1, "commit": C1}, "plan.json")


def test_underfilled_output_must_be_a_json_list_of_ids() -> None:
    assert parse_underfilled('["a/x"]') == ["a/x"]
    for bad in ("a/x", '{"a": 1}', "[1]"):
        with pytest.raises(ConfigError, match="--underfilled"):
            parse_underfilled(bad)


def test_a_reseed_plans_job_seeds_its_own_bucket_and_a_typo_is_refused(tmp_path: Path) -> None:
    """One job of a per-bucket matrix narrows the reseed plan to its --bucket; an id the
    config does not know is a usage error, never an empty seed."""
    plan = ReseedPlan(commit=C1, target_branch="main", min_samples=5,
                      buckets=(ReseedBucket(id=NUMPY.id, have=1, samples=2),
                               ReseedBucket(id=PYTHON.id, have=0, samples=3)))  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.to_json()), encoding="utf-8")
    declared = config(NUMPY, PYTHON, PENDULUM)
    options = SeedOptions(plan=path, selection=Selection(ids=(PYTHON.id,), backends=("python",)),
                          work_dir=tmp_path, summary=tmp_path / "s.json")  # fmt: skip
    narrowed, left = reseed_scope(options, declared)
    assert narrowed is not None and narrowed.bucket_ids == (PYTHON.id,)
    assert left == Selection(backends=("python",))
    assert reseed_scope(replace(options, plan=None), declared) == (None, options.selection)
    with pytest.raises(UsageError, match="unknown bucket typo/numpy"):
        reseed_scope(replace(options, selection=Selection(ids=("typo/numpy",))), declared)
