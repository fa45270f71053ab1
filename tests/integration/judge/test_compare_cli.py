"""`perfgate compare A B` end to end: results directories and baseline-branch commits."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.result import AdmissionStatus, MachineState, SampleAdmission, Timings, write_result
from perfgate.util.git import git
from tests.factories import make_result, with_metric
from tests.git_support import IDENTITY, commit_all
from tests.paths import FIXTURES, ROOT

CONFIG = """
version: 1
buckets:
  - task: cartpole
    backends: [{physics: numpy}, {physics: python}]
"""


def _samples(level: float, seed: int, n: int = 8) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, 0.005)) for _ in range(n)]


def _results(directory: Path, levels: dict[str, float], seed: int) -> Path:
    for index, (bucket, level) in enumerate(levels.items()):
        write_result(make_result(bucket, samples=_samples(level, seed + index)), directory)
    return directory


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(root))
    (root / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return root


def test_two_results_directories(repo: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    before = _results(tmp_path / "a", {"cartpole/numpy": 1000.0, "cartpole/python": 100.0}, 1)
    after = _results(tmp_path / "b", {"cartpole/numpy": 850.0, "cartpole/python": 100.0}, 9)
    assert main(["compare", str(before), str(after), "--json"]) == 0
    captured = capsys.readouterr()
    rows = {r["bucket"]: r for r in json.loads(captured.out)["rows"]}
    assert rows["cartpole/numpy"]["change"] == "worse"
    assert rows["cartpole/numpy"]["ratio"] == pytest.approx(0.85, abs=0.02)
    assert rows["cartpole/python"]["change"] in ("same", "unclear")
    assert "- worse" in captured.err  # the table, on stderr beside --json
    assert main(["compare", str(before), str(after), "--fail-on-regression"]) == 1
    assert main(["compare", str(after), str(before), "--fail-on-regression"]) == 0


def test_the_table_fits_100_columns_at_the_demos_figures(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's own matrix, ids, unit and eight-digit figures made 102 columns."""
    (repo / "perfgate.yaml").write_text((ROOT / "perfgate.yaml").read_text(encoding="utf-8"))
    rng = random.Random(5)
    for side, level in (("a", 18_413_378.0), ("b", 16_572_040.0)):
        for bucket in ("cartpole/numpy", "cartpole/python"):
            samples = [level * (1 + rng.gauss(0, 0.02)) for _ in range(8)]
            write_result(make_result(bucket, samples=samples), tmp_path / side)
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    table = capsys.readouterr().out
    assert "env-steps/s" in table and max(len(line) for line in table.splitlines()) <= 100, table


