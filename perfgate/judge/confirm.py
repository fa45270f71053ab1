"""The bench's questions on a suspicious run: another sample? a paired comparison? (R5)

The bench owns the runner, so it confirms a suspicious bucket there, locally and in CI.
It asks this module, which reads the bucket's windows from the baseline branch once
(read-only) and analyses each once. Every sample measures every metric, so a question is
answered for the bucket: yes when any metric that gates asks.

* ``gate.confirm: repeat``: after each sample, the calibrated rule's ``need_more``.
* ``gate.confirm: paired`` (the default): after the repeats, whether the windows can clear
  the run; when one cannot (a BLOCK, an INCONCLUSIVE, or a blocking drop still inside its
  interval), the merge base is checked out in a throwaway worktree (as seeding does) with
  its own perfgate.yaml and benchmark, and after each pair the paired test
  (``judge.paired``) says whether it needs another. No merge base to measure (not a git
  checkout, no parent, another experiment there): the run confirms by repeats instead.

The gate later judges the recorded samples and pairs with ``final=True`` and so reaches
the verdicts the bench's last look would have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from perfgate.baselines.seed.plan import bucket_hashes
from perfgate.baselines.seed.replay import replay_checkout
from perfgate.baselines.store import BaselineStore, WindowKey, merge_base
from perfgate.config import PRIMARY, Bucket, Config, Metric, load_config
from perfgate.errors import GateMalfunction, GitError, PerfgateError
from perfgate.git import try_git
from perfgate.judge.calibration import NoiseCalibration
from perfgate.judge.oracle import (
    paired_policy_for,
    policy_for,
    window_run_limit,
    window_sample_limit,
)
from perfgate.judge.paired import paired_decide
from perfgate.judge.stats import (
    CalibratedPolicy,
    Decision,
    WindowModel,
    analyse_window,
    decide,
    judge,
)
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import PairedRecord, Result
from perfgate.run.drivers import get_driver
from perfgate.run.paired import BaseCheckout

# Window verdicts that say nothing about a change: nothing to confirm.
_UNJUDGED = frozenset({Reason.NO_BASELINE, Reason.INSUFFICIENT_WINDOW, Reason.NO_SAMPLES})


class WindowConfirmer:
    """Answers the bench's questions from each bucket's windows, read once per key."""

    def __init__(
        self,
        config: Config,
        store: BaselineStore | None,
        *,
        say: Callable[[str], None],
        calibration: NoiseCalibration | None = None,
        checkout: Path | None = None,
        work_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.say = say
        # The gate's calibration (gate.calibration): bench and gate judge with one noise.
        self.calibration = calibration
        # Where the bench runs (the change) and where a merge base may be checked out.
        self.checkout = checkout or Path.cwd()
        self.work_dir = work_dir or self.checkout / ".perfgate" / "work"
        self._windows: dict[WindowKey, list[list[float]] | None] = {}
        self._models: dict[WindowKey, WindowModel | None] = {}
        self._ends: tuple[str | None, str | None] | None = None
        self._unreadable = False

    # -- gate.confirm: repeat ---------------------------------------------------------------

    def __call__(self, bucket: Bucket, result: Result) -> bool:
        """True when a gating metric's samples so far leave its verdict open."""
        return any(self._open(bucket, metric, result) for metric in bucket.all_metrics)

    def _open(self, bucket: Bucket, metric: Metric, result: Result) -> bool:
        """True when ``metric`` gates and the rule asks for another sample of it."""
        reading = result.all_metrics.get(metric.name)
        if not metric.gates or reading is None:
            return False
        values = reading.sample_values(result.set_aside)
        if not values:
            return False  # every sample on an unfit machine: more would only cost the runner
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        if not isinstance(policy, CalibratedPolicy):
            return False  # the reference rule takes no confirmation samples
        model = self._model(bucket, metric, result, policy)
        return model is not None and judge(model, values, policy=policy).need_more

    # -- gate.confirm: paired ---------------------------------------------------------------

    def suspicious(self, bucket: Bucket, result: Result) -> bool:
        """True when a gating metric's window cannot clear the run: it would BLOCK, it is
        INCONCLUSIVE, or a drop of the minimum is still inside its interval."""
        return any(self._uncleared(bucket, metric, result) for metric in bucket.all_metrics)

    def _uncleared(self, bucket: Bucket, metric: Metric, result: Result) -> bool:
        reading = result.all_metrics.get(metric.name)
        if not metric.gates or reading is None:
            return False
        values = reading.sample_values(result.set_aside)
        policy = policy_for(bucket, self.config.gate, result.hardware.slug, metric)
        decision: Decision
        if isinstance(policy, CalibratedPolicy):
            model = self._model(bucket, metric, result, policy)
            if model is None:
                return False
            decision = judge(model, values, policy=policy, final=True)
        else:
            runs = self._window(bucket, metric, result)
            if runs is None:
                return False
            decision = decide(runs, values, direction=reading.direction, policy=policy)
        if decision.reasons and decision.reasons[0] in _UNJUDGED:
            return False
        if decision.verdict in (Verdict.BLOCK, Verdict.INCONCLUSIVE):
            return True
        if isinstance(policy, CalibratedPolicy):
            return decision.verdict is not Verdict.IMPROVED and decision.drop_possible
        return decision.verdict is Verdict.WARN  # the reference rule: past its warn line

    @contextmanager
    def base(self, bucket: Bucket, result: Result) -> Iterator[BaseCheckout | str]:
        """The merge base checked out with its own bucket, or why it cannot be measured."""
        repo = try_git("rev-parse", "--show-toplevel", cwd=self.checkout)
        if repo is None:
            yield "not a git checkout, so there is no merge base to measure"
            return
        top = Path(repo).resolve()
        commit, why = self._base_commit(top, result)
        if commit is None:
            yield why
            return
        try:
            where = self.checkout.resolve().relative_to(top)
            config_path: Path | None = (self.checkout / self.config.path).resolve().relative_to(top)
        except ValueError:
            where, config_path = Path(), None
        # The base gets what the change's checkout has: its LFS content (the assets) too.
        lfs = get_driver(bucket.driver).needs_lfs
        with ExitStack() as stack:
            try:
                checkout = replay_checkout(top, commit, self.work_dir / "paired", lfs=lfs)
                worktree = stack.enter_context(checkout)
            except GitError as exc:
                yield f"the merge base {commit[:12]} cannot be checked out like the change: {exc}"
                return
            found = self._base_bucket(bucket, result, worktree, config_path)
            if isinstance(found, str):
                yield found
            else:
                yield BaseCheckout(commit=commit, checkout=worktree / where, bucket=found)

    def wants_more(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        """After each pair: is the paired test of any gating metric still undecided?

        Undecided, not "may take another": at the last pair allowed the test is still
        undecided, and the bench then reports the limit, never a settled comparison.
        """
        hardware = result.hardware.slug
        return any(
            paired_decide(
                paired.pairs(metric.name),
                direction=result.all_metrics[metric.name].direction,
                policy=paired_policy_for(bucket, self.config.gate, hardware, metric),
            ).reason
            is Reason.PAIRED_UNRESOLVED
            for metric in bucket.all_metrics
            if metric.gates and metric.name in result.all_metrics
        )

    def _base_commit(self, top: Path, result: Result) -> tuple[str | None, str]:
        """The commit to measure beside the change, or None and why there is none.

        It is the merge base with the target branch; when the change is the merge base
        itself (a push to the target, a clean checkout of it), its first parent; with
        uncommitted changes on the merge base, HEAD.
        """
        head = try_git("rev-parse", "HEAD", cwd=top)
        if head is None:
            return None, "this checkout has no commit yet"
        remote = self.store.remote if self.store is not None else None
        base = merge_base(top, result.source.target_branch or None, remote) or head
        if base != head:
            return base, ""
        if try_git("status", "--porcelain", "--untracked-files=no", cwd=top):
            return head, ""
        parent = try_git("rev-parse", "--verify", "--quiet", "HEAD^1", cwd=top)
        return parent, "" if parent else f"{head[:12]} has no parent commit to compare with"

    def _base_bucket(
        self, bucket: Bucket, result: Result, worktree: Path, config_path: Path | None
    ) -> Bucket | str:
        """The bucket as the merge base declares it, or why it cannot be compared."""
        if config_path is None:
            base_config = self.config  # a config outside the repository: every commit uses it
        else:
            path = worktree / config_path
            if not path.is_file():
                return f"the merge base has no {config_path}"
            try:
                base_config = load_config(path)
            except PerfgateError as exc:
                return f"the merge base's {config_path} is not usable: {exc}"
        found = next((b for b in base_config.buckets if b.id == bucket.id), None)
        if found is None:
            return f"the merge base's perfgate.yaml has no bucket {bucket.id}"
        if bucket_hashes(found) != (result.identity.launch_hash, result.identity.benchmark_hash):
            return "the merge base runs another experiment (its launch or benchmark hash differs)"
        return found

    # -- the windows ------------------------------------------------------------------------

    def _model(
        self, bucket: Bucket, metric: Metric, result: Result, policy: CalibratedPolicy
    ) -> WindowModel | None:
        """A metric's window, analysed; None when the baseline branch cannot be read."""
        key = WindowKey.for_result(result, metric.name)
        if key not in self._models:
            runs = self._window(bucket, metric, result)
            measured = self.calibration.for_result(result) if self.calibration else None
            if measured is not None and runs is not None and measured.beyond(runs, policy):
                measured = None  # as the gate judges it: by the window's own noise
            self._models[key] = (
                None
                if runs is None
                else analyse_window(
                    runs,
                    policy=policy,
                    direction=result.all_metrics[metric.name].direction,
                    # An A/A calibration measures the primary metric's noise.
                    calibration=(
                        measured.for_rule()
                        if measured is not None and metric.name == PRIMARY
                        else None
                    ),
                )
            )
        return self._models[key]

    def _window(self, bucket: Bucket, metric: Metric, result: Result) -> list[list[float]] | None:
        """A metric's window runs (None when the baseline branch cannot be read)."""
        key = WindowKey.for_result(result, metric.name)
        if key in self._windows:
            return self._windows[key]
        runs = None
        if self.store is not None and not self._unreadable:
            try:
                runs = self._read(bucket, key)
            except GateMalfunction as exc:
                # Confirming is worth a lot, but never a lost measurement: say so, go on.
                self._unreadable = True
                self.say(
                    f"cannot read the baseline window to confirm suspicious buckets ({exc}); "
                    "each bucket takes its planned repeats only"
                )
        self._windows[key] = runs
        return runs

    def _read(self, bucket: Bucket, key: WindowKey) -> list[list[float]]:
        """A window's runs at the baseline tip, against this checkout's merge base."""
        assert self.store is not None
        if self._ends is None:
            tip = self.store.refresh()
            base = merge_base(self.store.repo, key.target_branch or None, self.store.remote)
            self._ends = (tip, base)
        tip, base = self._ends
        # The gate's limit: both read the same window.
        gate = self.config.gate
        found = self.store.windows(
            {bucket.id: key},
            tip=tip,
            base=base,
            max_samples=window_sample_limit(gate, self.config.buckets),
            max_runs=window_run_limit(gate),
        )
        return found[bucket.id].runs()
