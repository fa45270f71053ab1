"""compare: two runs of a bucket judged with the gate's own estimators and thresholds."""

from __future__ import annotations

import math
import random

import pytest

from perfgate.config import Direction
from perfgate.judge.compare import MIN_SIDE_SAMPLES, Change, compare
from perfgate.judge.policies import CalibratedPolicy

POLICY = CalibratedPolicy()


def _noisy(level: float, n: int, cv: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, cv)) for _ in range(n)]


def test_a_clear_drop_is_worse_and_its_interval_brackets_it() -> None:
    found = compare(
        _noisy(100, 10, 0.01, 1), _noisy(90, 10, 0.01, 2), direction=Direction.HIGHER,
        policy=POLICY,
    )  # fmt: skip
    assert found.change is Change.WORSE
    assert found.interval_pct is not None
    low, high = found.interval_pct
    assert low < -10 < high < -3 and -13 < found.change_pct < -7


def test_direction_lower_reads_a_rise_as_worse_and_a_fall_as_better() -> None:
    slower = compare(_noisy(1.0, 10, 0.01, 3), _noisy(1.12, 10, 0.01, 4),
                     direction=Direction.LOWER, policy=POLICY)  # fmt: skip
    faster = compare(_noisy(1.0, 10, 0.01, 5), _noisy(0.88, 10, 0.01, 6),
                     direction=Direction.LOWER, policy=POLICY)  # fmt: skip
    assert (slower.change, faster.change) == (Change.WORSE, Change.BETTER)
    assert slower.ratio > 1 > faster.ratio


def test_a_tiny_change_with_a_tight_interval_is_the_same() -> None:
    quiet = CalibratedPolicy(min_run_noise=0.0)  # no shared-run noise: the interval is tight
    found = compare(_noisy(100, 12, 0.002, 7), _noisy(100.3, 12, 0.002, 8),
                    direction=Direction.HIGHER, policy=quiet)  # fmt: skip
    assert found.change is Change.SAME


def test_a_drop_inside_the_noise_is_unclear_not_same() -> None:
    found = compare(_noisy(100, 6, 0.06, 9), _noisy(95, 6, 0.06, 10),
                    direction=Direction.HIGHER, policy=POLICY)  # fmt: skip
    assert found.change is Change.UNCLEAR


def test_too_few_samples_a_side_never_make_a_call() -> None:
    few = MIN_SIDE_SAMPLES - 1
    found = compare([100.0] * few, [50.0] * 10, direction=Direction.HIGHER, policy=POLICY)
    assert found.change is Change.UNCLEAR and found.interval_pct is None
    assert "bench --repeats" in found.detail


def test_the_minimum_drop_holds_as_in_the_gate() -> None:
    # 1 % lower with almost no noise: significant, but under the 3 % minimum drop.
    a, b = _noisy(100, 10, 0.0005, 11), _noisy(99, 10, 0.0005, 12)
    quiet = CalibratedPolicy(min_run_noise=0.0)
    assert compare(a, b, direction=Direction.HIGHER, policy=quiet).change is not Change.WORSE


def test_bad_figures_are_refused() -> None:
    with pytest.raises(ValueError):
        compare([1.0, float("nan")], [1.0], direction=Direction.HIGHER, policy=POLICY)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([5e-324], [1e308]),
        ([5e-324] * 7, [1e308] * 7),
        ([1e308] * 8, [1e308] * 8),  # the median of an even count adds two figures
        ([1e-300] * 6, [1e300] * 6),
    ],
    ids=["one-a-side", "seven-a-side", "even-count-overflow", "six-a-side"],
)
def test_every_figure_is_finite_or_the_sides_are_not_comparable(
    a: list[float], b: list[float], direction: Direction
) -> None:
    found = compare(a, b, direction=direction, policy=POLICY)
    figures = [found.a, found.b, found.ratio, found.change_pct, *(found.interval_pct or ())]
    assert all(f is None or math.isfinite(f) for f in figures), found
    if None in figures[:4]:
        assert found.change is Change.NOT_COMPARABLE and "not comparable" in found.detail


def test_the_ratio_and_the_change_are_one_figure() -> None:
    a = [100.0, 100.4, 99.7, 100.2, 99.9, 100.1]
    b = [90.0, 90.3, 89.8, 90.1, 95.0, 89.9]  # one sample far from the rest
    for direction in (Direction.HIGHER, Direction.LOWER):
        found = compare(a, b, direction=direction, policy=POLICY)
        assert found.ratio is not None and found.change_pct is not None
        assert found.ratio == pytest.approx(1.0 + found.change_pct / 100.0)
        assert found.b == pytest.approx(found.a * found.ratio)


@pytest.mark.parametrize("contended", ["a", "b"])
def test_a_side_whose_samples_split_between_the_others_level_and_far_from_it_is_unclear(
    contended: str,
) -> None:
    """Four of six samples 40 % slow under contention read as a 35 % regression."""
    steady = _noisy(100, 10, 0.005, 11)
    # The two samples contention spared ran a little slow too: every rank says B is worse.
    split = [*_noisy(98.5, 2, 0.005, 12), *_noisy(60, 4, 0.005, 13)]
    a, b = (steady, split) if contended == "b" else (split, steady)
    found = compare(a, b, direction=Direction.HIGHER, policy=POLICY)
    assert found.change is Change.UNCLEAR
    side = contended.upper()
    assert f"{side}'s samples split: 2 at the other side's level, 4 about 40 % worse" in (
        found.detail
    )
    assert "the machine changed while it ran" in found.detail


@pytest.mark.parametrize("seed", range(40))
def test_a_real_drop_with_ordinary_noise_is_never_taken_for_a_split(seed: int) -> None:
    # A 5 % drop at 1.5 % noise: some samples reach A's level, none form a second group.
    found = compare(_noisy(100, 6, 0.015, seed), _noisy(95, 6, 0.015, 100 + seed),
                    direction=Direction.HIGHER, policy=POLICY)  # fmt: skip
    assert "split" not in found.detail
