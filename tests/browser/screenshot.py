"""Regenerate docs/baselines.md's picture of a trend site bucket page: ``nox -s screenshot``.

Builds the known-drop history of tests/trend_stores.py (a 10 % drop at one commit, two
runners, the gate's verdicts), builds its site with ``python -m perfgate report``, and
photographs the bucket page in headless Chromium with the blocked run's hover showing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import ARGS, chromium_path  # noqa: E402
from tests.browser.test_trend_site import build_site  # noqa: E402
from tests.trend_stores import gated_history  # noqa: E402


def main() -> int:
    """Build the site in a temporary directory and write the PNG."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "docs" / "trend-bucket.png")
    args = parser.parse_args()
    executable = chromium_path()
    if executable is None:
        print("no chromium on PATH: apt-get install -y chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="perfgate-shot-") as tmp:
        root = Path(tmp)
        repo = gated_history(root, scale=35_000).repo
        site = build_site(repo, root / "site")
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(root / "profile"), executable_path=executable, headless=True, args=ARGS,
                viewport={"width": 1100, "height": 760}, device_scale_factor=1,
            )  # fmt: skip
            page = context.new_page()
            page.goto((site / "buckets" / "cartpole__numpy.html").as_uri())
            page.wait_for_selector(".js-plotly-plot .scatterlayer path.point")
            # The hover of the run the gate blocked: its change, interval and reason.
            blocked = page.locator(".js-plotly-plot").first.evaluate(
                "div => div.data.findIndex(t => t.name === 'judged BLOCK')"
            )
            traces = page.locator(".scatterlayer > .trace")
            circle = traces.nth(blocked).locator("path.point").first
            box = circle.bounding_box()
            assert box is not None
            # On the ring, off its centre: the sample drawn there would take the hover.
            circle.hover(force=True, position={"x": box["width"] - 2, "y": box["height"] / 2})
            page.wait_for_selector(".hoverlayer .hovertext")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=False)
            context.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
