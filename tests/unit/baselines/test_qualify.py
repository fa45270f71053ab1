"""Runner-pool qualification (R15): coverage fails closed, metric limits, named runners.

Pools are built from result artifacts made with tests/factories.py, as allocations write
them with `bench --run-label LABEL --samples K`: per allocation and bucket one artifact
holding K samples (indices 0..K-1), with its run label and runner name.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.baselines.qualify.coverage import Design
from perfgate.baselines.qualify.observations import Evidence, evidence_from
from perfgate.baselines.qualify.rule import rule_figures
from perfgate.baselines.qualify.verdict import QualVerdict, qualify
from perfgate.config import Config, Direction, load_config
from perfgate.judge.policies import CalibratedPolicy, Policy, ReferencePolicy
from perfgate.report.qualification import qualification_json, qualification_markdown
from perfgate.result import CiInfo, Result, Timings
from tests.factories import make_result
from tests.paths import FIXTURES

# Deterministic per-sample noise, about 0.5 % either way: a quiet pool.
NOISE = (0.004, -0.003, 0.006, -0.005, 0.001, -0.002, 0.005, -0.006, 0.002, -0.001, 0.003)
DESIGN = Design(allocations=5, samples=3, min_runners=3)
# Allocation -> runner: five jobs landing on three machines.
RUNNERS = {"a1": "gpu-1", "a2": "gpu-2", "a3": "gpu-3", "a4": "gpu-1", "a5": "gpu-3"}


def demo_config() -> Config:
    """The demo's four buckets (tests/fixtures/qualify.yaml)."""
    return load_config(FIXTURES / "qualify.yaml")


def artifact(
    bucket: str,
    allocation: str,
    values: list[float],
    *,
    runner: str | None = None,
    **overrides: object,
) -> tuple[str, Result]:
    """One allocation's bench run of ``bucket``: its samples, run label and runner."""
    started = f"2026-11-30T10:{int(allocation.strip('a') or 0):02d}:00+00:00"
    result = make_result(
        bucket,
        samples=values,
        ci=CiInfo(
            run_id="4242",
            run_attempt="1",
            job="allocation",
            runner_name=runner or RUNNERS.get(allocation, "gpu-9"),
            run_label=allocation,
        ),
        timings=Timings(started_at=started, finished_at=started, wall_s=1.0),
        **overrides,
    )
    return f"results/{allocation}/{bucket.replace('/', '__')}.json", result


def pool(
    buckets: tuple[str, ...] = ("cartpole/numpy",),
    *,
    offsets: dict[str, float] | None = None,
    allocations: tuple[str, ...] = ("a1", "a2", "a3", "a4", "a5"),
    samples: int = 3,
) -> list[tuple[str, Result]]:
    """A pool: every allocation samples every bucket ``samples`` times; runners may be offset."""
    offsets = offsets or {}
    runs = []
    for b, bucket in enumerate(buckets):
        for a, allocation in enumerate(allocations):
            factor = 1.0 + offsets.get(RUNNERS.get(allocation, ""), 0.0)
            values = [
                1000.0 * (1 + NOISE[(a * samples + k + b) % len(NOISE)]) * factor
                for k in range(samples)
            ]
            runs.append(artifact(bucket, allocation, values))
    return runs


def run_qualify(
    runs: list[tuple[str, Result]],
    *,
    config: Config | None = None,
    scope: tuple[str, ...] = ("cartpole/numpy",),
    design: Design = DESIGN,
    unreadable: tuple[tuple[str, str, str | None], ...] = (),
    rule: object = None,
):
    config = config or demo_config()
    evidence = evidence_from(runs, unreadable)
    return qualify(
        config,
        config.select(scope),
        evidence,
        design=design,
        rule=rule,
    )


