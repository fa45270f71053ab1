"""The goodness scale the rules work on, and how a change is printed.

Everything works in log space on a "goodness" scale ``g = +-ln(value)`` (``+`` when higher
is better), so a regression is always ``g`` going down and effects are relative. Every
surface prints a change and a figure with the same few functions here.
"""

from __future__ import annotations

import math

from perfgate.config import Direction


def past(value: float, line: float, direction: Direction) -> bool:
    """Strictly on the bad side of ``line``; exactly on a line is not past it."""
    return value < line if direction is Direction.HIGHER else value > line


def to_g(value: float, direction: Direction) -> float:
    """A figure on the goodness scale: +ln(value) when higher is better, -ln otherwise."""
    return math.log(value) if direction is Direction.HIGHER else -math.log(value)


def from_g(g: float, direction: Direction) -> float:
    """A goodness back as a figure in the metric's units."""
    return _exp(g if direction is Direction.HIGHER else -g)


def pct_of_g(delta_g: float, direction: Direction) -> float:
    """A change in g as a change of the metric, in %."""
    return (_exp(delta_g if direction is Direction.HIGHER else -delta_g) - 1.0) * 100.0


def _exp(x: float) -> float:
    """exp that saturates: figures ~1e308 apart give an infinite change, never an error."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def g_of_regression(pct: float, direction: Direction) -> float:
    """The fall in g of a regression of ``pct`` % of the metric (negative pct: a gain)."""
    if direction is Direction.HIGHER:
        return -math.log1p(-pct / 100.0)
    return math.log1p(pct / 100.0)


def regression_of_g(fall: float, direction: Direction) -> float:
    """The regression, % of the metric, of a fall of ``fall`` in g (g_of_regression's inverse)."""
    change = pct_of_g(-fall, direction)
    return -change if direction is Direction.HIGHER else change


def effect_text(effect_pct: float | None, interval_pct: tuple[float, float] | None) -> str:
    """A change and its interval, as every surface prints it: '-6.1 % (-7.9 ... -4.2)'.

    The signs are true minus signs and the dots one ellipsis character.
    """
    if effect_pct is None:
        return ""
    text = f"{signed_pct(effect_pct)} %"
    if interval_pct is not None:
        lo, hi = interval_pct
        text += f" ({signed_pct(lo)} \u2026 {signed_pct(hi)})"
    return text


def signed_pct(pct: float) -> str:
    """A change as every surface prints it: one decimal, its sign, a true minus sign."""
    return f"{pct:+.1f}".replace("-", "\u2212")


def figure_text(value: float) -> str:
    """A figure as the reports print it: thousands grouped, else 4 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
