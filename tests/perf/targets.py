"""The targets ``nox -s quality`` checks, and the suites that report them.

Every suite of the quality run returns a ``SuiteReport``: the table it printed, its
figures (for ``--json``) and its targets, each ``{name, value, target, met}``. The core
verdict suites and the runner-offset suites live in ``verdict_quality``; further suites are
modules listed in ``SUITES``, each with ``quality(options) -> SuiteReport``: a suite of
another concern (post-merge alerts, say) adds its module there and its targets join the
same list, the same table and the same exit code.

The cost model every suite shares: a bucket run costs ``S + L x launches`` runner minutes
(``Options.setup_minutes``, ``Options.launch_minutes``), a pull request nine bucket runs
(the Isaac Lab example's matrix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from perfgate.config import AlertsSpec

# Modules with ``quality(options) -> SuiteReport``, run after the core suites.
SUITES: tuple[str, ...] = (
    "tests.perf.economics",
    "tests.perf.alert_quality",
    "tests.perf.bill",
    "tests.perf.suite_quality",
)

# Buckets of a pull request: the Isaac Lab example's matrix.
PR_BUCKETS = 9


@dataclass(frozen=True, kw_only=True)
class Options:
    """What every suite is asked to run."""

    series: int  # series per suite (the core suites' count; others scale from it)
    quick: bool
    jobs: int
    setup_minutes: float  # S: a bucket job's setup (checkout, image, container start)
    launch_minutes: float  # L: one launch of the benchmark (one sample)
    # Samples of a stored run in the runner economics' history, as a protected push takes
    # them (alerts.push_repeats, perfgate's default unless asked); 1: as the run took them
    stored_samples: int = AlertsSpec().push_repeats
    # Another set of series for the suites that draw them (the same mix of pools and
    # drops): a choice made on the default set (0) is confirmed on a held-out one.
    seed_offset: int = 0
    # A `perfgate spend --json` document: the whole bill takes S and each bucket's launch
    # time from it (None: as the example declares them).
    spend: str | None = None

    def run_minutes(self, launches: float) -> float:
        """Runner minutes of a bucket run of ``launches`` launches."""
        return self.setup_minutes + self.launch_minutes * launches


@dataclass(frozen=True, kw_only=True)
class Target:
    """One target: its measured value, the bound it must meet, and whether it does."""

    name: str
    value: float | None
    target: str  # the bound, in the value's unit: "<= 0.1 %", ">= 99 %", "<= 1.25 x"
    met: bool
    detail: str = ""  # the figure as printed, with what it rests on
    # A rate measured on too few trials to tell which side of its bound it lies (the bound
    # inside the rate's 95 % interval): a quick run reports it without judging it.
    decided: bool = True

    def fails(self, quick: bool) -> bool:
        """Whether this target fails the run: missed, and decided unless the run is full."""
        return not self.met and (self.decided or not quick)

    def status(self, quick: bool) -> str:
        """'met', 'MISSED', or 'undecided' (a quick run's miss on too small a sample)."""
        if self.met:
            return "met"
        return "MISSED" if self.fails(quick) else "undecided"

    def to_json(self) -> dict[str, Any]:
        """``{name, value, target, met, decided}`` (and the printed detail)."""
        value = self.value if self.value is None or math.isfinite(self.value) else None
        return {
            "name": self.name,
            "value": value,
            "target": self.target,
            "met": self.met,
            "decided": self.decided,
            "detail": self.detail,
        }


@dataclass(frozen=True, kw_only=True)
class SuiteReport:
    """What one suite measured."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    targets: tuple[Target, ...] = ()


def at_most(name: str, value: float, bound: float, unit: str, detail: str = "") -> Target:
    """A target met when ``value <= bound``."""
    return Target(name=name, value=value, target=f"<= {bound:g} {unit}".rstrip(),
                  met=value <= bound, detail=detail or f"{value:.3g} {unit}".rstrip())  # fmt: skip


def at_least(name: str, value: float, bound: float, unit: str, detail: str = "") -> Target:
    """A target met when ``value >= bound``."""
    return Target(name=name, value=value, target=f">= {bound:g} {unit}".rstrip(),
                  met=value >= bound, detail=detail or f"{value:.3g} {unit}".rstrip())  # fmt: skip


def rate_at_most(name: str, events: int, trials: int, bound_pct: float, detail: str) -> Target:
    """A rate target met when ``events / trials <= bound_pct`` %, decided only when the
    bound lies outside the rate's two-sided 95 % interval."""
    value = 100.0 * events / max(trials, 1)
    return replace(at_most(name, value, bound_pct, "%", detail),
                   decided=_decides(events, trials, bound_pct / 100.0))  # fmt: skip


def rate_at_least(name: str, events: int, trials: int, bound_pct: float, detail: str) -> Target:
    """A rate target met when ``events / trials >= bound_pct`` %, decided as ``rate_at_most``."""
    value = 100.0 * events / max(trials, 1)
    return replace(at_least(name, value, bound_pct, "%", detail),
                   decided=_decides(events, trials, bound_pct / 100.0))  # fmt: skip


def _decides(events: int, trials: int, bound: float) -> bool:
    """The bound lies outside the two-sided 95 % Wilson interval of the observed rate."""
    if trials == 0:
        return False
    low, high = _wilson(events, trials, 1.959963984540054)
    return not low <= bound <= high


def _wilson(events: int, trials: int, z: float) -> tuple[float, float]:
    """Wilson score interval of a rate at normal quantile ``z``."""
    p = events / trials
    centre = p + z * z / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    return (centre - spread) / scale, (centre + spread) / scale


def upper95(events: int, trials: int) -> float:
    """One-sided 95 % Wilson upper bound of a rate."""
    if trials == 0:
        return float("nan")
    return _wilson(events, trials, 1.6448536269514722)[1]
