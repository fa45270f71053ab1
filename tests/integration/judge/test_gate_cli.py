"""gate and publish end to end: real git repositories, artifacts on disk, the CLI's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.config import load_config
from perfgate.result import write_result
from perfgate.util.git import git
from tests.factories import make_result, of_experiment, with_metric
from tests.git_support import IDENTITY, MakeClone

CONFIG = """
version: 1
gate: {mode: blocking, protected_branches: [main], confirm: repeat}
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""


@pytest.fixture
def checkout(origin_clone: MakeClone) -> tuple[Path, str]:
    """A clone of a bare origin with one commit on main; the working directory is the clone."""
    clone = origin_clone(files={"perfgate.yaml": CONFIG})
    return clone.path, clone.head


def github_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, event: str, sha: str) -> None:
    """GitHub's standard environment for a push to main or a pull request into main."""
    payload = tmp_path / f"{event}.json"
    if event == "pull_request":
        payload.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": sha}}}))
        monkeypatch.setenv("GITHUB_BASE_REF", "main")
        monkeypatch.setenv("GITHUB_HEAD_REF", "feature")
        monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")
    else:
        payload.write_text(json.dumps({}))
        monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_EVENT_NAME", event)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(payload))
    monkeypatch.setenv("GITHUB_SHA", sha)
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output.txt"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.txt"))


def artifacts(
    directory: Path,
    sha: str,
    value: float,
    run: str,
    event: str = "push",
    samples: tuple[float, ...] = (),
) -> Path:
    made = make_result("cartpole/numpy", value, samples=samples, commit=sha, run_id=run,
                       event=event)  # fmt: skip
    write_result(of_experiment(made, load_config(Path("perfgate.yaml"))), directory)
    return directory


def test_publish_refuses_a_pull_request_and_writes_nothing(checkout, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "pull_request", sha)
    results = artifacts(tmp_path / "r", sha, 100.0, "1", event="pull_request")
    assert main(["publish", "--results", str(results)]) == 4
    assert git("ls-remote", "origin", "perf-baselines", cwd=clone) == ""


def test_publish_refuses_artifacts_from_a_pull_request_even_on_a_push(
    checkout, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "push", sha)
    results = artifacts(tmp_path / "r", sha, 100.0, "1", event="pull_request")
    assert main(["publish", "--results", str(results)]) == 4
    assert git("ls-remote", "origin", "perf-baselines", cwd=clone) == ""


def test_published_baselines_judge_the_next_run(checkout, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "push", sha)
    for run, value in enumerate([100.0, 101.0, 99.0, 100.0, 100.5]):
        samples = (value, value * 1.004)  # each run took two samples
        results = artifacts(tmp_path / f"r{run}", sha, value, str(run), samples=samples)
        assert main(["publish", "--results", str(results)]) == 0
    assert main(["publish", "--results", str(tmp_path / "r0")]) == 0  # retried: no duplicate
    stored = git("show", "origin/perf-baselines:samples/cpu-test/cartpole/numpy.ndjson", cwd=clone)
    lines = [json.loads(line) for line in stored.splitlines()]
    # One line per sample, each with its index in its run and the run's key.
    assert len(lines) == 10
    assert [line["sample_index"] for line in lines] == [0, 1] * 5
    assert len({line["timestamp"] for line in lines}) == 5  # a run's samples share one
    assert len({line["sample_id"] for line in lines}) == 10

    github_env(monkeypatch, tmp_path, "pull_request", sha)
    fine = artifacts(
        tmp_path / "fine", sha, 100.2, "10", event="pull_request", samples=(100.2, 100.6)
    )
    assert main(["gate", "--results", str(fine), "--report-dir", str(tmp_path / "rep1")]) == 0
    verdict = json.loads((tmp_path / "rep1" / "verdict.json").read_text())
    assert verdict["overall_verdict"] == "PASS"
    assert (verdict["rows"][0]["baseline"]["samples"], verdict["rows"][0]["baseline"]["runs"]) == (
        10,
        5,
    )
    assert verdict["rows"][0]["statistics"]["run_samples"] == 2

    slow = artifacts(
        tmp_path / "slow", sha, 80.0, "11", event="pull_request", samples=(80.0, 80.3, 79.8)
    )
    assert main(["gate", "--results", str(slow), "--report-dir", str(tmp_path / "rep2")]) == 1
    verdict = json.loads((tmp_path / "rep2" / "verdict.json").read_text())
    assert verdict["overall_verdict"] == "BLOCK"
    assert verdict["status_state"] == "failure"
    low, high = verdict["rows"][0]["statistics"]["interval_pct"]
    assert low < verdict["rows"][0]["statistics"]["effect_pct"] < high < -3.0
    outputs = (tmp_path / "output.txt").read_text()
    assert "overall_verdict=BLOCK" in outputs
    summary = (tmp_path / "summary.txt").read_text()
    assert "regression" in summary and "\u2026" in summary  # the change with its interval


