"""The bench's question after each sample: does the verdict need another one? (R5)

The bench owns the runner, so it re-measures a suspicious bucket there, locally and in
CI. It asks this module, which reads the bucket's windows from the baseline branch once
(read-only), analyses each once, and answers with the calibrated rule's ``need_more``:
another sample is taken while any metric that gates asks for one (each sample measures
them all), so a slower startup is confirmed even when the primary figure holds. The
gate later judges the recorded samples against the same windows with ``final=True`` and
so reaches the verdicts the bench's last look would have.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.baselines.store import BaselineStore, WindowKey, merge_base
from perfgate.config import PRIMARY, Bucket, Config, Metric
from perfgate.errors import GateMalfunction
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.oracle import policy_for, window_sample_limit
from perfgate.judge.stats import CalibratedPolicy, WindowModel, analyse_window, judge
from perfgate.result import Result


class WindowConfirmer:
    """Answers the bench's ``Confirm`` question from each bucket's window, read once per key."""

    def __init__(
        self,
        config: Config,
        store: BaselineStore | None,
        *,
        say: Callable[[str], None],
        calibration: NoiseCalibration | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.say = say
        # The gate's calibration (gate.calibration): bench and gate judge with one noise.
        self.calibration = calibration
        self._models: dict[WindowKey, WindowModel | None] = {}
        self._ends: tuple[str | None, str | None] | None = None
        self._unreadable = False

    def __call__(self, bucket: Bucket, result: Result) -> bool:
        """True when a gating metric's samples so far leave its verdict open."""
        return any(self._open(bucket, metric, result) for metric in bucket.all_metrics)

    def _open(self, bucket: Bucket, metric: Metric, result: Result) -> bool:
        """True when ``metric`` gates and the rule asks for another sample of it."""
        reading = result.all_metrics.get(metric.name)
        if not metric.gates or reading is None or not reading.samples:
            return False
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        if not isinstance(policy, CalibratedPolicy):
            return False  # the reference rule takes no confirmation samples
        model = self._model(bucket, metric, result, policy)
        if model is None:
            return False
        return judge(model, reading.sample_values(), policy=policy).need_more

    def _model(
        self, bucket: Bucket, metric: Metric, result: Result, policy: CalibratedPolicy
    ) -> WindowModel | None:
        """A metric's window, analysed; None when the baseline branch cannot be read."""
        key = WindowKey.for_result(result, metric.name)
        if key in self._models:
            return self._models[key]
        model = None
        if self.store is not None and not self._unreadable:
            try:
                window = self._read(bucket, key)
            except GateMalfunction as exc:
                # Confirming is worth a lot, but never a lost measurement: say so, go on.
                self._unreadable = True
                self.say(
                    f"cannot read the baseline window to confirm suspicious buckets ({exc}); "
                    "each bucket takes its planned repeats only"
                )
            else:
                measured = self.calibration.for_result(result) if self.calibration else None
                model = analyse_window(
                    window,
                    policy=policy,
                    direction=result.all_metrics[metric.name].direction,
                    # An A/A calibration measures the primary metric's noise.
                    calibration=(
                        measured.for_rule()
                        if measured is not None and metric.name == PRIMARY
                        else None
                    ),
                )
        self._models[key] = model
        return model

    def _read(self, bucket: Bucket, key: WindowKey) -> list[list[float]]:
        """A window's runs at the baseline tip, against this checkout's merge base."""
        assert self.store is not None
        if self._ends is None:
            tip = self.store.refresh()
            base = merge_base(self.store.repo, key.target_branch or None, self.store.remote)
            self._ends = (tip, base)
        tip, base = self._ends
        # The gate's limit: both read the same window.
        limit = window_sample_limit(self.config.gate, self.config.buckets)
        found = self.store.windows({bucket.id: key}, tip=tip, base=base, max_samples=limit)
        return found[bucket.id].runs()
