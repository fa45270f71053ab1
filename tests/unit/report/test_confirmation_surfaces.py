"""How each verdict was reached, and each sample's admission, on every surface."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from perfgate.config import load_config
from perfgate.github.handoff import validate_verdict
from perfgate.github.post import plan_statuses
from perfgate.judge.gate import GateReport, build_report
from perfgate.report.summary import summary_from_verdict, summary_markdown
from perfgate.report.terminal import terminal_table
from perfgate.report.verdict import report_json
from perfgate.result import (
    AdmissionStatus,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    SampleAdmission,
    Sampling,
    SamplingStop,
)
from perfgate.util import jsonfile
from perfgate.util.console import format_figure
from tests.factories import windows_of
from tests.github_support import CONFIG_TEXT, HOSTILE, RUNS, make_result

BASE = [1000.0, 1004.0, 996.0, 1002.0, 998.0]


def paired(base: list[float], head: list[float], reason: str = "") -> PairedRecord:
    samples = []
    for pair, (b, h) in enumerate(zip(base, head, strict=True)):
        for side, value in ((PairedSide.BASE, b), (PairedSide.HEAD, h)):
            samples.append(
                PairedSample(sample_index=len(samples), pair=pair, side=side, value=value)
            )
    return PairedRecord(status=PairedStatus.MEASURED, reason=reason, base_commit="e" * 40,
                        max_pairs=16, samples=tuple(samples), stopped=PairedStop.SETTLED,
                        wall_s=120.0)  # fmt: skip


def report(directory: Path, hostile: bool = False) -> GateReport:
    """Paired BLOCK, paired PASS, repeats without a merge base, a sample set aside."""
    path = directory / "perfgate.yaml"
    path.write_text(
        CONFIG_TEXT.format(mode="blocking").replace("confirm: repeat", "confirm: paired")
    )
    config = load_config(path)
    caught, cleared, fallback, aside = config.buckets
    note = HOSTILE if hostile else "not a git checkout, so there is no merge base to measure"
    sampling = Sampling(confirm="paired", repeats=2, max_repeats=10,
                        stopped=SamplingStop.SETTLED, confirmation_s=120.0)  # fmt: skip
    reasons = (HOSTILE,) if hostile else ("GPU throttled: HW slowdown",)
    results = [
        dataclasses.replace(
            make_result(caught, 1000.0, samples=(1000.0, 1001.0)),
            paired=paired(BASE, [v * 0.9 for v in BASE]),
            sampling=sampling,
        ),
        dataclasses.replace(
            make_result(cleared, 930.0, samples=(930.0, 931.0, 929.0)),
            paired=paired(BASE, BASE),
            sampling=sampling,
        ),
        dataclasses.replace(
            make_result(fallback, 1000.0, samples=(1000.0, 1001.0, 999.0)),
            paired=PairedRecord(status=PairedStatus.UNAVAILABLE, reason=note),
            sampling=dataclasses.replace(sampling, confirming_samples=1, confirmation_s=60.0),
        ),
        dataclasses.replace(
            make_result(aside, 1000.0, samples=(1000.0, 700.0, 1001.0)),
            admission=(
                SampleAdmission(sample_index=0, status=AdmissionStatus.ADMITTED),
                SampleAdmission(
                    sample_index=1, status=AdmissionStatus.CONTAMINATED, reasons=reasons
                ),
                SampleAdmission(sample_index=2, status=AdmissionStatus.ADMITTED),
            ),
        ),
    ]
    return build_report(config=config, expected=config.buckets, results=results,
                        windows=windows_of({b.id: RUNS for b in config.buckets}))  # fmt: skip


def test_verdict_json_says_how_each_verdict_was_reached(tmp_path: Path) -> None:
    data = report_json(report(tmp_path))
    jsonschema.validate(data, jsonfile.schema("verdict"))
    assert validate_verdict(data) == []
    rows = {row["bucket"]: row for row in data["rows"]}
    caught, cleared = rows["cartpole/numpy"], rows["cartpole/python"]
    assert (caught["verdict"], caught["confirmation"]["method"]) == ("BLOCK", "paired")
    paired = caught["confirmation"]["paired"]
    assert (paired["verdict"], paired["pairs"], paired["base_commit"]) == ("BLOCK", 5, "e" * 40)
    assert -10.5 < paired["effect_pct"] < -9.5 and paired["interval_pct"][1] < -3.0
    assert caught["confirmation"]["minutes"] == 2.0
    assert (cleared["verdict"], cleared["confirmation"]["paired"]["reason"]) == (
        "PASS", "NOT_CONFIRMED",
    )  # fmt: skip
    fallback = rows["pendulum/numpy"]["confirmation"]
    assert (fallback["method"], fallback["note"][:18]) == ("repeats", "not a git checkout")
    admission = rows["pendulum/python"]["admission"]
    assert [a["status"] for a in admission] == ["admitted", "contaminated", "admitted"]
    assert admission[1]["reasons"] == ["GPU throttled: HW slowdown"]
    assert data["confirmation_minutes"] == 2.0 + 2.0 + 1.0
    assert data["policy"]["confirm"] == "paired"


def test_the_summary_shows_the_paired_figures_and_each_samples_admission(tmp_path: Path) -> None:
    summary = summary_markdown(report(tmp_path))
    assert "| Confirmed by |" in summary and "Admission (per sample)" in summary
    assert "paired A/B, 5 pairs: base 1,000, head 900, \u221210.0 % (" in summary
    assert "repeats (3 samples); no paired A/B: not a git checkout" in summary
    assert "2 admitted · 1 contaminated (\\#1: GPU throttled: HW slowdown)" in summary
    # These results record no spend (as an older perfgate's): the summary says so, by name.
    assert "Runner time: not recorded by the results of cartpole/numpy, " in summary
    assert "the merge base and the change are measured alternately" in summary
    # The terminal and the commit statuses: the change the verdict rests on.
    table = terminal_table(report(tmp_path), width=200)
    assert "paired A/B, 5 pairs" in table
    statuses = plan_statuses(report_json(report(tmp_path)), target_url=None)
    caught = next(s for s in statuses if s.context.endswith("(cartpole/numpy)"))
    assert caught.description.startswith("BLOCK \u221210.0 %")


def test_hostile_notes_and_reasons_stay_inert(tmp_path: Path) -> None:
    data = report_json(report(tmp_path, hostile=True))
    assert validate_verdict(data) == []
    summary = summary_from_verdict(json.loads(json.dumps(data)))
    assert "<img" not in summary and "<script>" not in summary and "@org" not in summary
    assert "\n## injected" not in summary


def test_every_surface_quotes_the_figures_that_decided(tmp_path: Path) -> None:
    """A paired BLOCK reads the same, figure for figure, on every surface.

    The window saw the run against another day's runners; the pairs decided. The
    terminal and summary rows, verdict.json, the JUnit failure and the run's description
    all quote the pairs' change with its interval, and the rows' figure and baseline
    are the pairs' head and base, the change between them.
    """
    from perfgate.report.junit import junit_tree
    from perfgate.report.row_text import deciding_change, deciding_figures

    gate = report(tmp_path)
    data = report_json(gate)
    row = next(r for r in data["rows"] if r["bucket"] == "cartpole/numpy")
    paired = row["confirmation"]["paired"]
    change = deciding_change(row)
    assert change.startswith("\u221210.0 % (") and change != deciding_change(
        {k: v for k, v in row.items() if k != "confirmation"}
    )  # the window's own estimate differs: the pairs' is the one quoted
    figure, baseline, quoted = deciding_figures(row)
    assert (figure, baseline, quoted) == (paired["head"], paired["base"], change)
    assert figure / baseline == pytest.approx(1.0 + paired["effect_pct"] / 100.0)

    line = next(line for line in terminal_table(gate, width=200).splitlines()
                if line.startswith("cartpole/numpy"))  # fmt: skip
    assert change in line and format_figure(figure) in line and format_figure(baseline) in line
    summary_line = next(line for line in summary_markdown(gate).splitlines()
                        if line.startswith("| cartpole/numpy |"))  # fmt: skip
    assert change in summary_line and format_figure(figure) in summary_line
    failure = next(case.find("failure") for case in junit_tree(gate).getroot().iter("testcase")
                   if "cartpole/numpy" in case.get("name", ""))  # fmt: skip
    assert failure is not None and change in failure.get("message", "")
    assert change in data["description"]


def test_bucket_ids_are_never_cut_in_a_narrow_terminal(tmp_path: Path) -> None:
    table = terminal_table(report(tmp_path), width=72)
    ids = ("cartpole/numpy", "cartpole/python", "pendulum/numpy", "pendulum/python")
    for bucket in ids:
        assert any(line.startswith(bucket + " ") for line in table.splitlines()), bucket
    assert "confirmed by" in table.splitlines()[0]


def test_the_summary_names_the_commit_the_pairs_ran_against(tmp_path: Path) -> None:
    data = report_json(report(tmp_path))
    assert data["base_commit"] != "e" * 40
    assert "Pairs measured against `eeeeeeeeeeee`." in summary_from_verdict(data)
    for row in data["rows"]:
        if row["confirmation"] and row["confirmation"].get("paired"):
            row["confirmation"]["paired"]["base_commit"] = data["base_commit"]
    assert "Pairs measured against" not in summary_from_verdict(data)
