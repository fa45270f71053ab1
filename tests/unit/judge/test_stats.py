"""Each rule of the statistics (judge/rule.py and what it rests on) pinned on constructed
cases (R5, issue 11)."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from perfgate.config import Direction
from perfgate.judge.calibrated import calibrated_decide
from perfgate.judge.decision import Decision
from perfgate.judge.modes import find_modes
from perfgate.judge.numerics import (
    huber_location,
    mann_whitney_u,
    mwu_critical,
    robust_scale,
    t_isf,
    t_sf,
)
from perfgate.judge.policies import CalibratedPolicy, Calibration, ReferencePolicy
from perfgate.judge.rule import decide, needs_more
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import WindowModel, analyse_window

REF = ReferencePolicy()
NEW = CalibratedPolicy()


def gauss_runs(
    rng: random.Random, runs: int, level: float = 100.0, cv: float = 0.01, k: int = 2
) -> list[list[float]]:
    """Runs (nearest-first) of ``k`` normal samples each."""
    return [[level * (1 + cv * rng.gauss(0, 1)) for _ in range(k)] for _ in range(runs)]


def run_to_end(
    window: Sequence[Sequence[float]] | WindowModel,
    draw: Callable[[], float],
    policy: CalibratedPolicy = NEW,
    direction: Direction = Direction.HIGHER,
) -> tuple[Decision, list[float]]:
    """The bench loop: initial repeats, then one more while the rule asks; the final verdict."""
    model = (
        window
        if isinstance(window, WindowModel)
        else analyse_window(window, policy=policy, direction=direction)
    )
    samples = [draw() for _ in range(policy.initial_repeats)]
    while calibrated_decide(model, samples, policy=policy).need_more:
        samples.append(draw())
    return calibrated_decide(model, samples, policy=policy, final=True), samples


# ----------------------------------------------------------------------------------------
# Reference policy: the seed's rule, exactly
# ----------------------------------------------------------------------------------------

# median 100, unscaled MAD 1 -> warn line 97.5, block line 96.0 (lower is worse)
WINDOW = [100.0, 101.0, 99.0, 100.0, 101.0, 99.0, 100.0]


def ref(value: float | list[float], window: list[float] = WINDOW, **kw: object) -> Verdict:
    samples = value if isinstance(value, list) else [value]
    direction = kw.pop("direction", Direction.HIGHER)
    policy = ReferencePolicy(**kw) if kw else REF  # type: ignore[arg-type]
    return decide(window, samples, policy=policy, direction=direction).verdict  # type: ignore[arg-type]


def test_reference_lines_are_median_minus_k_unscaled_mad() -> None:
    d = decide(WINDOW, [95.0], policy=REF)
    assert (d.baseline, d.warn_line, d.block_line) == (100.0, 97.5, 96.0)
    assert d.noise_pct == pytest.approx(1.0)  # the unscaled MAD, not 1.4826


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (100.0, Verdict.PASS),
        (97.5, Verdict.PASS),  # exactly on the warn line is not past it
        (97.49, Verdict.WARN),
        (96.0, Verdict.WARN),  # exactly on the block line is not past it
        (95.99, Verdict.BLOCK),  # past the block line and a 4 % drop
        (120.0, Verdict.PASS),  # the reference rule has no IMPROVED
    ],
)
def test_reference_exact_boundaries(value: float, verdict: Verdict) -> None:
    assert ref(value) is verdict


def test_reference_minimum_drop_boundary() -> None:
    tight = [100.0, 100.1, 99.9, 100.0, 100.1, 99.9, 100.0]  # MAD 0.1: block line 99.6
    d = decide(tight, [99.0], policy=REF)
    assert d.verdict is Verdict.WARN
    assert d.reasons == (Reason.BELOW_BLOCK_INSIDE_REGRESSION_FLOOR,)
    assert ref(97.0, tight) is Verdict.BLOCK  # exactly a 3 % drop: regression_pct >= 3 blocks
    assert ref(97.01, tight) is Verdict.WARN  # 2.99 % is inside the floor


def test_reference_noise_floor_widens_a_tight_window() -> None:
    tight = [100.0] * 7
    assert ref(97.0, tight) is Verdict.BLOCK
    assert ref(97.0, tight, noise_floor_pct=2.0) is Verdict.PASS  # lines at 95 and 92


def test_reference_lower_is_better_mirrors() -> None:
    latency = [10.0, 10.5, 9.5, 10.0, 10.5, 9.5, 10.0]  # MAD 0.5: warn 11.25, block 12.0
    lower = {"direction": Direction.LOWER}
    assert ref(11.25, latency, **lower) is Verdict.PASS
    assert ref(11.5, latency, **lower) is Verdict.WARN
    assert ref(12.0, latency, **lower) is Verdict.WARN
    assert ref(12.5, latency, **lower) is Verdict.BLOCK


def test_reference_window_limits_and_mean_of_samples() -> None:
    assert decide([], [50.0], policy=REF).reasons == (Reason.NO_BASELINE,)
    d = decide([100.0] * 4, [10.0], policy=REF)
    assert (d.verdict, d.reasons) == (Verdict.WARN, (Reason.INSUFFICIENT_WINDOW,))
    # only the nearest 20 samples count: 20 x 100 then far older 50s change nothing
    assert decide([100.0] * 20 + [50.0] * 30, [99.0], policy=REF).baseline == 100.0
    # several samples: the figure is their mean, as the seed's fps mean
    assert decide(WINDOW, [97.0, 94.0], policy=REF).value == 95.5
    # grouped runs are flattened nearest-first
    assert (
        decide([[100.0, 101.0], [99.0, 100.0], [101.0, 99.0, 100.0]], [95.0], policy=REF).block_line
        == 96.0
    )


def seed_rule(value: float, window: Sequence[float], floor_pct: float, direction: Direction) -> str:
    """The seed's oracle, transcribed as the reference gate wrote it (window capped at 20)."""
    window = list(window)[:20]
    if not window:
        return "WARN"
    median = statistics.median(window)
    mad = statistics.median(abs(v - median) for v in window)
    noise = max(mad, floor_pct / 100.0 * median)
    sign = -1.0 if direction is Direction.HIGHER else 1.0
    warn, block = median + sign * 2.5 * noise, median + sign * 4.0 * noise
    if len(window) < 5:
        return "WARN"
    change = (value - median) / median * 100.0
    regression = -change if direction is Direction.HIGHER else change

    def past(line: float) -> bool:
        return value < line if direction is Direction.HIGHER else value > line

    if past(block):
        return "BLOCK" if regression >= 3.0 else "WARN"
    return "WARN" if past(warn) else "PASS"


