"""`perfgate compare A B` end to end: results directories and baseline-branch commits."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.git import git
from perfgate.result import write_result
from tests.factories import make_result, with_metric

pytestmark = pytest.mark.integration

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip
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
