"""The bench's confirmer's windows on the baseline branch: each read once, read-only.

``judge.confirm`` answers the bench's questions on a suspicious run (pure); this reads the
windows it answers them on from the store, with the history runner offsets are learned
from, and the recorded runs a confirmation budget is checked against (R5, R17).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Sequence

from perfgate.baselines.acks import AcceptedLevel, accepted_levels, kept_runs, read_acks
from perfgate.baselines.samples import Window, WindowKey, sample_path
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import hardware_partitions
from perfgate.config import PRIMARY, Bucket, Config, Direction
from perfgate.errors import GateMalfunction
from perfgate.judge import budget_check
from perfgate.judge.bucket_policy import (
    fitted_window_depth,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.confirm import RecordedWindow
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.window import analyse_window
from perfgate.result import Result
from perfgate.util.git import merge_base

# Recorded runs of a bucket read to learn its noise and launch time.
_RECORDED_RUNS = 100


class StoreWindows:
    """The confirmer's windows (``judge.confirm.WindowSource``) on the baseline branch: each
    read at one tip, against this checkout's merge base, with the gate's limits."""

    def __init__(
        self, config: Config, store: BaselineStore | None, *, say: Callable[[str], None]
    ) -> None:
        self.config = config
        self.store = store
        self.say = say
        self._ends: tuple[str | None, str | None] | None = None
        self._levels: tuple[AcceptedLevel, ...] | None = None
        self._unreadable = False

    def key(self, result: Result, metric: str) -> Hashable:
        """The store's key of a metric's window."""
        return WindowKey.for_result(result, metric)

    def read(
        self, bucket: Bucket, keys: Sequence[Hashable]
    ) -> dict[Hashable, RecordedWindow | None]:
        """Several metrics' windows and histories in one read of the store (None each when
        the baseline branch cannot be read)."""
        if self.store is None or self._unreadable:
            return dict.fromkeys(keys)
        try:
            return dict(self._read(keys))
        except GateMalfunction as exc:
            # Confirming is worth a lot, but never a lost measurement: say so, go on.
            self._unreadable = True
            self.say(
                f"cannot read the baseline window to confirm suspicious buckets ({exc}); "
                "each bucket takes its planned repeats only"
            )
            return dict.fromkeys(keys)

    def known_shift(self, bucket: Bucket, metric: str, window: RecordedWindow) -> int | None:
        """Where an accepted change starts the window's level, from the acknowledgements on
        the baseline branch at the tip the window was read at (as the gate reads them)."""
        assert isinstance(window, Window)
        if self.store is None or self._ends is None:
            return None
        if self._levels is None:
            tip, base = self._ends
            acks, _ = read_acks(self.store.repo, tip)
            self._levels = accepted_levels(self.store.repo, acks, base)
        return kept_runs(self._levels, bucket.id, metric, window.run_commits())

    def _read(self, keys: Sequence[Hashable]) -> dict[Hashable, RecordedWindow | None]:
        """Windows and their histories at the baseline tip, against this checkout's merge base."""
        assert self.store is not None
        wanted = {key: key for key in keys if isinstance(key, WindowKey)}
        if self._ends is None:
            first = next(iter(wanted.values()))
            base = merge_base(self.store.repo, first.target_branch or None, self.store.remote)
            self._ends = (self.store.refresh(), base)
        tip, base = self._ends
        # The gate's limit: both read the same window and history.
        gate = self.config.gate
        found = self.store.windows(
            wanted,
            tip=tip,
            base=base,
            max_samples=window_sample_limit(gate, self.config.buckets, self.config.alerts),
            max_runs=window_run_limit(gate),
            fitted=fitted_window_depth(gate, self.config.buckets, self.config.alerts),
        )
        return {key: window for key, window in found.items()}


def recorded_runs(store: BaselineStore | None, buckets: Sequence[Bucket]) -> budget_check.Recorded:
    """Per bucket and per hardware it was recorded on: its launch minutes from recorded
    durations and its recorded runs analysed (newest experiment, primary metric). Each
    runner pool is checked against its own recordings."""
    if store is None:
        return {}
    tip = store.refresh()
    if tip is None:
        return {}
    found: dict[str, list[budget_check.RecordedRuns]] = {}
    for hardware in hardware_partitions(store.repo, tip):
        paths = {sample_path(hardware, b.task, b.backend_key): b for b in buckets}
        for path, samples in store.read(paths, tip).items():
            primary = [s for s in samples if s.metric == PRIMARY]
            if not primary:
                continue
            newest = primary[-1].launch_hash
            mine = [s for s in primary if s.launch_hash == newest]
            runs: dict[tuple[str, str], list[float]] = {}
            for sample in mine:
                runs.setdefault((sample.commit, sample.timestamp), []).append(sample.value)
            nearest = list(runs.values())[::-1][:_RECORDED_RUNS]
            walls = [s.wall_s for s in mine[-10 * _RECORDED_RUNS :] if s.wall_s]
            direction = Direction(mine[-1].direction)
            model = analyse_window(nearest, policy=CalibratedPolicy(max_runs=_RECORDED_RUNS),
                                   direction=direction)  # fmt: skip
            launch = statistics.median(walls) / 60.0 if walls else None
            found.setdefault(paths[path].id, []).append(
                budget_check.RecordedRuns(launch_minutes=launch, hardware=hardware, model=model)
            )
    return found
