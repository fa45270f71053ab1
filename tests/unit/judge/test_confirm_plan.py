"""The bench's pair plan (judge/confirm.py): pairs that cannot tell the drop worth
confirming may still tell the larger drop the window reads, and are then taken."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from pathlib import Path

from perfgate.config import Bucket, load_config
from perfgate.judge.confirm import Confirmer, RecordedWindow
from perfgate.judge.runner_offsets import WindowRunners
from perfgate.result import Result
from tests.factories import make_result


class Window:
    """Twenty stored runs of three samples: 3 % noise between runs, 2 % within one."""

    def __init__(self) -> None:
        rng = random.Random(7)
        self._runs = [
            [100.0 * math.exp(0.03 * level + 0.02 * rng.gauss(0, 1)) for _ in range(3)]
            for level in [rng.gauss(0, 1) for _ in range(20)]
        ]

    def runs(self) -> Sequence[Sequence[float]]:
        return self._runs

    def runners(self) -> WindowRunners:
        return WindowRunners(names=tuple(None for _ in self._runs), fitted=None)

    def launch_seconds(self) -> list[float]:
        return [14 * 60.0] * 10


class Windows:
    """The one window for every metric; no accepted change."""

    def __init__(self) -> None:
        self.window = Window()

    def key(self, result: Result, metric: str) -> Hashable:
        return metric

    def read(
        self, bucket: Bucket, keys: Sequence[Hashable]
    ) -> dict[Hashable, RecordedWindow | None]:
        return dict.fromkeys(keys, self.window)

    def known_shift(self, bucket: Bucket, metric: str, window: RecordedWindow) -> int | None:
        return None


def test_pairs_are_planned_for_the_drop_the_window_reads(tmp_path: Path) -> None:
    """A 90-minute pair budget at 14 minutes a launch affords 3 pairs: too few to BLOCK a
    5 % drop at this noise (4), enough for the 10 % the window reads (3)."""
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\ngate: {confirm: paired, confirm_drop_pct: 5}\n"
        "defaults: {max_pairs: 16, pair_budget_minutes: 90, launch_minutes: 14}\n"
        "buckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n",
        encoding="utf-8",
    )
    config = load_config(path)
    bucket = config.buckets[0]
    confirmer = Confirmer(config, Windows())
    deep = make_result(bucket.id, samples=[90.0 * 1.01, 90.0 * 0.99])
    plan = confirmer.pair_plan(bucket, deep, left_minutes=None)
    assert plan.pairs == 3 and not plan.skipped
    # A run 4 % low: the pairs would have to tell 5 %, which 3 cannot; none is taken.
    shallow = make_result(bucket.id, samples=[96.0 * 1.01, 96.0 * 0.99])
    plan = confirmer.pair_plan(bucket, shallow, left_minutes=None)
    assert plan.pairs == 0
    assert plan.skipped is not None and "5 % drop" in plan.skipped
