"""A paired comparison stops 'settled' only when the paired test decided (R5)."""

from __future__ import annotations

from pathlib import Path

from perfgate.baselines.confirm import StoreWindows
from perfgate.config import load_config
from perfgate.judge.confirm import Confirmer
from perfgate.result import PairedRecord, PairedSample, PairedSide, PairedStatus, PairedStop
from perfgate.run.paired import measure_pairs, pair_order
from tests.factories import make_result


def confirmer_and_bucket(tmp_path: Path, max_pairs: int):  # type: ignore[no-untyped-def]
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ngate: {confirm: paired}\n"
        f"defaults: {{max_pairs: {max_pairs}}}\n"
        "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n",
        encoding="utf-8",
    )
    config = load_config(path)
    return Confirmer(config, StoreWindows(config, None, say=lambda message: None)), config.buckets[
        0
    ]


def run_pairs(tmp_path: Path, max_pairs: int, base: list[float], head: list[float]) -> PairedStop:
    confirmer, bucket = confirmer_and_bucket(tmp_path, max_pairs)
    result = make_result(bucket.id, samples=[100.0, 100.0, 100.0])
    figures = {PairedSide.BASE: iter(base), PairedSide.HEAD: iter(head)}

    def measure(side: PairedSide, pair: int, index: int) -> PairedSample:
        return PairedSample(sample_index=index, pair=pair, side=side, value=next(figures[side]))

    def record(taken: list[PairedSample]) -> PairedRecord:
        return PairedRecord(status=PairedStatus.MEASURED, max_pairs=max_pairs, samples=tuple(taken))

    _, stop = measure_pairs(
        max_pairs=max_pairs,
        budget_s=None,
        measure=measure,
        remeasure=lambda sample: False,
        wants_more=lambda taken: confirmer.needs_pair(bucket, result, record(list(taken))),
    )
    return stop


def test_a_comparison_still_undecided_at_its_last_pair_stopped_at_the_limit(
    tmp_path: Path,
) -> None:
    """Pairs that swing ±20 % cannot separate base and head in four pairs: not 'settled'."""
    base = [100.0] * 4
    head = [80.0, 120.0, 82.0, 118.0]
    assert run_pairs(tmp_path, 4, base, head) is PairedStop.MAX_PAIRS


def test_a_comparison_the_test_decided_is_settled(tmp_path: Path) -> None:
    """Quiet pairs 30 % apart: a confirmed regression within the pairs allowed."""
    base = [100.0, 100.2, 99.9, 100.1, 100.0, 99.8]
    head = [70.0, 70.1, 69.9, 70.2, 70.0, 69.9]
    assert run_pairs(tmp_path, 6, base, head) is PairedStop.SETTLED
    assert pair_order(0) == (PairedSide.BASE, PairedSide.HEAD)
