"""Compare two runs of one bucket, asv-compare style, with the gate's own statistics. Pure.

Each side is a set of samples (a run's repeats, or every sample a commit has on the
baseline branch). The change is B against A in log space, so it is relative and one code
path serves both directions. The call is made with the estimators and thresholds the
calibrated rule (``judge.calibrated``) uses: a robust, sigma-consistent scale pooled over both
sides, Huber locations, a Student-t threshold at the configured false-alarm rate, a
Mann-Whitney rank test that must agree, the minimum drop, and the noise a whole run shares
(each side is a run of its own, on its own machine state). Too few samples say so.

Two sides measured alternately on one machine (``compare --measure``) are pairs instead,
judged by the paired test on their ratios (``compare_pairs``). Two result sets measured
apart carry what their machine was like (``SetState``): ``time_apart`` says when they do
not overlap, ``machine_moved`` what their admission records and hardware show changed, and
a side whose samples split around the other's level shows a machine that changed as it ran.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from perfgate.config import Direction
from perfgate.judge.goodness import from_g, pct_of_g, to_g
from perfgate.judge.numerics import (
    huber_location,
    location_var,
    mann_whitney_u,
    mwu_critical,
    robust_scale,
    t_isf,
)
from perfgate.judge.paired import PairedPolicy, paired_decide
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.verdicts import Verdict
from perfgate.result import AdmissionStatus, Result

#: Fewer samples a side cannot make a call: the rank test the gate requires cannot reach
#: its rate (C(10, 5) = 252 orderings is the least that can) and the noise estimate has
#: almost no degrees of freedom, so an interval would only say "anything".
MIN_SIDE_SAMPLES = 5
#: Fewer interleaved pairs cannot make a call: the paired test's degrees of freedom are
#: pairs - 1, and its threshold at the false-alarm rate is out of reach below this.
MIN_PAIRS = 5


#: A side whose sorted samples have a gap wider than SPLIT_GAP times the noise (the other
#: side's, or its own two groups', whichever is larger; and than the minimum drop), with
#: SPLIT_MIN or more samples on each side of it and one group at the other side's level,
#: was measured on a machine that changed while it ran: a change of the code moves every
#: sample of a side, contention only some. Its difference is not the code's to call.
SPLIT_GAP, SPLIT_MIN = 6.0, 2


class Change(StrEnum):
    """What B is, against A."""

    BETTER = "better"
    WORSE = "worse"
    SAME = "same"  # significant neither way, and the interval rules out the minimum drop
    UNCLEAR = "unclear"  # not enough evidence either way
    # Figures so far apart that their ratio or change is past what a float holds.
    NOT_COMPARABLE = "not comparable"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """B against A: the figures, the ratio, the change with its interval, and the call."""

    # Every figure is finite, or None (the call is then NOT_COMPARABLE).
    a: float | None
    b: float | None
    ratio: float | None  # b / a
    change_pct: float | None  # of the metric, as measured (sign as the ratio)
    interval_pct: tuple[float, float] | None
    change: Change
    samples: tuple[int, int]
    detail: str


def compare(
    a: Sequence[float], b: Sequence[float], *, direction: Direction, policy: CalibratedPolicy
) -> Comparison:
    """B's samples against A's: significantly better, worse, the same, or unclear; or not
    comparable when a figure of the comparison is past what a float holds."""
    found = _compare(a, b, direction=direction, policy=policy)
    figures = (found.a, found.b, found.ratio, found.change_pct, *(found.interval_pct or ()))
    if all(f is not None and math.isfinite(f) for f in figures):
        return found
    return Comparison(
        a=_finite(found.a), b=_finite(found.b), ratio=None, change_pct=None, interval_pct=None,
        change=Change.NOT_COMPARABLE, samples=found.samples,
        detail="not comparable: the two sides' figures are too far apart for their ratio to "
        "be a number",
    )  # fmt: skip


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _compare(
    a: Sequence[float], b: Sequence[float], *, direction: Direction, policy: CalibratedPolicy
) -> Comparison:
    if not a or not b or any(not (math.isfinite(v) and v > 0) for v in (*a, *b)):
        raise ValueError("both sides need finite, positive samples")
    ga, gb = [to_g(v, direction) for v in a], [to_g(v, direction) for v in b]
    a_mid, b_mid = statistics.median(a), statistics.median(b)
    ratio = b_mid / a_mid
    samples = (len(a), len(b))
    if min(samples) < MIN_SIDE_SAMPLES:
        return Comparison(
            a=a_mid, b=b_mid, ratio=ratio, change_pct=(ratio - 1.0) * 100.0, interval_pct=None,
            change=Change.UNCLEAR, samples=samples,
            detail=f"{min(samples)} sample(s) on a side; at least {MIN_SIDE_SAMPLES} a side are "
            f"needed to tell (bench --repeats {MIN_SIDE_SAMPLES})",
        )  # fmt: skip
    # One pooled per-sample scale, each side centred on its own median first.
    centred = [g - statistics.median(ga) for g in ga] + [g - statistics.median(gb) for g in gb]
    scale, nu = robust_scale(centred, groups=2)
    floor = math.log1p(policy.noise_floor_pct / 100.0)
    scale = max(scale, floor)
    loc_a, loc_b = huber_location(ga, scale), huber_location(gb, scale)
    delta = loc_b - loc_a
    # One figure: A and B are the locations the change is between, B/A their ratio.
    a_mid, b_mid = from_g(loc_a, direction), from_g(loc_b, direction)
    ratio = b_mid / a_mid
    # Each side is one run: the noise a run shares (machine state) counts once per side.
    run_noise = max(policy.min_run_noise * scale, math.log1p(policy.run_noise_floor_pct / 100))
    se = math.sqrt(scale**2 * (location_var(len(ga)) + location_var(len(gb))) + 2 * run_noise**2)
    change_pct = pct_of_g(delta, direction)
    if se <= 0.0 or nu <= 0.0:
        return Comparison(
            a=a_mid, b=b_mid, ratio=ratio, change_pct=change_pct, interval_pct=None,
            change=Change.UNCLEAR, samples=samples, detail="no spread to judge against",
        )  # fmt: skip
    half = t_isf((1.0 - policy.confidence) / 2.0, nu) * se
    low, high = sorted((pct_of_g(delta - half, direction), pct_of_g(delta + half, direction)))
    t_crit = t_isf(policy.false_block_rate / 2.0, nu)  # either way is a finding
    t = delta / se
    # The rank test must agree, whatever the noise's shape (as the gate's BLOCK requires).
    u_crit = mwu_critical(len(gb), len(ga), policy.rank_rate)
    u_up = mann_whitney_u(sorted(ga), gb)
    u_down = len(ga) * len(gb) - u_up
    call, why = _call(
        t, t_crit, delta, half, policy, worse_ranks=u_up <= u_crit, better_ranks=u_down <= u_crit
    )
    split = _split("A", ga, gb, policy, direction) or _split("B", gb, ga, policy, direction)
    if split is not None:
        call, why = Change.UNCLEAR, split
    return Comparison(
        a=a_mid, b=b_mid, ratio=ratio, change_pct=change_pct, interval_pct=(low, high),
        change=call, samples=samples, detail=why,
    )  # fmt: skip


def _split(
    name: str,
    side: Sequence[float],
    other: Sequence[float],
    policy: CalibratedPolicy,
    direction: Direction,
) -> str | None:
    """Why side ``name`` (goodness values) splits in two around ``other``'s level, if it does."""
    ordered = sorted(side)
    gap, at = max((ordered[i + 1] - ordered[i], i) for i in range(len(ordered) - 1))
    groups = ordered[: at + 1], ordered[at + 1 :]
    if min(len(g) for g in groups) < SPLIT_MIN:
        return None
    level = statistics.median(other)
    # The noise either side shows on its own: a noisy side has wide gaps by chance.
    within, _ = robust_scale([g - statistics.median(grp) for grp in groups for g in grp], 2)
    noise = max(robust_scale([g - level for g in other])[0], within)
    if gap <= max(SPLIT_GAP * noise, math.log1p(policy.min_drop_pct / 100.0)):
        return None
    near, far = sorted(groups, key=lambda g: abs(statistics.median(g) - level))
    if abs(statistics.median(near) - level) > gap / 2:
        return None  # neither group is at the other side's level
    shift = statistics.median(far) - level
    return (
        f"{name}'s samples split: {len(near)} at the other side's level, {len(far)} about "
        f"{abs(pct_of_g(shift, direction)):.0f} % {'worse' if shift < 0 else 'better'}: the "
        "machine changed while it ran (contention its admission records missed); measure "
        "again, or alternately (--measure)"
    )


