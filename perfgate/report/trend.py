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
from perfgate.console import format_figure
from perfgate.errors import UsageError
from perfgate.judge.verdicts import Verdict
from perfgate.report.rule import JudgedRun, TrendRule, judge_series

#: Runs the index's sparkline and each page's run table show.
DEFAULT_LAST = 30
#: Runner colours, in order of first appearance on a page (plotly's default colorway).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f", "#d62728")  # fmt: skip
#: The circle around a run judged anything but PASS (the CSS badges use the same hues).
VERDICT_COLOURS = {
    "BLOCK": "#d62728",
    "WARN": "#ff9f1c",
    "INCONCLUSIVE": "#9467bd",
    "IMPROVED": "#2ca02c",
}
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


def _round(value: float | None) -> float | None:
    """Seven significant digits: what a reader can use, half the bytes of a full float."""
    return None if value is None else float(f"{value:.7g}")


def _when(date: str) -> str:
    """``2024-05-01 14:03:07`` from an ISO date: seconds, for runs recorded minutes apart."""
    return date[:19].replace("T", " ")


def plotly_text(text: str) -> str:
    """``text`` as plotly shows it, never read as its HTML subset (``<a href>``, ``<br>``).

    plotly draws names, hovers and titles from tags and decodes entities, so the page's
    own escaping is not enough: a runner named ``<a href=...>`` would be a link.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart_figure(series: Series, judged: Sequence[JudgedRun]) -> dict[str, Any]:
    """Samples by runner, the run figures, the judged lines as bands and the level shifts.

    Runs are placed one after the other, oldest first (by commit on the target branch,
    then by when they were recorded), so runs that share a commit (local baselines, a
    rerun) stand side by side instead of on one vertical stripe.
    """
    unit = plotly_text(series.unit)
    data: list[dict[str, Any]] = []
    banded = [j for j in judged if j.baseline is not None]
    if banded:
        xs = list(range(len(judged)))

        def line(values: list[float | None], name: str, colour: str, **style: Any) -> None:
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "x": xs,
                    "y": values,
                    "line": {"color": colour, "width": 1, "shape": "vh", **style.pop("line", {})},
                    "hovertemplate": f"{name} %{{y:.4s}} {unit}<extra></extra>",
                    **style,
                }
            )

        # Filled to the previous trace: block..warn is the warn zone, warn..baseline the noise.
        # "vh": the step that ends at a run holds the lines that run was judged against.
        line([_round(j.block_line) for j in judged], "block line", "#d62728",
             line={"dash": "dot"})  # fmt: skip
        line([_round(j.warn_line) for j in judged], "warn line", "#ff9f1c",
             fill="tonexty", fillcolor="rgba(255,159,28,0.18)")  # fmt: skip
        line([_round(j.baseline) for j in judged], "baseline", "#2ca02c",
             fill="tonexty", fillcolor="rgba(44,160,44,0.12)")  # fmt: skip
    runners = sorted({j.run.runner for j in judged})
    for colour, runner in zip(_colours(len(runners)), runners, strict=True):
        points = [(x, j, s) for x, j in enumerate(judged) if j.run.runner == runner
                  for s in j.run.samples]  # fmt: skip
        shown = plotly_text(runner)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": shown,
                "meta": "samples",
                "x": [x for x, _, _ in points],
                "y": [_round(s.value) for _, _, s in points],
                "customdata": [
                    [j.run.commit.short, _when(j.run.recorded), s.sample_index or 0]
                    for _, j, s in points
                ],
                "marker": {"color": colour, "size": 6, "opacity": 0.8},
                "hovertemplate": "%{customdata[0]} · recorded %{customdata[1]}<br>"
                f"%{{y:.4s}} {unit} (sample %{{customdata[2]}})<br>{shown}<extra></extra>",
            }
        )
    flagged = [
        (x, j) for x, j in enumerate(judged) if j.verdict != "PASS" and j.baseline is not None
    ]
    for verdict in sorted({j.verdict for _, j in flagged}):
        chosen = [(x, j) for x, j in flagged if j.verdict == verdict]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"judged {verdict}",
                "x": [x for x, _ in chosen],
                "y": [_round(j.figure) for _, j in chosen],
                "customdata": [
                    [j.run.commit.short, plotly_text(j.change_text), plotly_text(j.detail)]
                    for _, j in chosen
                ],
                "marker": {
                    "symbol": "circle-open",
                    "size": 14,
                    "line": {"width": 2},
                    "color": VERDICT_COLOURS.get(verdict, "#7f7f7f"),
                },
                "hovertemplate": f"%{{customdata[0]}}: {verdict} %{{customdata[1]}}"
                "<br>%{customdata[2]}<extra></extra>",
            }
        )
    shifts = sorted({j.shift_commit for j in judged if j.shift_commit})
    where: dict[str, int] = {}
    for x, j in enumerate(judged):
        where.setdefault(j.run.commit.sha, x)  # a shift lands at its commit's first run
    ticks = _ticks(judged)
    return {
        "data": data,
        "layout": {
            "height": 420,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
            "hovermode": "closest",
            "legend": {"orientation": "h", "y": -0.2},
            "xaxis": {
                "title": {
                    "text": "run (oldest first: by commit on the target branch, "
                    "then by when it was recorded)"
                },
                "tickvals": [t[0] for t in ticks],
                "ticktext": [t[1] for t in ticks],
                "zeroline": False,
            },
            "yaxis": {"title": {"text": unit}},
            "shapes": [_shift_line(where[sha]) for sha in shifts if sha in where],
            "annotations": [_shift_label(where[sha]) for sha in shifts if sha in where],
        },
    }


def _shift_line(x: int) -> dict[str, Any]:
    """A dashed vertical line where a level shift landed."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": "#555", "dash": "dash"},
    }