def published_as_an_older_perfgate(
    clone: Path, sha: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, without: str
) -> None:
    """Six runs published, then the baseline branch rewritten as a perfgate that wrote no
    ``without`` field in its lines left it."""
    github_env(monkeypatch, tmp_path, "push", sha)
    for run, value in enumerate([100.0, 101.0, 99.0, 100.0, 100.5, 99.5]):
        assert main(["publish", "--results", str(artifacts(tmp_path / f"r{run}", sha, value,
                                                            str(run)))]) == 0  # fmt: skip
    path = "samples/cpu-test/cartpole/numpy.ndjson"
    old_lines = []
    for line in git("show", f"origin/perf-baselines:{path}", cwd=clone).splitlines():
        data = json.loads(line)
        del data[without]
        old_lines.append(json.dumps(data, sort_keys=True, separators=(",", ":")))
    (clone / "old.ndjson").write_text("\n".join(old_lines) + "\n")
    blob = git("hash-object", "-w", "old.ndjson", cwd=clone).strip()
    tree = git("mktree", cwd=clone, input_text=f"100644 blob {blob}\tnumpy.ndjson\n").strip()
    for name in ("cartpole", "cpu-test", "samples"):
        tree = git("mktree", cwd=clone, input_text=f"040000 tree {tree}\t{name}\n").strip()
    commit = git("commit-tree", tree, "-m", "older perfgate", cwd=clone, env=IDENTITY).strip()
    git("push", "-q", "-f", "origin", f"{commit}:refs/heads/perf-baselines", cwd=clone)