def test_a_quiet_pool_is_stable_enough_to_gate() -> None:
    report = run_qualify(pool())
    assert report.verdict is QualVerdict.STABLE
    (bucket,) = report.buckets
    assert bucket.coverage == () and bucket.instability == ()
    assert bucket.metrics is not None
    assert bucket.metrics.samples == 15 and len(bucket.metrics.runners) == 3
    assert bucket.metrics.cv_pct < 1.0
    # The gate's rule in force blocks such a pool's buckets at a few per cent.
    figures = bucket.metrics.rule
    assert figures.block_band_pct is not None and 3.0 <= figures.block_band_pct < 5.0
    assert figures.detectable_pct is not None and figures.detectable_pct > figures.block_band_pct
    assert report.unstable_runners == ()


def test_the_reference_rule_gives_the_band_of_k_block_mads() -> None:
    """The seed's rule: 4 x max(MAD, the noise floor), at least the 3 % minimum drop."""
    reference = ReferencePolicy(noise_floor_pct=1.0)
    figures = run_qualify(pool(), rule=lambda bucket, hardware: reference).buckets[0].metrics.rule
    assert (figures.policy, figures.false_block_rate) == ("reference", None)
    assert figures.block_band_pct == pytest.approx(4.0)


def test_one_runner_offset_by_8_percent_is_unstable_and_named() -> None:
    report = run_qualify(pool(offsets={"gpu-3": -0.08}))
    assert report.verdict is QualVerdict.UNSTABLE
    (bucket,) = report.buckets
    assert bucket.coverage == ()  # complete evidence: the instability is the runner's
    assert report.unstable_runners == ("gpu-3",)
    runner_lines = [p for p in bucket.instability if p.startswith("runner ")]
    assert len(runner_lines) == 1
    line = runner_lines[0]
    offending = next(r for r in bucket.metrics.runners if r.runner == "gpu-3")
    assert offending.offset_pct == pytest.approx(-8.0, abs=0.5)
    assert f"runner gpu-3: median {offending.offset_pct:+.1f} % from the pooled median" in line
    # Its samples and allocations, so a maintainer knows which machine to drain and why.
    assert f"{offending.samples[0]:,.0f}" in line and "a3, a5" in line and "drain it" in line
    assert offending.over_limit and len(offending.samples) == 6
    assert all(not r.over_limit for r in bucket.metrics.runners if r.runner != "gpu-3")
    markdown = qualification_markdown(report)
    assert "## ❌ UNSTABLE_DO_NOT_GATE" in markdown
    assert "### Runners to drain" in markdown
    assert f"| gpu-3 | cartpole/numpy | {offending.offset_pct:+.1f} % |" in markdown


def test_a_runner_offset_within_the_limit_stays_stable() -> None:
    report = run_qualify(pool(offsets={"gpu-3": -0.03}))
    assert report.verdict is QualVerdict.STABLE
    runner = next(r for r in report.buckets[0].metrics.runners if r.runner == "gpu-3")
    assert runner.offset_pct == pytest.approx(-3.0, abs=0.6) and not runner.over_limit


def test_a_missing_allocation_is_inconclusive_and_named() -> None:
    runs = pool(("cartpole/numpy", "cartpole/python"))
    # Allocation a4 died before cartpole/numpy; it did run cartpole/python.
    runs = [
        (s, r) for s, r in runs if not (r.ci.run_label == "a4" and r.bucket.id.endswith("numpy"))
    ]
    report = run_qualify(runs, scope=("cartpole/numpy", "cartpole/python"))
    assert report.verdict is QualVerdict.INCONCLUSIVE
    numpy, python = report.buckets
    assert python.verdict is QualVerdict.STABLE
    assert numpy.verdict is QualVerdict.INCONCLUSIVE
    assert any(
        "4 of 5 allocations reported; allocation(s) a4 reported other buckets but not this one"
        in problem
        for problem in numpy.coverage
    ), numpy.coverage


def test_a_duplicate_sample_id_is_inconclusive() -> None:
    runs = pool()
    # The same artifact downloaded twice (two artifact names, one measurement).
    source, result = runs[1]
    runs.append((source.replace("results/", "results-copy/"), result))
    report = run_qualify(runs)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    problems = report.buckets[0].coverage
    duplicates = [p for p in problems if "counted 2 times" in p]
    assert len(duplicates) == 3 and all("results-copy/" in p for p in duplicates), problems
    # Counted twice, the allocation also holds each of its sample indices twice.
    assert "allocation a2: 6 of 3 samples; index 0, 1, 2 more than once" in problems