def test_reference_matches_the_seed_rule_on_random_cases() -> None:
    """Same verdict as the seed's rule on 3000 random windows, figures and floors."""
    rng = random.Random(11)
    for _ in range(3000):
        n = rng.randint(0, 25)
        spread = rng.choice([0.0, 0.2, 1.0, 5.0])
        window = [round(100 + rng.gauss(0, spread), rng.choice([0, 1, 2])) for _ in range(n)]
        value = round(100 + rng.gauss(-3, 4), rng.choice([0, 1]))
        floor = rng.choice([0.0, 0.0, 2.0])
        direction = rng.choice([Direction.HIGHER, Direction.LOWER])
        mine = decide(
            window, [value], policy=ReferencePolicy(noise_floor_pct=floor), direction=direction
        )
        assert mine.verdict.label == seed_rule(value, window, floor, direction), (
            window, value, floor, direction,
        )  # fmt: skip


# ----------------------------------------------------------------------------------------
# Numerical kit
# ----------------------------------------------------------------------------------------


def test_student_t_tail_and_quantile() -> None:
    assert t_isf(0.025, 10) == pytest.approx(2.2281388519649385, abs=1e-9)
    assert t_isf(0.001, 3) == pytest.approx(10.214531852407385, abs=1e-7)
    assert t_isf(0.05, 1e7) == pytest.approx(1.6448536269514722, abs=1e-9)
    assert t_sf(0.0, 4.0) == pytest.approx(0.5)
    assert t_sf(-2.0, 7.0) == pytest.approx(1 - t_sf(2.0, 7.0))


def test_mann_whitney_critical_values_are_exact() -> None:
    for m, n in [(3, 6), (4, 7), (2, 9), (5, 8)]:
        counts = Counter(
            sum(p - i for i, p in enumerate(pos)) for pos in itertools.combinations(range(m + n), m)
        )
        total = math.comb(m + n, m)
        for level in (0.01, 0.05, 0.2):
            cumulative, expected = 0, -1
            for u in range(m * n + 1):
                cumulative += counts[u]
                if cumulative > level * total:
                    break
                expected = u
            assert mwu_critical(m, n, level) == expected
    assert mann_whitney_u([1.0, 2.0, 3.0], [2.0, 0.0, 5.0]) == 1.5 + 0 + 3