def _shift_label(x: int) -> dict[str, Any]:
    """The words above a level shift's line."""
    return {
        "x": x,
        "y": 1,
        "xref": "x",
        "yref": "paper",
        "text": "level shift",
        "showarrow": False,
        "yanchor": "bottom",
    }


def add_accepted(
    figure: dict[str, Any],
    judged: Sequence[JudgedRun],
    accepted: Sequence[tuple[BranchCommit, str]],
) -> None:
    """Mark each accepted change on ``figure``: a solid line at the first run of its commit
    or a later one (where its level starts), "accepted" above it, and a hover naming the
    commit and the reason. A change no drawn run follows is not drawn."""
    layout = figure["layout"]
    for commit, reason in accepted:
        x = next(
            (x for x, j in enumerate(judged) if j.run.commit.position >= commit.position), None
        )
        if x is None:
            continue
        layout["shapes"].append({**_shift_line(x), "line": {"color": "#2ca02c", "width": 2}})
        layout["annotations"].append(
            {
                **_shift_label(x),
                "text": "accepted",
                "hovertext": plotly_text(f"accepted at {commit.short}: {reason}"),
                "font": {"color": "#2ca02c"},
            }
        )


def _colours(count: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(count)]


def _ticks(judged: Sequence[JudgedRun], most: int = 8) -> list[tuple[int, str]]:
    """At most ``most`` evenly spread runs, labelled with their commit's short SHA, and
    with when they were recorded where several runs share a commit."""
    shared = Counter(j.run.commit.sha for j in judged)
    runs = [
        (
            x,
            j.run.commit.short
            + (f" {_when(j.run.recorded)[5:16]}" if shared[j.run.commit.sha] > 1 else ""),
        )
        for x, j in enumerate(judged)
    ]
    if len(runs) <= most:
        return runs
    step = (len(runs) - 1) / (most - 1)
    return [runs[round(i * step)] for i in range(most)]


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
    env.filters["when"] = _when
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
    text: str = get_plotlyjs()
    return text


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