def test_two_runs_claiming_one_sample_index_are_named() -> None:
    runs = pool()
    source, result = runs[1]
    again = replace(result, timings=replace(result.timings, started_at="2026-11-30T11:00:00+00:00"))
    runs.append((source.replace(".json", "-again.json"), again))
    problems = run_qualify(runs).buckets[0].coverage
    # Different runs (different ids), the same indices: the allocation is not K samples.
    assert "allocation a2: 6 of 3 samples; index 0, 1, 2 more than once" in problems
    assert not any("counted" in p for p in problems)


def test_two_fingerprints_in_one_bucket_are_inconclusive_and_not_pooled() -> None:
    runs = pool()
    source, result = runs[0]
    runs[0] = (source, replace(result, source=replace(result.source, commit="e" * 40)))
    report = run_qualify(runs)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    (bucket,) = report.buckets
    assert bucket.metrics is None  # a commit's difference must not read as runner noise
    assert any(
        "2 fingerprints in one bucket (commit: " in p and "e" * 40 in p for p in bucket.coverage
    ), bucket.coverage


def test_a_missing_fingerprint_field_is_named() -> None:
    runs = [
        (s, replace(r, source=replace(r.source, target_branch=None)) if i == 0 else r)
        for i, (s, r) in enumerate(pool())
    ]
    problems = run_qualify(runs).buckets[0].coverage
    assert any(p.startswith("fingerprint incomplete: target_branch missing in ") for p in problems)
    assert any(p.startswith("2 fingerprints in one bucket (target_branch: ") for p in problems)


def test_too_few_runners_and_an_allocation_on_two_runners_are_named() -> None:
    # All on gpu-1 or gpu-2; allocation a2 has a second artifact from another machine.
    runs = [
        artifact("cartpole/numpy", f"a{a}", [1000.0, 1003.0, 997.0], runner=f"gpu-{1 + a % 2}")
        for a in range(1, 6)
    ]
    runs[1] = artifact("cartpole/numpy", "a2", [1000.0, 1003.0], runner="gpu-1")
    stray = make_result(
        "cartpole/numpy",
        samples=[999.0],
        ci=CiInfo(run_id="4242", run_attempt="1", runner_name="gpu-9", run_label="a2"),
    )
    runs.append(("results/a2-late/cartpole__numpy.json", stray))
    report = run_qualify(runs)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    problems = report.buckets[0].coverage
    assert "allocation a2 ran on 2 runners (gpu-1, gpu-9): an allocation is one runner job" in (
        problems
    )
    runs = [(s, r) for s, r in runs if r.ci.runner_name != "gpu-9"]
    problems = run_qualify(runs).buckets[0].coverage
    assert any(p.startswith("2 distinct runners (gpu-1, gpu-2); at least 3") for p in problems)


def test_missing_samples_and_indices_are_named() -> None:
    runs = pool()
    runs[2] = artifact("cartpole/numpy", "a3", [1001.0, 999.0])
    problems = run_qualify(runs).buckets[0].coverage
    assert "allocation a3: 2 of 3 samples; missing index 2" in problems


def test_one_figure_artifacts_are_numbered_by_their_start() -> None:
    """Artifacts written before runs took samples hold one figure each: an allocation's
    are its samples 0..K-1 in the order they started."""
    runs = []
    for a, allocation in enumerate(("a1", "a2", "a3", "a4", "a5")):
        for k in range(3):
            started = f"2026-11-30T10:0{a}:{k:02d}+00:00"
            result = make_result(
                "cartpole/numpy",
                1000.0 * (1 + NOISE[(a * 3 + k) % len(NOISE)]),
                ci=CiInfo(run_id="7", run_attempt="1", runner_name=RUNNERS[allocation],
                          run_label=allocation),
                timings=Timings(started_at=started, finished_at=started, wall_s=1.0),
            )  # fmt: skip
            runs.append((f"results/{allocation}/s{k}/cartpole__numpy.json", result))
    report = run_qualify(runs)
    assert report.verdict is QualVerdict.STABLE, report.buckets[0].coverage
    indices = [[i for i, _ in a.samples] for a in report.buckets[0].allocations]
    assert indices == [[0, 1, 2]] * 5


