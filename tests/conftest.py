"""Fixtures shared by every test folder."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from tests.paths import ROOT


@pytest.fixture(scope="session")
def noxfile() -> ModuleType:
    """noxfile.py, imported once as nox would (from the repository root)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.syspath_prepend(str(ROOT))
        return importlib.import_module("noxfile")