def compare_pairs(
    pairs: Sequence[tuple[float, float]], *, direction: Direction, policy: CalibratedPolicy
) -> Comparison:
    """B against A measured alternately on one machine (``compare --measure``).

    Each pair ran A and B back to back, so the machine's state that day is in both and its
    ratio carries the change alone. The call is the gate's own paired test
    (``judge.paired``), at one look on the pairs taken: worse where it would BLOCK B
    against A, better where it would BLOCK A against B, the same where it clears both
    ways, unclear otherwise. One figure: the change is the test's, and B/A its ratio.
    """
    if any(not (math.isfinite(v) and v > 0) for pair in pairs for v in pair):
        raise ValueError("both sides need finite, positive samples")
    n = len(pairs)
    if n < MIN_PAIRS:
        a_mid = statistics.median(x for x, _ in pairs) if pairs else math.nan
        b_mid = statistics.median(y for _, y in pairs) if pairs else math.nan
        return Comparison(
            a=a_mid, b=b_mid, ratio=b_mid / a_mid if pairs else None,
            change_pct=(b_mid / a_mid - 1.0) * 100.0 if pairs else None, interval_pct=None,
            change=Change.UNCLEAR, samples=(n, n),
            detail=f"{n} pair(s); at least {MIN_PAIRS} are needed to tell (--pairs)",
        )  # fmt: skip
    # Every pair is in before the one look: the whole false-alarm rate is spent on it.
    paired = PairedPolicy(
        false_block_rate=policy.false_block_rate, min_drop_pct=policy.min_drop_pct,
        noise_floor_pct=policy.noise_floor_pct, max_pairs=n, last_look_share=1.0,
        confidence=policy.confidence,
    )  # fmt: skip
    worse = paired_decide(pairs, direction=direction, policy=paired, final=True)
    better = paired_decide([(y, x) for x, y in pairs], direction=direction, policy=paired,
                           final=True)  # fmt: skip
    if worse.verdict is Verdict.BLOCK:
        call, why = Change.WORSE, f"worse beyond noise (t {worse.t:.1f} past -{worse.t_block:.1f})"
    elif better.verdict is Verdict.BLOCK:
        call, why = (
            Change.BETTER,
            f"better beyond noise (t {better.t:.1f} past {better.t_block:.1f})",
        )
    elif worse.verdict is Verdict.PASS and better.verdict is Verdict.PASS:
        call, why = Change.SAME, f"any change is under the {policy.min_drop_pct:g}% minimum"
    else:
        call, why = (
            Change.UNCLEAR,
            f"cannot tell at this noise (t {worse.t:.1f}, needs {worse.t_block:.1f})",
        )
    used = f"{worse.pairs} interleaved pairs" + (
        f" ({n - worse.pairs} set aside as outliers)" if worse.pairs < n else ""
    )
    # From MIN_PAIRS pairs on, set-aside leaves the test the pairs it needs to have figures.
    assert worse.effect_pct is not None
    return Comparison(
        a=worse.base, b=worse.head, ratio=1.0 + worse.effect_pct / 100.0,
        change_pct=worse.effect_pct, interval_pct=worse.interval_pct, change=call,
        samples=(n, n), detail=f"{used}; {why}",
    )  # fmt: skip