def test_a_failed_sample_is_a_named_gap_not_a_figure() -> None:
    runs = pool()
    # Allocation a3's third sample crashed: its artifact holds the two samples before it.
    source, _ = runs[2]
    crashed = make_result(
        "cartpole/numpy",
        samples=[1001.0, 999.0],
        exit_code=1,
        ci=CiInfo(run_id="4242", run_attempt="1", runner_name="gpu-3", run_label="a3"),
    )
    runs[2] = (source, crashed)
    report = run_qualify(runs)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    problems = report.buckets[0].coverage
    assert f"allocation a3 sample 2 on gpu-3: no figure (no figure, exit 1) in {source}" in (
        problems
    )
    assert report.buckets[0].metrics is not None and report.buckets[0].metrics.samples == 14


def test_an_artifact_without_allocation_identity_is_named() -> None:
    runs = pool()
    source, result = runs[0]
    runs[0] = (source, replace(result, ci=CiInfo(runner_name="laptop")))
    problems = run_qualify(runs).buckets[0].coverage
    assert any("1 artifact name no allocation" in p and "--run-label" in p for p in problems)


def test_the_expected_hardware_branch_and_commit_are_checked() -> None:
    design = replace(DESIGN, hardware="l40s", target_branch="develop", commit="c" * 7)
    problems = run_qualify(pool(), design=design).buckets[0].coverage
    assert "hardware cpu-test is not the expected l40s" in problems
    assert "target_branch main is not the expected develop" in problems
    # An abbreviated commit matches the full one.
    assert not any(p.startswith("commit") for p in problems)


def test_a_rescoped_run_is_judged_only_on_what_it_selected() -> None:
    """The seed's defect: a backend allowlist on the sampling side but not on the
    qualifying side reported every other bucket as missing evidence and failed closed."""
    config = demo_config()
    runs = pool(("cartpole/numpy", "pendulum/numpy"))
    numpy_only = config.select(backends=["numpy"])
    report = qualify(
        config, numpy_only, evidence_from(runs), design=DESIGN, flags={"backend": ["numpy"]}
    )
    assert report.verdict is QualVerdict.STABLE
    assert [b.bucket for b in report.buckets] == ["cartpole/numpy", "pendulum/numpy"]
    assert "--backend numpy" in qualification_markdown(report)
    assert qualification_json(report)["scope"] == {
        "flags": {"backend": ["numpy"]},
        "buckets": ["cartpole/numpy", "pendulum/numpy"],
    }
    # The same artifacts judged against the whole matrix are missing the python buckets.
    whole = qualify(config, config.buckets, evidence_from(runs), design=DESIGN)
    assert whole.verdict is QualVerdict.INCONCLUSIVE
    missing = [b.bucket for b in whole.buckets if b.verdict is QualVerdict.INCONCLUSIVE]
    assert missing == ["cartpole/python", "pendulum/python"]
    # Artifacts of buckets outside the scope are neither judged nor counted as missing.
    narrow = qualify(config, config.select(["cartpole/numpy"]), evidence_from(runs), design=DESIGN)
    assert narrow.verdict is QualVerdict.STABLE
    assert narrow.notes == (
        "artifacts of buckets outside the selected scope were not judged: pendulum/numpy",
    )


def test_an_unreadable_artifact_costs_its_bucket_or_the_pool() -> None:
    named = (("results/a1/x.json", "x.json: not a valid result artifact", "cartpole/numpy"),)
    report = run_qualify(pool(), unreadable=named)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    assert report.buckets[0].coverage == (
        "unreadable artifact: x.json: not a valid result artifact",
    )
    anonymous = (("results/a1/y.json", "y.json: not JSON", None),)
    report = run_qualify(pool(), unreadable=anonymous)
    assert report.verdict is QualVerdict.INCONCLUSIVE
    assert report.buckets[0].verdict is QualVerdict.STABLE
    assert report.problems == ("unreadable artifact: y.json: not JSON",)


