"""The noise calibration the gate reads (gate.calibration): it moves thresholds, and only
for the bucket, hardware and experiment it measured (R5, R15)."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.baselines.qualify.observations import Observation, PoolFingerprint
from perfgate.baselines.qualify.rule import measure_noise
from perfgate.baselines.samples import WindowIdentity
from perfgate.config import Direction, FileRef, QualifyPolicy, load_config
from perfgate.errors import ConfigError
from perfgate.judge.calibration import (
    BucketNoise,
    NoiseCalibration,
    noise_ceiling_pct,
    read_calibration,
    write_calibration,
)
from perfgate.judge.gate import GateReport, build_report
from perfgate.judge.verdicts import Verdict
from perfgate.report.summary import summary_markdown
from perfgate.result import Result
from tests.factories import make_result, windows_of

# Reference policy: median 100, unscaled MAD 1 (one sample per run, nearest first).
STEADY = [[99.0], [100.0], [101.0], [100.0], [99.0], [101.0]]
# Calibrated policy: 20 quiet runs of two samples each, about 0.4 % apart.
QUIET = [[100.0 + 0.4 * ((i * 7) % 5 - 2), 100.0 - 0.3 * ((i * 3) % 4 - 1.5)] for i in range(20)]
FINGERPRINT = PoolFingerprint(
    hardware="cpu-test",
    commit="c" * 40,
    window=WindowIdentity(target_branch="main", launch_hash="a" * 16, benchmark_hash="b" * 16,
                          runtime_hash="d" * 16, baseline_epoch=1),
)  # fmt: skip
# Ten runs of two samples on runners whose levels differ by about 2 %.
RUNNER_OFFSETS = [
    [100.0 + offset + 0.2, 100.0 + offset - 0.2]
    for offset in (-2.0, 1.5, 0.0, 2.5, -1.0, 1.0, -2.5, 0.5, 1.8, -0.7)
]


def entry(**changes: object) -> BucketNoise:
    values: dict[str, object] = {
        "bucket": "cartpole/numpy",
        "hardware": "cpu-test",
        "launch_hash": "a" * 16,
        "benchmark_hash": "b" * 16,
        "noise_pct": 1.5,
        "df": 9.0,
        "run_noise_pct": 0.8,
        "run_df": 3.5,
        "modes": 1,
        "noise_floor_pct": 2.0,
        **changes,
    }
    return BucketNoise(**values)  # type: ignore[arg-type]


def config_file(tmp_path: Path, calibration: str | None = None, policy: str | None = None) -> Path:
    # The window rule's lines are what a calibration moves: confirmed by repeats.
    gate = "gate:\n"
    gate += f"  calibration: {calibration}\n" if calibration else ""
    gate += "  confirm: repeat\n"
    gate += f"  policy: {policy}\n" if policy else ""
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        f"version: 1\n{gate}buckets:\n  - task: cartpole\n    backends: [{{physics: numpy}}]\n",
        encoding="utf-8",
    )
    return path


def judged(tmp_path: Path, policy: str, result: Result, window: object,
           calibration: NoiseCalibration | None) -> GateReport:  # fmt: skip
    config = load_config(config_file(tmp_path, policy=policy))
    return build_report(
        config=config,
        expected=config.buckets,
        results=[result],
        windows=windows_of({"cartpole/numpy": window}),
        calibration=calibration,
    )


def test_a_calibration_moves_the_reference_rules_block_line(tmp_path: Path) -> None:
    result = make_result("cartpole/numpy", 94.0)
    measured = NoiseCalibration(buckets=(entry(),), path=tmp_path / "noise.json")
    plain = judged(tmp_path, "reference", result, STEADY, None)
    calibrated = judged(tmp_path, "reference", result, STEADY, measured)
    before, after = plain.rows[0].judgement, calibrated.rows[0].judgement
    assert before is not None and before.decision is not None
    assert after is not None and after.decision is not None
    # Uncalibrated: noise = MAD 1 -> block line 96, so -6 % blocks.
    assert (before.decision.block_line, plain.overall) == (96.0, Verdict.BLOCK)
    # Calibrated: the pool's measured 2 % floor -> block line 92: -6 % is within its noise.
    assert after.decision.block_line == pytest.approx(92.0)
    assert calibrated.overall is Verdict.WARN
    assert any("noise from the calibration" in note for note in calibrated.notes)


def test_a_calibration_moves_the_calibrated_rules_block_line(tmp_path: Path) -> None:
    """Runners of this pool differ by about 2 %, and the window's ten runs show it: measured
    by the pool, that runner noise is known, where the window's own estimate from ten runs
    must allow more. A 7 % drop then blocks."""
    result = make_result("cartpole/numpy", samples=[93.0, 93.2, 92.8])
    pool = NoiseCalibration(buckets=(entry(noise_pct=0.3, df=20.0, run_noise_pct=1.8),))
    plain = judged(tmp_path, "calibrated", result, RUNNER_OFFSETS, None)
    calibrated = judged(tmp_path, "calibrated", result, RUNNER_OFFSETS, pool)
    before, after = plain.rows[0].judgement, calibrated.rows[0].judgement
    assert before is not None and before.decision is not None
    assert after is not None and after.decision is not None
    assert after.decision.run_noise_pct == pytest.approx(1.8)
    assert after.decision.threshold_pct > before.decision.threshold_pct  # type: ignore[operator]
    assert (plain.overall, calibrated.overall) == (Verdict.INCONCLUSIVE, Verdict.BLOCK)
    assert any("noise from the calibration" in note for note in calibrated.notes)


def test_a_calibration_far_noisier_than_the_window_is_not_applied_and_said(
    tmp_path: Path,
) -> None:
    """A quiet window cannot come from a pool as noisy as the entry claims: judged by its
    own noise, a 30 % drop blocks, and the summary says why the calibration was not used."""
    result = make_result("cartpole/numpy", samples=[70.0, 70.2, 69.8])
    loud = NoiseCalibration(buckets=(entry(noise_pct=15.0, df=20.0, run_noise_pct=15.0),))
    report = judged(tmp_path, "calibrated", result, QUIET, loud)
    assert report.overall is Verdict.BLOCK
    (note,) = [n for n in report.notes if "calibration entries not applied" in n]
    assert "cartpole/numpy: its noise (21.9 % a sample" in note and "far above" in note
    assert not any("noise from the calibration" in n for n in report.notes)
    assert "calibration entries not applied" in summary_markdown(report)
    # A consistent entry is applied to the same window.
    quiet = NoiseCalibration(
        buckets=(entry(noise_pct=0.4, df=20.0, run_noise_pct=0.2, noise_floor_pct=0.3),)
    )
    assert any("noise from the calibration" in n
               for n in judged(tmp_path, "calibrated", result, QUIET, quiet).notes)  # fmt: skip


def test_noise_no_passing_qualification_could_measure_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The schema allows 1000 %; a pool whose samples all lie within 5 % of its median
    cannot measure more than the ceiling, so such an entry is a configuration error."""
    ceiling = noise_ceiling_pct(QualifyPolicy())
    assert 15.0 < ceiling < 20.0
    path = config_file(tmp_path, calibration="noise.json")
    for name in ("noise_pct", "run_noise_pct", "noise_floor_pct"):
        loud = {**entry().__dict__, name: 1000.0}
        document = {"schema_version": 1, "kind": "perfgate-noise-calibration", "buckets": [loud]}
        (tmp_path / "noise.json").write_text(json.dumps(document), encoding="utf-8")
        assert cli.main(["validate", "--config", str(path)]) == 4
        err = capsys.readouterr().err
        assert f"buckets.0.{name}: 1000 % (cartpole/numpy on cpu-test)" in err
        assert f"({ceiling:.1f} %, from qualify.max_sample_deviation_pct 5)" in err
    # Looser qualification limits allow more, as the pool they pass could show more.
    assert noise_ceiling_pct(QualifyPolicy(max_sample_deviation_pct=20.0)) > 2 * ceiling