def _call(
    t: float,
    t_crit: float,
    delta: float,
    half: float,
    policy: CalibratedPolicy,
    *,
    worse_ranks: bool = True,
    better_ranks: bool = True,
) -> tuple[Change, str]:
    """Better, worse, the same or unclear: significant past ``t_crit``, with the rank test
    agreeing where there is one, and at least the minimum change; or an interval inside
    the minimum."""
    drop = math.log1p(policy.min_drop_pct / 100.0)
    if t <= -t_crit and worse_ranks and -delta >= drop:
        return Change.WORSE, f"worse beyond noise (t {t:.1f} past -{t_crit:.1f})"
    if t >= t_crit and better_ranks and delta >= drop:
        return Change.BETTER, f"better beyond noise (t {t:.1f} past {t_crit:.1f})"
    if abs(delta) + half < drop:
        return Change.SAME, f"any change is under the {policy.min_drop_pct:g}% minimum"
    return Change.UNCLEAR, f"cannot tell at this noise (t {t:.1f}, needs {t_crit:.1f})"


#: The CPU load (1-minute average per CPU, before each sample) two result sets may differ
#: by before the machine is said to have moved: half a CPU busy with other work is enough
#: to move a CPU benchmark's figure by far more than a gate's minimum drop.
LOAD_MOVED_PER_CPU = 0.5
#: Admission statuses of a sample taken on an unfit machine (set aside, or only flagged).
UNFIT = frozenset({AdmissionStatus.CONTAMINATED, AdmissionStatus.FLAGGED})


