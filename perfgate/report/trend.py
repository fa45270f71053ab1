"""The trend site: a static HTML report of every bucket's history, readable offline.

``index.html`` has one row per bucket, hardware and metric (latest figure, a sparkline of
the last runs, the latest verdict, readiness); ``buckets/<task>__<backend>.html`` has one
chart per hardware and metric: every stored sample over the target branch's commits,
coloured by runner, with the baseline and the warn and block lines each run was judged
against, the verdicts other than PASS circled and level shifts marked
(:mod:`perfgate.report.rule`, the gate's own rule). Charts are plotly.js,
copied once from the ``plotly`` package into ``assets/``; pages embed their data, so the
site needs no network and works from GitHub Pages or an unpacked artifact (file://).
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from perfgate import __version__
from perfgate.baselines.history import READ_BATCH, BranchCommit, History, Series
from perfgate.errors import UsageError
from perfgate.judge.verdicts import Verdict
from perfgate.report.rule import JudgedRun, TrendRule, judge_series
from perfgate.report.trend_chart import add_accepted, chart_figure, when_recorded
from perfgate.util.console import format_figure

#: Runs the index's sparkline and each page's run table show.
DEFAULT_LAST = 30
ASSETS = ("site.css", "trend.js")
PLOTLY_ASSET = "plotly.min.js"
#: Marks a directory as a trend site, so a rebuild may replace it and nothing else.
MARKER = ".perfgate-trend"


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One chart of a bucket page: a series, its judged runs and the plotly figure."""

    series: Series
    judged: tuple[JudgedRun, ...]
    anchor: str

    @property
    def latest(self) -> JudgedRun | None:
        """The newest run and its verdict, if any run is stored."""
        return self.judged[-1] if self.judged else None

    # Where an accepted change (R18) starts a new level, and why it was accepted.
    accepted: tuple[tuple[BranchCommit, str], ...] = ()

    def figure(self) -> dict[str, Any]:
        """The plotly figure (``data`` and ``layout``) as plain JSON data."""
        figure = chart_figure(self.series, self.judged)
        add_accepted(figure, self.judged, self.accepted)
        return figure


@dataclass(frozen=True, kw_only=True)
class IndexRow:
    """What the index keeps of a chart once its page is written (a few numbers, not runs)."""

    path: str
    anchor: str
    series: Series
    latest: JudgedRun | None
    trend: tuple[float, ...]
    runs: int
    samples: int

    @classmethod
    def of(cls, path: str, chart: Chart, last: int) -> IndexRow:
        """The index's row for ``chart`` (its series without the runs)."""
        return cls(
            path=path,
            anchor=chart.anchor,
            series=replace(chart.series, runs=()),
            latest=chart.latest,
            trend=tuple(j.figure for j in chart.judged[-last:]),
            runs=len(chart.series.runs),
            samples=chart.series.samples,
        )


@dataclass(frozen=True, kw_only=True)
class SiteSummary:
    """What a build wrote."""

    out: Path
    pages: int
    charts: int
    samples: int
    bytes: int


def page_path(series: Series) -> str:
    """Where a bucket's page lives, relative to the site root."""
    return f"buckets/{series.bucket.file_stem}.html"


def chart_anchor(series: Series) -> str:
    """The id of a series' chart on its bucket page."""
    return f"{series.hardware}--{series.metric_path}".replace(".", "-")


def sparkline(values: Sequence[float], *, width: int = 120, height: int = 28) -> Markup:
    """A small inline SVG line of the last figures (the index draws hundreds: no plot each)."""
    if not values:
        return Markup("")
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = width / max(1, len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v - low) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )
    title = f"last {len(values)} runs: {format_figure(low)} to {format_figure(high)}"
    # Numbers and an escaped title only: nothing from the store reaches the markup unescaped.
    return Markup(  # noqa: S704
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img"><title>{Markup.escape(title)}</title>'
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{points}"/></svg>'
    )


def _script_json(value: Any) -> Markup:
    """JSON safe inside a <script> element (no ``</script>`` or comment opener can form)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    safe = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(safe)  # noqa: S704 (no markup character is left)


def _environment() -> jinja2.Environment:
    templates = resources.files("perfgate.report").joinpath("templates", "trend")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["figure"] = format_figure
    env.filters["script_json"] = _script_json
    env.filters["when"] = when_recorded
    return env


def plotly_js() -> str:
    """plotly.js as shipped inside the ``plotly`` package (perfgate's ``report`` extra)."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise UsageError(
            "the trend report draws its charts with plotly: pip install 'perfgate[report]' "
            "(nox -s report installs it)"
        ) from None
    return str(get_plotlyjs())