def test_a_passing_qualification_never_measures_more_than_the_ceiling() -> None:
    """Pools whose every sample lies within the 5 % limit, spread as widely as it allows."""
    rng = random.Random(26)
    policy = QualifyPolicy()
    ceiling = noise_ceiling_pct(policy)
    worst = 0.0
    for trial in range(300):
        # Seven samples below the median of 1000 and seven above, at the limit or inside it.
        spread = [rng.choice((0.04999, rng.uniform(0, 0.05))) for _ in range(14)]
        values = (
            [1000.0 * (1 - x) for x in spread[:7]]
            + [1000.0]
            + [1000.0 * (1 + x) for x in spread[7:]]
        )
        rng.shuffle(values)
        assert all(abs(v / statistics.median(values) - 1) <= 0.05 for v in values)
        observations = [
            Observation(
                bucket="cartpole/numpy", allocation=f"a{i // 3}", runner=f"gpu-{i // 3}",
                sample_index=i % 3, value=value, direction=Direction.HIGHER,
                sample_id=f"{trial}-{i}",
                fingerprint=FINGERPRINT, source="test",
            )
            for i, value in enumerate(values)
        ]  # fmt: skip
        noise = measure_noise(observations)
        assert noise is not None
        worst = max(worst, noise.noise_pct, noise.run_noise_pct, noise.noise_floor_pct)
    assert 0 < worst <= ceiling


