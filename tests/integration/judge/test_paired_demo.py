"""Taking the machine out of the comparison: paired A/B and admission control, end to end.

A demo repository: ``main`` at speed 100 (the merge base), a feature commit whose benchmark
is truly 10 % slower, another that changes nothing. The window is recorded on main under
the runner's state of that day (an injected slowdown or speed-up, ``STATE/day``), so it
makes the change look slower or faster than it is. The benchmark is the fake benchmark's
``checkout_speed`` mode (a real process reading the checkout's own ``speed.txt``); the GPU
is a fake nvidia-smi on PATH (this machine has none), whose schedule throttles chosen
samples, and the benchmark runs 30 % slower in a throttled sample. Real git throughout:
the local baseline branch, the merge base checked out in a throwaway worktree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.util.git import git
from tests.fake_smi import HW_SLOWDOWN, L40S, install
from tests.git_support import commit_all
from tests.paths import FIXTURES


class Demo:
    """The demo repository, its runner state and the fake GPU."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path
        self.repo = tmp_path / "repo"
        self.state = tmp_path / "state"
        self.state.mkdir()
        self.smi = install(tmp_path, monkeypatch, {**L40S, "schedule": self.schedule({})})
        self.repo.mkdir()
        git("init", "-q", "-b", "main", str(self.repo))
        argv = [sys.executable, str(FIXTURES / "fake_benchmark.py"), "checkout_speed",
                "{output_dir}/r.json", str(self.state)]  # fmt: skip
        self.config = (
            "version: 1\n"
            "gate: {mode: blocking, confirm: CONFIRM}\n"
            "admission: {wait_seconds: 0}\n"
            "defaults:\n"
            "  driver: command\n"
            "  retries: 0\n"
            "  max_pairs: 12\n"
            f"  command: {{argv: {json.dumps(argv)}, output: '{{output_dir}}/r.json'}}\n"
            "  metric: {path: results.throughput.mean}\n"
            "buckets:\n  - task: sim\n    backends: [{physics: gpu}]\n"
        )
        self.commit("main", 100.0, "paired")
        monkeypatch.chdir(self.repo)
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
            monkeypatch.delenv(name, raising=False)

    def schedule(self, by_count: dict[str, Any]) -> dict[str, Any]:
        """The fake nvidia-smi's schedule: overrides by how many samples have finished."""
        return {"counter": str(self.state / "finished"), "by_count": by_count}

    def throttle(self, counts: range | list[int]) -> None:
        """HW slowdown seen by the checks at these finished-sample counts."""
        data = json.loads(self.smi.read_text())
        by_count = {str(c): {"clocks_event_reasons.active": [HW_SLOWDOWN]} for c in counts}
        data["schedule"] = self.schedule(by_count)
        self.smi.write_text(json.dumps(data))

    def commit(self, branch: str, speed: float, confirm: str) -> None:
        """Commit ``speed`` (and the config) on ``branch``, creating it from HEAD if new."""
        if branch != "main":
            git("checkout", "-q", "-B", branch, cwd=self.repo)
        (self.repo / "speed.txt").write_text(f"{speed}\n")
        (self.repo / "perfgate.yaml").write_text(self.config.replace("CONFIRM", confirm))
        # An unchanged commit changes nothing at all: an empty commit.
        commit_all(self.repo, f"speed {speed}")

    def confirm(self, mode: str) -> None:
        """Run the bench with another gate.confirm (an uncommitted edit of the config)."""
        (self.repo / "perfgate.yaml").write_text(self.config.replace("CONFIRM", mode))

    def day(self, factor: float) -> None:
        """The runner's state from now on: its speed relative to a normal day."""
        (self.state / "day").write_text(str(factor))

    def record_window(self, factor: float, runs: int = 5) -> None:
        """Record ``runs`` runs of main on the local baseline branch on a day at ``factor``."""
        git("checkout", "-q", "main", cwd=self.repo)
        self.day(factor)
        for _ in range(runs):
            code, _, _ = self.bench("--record")
            assert code == 0

    def bench(self, *extra: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
        """One ``perfgate bench``: exit code, the artifact, the verdict row."""
        out, report = self.root / "out", self.root / "report"
        code = main(["bench", "--quiet", "--out", str(out), "--report-dir", str(report),
                     "--work-dir", str(self.root / "work"), *extra])  # fmt: skip
        artifact = json.loads((out / "sim__gpu.json").read_text())
        row = json.loads((report / "verdict.json").read_text())["rows"][0]
        return code, artifact, row

    def gate(self) -> tuple[int, dict[str, Any]]:
        """The CI gate's view: re-judge the artifact the bench wrote."""
        report = self.root / "gate"
        code = main(["gate", "--results", str(self.root / "out"), "--report-dir", str(report)])
        return code, json.loads((report / "verdict.json").read_text())["rows"][0]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Demo:
    return Demo(tmp_path, monkeypatch)


def test_paired_confirms_a_real_regression_the_window_understates(demo: Demo) -> None:
    # The window was recorded on a slow day (6 % slow): against it the truly 10 % slower
    # change looks only about 4 % slower.
    demo.record_window(0.94)
    demo.commit("feature", 90.0, "paired")
    demo.day(1.0)
    code, artifact, row = demo.bench()
    assert -5.5 < row["statistics"]["effect_pct"] < -3.0  # what the window sees
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert row["reasons"][0] == "WINDOW_SUSPECT" and "PAIRED_REGRESSION" in row["reasons"]
    confirmation = row["confirmation"]
    assert confirmation["method"] == "paired"
    paired = confirmation["paired"]
    # On the same runner the change is what it truly is: 10 % slower.
    assert -11.0 < paired["effect_pct"] < -9.0
    assert paired["interval_pct"][1] < -3.0 and paired["pairs"] >= 3
    assert paired["base_commit"] == git("rev-parse", "main", cwd=demo.repo).strip()
    assert confirmation["minutes"] > 0
    # The evidence is in the artifact: base and head alternately, the order swapping.
    sides = [s["side"] for s in artifact["paired"]["samples"]]
    assert sides[:4] == ["base", "head", "head", "base"]
    assert artifact["sampling"]["confirm"] == "paired"
    # The gate, re-judging the artifact alone, reaches the same verdict and figures.
    code, judged = demo.gate()
    assert (code, judged["verdict"]) == (1, "BLOCK")
    assert judged["confirmation"] == confirmation


def test_paired_confirms_a_regression_the_window_overstates(demo: Demo) -> None:
    # Recorded on a fast day: against the window the change looks about 18 % slower.
    demo.record_window(1.09)
    demo.commit("feature", 90.0, "paired")
    demo.day(1.0)
    code, artifact, row = demo.bench("--record")
    assert row["statistics"]["effect_pct"] < -15.0
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert -11.0 < row["confirmation"]["paired"]["effect_pct"] < -9.0
    # Recorded: the change's two repeats, nothing the paired comparison measured.
    assert len(artifact["paired"]["samples"]) >= 6
    stored = git("show", "perf-baselines:samples/l40s/sim/gpu.ndjson", cwd=demo.repo)
    assert len(stored.splitlines()) == 5 * 2 + 2
    head = git("rev-parse", "HEAD", cwd=demo.repo).strip()
    assert [json.loads(line)["commit"] for line in stored.splitlines()[-2:]] == [head, head]


def test_paired_clears_a_regression_that_was_only_a_slow_day(demo: Demo) -> None:
    demo.record_window(1.0)
    demo.commit("unchanged", 100.0, "repeat")
    demo.day(0.9)  # today's runner is 10 % slow
    # Against the window, confirmed by repeats on the same slow runner: a false BLOCK.
    code, _, row = demo.bench()
    assert (code, row["verdict"], row["confirmation"]["method"]) == (1, "BLOCK", "repeats")
    # Paired: base and change on the same slow runner are the same.
    demo.confirm("paired")
    code, _, row = demo.bench()
    assert (code, row["verdict"]) == (0, "PASS")
    assert "NOT_CONFIRMED" in row["reasons"]
    assert any("not confirmed on the same runner" in d for d in row["details"])
    paired = row["confirmation"]["paired"]
    assert abs(paired["effect_pct"]) < 1.5 and paired["interval_pct"][0] > -3.0
    code, judged = demo.gate()
    assert (code, judged["verdict"]) == (0, "PASS")


def test_a_run_the_window_clears_takes_no_pairs(demo: Demo) -> None:
    demo.record_window(1.0)
    demo.commit("unchanged", 100.0, "paired")
    code, artifact, row = demo.bench()
    assert (code, row["verdict"], row["confirmation"]["method"]) == (0, "PASS", "window")
    assert "paired" not in artifact and artifact["sampling"]["stopped"] == "settled"


def test_contaminated_samples_never_reach_a_block(demo: Demo) -> None:
    demo.record_window(1.0)
    demo.commit("unchanged", 100.0, "repeat")
    # The GPU is throttled (HW slowdown) from the first sample on, and the benchmark runs
    # 30 % slower for it.
    finished = int((demo.state / "finished").read_text())
    demo.throttle(range(finished, finished + 40))
    demo.confirm("repeat")
    code, artifact, row = demo.bench()
    # Every sample was measured on an unfit GPU: re-measured up to the budget, then set
    # aside; what is left cannot block, and says why.
    assert (code, row["verdict"]) == (0, "INCONCLUSIVE")
    assert "CONTAMINATED" in row["reasons"]
    assert any("GPU throttled: HW slowdown" in d for d in row["details"])
    records = artifact["admission"]
    assert [r["status"] for r in records] == ["contaminated"] * len(records)
    assert len(records) == 2 + 3  # the repeats and the three re-measures
    assert [r["sample_index"] for r in records] == [
        s["sample_index"] for s in artifact["metric"]["samples"]
    ]
    assert "GPU throttled: HW slowdown" in row["admission"][0]["reasons"]
    # The same run without admission control blocks: the throttled samples are slow.
    finished = int((demo.state / "finished").read_text())
    demo.throttle(range(finished, finished + 40))
    demo.config = demo.config.replace("{wait_seconds: 0}", "{mode: off}")
    demo.confirm("repeat")
    code, _, row = demo.bench()
    assert (code, row["verdict"]) == (1, "BLOCK")


def test_one_throttled_sample_is_measured_again_and_never_stored(demo: Demo) -> None:
    demo.record_window(1.0)
    git("checkout", "-q", "main", cwd=demo.repo)
    finished = int((demo.state / "finished").read_text())
    # The check after the second sample sees HW slowdown (and so does the check before the
    # third): both are set aside and measured again.
    demo.throttle([finished + 2])
    code, artifact, row = demo.bench("--record")
    assert (code, row["verdict"]) == (0, "PASS")
    statuses = [r["status"] for r in artifact["admission"]]
    assert statuses == ["admitted", "contaminated", "contaminated", "admitted"]
    assert "CONTAMINATED" in row["reasons"]
    assert "2 admitted · 2 contaminated" in (demo.root / "report" / "summary.md").read_text()
    # Recorded on the baseline branch: only the admitted samples.
    stored = git("show", "perf-baselines:samples/l40s/sim/gpu.ndjson", cwd=demo.repo)
    indexes = [json.loads(line)["sample_index"] for line in stored.splitlines()[-2:]]
    assert indexes == [0, 3]
    assert len(stored.splitlines()) == 5 * 2 + 2
