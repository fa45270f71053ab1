"""Where the tests find the repository and their fixtures, wherever a test file sits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
# Malformed and hostile inputs (configs, result artifacts), each with what perfgate must say.
CORPUS = ROOT / "tests" / "corpus"
