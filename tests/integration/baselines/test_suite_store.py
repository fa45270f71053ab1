"""A suite of 300 selected benchmarks on the baseline branch: 20 runs published, then a
run judged against all 300 windows, each timed (R5)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from textwrap import dedent

from perfgate.baselines.evaluate import evaluate
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.config import Direction, load_config
from perfgate.judge.verdicts import Verdict
from perfgate.result import Result
from perfgate.util.git import git
from tests.factories import make_result, with_metric
from tests.git_support import commit_all

BENCHMARKS = [f"test_{i:03d}" for i in range(300)]
RUNS = 20
CONFIG = dedent("""\
    version: 1
    gate: {mode: blocking, confirm: repeat, target_branches: [main], protected_branches: [main]}
    defaults:
      driver: command
      metric: {benchmark: main}
      metrics: [{name: suite, benchmarks: "test_*"}]
    buckets:
      - task: suite
        backends: [{physics: cpu}]
        command:
          argv: [pytest, --benchmark-json, "{output_dir}/bench.json"]
          output: "{output_dir}/bench.json"
          format: pytest-benchmark
    """)


def run_of(sha: str, index: int) -> Result:
    """A run of the suite at ``sha``: two samples of each benchmark, 1 % apart."""
    wobble = (1.0 + 0.004 * (index % 5), 0.995 + 0.003 * (index % 3))
    result = make_result("suite/cpu", samples=wobble, direction=Direction.LOWER, commit=sha,
                         run_id=f"run-{index}")  # fmt: skip
    for number, name in enumerate(BENCHMARKS):
        level = 1.0 + number / 1000
        result = with_metric(result, name, [level * w for w in wobble], path=name)
    return result


def test_300_benchmarks_publish_and_judge_in_seconds(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    shas = [commit_all(repo, f"c{i}") for i in range(RUNS + 1)]
    config = load_config(repo / "perfgate.yaml")
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    writes = []
    for index, sha in enumerate(shas[:RUNS]):
        samples = samples_from_result(
            run_of(sha, index), trusted_source="perf", timestamp=start + timedelta(hours=index)
        )
        began = time.perf_counter()
        store.append(samples, f"publish {sha[:7]}")
        writes.append(time.perf_counter() - began)
    git("checkout", "-q", "--detach", shas[RUNS], cwd=repo)
    began = time.perf_counter()
    (row,) = evaluate(config, config.buckets, [run_of(shas[RUNS], RUNS)], store).rows
    read = time.perf_counter() - began
    print(f"\n300 benchmarks x 2 samples a run: publish {min(writes):.2f}-{max(writes):.2f} s "
          f"(mean {sum(writes) / len(writes):.2f} s) per run; judging a run against 301 "
          f"windows of {RUNS} runs: {read:.2f} s")  # fmt: skip
    assert row.judgement is not None and len(row.judgement.metrics) == 301
    windows = {m.decision.window_runs for m in row.judgement.metrics if m.decision is not None}
    assert windows == {RUNS}
    assert row.verdict in (Verdict.PASS, Verdict.IMPROVED)
    # Generous bounds on a shared 2-core machine: a suite costs seconds, never minutes.
    assert max(writes) < 20 and read < 30