def test_limits_come_from_the_qualify_block(tmp_path: Path) -> None:
    text = (FIXTURES / "qualify.yaml").read_text(encoding="utf-8")
    path = tmp_path / "perfgate.yaml"
    path.write_text(text + "\nqualify:\n  max_pooled_cv_pct: 0.3\n  max_block_band_pct: 2.5\n")
    report = run_qualify(pool(), config=load_config(path))
    assert report.verdict is QualVerdict.UNSTABLE
    problems = report.buckets[0].instability
    assert any(p.startswith("pooled CV 0.") and "exceeds 0.3 %" in p for p in problems), problems
    # Every rule's minimum drop is 3 %: past a 2.5 % limit.
    band = [p for p in problems if p.startswith("the gate's ")]
    assert len(band) == 1 and band[0].endswith("% regression (limit 2.5 %)"), problems
    assert qualification_json(report)["policy"]["max_pooled_cv_pct"] == 0.3


def test_a_noisy_pool_has_a_wide_block_band() -> None:
    """The seed's rule on a pool whose samples scatter 10 % needs a drop of 4 such MADs."""
    wide = (0.09, -0.08, 0.05, -0.1, 0.02, -0.03, 0.07, -0.06, 0.01, -0.04, 0.08)
    runs = [
        artifact(
            "cartpole/numpy", f"a{a}", [1000.0 * (1 + wide[(a * 3 + k) % 11]) for k in range(3)]
        )
        for a in range(1, 6)
    ]
    reference = ReferencePolicy()
    report = run_qualify(runs, rule=lambda bucket, hardware: reference)
    bucket = report.buckets[0]
    assert bucket.verdict is QualVerdict.UNSTABLE
    assert bucket.metrics is not None and bucket.metrics.rule.block_band_pct is not None
    assert bucket.metrics.rule.block_band_pct > 10.0
    assert any("rule would block only past" in p for p in bucket.instability)


def test_the_calibrated_rule_gives_the_band_at_its_false_block_rate() -> None:
    """With the calibrated rule in force, band and detectable regression come from it."""
    calibrated = CalibratedPolicy()
    report = run_qualify(pool(), rule=lambda bucket, hardware: calibrated)
    figures = report.buckets[0].metrics.rule
    assert figures.policy == "calibrated" and figures.false_block_rate == 0.001
    # A 0.5 % pool resolves down to the rule's 3 % minimum drop.
    assert figures.block_band_pct == pytest.approx(3.0)
    strict = CalibratedPolicy(false_block_rate=1e-6)
    noisy = pool(offsets={"gpu-3": 0.03})
    loose = run_qualify(noisy, rule=lambda bucket, hardware: calibrated).buckets[0].metrics.rule
    tight = run_qualify(noisy, rule=lambda bucket, hardware: strict).buckets[0].metrics.rule
    # A lower false-alarm rate needs a larger drop before it blocks.
    assert tight.block_band_pct > loose.block_band_pct > 3.0
    assert tight.detectable_pct > loose.detectable_pct


@pytest.mark.parametrize(
    "policy", [ReferencePolicy(), CalibratedPolicy()], ids=["reference", "calibrated"]
)
def test_rule_figures_are_relative_in_either_direction(policy: Policy) -> None:
    runs = [[100.0 * (1 + 3 * NOISE[(a * 3 + k) % 11]) for k in range(3)] for a in range(5)]
    higher = rule_figures(runs, policy=policy, direction=Direction.HIGHER, power=0.9)
    lower = rule_figures(runs, policy=policy, direction=Direction.LOWER, power=0.9)
    assert higher.block_band_pct is not None and lower.block_band_pct is not None
    assert higher.detectable_pct is not None and lower.detectable_pct is not None
    # The same noise: a drop and a rise of about the same size.
    assert lower.block_band_pct == pytest.approx(higher.block_band_pct, rel=0.1)
    assert higher.detectable_pct > higher.block_band_pct
    # Power 0.5 is the block line itself.
    middle = rule_figures(runs, policy=policy, direction=Direction.HIGHER, power=0.5)
    assert middle.detectable_pct == pytest.approx(higher.block_band_pct)


