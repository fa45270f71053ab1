"""A new user's local scenario, end to end: every surface says the same thing.

A repository whose demo bucket is recorded run after run on the local baseline branch
(`bench --record`, all at one commit), as docs/baselines.md "Local baselines" says to. Then:

* the first bench's hint names how many recorded runs fill a window, and exactly that
  many make the next bench judge for real;
* the demo's per-sample lines print the figure the table aggregates;
* seed's dry run at that commit shows the samples it already stores;
* the trend site counts the same runs and samples, says it draws recorded runs' window
  verdicts, and places runs that share the commit side by side, dated when recorded.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.util.console import format_figure
from perfgate.util.git import git
from tests.git_support import commit_all

CONFIG = """\
version: 1
gate: {target_branches: [main], protected_branches: [main], confirm: off,
       baseline: {min_samples: 5, min_runs: 3}}
admission: {mode: off}
defaults:
  driver: demo
  num_envs: 64
  steps: 40
  warmup_steps: 5
  retries: 0
  repeats: 3
  demo: {warmup_seconds: 0.0, measure_seconds: 0.05}
  metric: {path: runtime.total_fps.median, unit: env-steps/s}  # the demo matrix's
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""
PER_SAMPLE = re.compile(r"perfgate-demo: cartpole/numpy runtime\.total_fps\.median ([\d,]+)")


class Scenario:
    """The repository and the verbs a user runs in it."""

    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root, self.capsys = tmp_path, capsys
        self.repo = tmp_path / "repo"
        git("init", "-q", "-b", "main", str(self.repo))
        (self.repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
        commit_all(self.repo, "demo")

    def run(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def bench(self, *extra: str) -> tuple[dict[str, object], str, str]:
        report = self.root / "report"
        code, out, err = self.run(
            "bench", "--out", str(self.root / "out"), "--report-dir", str(report),
            "--work-dir", str(self.root / "work"), *extra,
        )  # fmt: skip
        assert code == 0, out + err
        row = json.loads((report / "verdict.json").read_text())["rows"][0]
        return row, out, err


@pytest.fixture
def scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Scenario:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    found = Scenario(tmp_path, capsys)
    monkeypatch.chdir(found.repo)
    return found


def test_every_surface_tells_the_same_recorded_history(scenario: Scenario) -> None:
    row, out, err = scenario.bench()
    # The per-sample lines print the figure the table aggregates: the median step's.
    printed = [int(m.replace(",", "")) for m in PER_SAMPLE.findall(err)]
    assert len(printed) == 3, err
    line = next(line for line in out.splitlines() if line.startswith("cartpole/numpy"))
    assert line.split()[2] == format_figure(statistics.median(printed))
    # The progress line of a judged run leaves the figure to the table, which prints the
    # one that decides: no second figure beside it.
    progress = next(line for line in err.splitlines() if "judged below" in line)
    assert "cartpole/numpy: 3 sample(s), judged below" in progress
    assert "env-steps/s" not in progress
    hint = re.search(r"(\d+) recorded runs fill a window", err)
    assert hint is not None, err
    runs = int(hint.group(1))
    assert runs == 3  # 5 samples in 3 runs, 3 samples a run

    for _ in range(runs - 1):
        scenario.bench("--record", "--quiet")
    row, _, _ = scenario.bench("--quiet")
    assert "INSUFFICIENT_WINDOW" in row["reasons"]  # one recorded run short
    scenario.bench("--record", "--quiet")
    row, _, err = scenario.bench("--quiet")
    assert not {"INSUFFICIENT_WINDOW", "NO_BASELINE"} & set(row["reasons"]), row
    assert "recorded runs fill a window" not in err

    # seed's dry run at the commit: the samples the bench recorded there are shown.
    code, out, _ = scenario.run("seed", "--branch", "main", "--last", "1")
    assert code == 0
    table_row = next(line for line in out.splitlines() if "cartpole/numpy" in line)
    present, stored = table_row.split()[4:6]
    assert (present, stored) == ("0", str(runs * 3))
    assert f"stored: every sample of the experiment at that commit ({runs * 3}" in out

    # The trend site: the same runs and samples, each run at its own place, dated.
    site = scenario.root / "site"
    code, _, _ = scenario.run("report", "--out", str(site))
    assert code == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "<th>window verdict</th>" in index and "Only recorded runs are here" in index
    cells = re.findall(r'<td class="num">(\d+)</td>', index)
    assert cells[-2:] == [str(runs), str(runs * 3)]
    page = (site / "buckets" / "cartpole__numpy.html").read_text(encoding="utf-8")
    figure = json.loads(re.search(r'id="data-1">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    samples_trace = next(t for t in figure["data"] if t.get("meta") == "samples")
    assert sorted(set(samples_trace["x"])) == list(range(runs))  # one place per run
    dates = re.findall(r'<td title="commit date [^"]+">([^<]+)</td>', page)
    assert len(dates) == runs and dates == sorted(dates, reverse=True)