def test_a_calibration_of_another_experiment_is_not_applied(tmp_path: Path) -> None:
    result = make_result("cartpole/numpy", 94.0)

    def outcome(other: BucketNoise) -> tuple[Verdict, tuple[str, ...]]:
        report = judged(tmp_path, "reference", result, STEADY, NoiseCalibration(buckets=(other,)))
        return report.overall, report.notes

    stale = "calibration entries measured another experiment"
    # Another experiment of this bucket on this hardware: not applied, and said, so the
    # pool gets qualified again.
    verdict, notes = outcome(entry(launch_hash="f" * 16))
    assert verdict is Verdict.BLOCK and any(stale in note for note in notes)
    # Another hardware's calibration simply does not concern this run.
    verdict, notes = outcome(entry(hardware="l40s"))
    assert verdict is Verdict.BLOCK and not any(stale in note for note in notes)


def test_write_read_round_trip_and_merge(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "noise.json"
    first = NoiseCalibration(buckets=(entry(), entry(bucket="cartpole/python")))
    write_calibration(first, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["schema_version"], data["kind"]) == (1, "perfgate-noise-calibration")
    loaded = read_calibration(FileRef(path=path, where="test"), QualifyPolicy())
    assert loaded.buckets == first.buckets
    # A new qualification of one bucket replaces its entry and keeps the others.
    merged = loaded.merged([entry(noise_floor_pct=3.0)])
    assert [(e.bucket, e.noise_floor_pct) for e in merged.buckets] == [
        ("cartpole/numpy", 3.0),
        ("cartpole/python", 2.0),
    ]
    assert entry().for_rule().run_noise_pct == 0.8


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "not found; write it with `perfgate qualify --write-calibration"),
        ("{not json", "is not a readable calibration"),
        (
            {"schema_version": 1, "kind": "perfgate-noise-calibration", "buckets": [{"x": 1}]},
            "buckets.0: Additional properties are not allowed",
        ),
        (
            {
                "schema_version": 1,
                "kind": "perfgate-noise-calibration",
                "buckets": [{**entry().__dict__, "noise_pct": -1}],
            },
            "buckets.0.noise_pct: -1 is less than the minimum of 0",
        ),
        (
            {
                "schema_version": 1,
                "kind": "perfgate-noise-calibration",
                "buckets": [entry().__dict__, entry().__dict__],
            },
            "buckets.1: a second entry for cartpole/numpy on cpu-test",
        ),
    ],
    ids=["missing", "not_json", "unknown_key", "negative", "duplicate"],
)
def test_a_bad_calibration_exits_4_naming_the_file_and_the_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: object,
    says: str,
) -> None:
    path = config_file(tmp_path, calibration="noise.json")
    if content is not None:
        text = content if isinstance(content, str) else json.dumps(content)
        (tmp_path / "noise.json").write_text(text, encoding="utf-8")
    assert cli.main(["validate", "--config", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path}:3: gate.calibration: {tmp_path / 'noise.json'}" in err
    assert says in err
    with pytest.raises(ConfigError, match=r"gate\.calibration"):
        read_calibration(load_config(path).gate.calibration, QualifyPolicy())  # type: ignore[arg-type]


@pytest.mark.slow  # validate reads the baseline store for its budget check (git)
def test_a_calibration_linked_from_outside_the_repository_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gate.calibration names a repository path: a link out of it is not one."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    write_calibration(NoiseCalibration(buckets=(entry(),)), elsewhere / "noise.json")
    (repo / "noise.json").symlink_to(elsewhere / "noise.json")
    path = config_file(repo, calibration="noise.json")
    assert cli.main(["validate", "--config", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path}:3: gate.calibration: {repo / 'noise.json'}" in err
    assert "outside the repository" in err and str(elsewhere / "noise.json") in err
    # A link that stays inside the repository is a repository path.
    (repo / "ci").mkdir()
    (repo / "noise.json").unlink()
    write_calibration(NoiseCalibration(buckets=(entry(),)), repo / "ci" / "noise.json")
    (repo / "noise.json").symlink_to(repo / "ci" / "noise.json")
    assert cli.main(["validate", "--config", str(path)]) == 0