def test_contention_that_shows_only_in_the_samples_calls_nothing_worse(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four of six "after" samples ran 40 % slow and admission control saw nothing: the
    comparison read -34.9 % worse and --fail-on-regression exited 1."""
    before = tmp_path / "a"
    write_result(make_result("cartpole/numpy", samples=_samples(1000.0, 1, n=10)), before)
    after = tmp_path / "b"
    # The two it spared ran a little slow too, so every rank says B is worse.
    contended = [*_samples(985.0, 2, n=2), *_samples(600.0, 3, n=4)]
    write_result(make_result("cartpole/numpy", samples=contended), after)
    assert main(["compare", str(before), str(after), "--fail-on-regression"]) == 0
    assert "? unclear" in capsys.readouterr().out
    assert main(["compare", str(before), str(after), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["change"] == "unclear" and "B's samples split" in row["detail"]


def test_two_commits_on_the_baseline_branch(repo: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    shas = []
    for message in ("fast", "slow"):
        git("commit", "-q", "--allow-empty", "-m", message, cwd=repo, env=IDENTITY)
        shas.append(git("rev-parse", "HEAD", cwd=repo).strip())
    store = BaselineStore(repo, branch="perf-baselines")
    for sha, level, seed in ((shas[0], 1000.0, 3), (shas[1], 700.0, 4)):
        result = make_result("cartpole/numpy", samples=_samples(level, seed), commit=sha)
        # A further metric's lines sit beside the primary's, here more of them: compare
        # reads the primary's, never the most numerous.
        result = with_metric(result, "startup_s", _samples(5.0, seed)[:7] * 2)
        store.append(samples_from_result(result, trusted_source="seed"), "seed")
    code = main(["compare", shas[0][:7], shas[1][:7], "--hardware", "cpu-test", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert code == 0
    assert [(r["bucket"], r["change"], r["samples"]) for r in rows] == [
        ("cartpole/numpy", "worse", [8, 8])
    ]


def test_nothing_in_common_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    a = _results(tmp_path / "a", {"cartpole/numpy": 1000.0}, 1)
    b = _results(tmp_path / "b", {"cartpole/python": 100.0}, 2)
    assert main(["compare", str(a), str(b)]) == 4
    assert main(["compare", str(a), "no-such-ref"]) == 4


@pytest.mark.parametrize("samples", [1, 7], ids=["one-a-side", "seven-a-side"])
def test_extreme_but_valid_figures_print_only_finite_figures_or_not_comparable(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], samples: int
) -> None:
    """5e-324 against 1e308: a ratio past what a float holds is said, never printed."""
    tiny = [5e-324 * (1 + i) for i in range(samples)]
    huge = [1e308 * (1 - i / 100) for i in range(samples)]
    write_result(make_result("cartpole/numpy", samples=tiny), tmp_path / "a")
    write_result(make_result("cartpole/numpy", samples=huge), tmp_path / "b")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (row,) = json.loads(captured.out, parse_constant=lambda c: pytest.fail(f"{c} printed"))["rows"]
    assert row["change"] == "not comparable" and "not comparable" in captured.err
    assert row["ratio"] is None and row["change_pct"] is None and row["interval_pct"] is None
    assert "inf" not in captured.err.lower() and "nan" not in captured.err.lower()


def _recipe_set(directory: Path, level: float, load: float, minute: int, seed: int) -> Path:
    """The recipe of docs/commands.md, one side: six samples of the unchanged bucket, with admission
    control's record of the CPU load before each, over five minutes from ``minute``."""
    samples = _samples(level, seed, n=6)
    admission = tuple(
        SampleAdmission(
            sample_index=index,
            status=AdmissionStatus.NOT_CHECKED,
            before=MachineState(load_1m=load, cpus=2),
            after=MachineState(load_1m=load, cpus=2),
        )
        for index in range(len(samples))
    )
    timings = Timings(
        started_at=f"2026-12-01T10:{minute:02d}:00+00:00",
        finished_at=f"2026-12-01T10:{minute + 5:02d}:00+00:00",
        wall_s=300.0,
    )
    result = make_result("cartpole/python", samples=samples, admission=admission, timings=timings)
    write_result(result, directory)
    return directory


def test_the_recipe_on_a_machine_that_moved_calls_nothing_worse(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: unchanged code read -45 % 'worse' because the machine got busy between the
    two sets. The artifacts show it: the load went from 0.2 to 1.5 per CPU."""
    before = _recipe_set(tmp_path / "before", 1_350_000.0, load=0.4, minute=0, seed=1)
    after = _recipe_set(tmp_path / "after", 740_000.0, load=3.0, minute=10, seed=2)
    assert main(["compare", str(before), str(after), "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    (row,) = document["rows"]
    assert row["change"] == "unclear" and "the machine moved" in row["detail"]
    assert row["change_pct"] == pytest.approx(-45.2, abs=1.0)  # the figure is still shown
    assert "- worse" not in captured.err
    assert "were measured at different times" in captured.err
    assert "the machine moved between A and B (CPU load 0.20 vs 1.50 per CPU" in captured.err
    assert document["machine_moved"] == ["CPU load 0.20 vs 1.50 per CPU before the samples"]
    # --fail-on-regression is refused, not answered.
    assert main(["compare", str(before), str(after), "--fail-on-regression"]) == 4
    assert "refusing --fail-on-regression: the machine moved" in capsys.readouterr().err


def test_the_recipe_on_a_steady_machine_still_calls_a_drop_worse(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same two sets on a machine whose load stayed put: the drop is the code's."""
    before = _recipe_set(tmp_path / "before", 1_350_000.0, load=0.4, minute=0, seed=1)
    after = _recipe_set(tmp_path / "after", 740_000.0, load=0.6, minute=10, seed=2)
    assert main(["compare", str(before), str(after), "--fail-on-regression"]) == 1
    captured = capsys.readouterr()
    assert "- worse" in captured.out and "were measured at different times" in captured.out
    assert "the machine moved" not in captured.out + captured.err


def _measure_repo(tmp_path: Path, slow_after: int, speeds: tuple[float, float]) -> list[str]:
    """Two commits whose benchmark runs at ``speeds``, on a machine that loses 45 % of its
    speed after ``slow_after`` runs (fake_benchmark.py drifting_speed)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "slow_after").write_text(str(slow_after))
    argv = [sys.executable, str(FIXTURES / "fake_benchmark.py"), "drifting_speed",
            "{output_dir}/r.json", str(state)]  # fmt: skip
    config = (
        "version: 1\nadmission: {mode: off}\n"
        "defaults:\n  driver: command\n  retries: 0\n"
        f"  command: {{argv: {json.dumps(argv)}, output: '{{output_dir}}/r.json'}}\n"
        "  metric: {path: results.throughput.mean}\n"
        "buckets:\n  - task: sim\n    backends: [{physics: cpu}]\n"
    )
    repo = Path.cwd()
    (repo / "perfgate.yaml").write_text(config, encoding="utf-8")
    shas = []
    for speed in speeds:
        (repo / "speed.txt").write_text(f"{speed}\n", encoding="utf-8")
        shas.append(commit_all(repo, f"speed {speed}"))
    return shas


def test_measure_interleaves_so_a_machine_that_slows_down_moves_neither_side(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unchanged code, a machine 45 % slower from the 7th run on: pairs A B, B A, ... see the
    slowdown on both sides, so nothing is called worse (measured one after the other, the
    second set would be 45 % down)."""
    a, b = _measure_repo(tmp_path, slow_after=6, speeds=(100.0, 100.0))
    code = main(["compare", "--measure", a, b, "--pairs", "6", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (row,) = json.loads(captured.out)["rows"]
    assert row["samples"] == [6, 6] and row["change"] == "same", row
    assert abs(row["change_pct"]) < 1.0
    assert (tmp_path / "state" / "finished").read_text() == "12"  # both sides, alternately
    assert "measured alternately here" in captured.err


def test_measure_calls_a_real_slowdown_worse(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B really is 30 % slower: the pairs say so, and --fail-on-regression exits 1."""
    a, b = _measure_repo(tmp_path, slow_after=1000, speeds=(100.0, 70.0))
    assert main(["compare", "--measure", a, b, "--fail-on-regression"]) == 1
    captured = capsys.readouterr()
    assert "- worse" in captured.out and "\u221230.0 %" in captured.out
    # The worktrees are gone; the working tree is what the user left.
    assert not list((repo / ".perfgate" / "work" / "compare").glob("*/*/speed.txt"))
