"""A paired comparison's bill: both sides' launches, the base's warm-up, waits, its checkout."""

from __future__ import annotations

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
from perfgate.run.bucket_result import paired_spend


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
