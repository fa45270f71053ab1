"""A bucket run's bill by kind: its samples, warm-ups, retries, re-measures, confirmation, and
a paired comparison's both sides, the base's warm-up, waits and checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.result import (
    AdmissionStatus,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    SampleAdmission,
    Spend,
    SpendKind,
    SpendLine,
)
from perfgate.run.bucket_result import paired_spend, run_spend
from perfgate.run.bundle import MetricStats
from perfgate.run.drivers.base import Measurement
from perfgate.run.execution import AttemptRecord, ProcessOutcome
from perfgate.run.layout import SampleLayout
from perfgate.run.sample import SampleRun


def sample(index: int, side: PairedSide, wall_s: float, **more: object) -> PairedSample:
    return PairedSample(sample_index=index, pair=index // 2, side=side, value=100.0,
                        wall_s=wall_s, **more)  # type: ignore[arg-type]  # fmt: skip


def test_the_bases_cold_cache_is_a_warm_up_and_the_rest_of_the_time_its_checkout() -> None:
    waited = SampleAdmission(sample_index=2, status=AdmissionStatus.ADMITTED, waited_s=5.0)
    record = PairedRecord(
        status=PairedStatus.MEASURED,
        base_commit="a" * 40,
        samples=(
            # The base's first launch found its cache cold: a warm-up of 50 s, then 60 s.
            sample(0, PairedSide.BASE, 110.0, launches=2, warmup_s=50.0),
            sample(1, PairedSide.HEAD, 60.0),
            sample(2, PairedSide.HEAD, 60.0, admission=waited),
            sample(3, PairedSide.BASE, 60.0),
        ),
        wall_s=330.0,  # 290 s of launches, 5 s waiting, 35 s checking out the merge base
    )
    spend = paired_spend(record)
    assert spend.of(SpendKind.PAIR) == SpendLine(launches=4, seconds=240.0)
    assert spend.of(SpendKind.WARMUP) == SpendLine(launches=1, seconds=50.0)
    assert spend.of(SpendKind.WAIT) == SpendLine(seconds=5.0)
    assert spend.of(SpendKind.BASE_CHECKOUT) == SpendLine(seconds=35.0)
    assert spend.seconds == pytest.approx(record.wall_s)
    assert spend.launches == 5


def test_spends_add_kind_by_kind_and_read_back_from_their_json() -> None:
    one = Spend(lines={SpendKind.MEASURE: SpendLine(launches=1, seconds=60.0)})
    two = Spend(lines={SpendKind.MEASURE: SpendLine(launches=2, seconds=100.5),
                       SpendKind.SETUP: SpendLine(seconds=30.0)})  # fmt: skip
    both = one + two
    assert both.of(SpendKind.MEASURE) == SpendLine(launches=3, seconds=160.5)
    assert (both.seconds, both.launches) == (190.5, 3)
    assert Spend.from_json(both.to_json()) == both
    assert both.to_json()["seconds"] == 190.5


def test_time_spent_on_a_merge_base_that_could_not_be_measured_is_billed_as_its_checkout() -> None:
    unavailable = PairedRecord(status=PairedStatus.UNAVAILABLE, reason="no merge base",
                               wall_s=12.5)  # fmt: skip
    assert paired_spend(unavailable).lines == {SpendKind.BASE_CHECKOUT: SpendLine(seconds=12.5)}


def _sample(index: int, *walls: float, warmup: bool = False) -> SampleRun:
    """A sample whose attempts took ``walls`` (the first a warm-up when ``warmup``)."""
    records = [
        AttemptRecord(
            number=max(1, n) if warmup else n + 1,  # a warm-up shares its attempt's number
            outcome=ProcessOutcome(exit_code=0, timed_out=False, wall_s=wall, log_tail="",
                                   phase=None),
            reading=Measurement(stats=MetricStats(value=100.0)),
            warmup=warmup and n == 0,
        )
        for n, wall in enumerate(walls)
    ]  # fmt: skip
    admission = SampleAdmission(sample_index=index, status=AdmissionStatus.ADMITTED)
    return SampleRun(
        index=index,
        records=records,
        layout=SampleLayout(work_root=Path("w"), run_key="local", stem="b", index=index),
        admission=admission,
    )


def test_each_launch_is_billed_as_what_the_allowance_charged_it_for() -> None:
    """The plan's launch (and its warm-up), a retry, the sample taken again for one set
    aside (the re-measure, not the one set aside), and confirmation past the repeats."""
    samples = [
        _sample(0, 30.0, 60.0, warmup=True),  # a cold cache's warm-up, then the sample
        _sample(1, 60.0),  # set aside by admission control ...
        _sample(2, 61.0),  # ... and taken again: the re-measure
        _sample(3, 5.0, 62.0),  # confirmation past the repeats, its first attempt retried
    ]
    spend = run_spend(samples, replaced=[1], repeats=2, paired=None)
    assert spend.of(SpendKind.WARMUP) == SpendLine(launches=1, seconds=30.0)
    assert spend.of(SpendKind.MEASURE) == SpendLine(launches=2, seconds=120.0)
    assert spend.of(SpendKind.REMEASURE) == SpendLine(launches=1, seconds=61.0)
    assert spend.of(SpendKind.CONFIRM) == SpendLine(launches=1, seconds=5.0)
    assert spend.of(SpendKind.RETRY) == SpendLine(launches=1, seconds=62.0)