def test_robust_scale_is_sigma_consistent_and_resists_outliers() -> None:
    rng = random.Random(3)
    ratios = []
    for _ in range(400):
        xs = [rng.gauss(0, 2.0) for _ in range(40)]
        mid = sorted(xs)[20]
        ratios.append(robust_scale([x - mid for x in xs])[0] / 2.0)
    assert sum(ratios) / len(ratios) == pytest.approx(1.0, abs=0.03)
    clean = [rng.gauss(0, 1) for _ in range(40)]
    assert robust_scale([*clean, 1e6])[0] < 1.5 * robust_scale(clean)[0]


def test_huber_location_is_bounded_by_outliers() -> None:
    assert huber_location([1.0, 2.0], 1.0) == 1.5
    assert huber_location([0.0, 0.1, -0.1, 0.05, 100.0], 0.1) < 0.1


# ----------------------------------------------------------------------------------------
# Calibrated policy
# ----------------------------------------------------------------------------------------


def test_too_few_samples_or_no_baseline_warn() -> None:
    d = decide([[100.0], [101.0]], [50.0, 50.0, 50.0], policy=NEW)
    assert (d.verdict, d.reasons[0]) == (Verdict.WARN, Reason.INSUFFICIENT_WINDOW)
    d = decide([100.0, 101.0, 99.0, 100.0], [50.0, 50.0, 50.0], policy=NEW)  # 4 < min_samples
    assert d.reasons[0] is Reason.INSUFFICIENT_WINDOW and d.verdict.level is Verdict.WARN
    assert decide([], [100.0], policy=NEW).reasons[0] is Reason.NO_BASELINE


def test_clean_regression_blocks_with_an_interval() -> None:
    rng = random.Random(5)
    window = gauss_runs(rng, 20, cv=0.01)
    d, samples = run_to_end(window, lambda: 94.0 * (1 + 0.01 * rng.gauss(0, 1)))
    assert d.verdict is Verdict.BLOCK and d.reasons[0] is Reason.REGRESSION
    assert len(samples) >= NEW.min_block_samples
    lo, hi = d.interval_pct  # type: ignore[misc]
    assert lo < d.effect_pct < hi < -3.0  # type: ignore[operator]
    assert -8.0 < d.effect_pct < -4.0  # type: ignore[operator]
    assert d.effect_text().startswith("\u2212") and "\u2026" in d.effect_text()
    assert d.t is not None and d.t_block is not None and d.t <= -d.t_block
    assert d.block_line is not None and d.value is not None and d.value < d.block_line


def test_unchanged_run_passes_on_the_initial_samples() -> None:
    rng = random.Random(6)
    window = gauss_runs(rng, 20)
    d, samples = run_to_end(window, lambda: 100.0 * (1 + 0.01 * rng.gauss(0, 1)))
    assert d.verdict is Verdict.PASS and len(samples) == NEW.initial_repeats


def test_never_blocks_before_min_block_samples_and_asks_for_more() -> None:
    rng = random.Random(7)
    window = gauss_runs(rng, 20)
    low = [80.0, 80.5]
    assert needs_more(window, low, policy=NEW)
    d = decide(window, low, policy=NEW)
    assert d.need_more and d.verdict is not Verdict.BLOCK
    final = decide(window, low, policy=NEW, final=True)  # the time budget ran out
    assert not final.need_more
    assert (final.verdict, final.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.UNCONFIRMED)
    assert decide(window, [*low, 80.2], policy=NEW).verdict is Verdict.BLOCK


def test_improvement_is_improved_and_pass_level() -> None:
    rng = random.Random(8)
    window = gauss_runs(rng, 20)
    d = decide(window, [110.0, 109.5], policy=NEW)
    assert d.verdict is Verdict.IMPROVED and d.verdict.level is Verdict.PASS
    assert d.effect_pct is not None and d.effect_pct > 8.0
    assert "baselines follow" in d.detail


def test_small_significant_drop_warns_under_the_minimum() -> None:
    rng = random.Random(9)
    window = gauss_runs(rng, 20, cv=0.002)  # 0.2 % noise: a 1.5 % drop is clear but small
    d, _ = run_to_end(window, lambda: 98.5 * (1 + 0.002 * rng.gauss(0, 1)))
    assert (d.verdict, d.reasons[0]) == (Verdict.WARN, Reason.SMALL_REGRESSION)


