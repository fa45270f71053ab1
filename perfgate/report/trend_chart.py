"""One chart of the trend site as a plotly figure: a series' samples coloured by runner,
the lines each run was judged against as bands, the verdicts other than PASS circled, and
the level shifts and accepted changes marked."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from perfgate.baselines.history import BranchCommit, Series
from perfgate.report.rule import JudgedRun
from perfgate.util.console import format_figure

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


def _round(value: float | None) -> float | None:
    """Seven significant digits: what a reader can use, half the bytes of a full float."""
    return None if value is None else float(f"{value:.7g}")


def when_recorded(date: str) -> str:
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
    data = [*_band_traces(judged, unit), *_sample_traces(judged, unit), *_verdict_traces(judged)]
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


def _band_traces(judged: Sequence[JudgedRun], unit: str) -> list[dict[str, Any]]:
    """The lines each run was judged against, as bands (none when no run had a baseline)."""
    if not any(j.baseline is not None for j in judged):
        return []
    xs = list(range(len(judged)))

    def line(values: list[float | None], name: str, colour: str, **style: Any) -> dict[str, Any]:
        return {
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": xs,
            "y": values,
            "line": {"color": colour, "width": 1, "shape": "vh", **style.pop("line", {})},
            # A sample's hover names these lines: a line that took the hover itself would
            # hide the commit of a sample lying on it ("closest" picks one trace).
            "hoverinfo": "skip",
            **style,
        }

    # Filled to the previous trace: block..warn is the warn zone, warn..baseline the noise.
    # "vh": the step that ends at a run holds the lines that run was judged against.
    return [
        line([_round(j.block_line) for j in judged], "block line", "#d62728",
             line={"dash": "dot"}),
        line([_round(j.warn_line) for j in judged], "warn line", "#ff9f1c",
             fill="tonexty", fillcolor="rgba(255,159,28,0.18)"),
        line([_round(j.baseline) for j in judged], "baseline", "#2ca02c",
             fill="tonexty", fillcolor="rgba(44,160,44,0.12)"),
    ]  # fmt: skip


def _sample_traces(judged: Sequence[JudgedRun], unit: str) -> list[dict[str, Any]]:
    """Every sample as a marker, one trace (and colour) per runner."""
    data = []
    runners = sorted({j.run.runner for j in judged})
    for colour, runner in zip(itertools.cycle(PALETTE), runners, strict=False):
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
                    [
                        j.run.commit.short,
                        when_recorded(j.run.recorded),
                        s.sample_index or 0,
                        _lines_text(j, unit),
                    ]
                    for _, j, s in points
                ],
                "marker": {"color": colour, "size": 6, "opacity": 0.8},
                "hovertemplate": "%{customdata[0]} · recorded %{customdata[1]}<br>"
                f"%{{y:.4s}} {unit} (sample %{{customdata[2]}})<br>{shown}%{{customdata[3]}}"
                "<extra></extra>",
            }
        )
    return data


def _lines_text(judged: JudgedRun, unit: str) -> str:
    """The lines a run was judged against, for its samples' hover ('' when none was drawn)."""
    drawn = [
        f"{name} {format_figure(value)}"
        for name, value in (("baseline", judged.baseline), ("warn line", judged.warn_line),
                            ("block line", judged.block_line))
        if value is not None
    ]  # fmt: skip
    return f"<br>judged against: {' · '.join(drawn)} {unit}" if drawn else ""


def _verdict_traces(judged: Sequence[JudgedRun]) -> list[dict[str, Any]]:
    """The run figures judged other than PASS, ringed, one trace per verdict."""
    data = []
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
    return data


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


def _ticks(judged: Sequence[JudgedRun], most: int = 8) -> list[tuple[int, str]]:
    """At most ``most`` evenly spread runs, labelled with their commit's short SHA, and
    with when they were recorded where several runs share a commit."""
    shared = Counter(j.run.commit.sha for j in judged)
    runs = [
        (
            x,
            j.run.commit.short
            + (f" {when_recorded(j.run.recorded)[5:16]}" if shared[j.run.commit.sha] > 1 else ""),
        )
        for x, j in enumerate(judged)
    ]
    if len(runs) <= most:
        return runs
    step = (len(runs) - 1) / (most - 1)
    return [runs[round(i * step)] for i in range(most)]
