"""Headless Chromium (Debian's ``chromium``, driven by Playwright) for the trend site tests.

Where no browser can be had the tests skip and name the install step; with
``PERFGATE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead, so CI can never
pass them silently.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT

# Playwright's own browser download cannot reach the network here: use the system one.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Where the tests leave what a person may want to look at (the bucket page's screenshot).
OUTPUT = Path(os.environ.get("PERFGATE_BROWSER_OUT", ROOT / ".perfgate" / "browser"))


def _unavailable(why: str) -> None:
    if os.environ.get("PERFGATE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"PERFGATE_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


def chromium_path() -> str | None:
    """Debian's chromium (or $PERFGATE_CHROMIUM), if installed."""
    return os.environ.get("PERFGATE_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A fresh headless Chromium profile whose pages may load file:// URLs only."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed: pip install playwright (nox -s browser does)")
    executable = chromium_path()
    if executable is None:
        _unavailable("no chromium on PATH: apt-get install -y chromium (.ci/run does)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=executable, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        # Offline by construction: any request that is not a file of the site fails.
        context.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith("file://") else route.abort()
            ),
        )
        try:
            yield context
        finally:
            context.close()
