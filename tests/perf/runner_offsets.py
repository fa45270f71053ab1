"""The runner-offset suite of ``nox -s quality``: confirmation off, by repeats, and paired.

A shared GPU pool has runners that differ by up to 5 % (the runner-qualification limits
tolerate that) and GPUs that throttle now and then. Each series here runs on a pool of
``RUNNERS`` runners with fixed offsets drawn in [-5 %, +5 %]; every bucket run lands on one
of them at random, and its samples carry that runner's offset plus sample noise. Now and
then (``THROTTLE_P`` per sample) a sample runs on a throttled GPU, 15-35 % slow, and
admission control sees it: it is measured again while the run's budget lasts (3), else set
aside. Windows hold what pushes publish: each run's admitted samples.

Modes, all with the calibrated rule and admission control:

* ``off``: the two repeats against the window, nothing more;
* ``repeat``: re-measured on the same runner while the rule asks, up to 10 samples;
* ``paired``: the repeats against the window; when it cannot clear the run (BLOCK,
  INCONCLUSIVE, or a blocking drop still inside its interval), the merge base and the change
  alternately on the same runner (A B, B A, ...) up to 16 pairs, and the paired test decides;
* ``paired-noadm``: paired without admission control (throttled samples are kept).

The merge base of the commit that drops is the level before the drop; of every later commit,
the dropped level (the regression landed): paired A/B can only catch the drop at its own
commit, and it clears every later one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from perfgate.judge.calibrated import calibrated_decide
from perfgate.judge.paired import PairedPolicy, paired_decide, settled_decision
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import analyse_window

RUNNERS = 8
OFFSET = 0.05  # runner offsets uniform in [-5 %, +5 %]
THROTTLE_P = 0.03  # share of samples taken on a throttled GPU
THROTTLE_SLOW = (0.15, 0.35)  # how much slower a throttled sample is
REMEASURE = 3  # admission control's re-measures per bucket run
MODES = ("off", "repeat", "paired", "paired-noadm")
_UNJUDGED = frozenset({Reason.NO_BASELINE, Reason.INSUFFICIENT_WINDOW, Reason.NO_SAMPLES})


@dataclass(kw_only=True)
class Outcome:
    """Counts of one mode on one suite."""

    unchanged: int = 0
    false_alarms: int = 0
    drops: dict[float, int] = field(default_factory=dict)
    detected: dict[float, int] = field(default_factory=dict)
    collateral: int = 0
    points: int = 0
    samples: int = 0
    paired_runs: int = 0
    inconclusive: int = 0

    def add(self, other: Outcome) -> None:
        """Accumulate another outcome."""
        for name in ("unchanged", "false_alarms", "collateral", "points", "samples",
                     "paired_runs", "inconclusive"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for target, source in ((self.drops, other.drops), (self.detected, other.detected)):
            for d, v in source.items():
                target[d] = target.get(d, 0) + v

    @property
    def fa(self) -> float:
        """BLOCKs per unchanged bucket run."""
        return self.false_alarms / max(self.unchanged, 1)

    def detection(self, drop: float) -> float:
        """Share of drops of this size BLOCKed at the change or one of the next two points."""
        return self.detected.get(drop, 0) / max(self.drops.get(drop, 0), 1)


class Runner:
    """One bucket run's samples on one runner, through admission control."""

    def __init__(self, rng: np.random.Generator, offset: float, cv: float, admit: bool) -> None:
        self.rng, self.offset, self.cv, self.admit = rng, offset, cv, admit
        self.budget = REMEASURE
        self.taken = 0

    def sample(self, level: float) -> float | None:
        """One figure at ``level`` (None: a throttled sample set aside, budget spent)."""
        while True:
            self.taken += 1
            value = level * self.offset * math.exp(self.cv * self.rng.standard_normal())
            if self.rng.random() >= THROTTLE_P:
                return value
            slow = value * (1.0 - self.rng.uniform(*THROTTLE_SLOW))
            if not self.admit:
                return slow  # nobody looked: the throttled figure is kept
            if self.budget <= 0:
                return None
            self.budget -= 1