def test_the_noise_calibration_measures_within_and_between_allocations() -> None:
    report = run_qualify(pool(offsets={"gpu-3": 0.02}))
    noise = report.buckets[0].noise
    assert noise is not None and report.calibration() == (noise,)
    assert (noise.bucket, noise.hardware, noise.modes) == ("cartpole/numpy", "cpu-test", 1)
    assert (noise.samples, noise.allocations, noise.runners) == (15, 5, 3)
    assert 0.2 < noise.noise_pct < 1.0  # the 0.5 % within-allocation noise
    # gpu-3's 2 % offset is runner-to-runner noise the allocations share.
    assert noise.run_noise_pct > 0.5
    quiet = run_qualify(pool()).buckets[0].noise
    assert quiet is not None and quiet.run_noise_pct < noise.run_noise_pct
    # The recommended floor is the pool's unscaled MAD.
    assert noise.noise_floor_pct == pytest.approx(report.buckets[0].metrics.mad_pct)
    assert math.isfinite(noise.df) and noise.df > 3


def test_only_stable_buckets_are_calibrated() -> None:
    report = run_qualify(pool(offsets={"gpu-3": -0.08}))
    assert report.buckets[0].noise is not None  # measured ...
    assert report.calibration() == ()  # ... but never allowed to set thresholds


def test_no_observation_at_all_names_the_whole_gap() -> None:
    report = qualify(
        demo_config(),
        demo_config().select(["cartpole/numpy"]),
        Evidence(observations=()),
        design=DESIGN,
    )
    assert report.buckets[0].coverage == (
        "no allocation reported this bucket (0 of 5 allocations, 0 of 15 samples)",
    )


def test_runner_to_runner_noise_widens_the_calibrated_rules_band() -> None:
    """Two runners 4 % either side of the third pass the 5 % runner limit, yet runs landing
    on them are 8 % apart: the calibrated rule, told the pool's measured run noise, needs
    a drop past the 10 % limit before it could block, and says so."""
    calibrated = CalibratedPolicy()

    def judged(offsets: dict[str, float]) -> Any:
        return run_qualify(pool(offsets=offsets), rule=lambda b, h: calibrated)

    def band(offsets: dict[str, float]) -> float:
        figures = judged(offsets).buckets[0].metrics.rule
        assert figures.block_band_pct is not None
        return figures.block_band_pct

    quiet, one = band({}), band({"gpu-3": 0.02})
    spread = {"gpu-1": 0.04, "gpu-3": -0.04}
    assert quiet == pytest.approx(3.0)  # the rule's minimum drop: the pool adds nothing
    assert 3.0 < one < 10.0 < band(spread)
    report = judged(spread)
    assert report.verdict is QualVerdict.UNSTABLE and report.unstable_runners == ()
    (problem,) = report.buckets[0].instability
    assert problem.startswith("the gate's calibrated rule would block only past a 1")


@pytest.mark.parametrize("direction", [Direction.HIGHER, Direction.LOWER])
def test_a_pool_too_noisy_to_resolve_anything_is_reported_not_a_crash(
    direction: Direction,
) -> None:
    """The demo on a busy laptop is bimodal (11 M and 23 M env-steps/s); with that much
    runner-to-runner noise the calibrated rule's line saturates at a 100 % drop."""
    runs = [[10.9, 11.4, 10.8], [23.0, 12.8, 22.0], [22.2, 11.2, 11.1], [24.3, 10.8, 12.5]]
    figures = rule_figures(
        runs,
        policy=CalibratedPolicy(),
        direction=direction,
        power=0.9,
        run_noise_pct=1e9,
    )
    assert figures.block_band_pct is not None and figures.detectable_pct is not None
    assert math.isfinite(figures.detectable_pct)
    assert figures.detectable_pct >= figures.block_band_pct > 90.0
