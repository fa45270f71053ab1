"""perfgate: a performance-regression gate judged against a rolling baseline."""

from __future__ import annotations

__version__ = "0.1.0"