@dataclass(frozen=True, kw_only=True)
class SetState:
    """What one result set's artifacts say about when and on what machine it ran."""

    started: str | None  # UTC ISO times of its first start and last finish
    finished: str | None
    machines: frozenset[str]  # hardware fingerprints (Hardware.describe)
    governors: frozenset[str]  # CPU frequency governors admission control read
    load_per_cpu: float | None  # median 1-minute load per CPU before its samples
    unfit: int  # samples admission control found taken on an unfit machine

    @classmethod
    def of(cls, results: Sequence[Result]) -> SetState:
        """The state of a set from its artifacts (admission records, timings, hardware)."""
        records = [record for result in results for record in result.admission]
        loads = [
            state.load_1m / state.cpus
            for record in records
            if (state := record.before) is not None and state.load_1m is not None and state.cpus
        ]
        return cls(
            started=min((r.timings.started_at for r in results), default=None),
            finished=max((r.timings.finished_at for r in results), default=None),
            machines=frozenset(r.hardware.describe() for r in results),
            governors=frozenset(
                g for record in records if record.before for g in record.before.governors or ()
            ),
            load_per_cpu=statistics.median(loads) if loads else None,
            unfit=sum(1 for record in records if record.status in UNFIT),
        )


def time_apart(a: SetState, b: SetState) -> str | None:
    """'A and B were measured at different times …' when their runs do not overlap."""
    if None in (a.started, a.finished, b.started, b.finished):
        return None
    assert a.started and a.finished and b.started and b.finished
    if a.started <= b.finished and b.started <= a.finished:
        return None
    return (
        f"A ({_clock(a.started)} to {_clock(a.finished)}) and B ({_clock(b.started)} to "
        f"{_clock(b.finished)}) were measured at different times: whatever changed on the "
        "machine between them reads as a change of the code"
    )


def machine_moved(a: SetState, b: SetState) -> list[str]:
    """What the artifacts show changed on the machine between A and B (empty: nothing)."""
    moved = []
    if a.machines and b.machines and a.machines != b.machines:
        moved.append(
            f"different machines: {', '.join(sorted(a.machines))} vs "
            f"{', '.join(sorted(b.machines))}"
        )
    if a.governors and b.governors and a.governors != b.governors:
        moved.append(
            f"CPU governor {'/'.join(sorted(a.governors))} vs {'/'.join(sorted(b.governors))}"
        )
    if (
        a.load_per_cpu is not None
        and b.load_per_cpu is not None
        and abs(a.load_per_cpu - b.load_per_cpu) >= LOAD_MOVED_PER_CPU
    ):
        moved.append(
            f"CPU load {a.load_per_cpu:.2f} vs {b.load_per_cpu:.2f} per CPU before the samples"
        )
    if a.unfit or b.unfit:
        moved.append(
            f"admission control found {a.unfit} (A) and {b.unfit} (B) sample(s) taken on an "
            "unfit machine"
        )
    return moved


def _clock(iso: str) -> str:
    """``2026-12-01 16:25`` from a UTC ISO time."""
    return iso[:16].replace("T", " ")