def test_noisy_window_gives_inconclusive_not_block() -> None:
    rng = random.Random(10)
    window = gauss_runs(rng, 20, cv=0.10)  # a noisy runner: 10 % per sample
    draws = iter([85.0, 86.0, 90.0, 87.0, 89.0, 88.0, 86.5, 88.5, 87.5, 88.0])
    d, samples = run_to_end(window, lambda: next(draws))  # first two past the warn line
    assert len(samples) == NEW.max_repeats  # the whole budget was spent confirming
    assert (d.verdict, d.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.UNRESOLVED)
    assert d.interval_pct is not None and d.interval_pct[1] > -3.0  # cannot exclude a small drop


def test_a_window_that_cannot_resolve_a_huge_drop_never_clears_it() -> None:
    # Three runs of the CPU demo on a loaded machine, 484k-726k env-steps/s: the runs
    # differ so widely that their shared noise is known with under one degree of freedom,
    # and the warn line lies beyond even a 95 % drop. Such a window cannot clear the run.
    window = [
        [641582.5, 726434.0, 695867.7],
        [513274.8, 508165.5, 683548.3],
        [484509.0, 485079.4, 612329.1],
    ]
    policy = replace(NEW, min_drop_pct=50.0, initial_repeats=3, max_repeats=3)
    run = [33073.4, 32376.6, 28197.8]
    d = decide(window, run, policy=policy, final=True)
    assert (d.verdict, d.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.UNRESOLVED)
    assert "cannot resolve drops under 100 %" in d.detail
    # With budget left, a blocking drop by its estimate asks for another sample first.
    more = replace(policy, max_repeats=6)
    assert decide(window, run, policy=more).need_more


def test_a_noisy_run_inside_its_window_is_cleared_short_of_the_warn_line() -> None:
    # 5 % noise a sample: a run of unchanged code often reads a few % low. Its samples sit
    # among the window's, so the window clears it; only one below the whole window is held.
    window = [[100.0 + 5.0 * ((i * 7 + j * 3) % 11 - 5) / 5 for j in range(2)] for i in range(20)]
    d = decide(window, [96.8, 95.5], policy=NEW, final=True)
    assert d.verdict is Verdict.PASS and d.effect_pct is not None and d.effect_pct < -3.0
    assert not decide(window, [96.8, 95.5], policy=NEW).need_more


def test_lower_is_better_mirrors() -> None:
    rng = random.Random(12)
    latency = gauss_runs(rng, 20, level=10.0)
    d = decide(latency, [10.7, 10.8, 10.6], policy=NEW, direction=Direction.LOWER)
    assert d.verdict is Verdict.BLOCK and d.effect_pct is not None and d.effect_pct > 5.0
    assert d.block_line is not None and d.block_line > 10.0
    d = decide(latency, [9.0, 9.1], policy=NEW, direction=Direction.LOWER)
    assert d.verdict is Verdict.IMPROVED and d.effect_pct is not None and d.effect_pct < -5.0


# ----------------------------------------------------------------------------------------
# Multimodal windows
# ----------------------------------------------------------------------------------------

DEMO = [39e6, 38e6, 18e6, 39e6, 17e6]  # pendulum/numpy, as issue 11 reports it


def test_demo_window_is_bimodal_and_the_low_mode_does_not_block() -> None:
    model = analyse_window(DEMO, policy=NEW)
    assert model.multimodal and len(model.modes) == 2
    centers = sorted(m.center for m in model.public_modes())
    assert centers[0] == pytest.approx(17.5e6, rel=0.01) and centers[1] == pytest.approx(
        39e6, rel=0.01
    )
    for run in ([17.2e6, 17.9e6], [38.8e6, 39.1e6], [16.1e6, 16.3e6, 16.0e6]):
        d = calibrated_decide(model, run, policy=NEW, final=True)
        assert d.verdict is not Verdict.BLOCK
        assert Reason.MULTIMODAL in d.reasons
    # the seed's rule blocks the low mode of the same window (what issue 11 saw)
    assert decide(DEMO, [16.1e6], policy=REF).verdict is Verdict.BLOCK


def test_a_run_between_the_modes_is_inconclusive_naming_the_cause() -> None:
    d = decide(DEMO, [28e6, 28.2e6, 27.9e6], policy=NEW, final=True)
    assert (d.verdict, d.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.BETWEEN_MODES)
    assert d.between_modes == 3 and "modes" in d.detail


