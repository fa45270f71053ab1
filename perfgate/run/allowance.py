"""The run's allowance: runner time it may spend beyond its plan, shared by the matrix (R17).

A bucket run's plan is one launch of each planned sample (and the warm-up its own cold
cache needs first). Everything else it may spend is optional, and the run's budget
(``gate.budget_minutes``, or the share of it a CI job was given) caps it for every bucket
together: a retry, a sample admission control set aside and measures again, a confirming
sample, both sides of a pair, the merge base's checkout and warm-up. It is a cap, not a
stop sign: nothing optional starts that cannot finish within what is left, at the launch
time the run has measured (or the bucket declares), and what it took is charged after.
"""

from __future__ import annotations

#: A launch takes a few per cent more or less than the last one; what is left must hold
#: this much more than the expected time before anything starts, so the cap holds.
MARGIN = 1.1


class Allowance:
    """Runner seconds a run may still spend beyond its plan (None: no run budget)."""

    def __init__(self, minutes: float | None) -> None:
        self.budget_s = None if minutes is None else max(0.0, minutes * 60.0)
        self.spent_s = 0.0

    @property
    def left_s(self) -> float | None:
        """What is left, in runner seconds (None: unlimited)."""
        return None if self.budget_s is None else max(0.0, self.budget_s - self.spent_s)

    def affords(self, seconds: float) -> bool:
        """True when something expected to take ``seconds`` can finish within what is left."""
        left = self.left_s
        return left is None or seconds * MARGIN <= left

    def refusal(self, what: str, seconds: float) -> str | None:
        """Why ``what`` (expected to take ``seconds``) is not started; None when it fits."""
        if self.affords(seconds):
            return None
        left = self.left_s or 0.0
        return (f"the run's budget cannot afford {what} ({_duration(seconds)} at the launch "
                f"time measured; {_duration(left)} left)")  # fmt: skip

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of optional runner time as spent."""
        self.spent_s += max(0.0, seconds)


def _duration(seconds: float) -> str:
    """'14.0 min', or '40 s' under a minute."""
    return f"{seconds / 60.0:.1f} min" if seconds >= 60.0 else f"{seconds:.0f} s"