def test_a_window_recorded_before_repeats_still_gates(checkout, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Lines written before repeats existed (no run, no sample_index): one run each."""
    clone, sha = checkout
    published_as_an_older_perfgate(clone, sha, tmp_path, monkeypatch, without="sample_index")

    github_env(monkeypatch, tmp_path, "pull_request", sha)
    fine = artifacts(tmp_path / "fine", sha, 100.2, "10", event="pull_request",
                     samples=(100.2, 99.9))  # fmt: skip
    assert main(["gate", "--results", str(fine), "--report-dir", str(tmp_path / "rep1")]) == 0
    row = json.loads((tmp_path / "rep1" / "verdict.json").read_text())["rows"][0]
    assert (row["verdict"], row["baseline"]["samples"], row["baseline"]["runs"]) == ("PASS", 6, 6)
    slow = artifacts(tmp_path / "slow", sha, 80.0, "11", event="pull_request",
                     samples=(80.0, 80.3, 79.8))  # fmt: skip
    assert main(["gate", "--results", str(slow), "--report-dir", str(tmp_path / "rep2")]) == 1
    row = json.loads((tmp_path / "rep2" / "verdict.json").read_text())["rows"][0]
    assert row["verdict"] == "BLOCK"


def test_a_store_and_artifacts_from_before_metrics_still_gate_when_metrics_are_added(
    checkout, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Lines without a ``metric`` field (an older perfgate) are the primary's: declaring a
    further metric keeps the primary's window, and the new metric starts empty."""
    clone, sha = checkout
    published_as_an_older_perfgate(clone, sha, tmp_path, monkeypatch, without="metric")

    github_env(monkeypatch, tmp_path, "pull_request", sha)
    # The artifacts an older bench wrote, judged by the config that declared nothing more.
    old_artifact = artifacts(tmp_path / "old", sha, 80.0, "9", event="pull_request",
                             samples=(80.0, 80.3, 79.8))  # fmt: skip
    assert "metrics" not in json.loads(next(old_artifact.glob("*.json")).read_text())
    assert main(["gate", "--results", str(old_artifact), "--report-dir", str(tmp_path / "r0")]) == 1
    row = json.loads((tmp_path / "r0" / "verdict.json").read_text())["rows"][0]
    assert (row["verdict"], row["baseline"]["samples"]) == ("BLOCK", 6)

    (clone / "perfgate.yaml").write_text(
        CONFIG + "defaults:\n  metrics: [{name: startup_s, path: runtime.startup_s, "
        "direction: lower, unit: s}]\n"
    )
    fine = with_metric(
        of_experiment(make_result("cartpole/numpy", samples=(100.2, 99.9), commit=sha,
                                  run_id="10", event="pull_request"),
                      load_config(Path("perfgate.yaml"))),
        "startup_s", (4.0, 4.1), path="runtime.startup_s",
    )  # fmt: skip
    write_result(fine, tmp_path / "fine")
    assert main(["gate", "--results", str(tmp_path / "fine"), "--report-dir",
                 str(tmp_path / "r1")]) == 0  # fmt: skip
    verdict = json.loads((tmp_path / "r1" / "verdict.json").read_text())
    row = verdict["rows"][0]
    primary, startup = row["metrics"]
    # The primary still has its six old lines; the new metric has no history yet.
    assert (primary["verdict"], primary["baseline"]["samples"]) == ("PASS", 6)
    assert (startup["name"], startup["verdict"], startup["reasons"]) == (
        "startup_s",
        "WARN",
        ["NO_BASELINE"],
    )
    assert row["verdict"] == "WARN" and verdict["underfilled"] == ["cartpole/numpy"]
    # An artifact without the metric the config now requires cannot be judged as whole.
    assert main(["gate", "--results", str(old_artifact), "--report-dir", str(tmp_path / "r2")]) == 2
    row = json.loads((tmp_path / "r2" / "verdict.json").read_text())["rows"][0]
    assert row["verdict"] == "HARD_FAILURE" and "MISSING_METRIC" in row["reasons"]


def test_an_unreadable_baseline_branch_is_a_malfunction(checkout, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clone, sha = checkout
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=clone)
    results = artifacts(tmp_path / "r", sha, 100.0, "1")
    rep = str(tmp_path / "rep")
    assert main(["gate", "--results", str(results), "--report-dir", rep, "--remote"]) == 3


def test_no_artifacts_is_a_malfunction_in_any_mode(checkout, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert main(["gate", "--results", str(tmp_path / "empty")]) == 3


def test_local_bench_records_and_then_judges_for_real(checkout, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clone, _ = checkout
    (clone / "perfgate.yaml").write_text(
        CONFIG.replace("blocking", "advisory")
        + "defaults: {num_envs: 64, steps: 50, warmup_steps: 5}\n"
    )
    args = ["bench", "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"),
            "--report-dir", str(tmp_path / "rep")]  # fmt: skip
    recorded = 0
    for _ in range(5):
        assert main([*args, "--record"]) == 0
        recorded += len(json.loads((tmp_path / "out/cartpole__numpy.json").read_text())
                        ["metric"]["samples"])  # fmt: skip
    assert main(args) == 0
    verdict = json.loads((tmp_path / "rep" / "verdict.json").read_text())
    # Every sample of the five recorded runs (two each, more when one was confirmed).
    assert (verdict["rows"][0]["baseline"]["samples"], verdict["rows"][0]["baseline"]["runs"]) == (
        recorded,
        5,
    )
    assert verdict["rows"][0]["verdict"] in {"PASS", "IMPROVED", "WARN", "INCONCLUSIVE", "BLOCK"}
    assert "NO_BASELINE" not in verdict["rows"][0]["reasons"]
    # Outside CI, gate reads the same local branch bench recorded to, and says which one.
    gate = ["gate", "--results", str(tmp_path / "out"), "--report-dir", str(tmp_path / "rep2")]
    assert main(gate) == 0
    judged = json.loads((tmp_path / "rep2" / "verdict.json").read_text())
    # The gate re-judges the recorded samples against the same window: the same verdict.
    assert judged["rows"][0]["baseline"]["samples"] == recorded
    assert judged["rows"][0]["verdict"] == verdict["rows"][0]["verdict"]
    assert judged["rows"][0]["statistics"] == verdict["rows"][0]["statistics"]
    assert judged["baseline_source"] == "perf-baselines (local)"
    tip = git("rev-parse", "perf-baselines", cwd=clone).strip()
    assert judged["baseline_tip"] == tip
    assert (
        f"baseline perf-baselines (local) at `{tip[:12]}`"
        in (tmp_path / "rep2" / "summary.md").read_text()
    )


def test_publish_refuses_unhealthy_results_and_says_so_in_its_exit_code(
    checkout, tmp_path, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    from perfgate.result import FailurePhase

    clone, sha = checkout
    github_env(monkeypatch, tmp_path, "push", sha)
    results = artifacts(tmp_path / "r", sha, 100.0, "1")
    crashed = make_result(
        "cartpole/numpy", None, commit=sha, run_id="2", exit_code=1, phase=FailurePhase.RUNTIME
    )
    write_result(crashed, results / "another-run")
    assert main(["publish", "--results", str(results)]) == 2  # blocking mode: HARD_FAILURE
    assert "refused cartpole/numpy: unhealthy run" in capsys.readouterr().err
    stored = git("show", "origin/perf-baselines:samples/cpu-test/cartpole/numpy.ndjson", cwd=clone)
    assert len(stored.splitlines()) == 1


def test_gate_json_is_the_only_thing_on_stdout(checkout, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, sha = checkout
    results = artifacts(tmp_path / "r", sha, 100.0, "1")
    report = tmp_path / "rep"
    code = main(["gate", "--results", str(results), "--report-dir", str(report), "--json"])
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # the whole of stdout is one JSON document
    assert document == json.loads((report / "verdict.json").read_text())
    assert code == document["exit_code"]
    assert "cartpole/numpy" in captured.err  # the table moved to stderr


def test_bench_json_carries_results_and_verdict(checkout, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    clone, _ = checkout
    (clone / "perfgate.yaml").write_text(
        CONFIG.replace("blocking", "advisory")
        + "defaults: {num_envs: 64, steps: 50, warmup_steps: 5}\n"
    )
    args = ["bench", "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"),
            "--report-dir", str(tmp_path / "rep"), "--json"]  # fmt: skip
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert [r["bucket"]["id"] for r in document["results"]] == ["cartpole/numpy"]
    assert document["verdict"]["rows"][0]["bucket"] == "cartpole/numpy"
    assert main([*args, "--no-judge"]) == 0
    unjudged = json.loads(capsys.readouterr().out)
    assert unjudged["verdict"] is None and len(unjudged["results"]) == 1