def bimodal_runs(
    rng: random.Random, runs: int, level: float = 100.0, gap: float = 0.2
) -> list[list[float]]:
    """Runs of two samples; each sample is in the low mode with probability 0.3."""

    def sample() -> float:
        base = level * (1 - gap) if rng.random() < 0.3 else level
        return base * (1 + 0.01 * rng.gauss(0, 1))

    return [[sample(), sample()] for _ in range(runs)]


def test_bimodal_window_judges_each_sample_against_its_mode() -> None:
    rng = random.Random(13)
    window = bimodal_runs(rng, 20)
    model = analyse_window(window, policy=NEW)
    assert len(model.modes) == 2
    # an unchanged run that happens to land all in the low mode passes
    d = calibrated_decide(model, [80.3, 79.6, 80.1], policy=NEW)
    assert d.verdict is Verdict.PASS
    # a 6 % regression of both modes blocks, against the matching modes
    d = calibrated_decide(model, [94.0, 75.3, 93.8, 94.2], policy=NEW)
    assert d.verdict is Verdict.BLOCK and Reason.MULTIMODAL in d.reasons
    assert d.effect_pct == pytest.approx(-6.0, abs=1.0)
    # a unimodal rule with a robust spread blocks the low mode of the same window
    assert decide([v for run in window for v in run], [80.3], policy=REF).verdict is Verdict.BLOCK


def test_normal_and_heavy_tailed_windows_are_rarely_called_multimodal() -> None:
    rng = random.Random(14)
    calls = 0
    for _ in range(300):
        normal = [rng.gauss(0, 1) for _ in range(40)]
        heavy = [
            rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
            for _ in range(40)
        ]
        for xs in (normal, heavy):
            calls += (
                len(
                    find_modes(
                        xs,
                        separation=NEW.mode_separation,
                        min_share=NEW.min_mode_share,
                        max_modes=3,
                    )
                )
                > 1
            )
    assert calls <= 3


# ----------------------------------------------------------------------------------------
# Level shifts
# ----------------------------------------------------------------------------------------


def shifted_window(rng: random.Random, after: int, drop: float = 0.08) -> list[list[float]]:
    """Nearest-first: ``after`` runs at the new level, then 20 - after runs before it."""
    new = gauss_runs(rng, after, level=100.0 * (1 - drop))
    old = gauss_runs(rng, 20 - after)
    return new + old


def test_window_starts_after_a_landed_shift() -> None:
    rng = random.Random(15)
    window = shifted_window(rng, after=3)
    model = analyse_window(window, policy=NEW)
    assert model.shift is not None and model.shift.kept_runs == 3
    assert model.shift.change_pct == pytest.approx(-8.0, abs=1.5)
    assert model.runs_used == 3 and model.samples_used == 6
    d = calibrated_decide(model, [92.1, 91.8], policy=NEW)
    assert d.verdict is Verdict.PASS and Reason.LEVEL_SHIFT in d.reasons
    assert d.shift is not None and d.shift.kept_runs == 3
    # the seed's rule keeps blaming the commits after the regression landed
    assert decide(window, [92.0], policy=REF).verdict is Verdict.BLOCK


def test_a_regression_after_a_shift_is_judged_against_the_new_level() -> None:
    rng = random.Random(16)
    model = analyse_window(shifted_window(rng, after=6), policy=NEW)
    d, _ = run_to_end(model, lambda: 86.0 * (1 + 0.01 * rng.gauss(0, 1)))
    assert d.verdict is Verdict.BLOCK
    assert d.effect_pct == pytest.approx(-6.5, abs=1.5)  # against 92, not against 100


def test_one_confirmed_run_after_the_shift_is_enough_to_move_the_window() -> None:
    rng = random.Random(17)
    confirmed = [[90.0 * (1 + 0.01 * rng.gauss(0, 1)) for _ in range(5)]]  # a BLOCKed run
    model = analyse_window(confirmed + gauss_runs(rng, 19), policy=NEW)
    assert model.shift is not None and model.shift.kept_runs == 1


def test_just_after_a_shift_too_few_samples_is_inconclusive() -> None:
    rng = random.Random(18)
    window = [[70.0, 70.3], *gauss_runs(rng, 19)]  # a huge step on one two-sample run
    d = decide(window, [70.1, 70.2], policy=CalibratedPolicy(min_post_shift_samples=3))
    assert (d.verdict, d.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.SHIFT_SETTLING)


def test_a_single_outlier_sample_is_not_a_shift() -> None:
    rng = random.Random(19)
    window = gauss_runs(rng, 20)
    window[0] = [60.0, 100.2]
    assert analyse_window(window, policy=NEW).shift is None