def _point(
    mode: str,
    rng: np.random.Generator,
    model: object,
    head: float,
    base: float,
    offset: float,
    cv: float,
    policies: dict[str, CalibratedPolicy],
    paired_policy: PairedPolicy,
) -> tuple[Verdict, list[float], int, bool]:
    """One bucket run: its verdict, the samples it publishes, samples taken, and whether
    it paired."""
    runner = Runner(rng, offset, cv, admit=mode != "paired-noadm")
    # Only ``off`` confirms nothing: the others may take up to 10 samples (paired falls
    # back to repeats without a merge base), and perfgate spends the rate over those looks.
    policy = policies["first" if mode == "off" else "repeat"]
    kept = [v for v in (runner.sample(head) for _ in range(policy.initial_repeats)) if v]
    assert model is not None
    if mode == "repeat":
        while len(kept) and calibrated_decide(model, kept, policy=policy).need_more:  # type: ignore[arg-type]
            value = runner.sample(head)
            if value is not None:
                kept.append(value)
            if runner.taken >= policy.max_repeats + REMEASURE:
                break
    decision = calibrated_decide(model, kept, policy=policy, final=True)  # type: ignore[arg-type]
    if not mode.startswith("paired") or not kept or decision.reasons[0] in _UNJUDGED:
        return decision.verdict, kept, runner.taken, False
    suspicious = decision.verdict in (Verdict.BLOCK, Verdict.INCONCLUSIVE) or (
        decision.verdict is not Verdict.IMPROVED and decision.drop_possible
    )
    if not suspicious:
        return decision.verdict, kept, runner.taken, False
    pairs: list[tuple[float, float]] = []
    for index in range(paired_policy.max_pairs):
        order = ("base", "head") if index % 2 == 0 else ("head", "base")
        got = {side: runner.sample(base if side == "base" else head) for side in order}
        if got["base"] is not None and got["head"] is not None:
            pairs.append((got["base"], got["head"]))
        if not paired_decide(pairs, policy=paired_policy).need_more:
            break
    verdict = settled_decision(pairs, policy=paired_policy).verdict
    return verdict, kept, runner.taken, True


def run_series(
    cv: float, seed: int, drop: float, *, burn_in: int, points: int, change_range: tuple[int, int]
) -> dict[str, Outcome]:
    """Stream one series through every mode: the same pool, runners, drop and change point."""
    rng = np.random.default_rng(seed)
    offsets = np.exp(rng.uniform(math.log1p(-OFFSET), math.log1p(OFFSET), RUNNERS))
    change = int(rng.integers(*change_range)) if drop > 0 else points + 1
    schedule = rng.integers(0, RUNNERS, burn_in + points)
    policies = {
        "first": CalibratedPolicy(initial_repeats=2, max_repeats=2),
        "repeat": CalibratedPolicy(initial_repeats=2, max_repeats=10),
    }
    paired_policy = PairedPolicy(max_pairs=16)
    out: dict[str, Outcome] = {}
    for mode_index, mode in enumerate(MODES):
        # Each mode draws its own noise from the same seed path: paired comparisons.
        noise = np.random.default_rng((seed, mode_index))
        outcome = Outcome(drops={drop: 1} if drop else {}, detected={drop: 0} if drop else {})
        history: list[list[float]] = []
        for i in range(burn_in + points):
            point = i - burn_in
            head = 100.0 * (1.0 - drop if point >= change else 1.0)
            base = 100.0 * (1.0 - drop if point > change else 1.0)
            offset = float(offsets[schedule[i]])
            if point < 0:
                runner = Runner(noise, offset, cv, admit=mode != "paired-noadm")
                history.append([v for v in (runner.sample(head) for _ in range(2)) if v])
                continue
            policy = policies["first" if mode == "off" else "repeat"]
            model = analyse_window(history[::-1][: policy.max_runs], policy=policy)
            verdict, kept, taken, paired = _point(
                mode, noise, model, head, base, offset, cv, policies, paired_policy
            )
            history.append(kept)
            outcome.points += 1
            outcome.samples += taken
            outcome.paired_runs += paired
            outcome.inconclusive += verdict is Verdict.INCONCLUSIVE
            block = verdict is Verdict.BLOCK
            if point < change:
                outcome.unchanged += 1
                outcome.false_alarms += block
            elif block and point <= change + 2 and drop and outcome.detected[drop] == 0:
                outcome.detected[drop] = 1
            elif block:
                outcome.collateral += 1
        out[mode] = outcome
    return out