def verdict_tally(rows: Sequence[IndexRow]) -> list[tuple[str, int]]:
    """How many charts' latest runs got each verdict, the most severe first."""
    counts = Counter(row.latest.verdict for row in rows if row.latest is not None)
    order = sorted(counts, key=lambda label: Verdict[label].severity, reverse=True)
    return [(label, counts[label]) for label in order]


def bucket_charts(
    history: History, rule: TrendRule, jobs: int = 1
) -> Iterator[tuple[str, list[Chart]]]:
    """Each bucket page (its path) with its charts, one bucket at a time."""
    charts = (
        Chart(
            series=series,
            judged=tuple(judged),
            anchor=chart_anchor(series),
            accepted=tuple(rule.accepted_marks(series)),
        )
        for series, judged in judged_series(history.series(), rule, jobs)
    )
    for path, group in itertools.groupby(charts, key=lambda chart: page_path(chart.series)):
        yield path, list(group)


def judged_series(
    series: Iterable[Series], rule: TrendRule, jobs: int
) -> Iterator[tuple[Series, list[JudgedRun]]]:
    """Each series with its judged runs, in order; ``jobs`` processes judge a batch at once.

    Judging every run of a long history is most of a build's time and each series is
    judged on its own, so they spread over processes; a batch at a time keeps memory to
    what one read batch holds.
    """
    if jobs <= 1:
        yield from ((one, judge_series(one, rule)) for one in series)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = iter(series)
        while batch := list(itertools.islice(pending, READ_BATCH)):
            yield from zip(batch, pool.map(judge_series, batch, [rule] * len(batch)), strict=True)


def _claim(out: Path) -> None:
    """Make ``out`` an empty trend site: new, empty, or an earlier build of one (R14).

    Links are never followed: a linked ``--out`` or marker could point anywhere, and the
    rebuild deletes what it replaces.
    """
    if out.is_symlink():
        raise UsageError(
            f"--out {out}: a symbolic link (to {out.readlink()}); give the site's directory itself"
        )
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    if out.is_dir() and any(out.iterdir()):
        marker = out / MARKER
        if marker.is_symlink() or not marker.is_file():
            raise UsageError(
                f"--out {out}: the directory holds other files; give an empty or new "
                "directory (an earlier trend site there is replaced)"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("perfgate trend site; rebuilt whole by `perfgate report`\n")


def build_site(
    history: History,
    *,
    rule: TrendRule,
    out: Path,
    last: int = DEFAULT_LAST,
    title: str = "perfgate trends",
    jobs: int = 1,
) -> SiteSummary:
    """Write the site under ``out`` (created; perfgate's own earlier output replaced)."""
    script = plotly_js()
    env = _environment()
    common = {
        "title": title,
        "history": history,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "last": last,
        "rule": rule,
    }
    _claim(out)
    (out / "buckets").mkdir()
    assets = out / "assets"
    assets.mkdir()
    (assets / PLOTLY_ASSET).write_text(script, encoding="utf-8")
    for name in ASSETS:
        source = resources.files("perfgate.report").joinpath("templates", "trend", name)
        (assets / name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    bucket_page = env.get_template("bucket.html.j2")
    rows: list[IndexRow] = []
    pages = samples = 0
    # One bucket in memory at a time: its page is written, the index keeps a row per chart.
    for path, charts in bucket_charts(history, rule, jobs):
        (out / path).write_text(
            bucket_page.render(**common, charts=charts, root="../"), encoding="utf-8"
        )
        rows += [IndexRow.of(path, chart, last) for chart in charts]
        pages += 1
        samples += sum(chart.series.samples for chart in charts)
    index = env.get_template("index.html.j2").render(
        **common, rows=rows, root="", sparkline=sparkline, tally=verdict_tally(rows)
    )
    (out / "index.html").write_text(index, encoding="utf-8")
    # GitHub Pages would otherwise run Jekyll over the site, which it does not need.
    (out / ".nojekyll").write_text("", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return SiteSummary(out=out, pages=pages + 1, charts=len(rows), samples=samples, bytes=size)