# ----------------------------------------------------------------------------------------
# Calibration and the false-alarm budget
# ----------------------------------------------------------------------------------------


def test_calibrated_run_noise_widens_the_interval() -> None:
    rng = random.Random(20)
    window = gauss_runs(rng, 20)
    plain = decide(window, [97.0, 96.8, 97.2], policy=NEW)
    shared = decide(
        window,
        [97.0, 96.8, 97.2],
        policy=NEW,
        calibration=Calibration(noise_pct=1.0, df=200, run_noise_pct=1.5),
    )
    assert plain.interval_pct is not None and shared.interval_pct is not None
    assert shared.interval_pct[1] - shared.interval_pct[0] > 1.5 * (
        plain.interval_pct[1] - plain.interval_pct[0]
    )
    assert shared.run_noise_pct == pytest.approx(1.5, rel=0.01)


def test_unchanged_gaussian_runs_almost_never_block() -> None:
    """A seeded smoke test of the budget (the quality benchmark measures it properly)."""
    rng = random.Random(21)
    blocks = 0
    samples = 0
    for _ in range(1500):
        window = gauss_runs(rng, 20, cv=0.02)
        d, taken = run_to_end(window, lambda: 100.0 * (1 + 0.02 * rng.gauss(0, 1)))
        blocks += d.verdict is Verdict.BLOCK
        samples += len(taken)
    assert blocks <= 2  # 0.1 % of 1500 is 1.5
    assert samples / 1500 < 2.5


@pytest.mark.parametrize("direction", [Direction.HIGHER, Direction.LOWER])
def test_minimum_drop_is_a_percentage_of_the_metric_either_way(direction: Direction) -> None:
    rng = random.Random(22)
    window = gauss_runs(rng, 20, cv=0.0005)  # 0.05 % noise: every drop here is significant
    worse = (
        (lambda p: 100.0 * (1 - p / 100))
        if direction is Direction.HIGHER
        else (lambda p: 100.0 * (1 + p / 100))
    )
    under = decide(window, [worse(2.8)] * 3, policy=NEW, direction=direction)
    assert (under.verdict, under.reasons[0]) == (Verdict.WARN, Reason.SMALL_REGRESSION)
    over = decide(window, [worse(3.2)] * 3, policy=NEW, direction=direction)
    assert over.verdict is Verdict.BLOCK
    assert abs(over.effect_pct) == pytest.approx(3.2, abs=0.1)  # type: ignore[arg-type]
    assert over.resolution_pct == pytest.approx(3.0, abs=1e-9)  # the minimum, not the noise


def test_a_noiseless_window_blocks_a_real_drop_and_passes_an_equal_run() -> None:
    """A window of identical figures (a deterministic metric) has no noise to divide by."""
    flat = [[100.0, 100.0] for _ in range(10)]
    assert decide(flat, [100.0, 100.0], policy=NEW, final=True).verdict is Verdict.PASS
    blocked = decide(flat, [90.0, 90.0, 90.0], policy=NEW, final=True)
    assert blocked.verdict is Verdict.BLOCK and blocked.t == -math.inf


def test_figures_far_beyond_float_range_apart_give_an_infinite_change_not_an_error() -> None:
    d = decide([[1e-10, 1e-10]] * 10, [1e308, 1e308], policy=NEW, final=True)
    assert d.effect_pct == math.inf and d.verdict is Verdict.IMPROVED


def test_a_run_noise_floor_keeps_a_drifting_runner_from_blocking() -> None:
    """A shared runner moves whole runs; a young, calm window cannot show it (the floor does)."""
    rng = random.Random(23)
    calm = gauss_runs(rng, 5, cv=0.005)  # five runs recorded back to back, 0.5 % apart
    slow = [92.3, 92.0, 92.4]  # the machine's other load: the whole run 8 % down
    assert decide(calm, slow, policy=NEW, final=True).verdict is Verdict.BLOCK
    shared = CalibratedPolicy(run_noise_floor_pct=4.0)
    d = decide(calm, slow, policy=shared, final=True)
    assert d.verdict is not Verdict.BLOCK
    assert d.interval_pct is not None and d.interval_pct[0] < -10.0 < 0.0 < d.interval_pct[1]
    assert d.run_noise_pct == pytest.approx(4.0, rel=1e-6)
    # A drop far beyond what the runner's drift explains still blocks.
    assert decide(calm, [70.1, 70.4, 69.8], policy=shared, final=True).verdict is Verdict.BLOCK
