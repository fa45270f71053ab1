"""The trend site in a real browser: pages load cleanly, charts draw every sample, links work.

Two sites are opened: one of a baseline branch seeded with perfgate's own demo benchmark
(``perfgate seed --execute``: real measurements of this machine) and one of a history with
a known 10 % drop written through the store (its verdicts checked against the gate in
tests/integration/report/test_trend.py). Each is built by ``python -m perfgate report``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from perfgate.baselines.history import read_history
from perfgate.baselines.store import BaselineStore
from perfgate.config import load_config
from tests.browser.conftest import OUTPUT
from tests.trend_stores import gated_history, seeded_demo

pytestmark = pytest.mark.browser

# Per chart: the sample points plotly drew (SVG markers of the traces marked "samples").
DRAWN = """
div => {
  const samples = div.data.map((t, i) => t.meta === "samples" ? i : -1).filter(i => i >= 0);
  const traces = div.querySelectorAll(".scatterlayer > .trace");
  return samples.reduce((n, i) => n + traces[i].querySelectorAll("path.point").length, 0);
}
"""


def build_site(repo: Path, out: Path) -> Path:
    """``python -m perfgate report --out OUT`` in ``repo``; the site's directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "report", "--out", str(out)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module", params=["seeded-demo", "known-drop"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with a baseline branch, and the site built from it."""
    root = tmp_path_factory.mktemp(request.param)
    repo = seeded_demo(root) if request.param == "seeded-demo" else gated_history(root).repo
    build_site(repo, root / "site")
    return root


def open_page(context: Any, path: Path) -> tuple[Any, list[str]]:
    """Open ``path`` and wait for its charts; the page and every console error it printed."""
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    charts = page.locator("[data-chart]").count()
    if charts:
        page.wait_for_function(
            f"document.querySelectorAll('.js-plotly-plot').length === {charts}", timeout=30_000
        )
    return page, errors


def expected_samples(repo: Path) -> dict[str, int]:
    """Samples per chart anchor, read from the store directly."""
    config = load_config(repo / "perfgate.yaml")
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    history = read_history(store, config.buckets, target_branch="main", min_samples=3)
    return {
        f"{s.bucket.file_stem}#{s.hardware}--{s.metric_path}".replace(".", "-"): s.samples
        for s in history.series()
    }


def test_every_page_loads_without_console_errors(site: Path, browser_context: Any) -> None:
    pages = [site / "site" / "index.html", *sorted((site / "site" / "buckets").glob("*.html"))]
    assert len(pages) >= 2
    for path in pages:
        page, errors = open_page(browser_context, path)
        assert errors == [], f"{path.name}: {errors}"
        page.close()


def test_each_chart_draws_every_stored_sample(site: Path, browser_context: Any) -> None:
    repo = next(p for p in site.iterdir() if (p / "perfgate.yaml").is_file())
    wanted = expected_samples(repo)
    seen = {}
    for path in sorted((site / "site" / "buckets").glob("*.html")):
        page, _ = open_page(browser_context, path)
        for chart in page.locator("[data-chart]").all():
            anchor = chart.evaluate("div => div.closest('section').id")
            drawn = chart.evaluate(DRAWN)
            assert drawn == int(chart.get_attribute("data-samples") or -1)
            seen[f"{path.stem}#{anchor}".replace(".", "-")] = drawn
        page.close()
    assert seen == {k: v for k, v in wanted.items() if v}
    assert all(seen.values())


def test_index_links_resolve(site: Path, browser_context: Any) -> None:
    index, _ = open_page(browser_context, site / "site" / "index.html")
    links = index.eval_on_selector_all("a.bucket", "links => links.map(a => a.href)")
    assert len(links) == index.locator("table.index tbody tr").count() > 0
    for link in links:
        url = urlsplit(link)
        page, errors = open_page(browser_context, Path(url.path))
        assert page.locator(f"[id='{url.fragment}'] [data-chart]").count() == 1, link
        back = page.eval_on_selector("header a", "a => a.href")
        assert back == index.url
        assert errors == []
        page.close()
    index.close()


def test_hover_names_the_commit_and_a_screenshot_is_kept(site: Path, browser_context: Any) -> None:
    page_path = sorted((site / "site" / "buckets").glob("*.html"))[0]
    page, _ = open_page(browser_context, page_path)
    chart = page.locator("[data-chart]").first
    # The last samples trace's last point: a sample, wherever it lies against the lines.
    samples = chart.evaluate(
        "div => div.data.map((t, i) => t.meta === 'samples' ? i : -1).filter(i => i >= 0).pop()"
    )
    point = chart.locator(".scatterlayer > .trace").nth(samples).locator("path.point").last
    point.hover(force=True)
    hover = page.locator(".hoverlayer .hovertext")
    hover.wait_for(timeout=10_000)
    text = hover.first.text_content() or ""
    shas = page.eval_on_selector_all("td.sha", "cells => cells.map(c => c.textContent)")
    assert any(sha in text for sha in shas), text
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / f"{site.name.rstrip('0123456789')}-{page_path.stem}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    page.close()
