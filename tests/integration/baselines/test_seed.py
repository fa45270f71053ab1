"""Seeding, reseeding and verifying baselines on a real git history with a bare origin.

The history is built here: three commits of a tiny benchmark (a `command`-driver
perfgate.yaml and a Python script) whose reported figure changes per commit on purpose
(1000, then slower 500, then faster 2000 frames/s). Seeding runs `python -m perfgate`
as a real subprocess, which replays each commit in a git worktree.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfgate.baselines.samples import Sample, WindowKey, sample_path, select_window
from perfgate.baselines.store import BaselineStore
from perfgate.run.hardware import detect
from perfgate.util.git import git
from tests.git_support import IDENTITY, commit_all, empty_origin
from tests.paths import ROOT

SPEEDS = (1000.0, 500.0, 2000.0)  # c1, c2 slower, c3 faster

CONFIG = """\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  baseline: {{branch: perf-baselines, remote: origin, min_samples: 4, max_samples: 20}}
defaults:
  driver: command
  timeout_minutes: 1
  retries: 0
  repeats: 1
  tags: [always]
  command:
    argv: [{python}, bench.py, "{{output_dir}}/result.json", "{{backend}}"]
    output: "{{output_dir}}/result.json"
  metric: {{path: fps, direction: higher, unit: frames/s}}
buckets:
  - task: sim
    backends: [{{physics: alpha}}, {{physics: beta}}, {{physics: gamma}}]
"""

# The figure is the commit's speed. SEED_TEST_HOLD_FPS makes the run of that speed wait
# for SEED_TEST_RELEASE to exist, so a test can interrupt the seed in the middle.
BENCH = """\
import json, os, pathlib, sys, time
FPS = {fps}
log = os.environ.get("SEED_TEST_RUNLOG")
def note(text):
    if log:
        with open(log, "a") as handle:
            handle.write(text + "\\n")
note(f"start {{FPS:g}} {{sys.argv[2]}}")
note(f"pid {{FPS:g}} {{sys.argv[2]}} {{os.getpid()}}")
if os.environ.get("SEED_TEST_HOLD_FPS") == f"{{FPS:g}}":
    release = pathlib.Path(os.environ["SEED_TEST_RELEASE"])
    deadline = time.time() + 30
    while not release.exists() and time.time() < deadline:
        time.sleep(0.02)
out = pathlib.Path(sys.argv[1])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps({{"fps": FPS}}))
note(f"done {{FPS:g}} {{sys.argv[2]}}")
"""


@dataclass(frozen=True)
class History:
    origin: Path
    repo: Path
    commits: tuple[str, ...]  # c1, c2, c3 (oldest first), all on main
    side: str  # a commit on a side branch, not an ancestor of main
    runlog: Path


def _commit(repo: Path, fps: float, message: str) -> str:
    (repo / "bench.py").write_text(BENCH.format(fps=fps), encoding="utf-8")
    return commit_all(repo, message)


@pytest.fixture
def history(tmp_path: Path) -> History:
    origin, repo = empty_origin(tmp_path, clone="repo")
    (repo / "perfgate.yaml").write_text(CONFIG.format(python=sys.executable), encoding="utf-8")
    commits = tuple(_commit(repo, fps, f"speed {fps:g}") for fps in SPEEDS)
    git("push", "-q", "origin", "main", cwd=repo)
    git("checkout", "-q", "-b", "side", commits[1], cwd=repo)
    side = _commit(repo, 9999.0, "side experiment")
    git("checkout", "-q", "main", cwd=repo)
    return History(origin, repo, commits, side, tmp_path / "runs.log")


def _env(history: History, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(IDENTITY)
    env["PYTHONPATH"] = str(ROOT)
    env["SEED_TEST_RUNLOG"] = str(history.runlog)
    env.update(extra)
    return env


def perfgate(history: History, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        cwd=history.repo,
        env=_env(history, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def runs(history: History) -> list[str]:
    if not history.runlog.exists():
        return []
    return [line for line in history.runlog.read_text().splitlines() if line.startswith("start")]


def stored(history: History, backend: str, remote: str | None = "origin") -> list[Sample]:
    """Every sample of ``sim/<backend>`` on origin's (or the local) baseline branch."""
    store = BaselineStore(history.repo, branch="perf-baselines", remote=remote)
    tip = store.refresh()
    if tip is None:
        return []
    hardware = git("ls-tree", "--name-only", f"{tip}:samples", cwd=history.repo).split()[0]
    path = sample_path(hardware, "sim", backend)
    return store.read([path], tip)[path]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def origin_has_baselines(history: History) -> bool:
    heads = git("ls-remote", "--heads", str(history.origin), cwd=history.repo)
    return "refs/heads/perf-baselines" in heads


def worktrees(history: History) -> list[str]:
    listing = git("worktree", "list", "--porcelain", cwd=history.repo)
    return [line for line in listing.splitlines() if line.startswith("worktree ")]


def test_seed_replays_each_commit_so_its_window_reflects_its_own_speed(history: History) -> None:
    done = perfgate(
        history, "seed", "--push", "--branch", "main", "--last", "3", "--samples", "2",
        "--bucket", "sim/alpha", "--execute",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    samples = stored(history, "alpha")
    assert len(samples) == 6
    assert {s.trusted_source for s in samples} == {"seed"}
    assert len({s.sample_id for s in samples}) == 6
    # Each replay is a run of its own (one sample each: repeats 1).
    by_commit = {c: {s.timestamp for s in samples if s.commit == c} for c in history.commits}
    assert all(len(runs) == 2 and None not in runs for runs in by_commit.values())
    assert {s.sample_index for s in samples} == {0}
    first = samples[0]
    key = WindowKey(
        hardware=first.hardware, task="sim", backend_key="alpha", target_branch="main",
        launch_hash=first.launch_hash, benchmark_hash=first.benchmark_hash,
        runtime_hash=first.runtime_hash, baseline_epoch=first.baseline_epoch,
    )  # fmt: skip
    store = BaselineStore(history.repo, branch="perf-baselines", remote="origin")
    for commit, speed in zip(history.commits, SPEEDS, strict=True):
        window = store.windows({"sim/alpha": key}, tip=store.refresh(), base=commit, max_samples=2)
        # The nearest samples of each commit's window are that commit's own figures.
        assert [s.commit for s in window["sim/alpha"].entries] == [commit, commit]
        assert window["sim/alpha"].values == (speed, speed)
    distance = {c: i for i, c in enumerate(reversed(history.commits))}
    assert (
        select_window(samples, key, distance, 6).values
        == (2000.0,) * 2 + (500.0,) * 2 + (1000.0,) * 2
    )
    summary = json.loads((history.repo / ".perfgate/seed/seed_records.json").read_text())
    assert summary["counts"] == {"recorded": 6, "present": 0, "failed": 0}
    assert summary["complete"] is True
    assert {r["sample_id"] for r in summary["records"]} == {s.sample_id for s in samples}
    assert len(worktrees(history)) == 1, "every replay worktree is removed afterwards"

    # The same seed again finds every sample present and runs nothing.
    before = len(runs(history))
    again = perfgate(
        history, "seed", "--push", "--branch", "main", "--last", "3", "--samples", "2",
        "--bucket", "sim/alpha", "--execute",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(runs(history)) == before
    assert len(stored(history, "alpha")) == 6


def test_dry_run_prints_the_plan_and_an_estimate_and_writes_nothing(history: History) -> None:
    done = perfgate(history, "seed", "--push", "--branch", "main", "--last", "2", "--samples", "3")
    assert done.returncode == 0, done.stderr
    for sha in history.commits[1:]:
        assert sha[:12] in done.stdout
    assert history.commits[0][:12] not in done.stdout
    # 2 commits x 3 buckets x 3 samples, 1 minute timeout each.
    assert "18 sample run(s)" in done.stdout
    assert "at most 18m" in done.stdout
    assert "dry run" in done.stdout
    assert not origin_has_baselines(history)
    assert git("branch", "--list", "perf-baselines", cwd=history.repo).strip() == ""
    assert runs(history) == []
    assert len(worktrees(history)) == 1
    assert not (history.repo / ".perfgate").exists()


def test_a_laptop_seed_stays_local_unless_asked_to_push(history: History) -> None:
    """Outside CI, seed reads and writes the local branch; the shared remote is untouched."""
    args = ("--branch", "main", "--last", "1", "--samples", "2", "--bucket", "sim/alpha")
    done = perfgate(history, "seed", *args, "--execute")
    assert done.returncode == 0, done.stderr
    assert not origin_has_baselines(history)
    assert len(stored(history, "alpha", remote=None)) == 2
    # The dry run counts what the local branch already holds.
    plan = perfgate(history, "seed", *args)
    assert "0 sample run(s)" in plan.stdout and "(2 already present)" in plan.stdout, plan.stdout
    # --push reaches the remote: the same samples land there.
    pushed = perfgate(history, "seed", "--push", *args, "--execute", "--seed-key", "shared")
    assert pushed.returncode == 0, pushed.stderr
    assert len(stored(history, "alpha")) == 2


def test_interrupted_seed_leaves_whole_buckets_and_resumes_without_duplicates(
    history: History, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    args = ["seed", "--push", "--branch", "main", "--last", "3", "--samples", "2",
            "--backend", "alpha", "--backend", "beta", "--execute"]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "perfgate", *args],
        cwd=history.repo,
        env=_env(history, SEED_TEST_HOLD_FPS="500", SEED_TEST_RELEASE=str(release)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while "start 500 alpha" not in runs(history) and time.time() < deadline:
        time.sleep(0.05)
    assert "start 500 alpha" in runs(history), "the seed never reached the second commit"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    # A cancelled job ends like every verb's: 128 + the signal's number (R8).
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert f"terminated by signal {signal.SIGTERM.value}" in stderr, stderr
    # The newest commit (c3) finished both buckets; c2 was cut off mid-bucket: nothing of it.
    alpha, beta = stored(history, "alpha"), stored(history, "beta")
    assert {s.commit for s in alpha + beta} == {history.commits[2]}
    assert len(alpha) == len(beta) == 2
    assert len({s.timestamp for s in alpha}) == len({s.timestamp for s in beta}) == 2  # 2 runs
    assert len(worktrees(history)) == 1, "the interrupted replay's worktree was removed"
    # Let the held benchmark finish (should it have outlived the seed) before resuming.
    release.touch()
    held = next(line for line in history.runlog.read_text().splitlines() if "pid 500" in line)
    while _alive(int(held.split()[-1])) and time.time() < deadline:
        time.sleep(0.05)

    resumed = perfgate(history, *args)
    assert resumed.returncode == 0, resumed.stderr
    started = runs(history)
    assert started.count("start 2000 alpha") == 2, "c3 was not measured again"
    assert started.count("start 1000 alpha") == 2
    alpha, beta = stored(history, "alpha"), stored(history, "beta")
    assert len(alpha) == len(beta) == 6
    assert len({s.sample_id for s in alpha + beta}) == 12
    assert {s.value for s in alpha if s.commit == history.commits[1]} == {500.0}


@pytest.mark.parametrize(
    ("flag", "typo", "valid"),
    [("--bucket", "sim/alhpa", "sim/alpha"), ("--tag", "nighty", "always"),
     ("--backend", "gama", "gamma")],
)  # fmt: skip
def test_allowlist_typo_is_a_usage_error_naming_the_valid_keys(
    history: History, flag: str, typo: str, valid: str
) -> None:
    done = perfgate(history, "seed", "--push", "--branch", "main", "--last", "1", flag, typo)
    assert done.returncode == 4
    assert typo in done.stderr and valid in done.stderr


def test_non_ancestor_is_dropped_with_a_warning_or_rejected_when_strict(
    history: History,
) -> None:
    c1 = history.commits[0]
    lenient = perfgate(history, "seed", "--push", "--commits", c1, history.side, "--target", "main")
    assert lenient.returncode == 0, lenient.stderr
    assert f"dropped {history.side[:12]} is not an ancestor of main" in lenient.stdout
    plan = [line for line in lenient.stdout.splitlines() if not line.startswith("warning")]
    assert any(c1[:12] in line for line in plan)
    assert not any(history.side[:12] in line for line in plan)

    strict = perfgate(
        history,
        "seed",
        "--push",
        "--commits",
        c1,
        history.side,
        "--target",
        "main",
        "--strict-ancestry",
    )
    assert strict.returncode == 4
    assert history.side[:12] in strict.stderr


def test_verify_baselines_reports_ready_warming_and_empty(history: History, tmp_path: Path) -> None:
    c2, c3 = history.commits[1:]
    seeded = perfgate(
        history, "seed", "--push", "--commits", c2, c3, "--target", "main",
        "--bucket", "sim/alpha", "--samples", "2", "--execute",
    )  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr
    seeded = perfgate(
        history, "seed", "--push", "--commit-branch", f"{c3}:main", "--bucket", "sim/beta",
        "--samples", "1", "--execute",
    )  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr

    report_path = tmp_path / "verify.json"
    done = perfgate(history, "verify-baselines", "--remote", "--json", str(report_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    status = {b["bucket"]: (b["status"], b["samples"]) for b in report["buckets"]}
    assert status == {
        "sim/alpha": ("READY", 4),
        "sim/beta": ("WARMING", 1),
        "sim/gamma": ("EMPTY", 0),
    }
    assert report["ready"] is False
    assert "WARMING" in done.stdout

    required = perfgate(history, "verify-baselines", "--remote", "--require")
    assert required.returncode == 1
    assert "sim/beta" in required.stderr and "sim/gamma" in required.stderr
    only_ready = perfgate(
        history, "verify-baselines", "--remote", "--require", "--bucket", "sim/alpha"
    )
    assert only_ready.returncode == 0, only_ready.stderr
    other_target = perfgate(history, "verify-baselines", "--remote", "--target", "release",
                            "--json", str(report_path))  # fmt: skip
    assert {b["status"] for b in json.loads(report_path.read_text())["buckets"]} == {"EMPTY"}
    assert other_target.returncode == 0


def test_reseed_plan_from_the_gate_report_seeds_just_those_buckets(
    history: History, tmp_path: Path
) -> None:
    c3 = history.commits[2]
    verdict = tmp_path / "report" / "verdict.json"
    verdict.parent.mkdir()
    verdict.write_text(
        json.dumps(
            {
                "commit": c3,
                "target_branch": "main",
                "hardware": [detect().slug],
                "underfilled": ["sim/beta"],
                "rows": [
                    {"bucket": "sim/alpha", "baseline": {"samples": 7}},
                    {"bucket": "sim/beta", "baseline": {"samples": 1}},
                    {"bucket": "sim/gamma", "baseline": None},
                ],
            }
        )
    )
    plan_path = tmp_path / "plan.json"
    planned = perfgate(history, "reseed-plan", "--report", str(verdict), "--out", str(plan_path))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(plan_path.read_text())
    assert plan["commit"] == c3 and plan["target_branch"] == "main"
    assert plan["bucket_ids"] == ["sim/beta"]
    assert plan["buckets"] == [{"id": "sim/beta", "have": 1, "samples": 3}]

    seeded = perfgate(history, "seed", "--push", "--plan", str(plan_path), "--execute")
    assert seeded.returncode == 0, seeded.stderr
    beta = stored(history, "beta")
    assert [s.commit for s in beta] == [c3, c3, c3]
    assert len({s.timestamp for s in beta}) == 3  # three replays (runs), one sample each
    assert stored(history, "alpha") == [] and stored(history, "gamma") == []

    # A plan made for another runner pool would fill the wrong partition.
    elsewhere = plan_path.with_name("elsewhere.json")
    elsewhere.write_text(json.dumps({**plan, "hardware": ["l40s"]}))
    refused = perfgate(history, "seed", "--push", "--plan", str(elsewhere), "--execute")
    assert refused.returncode == 4
    assert "l40s" in refused.stderr

    outputs = tmp_path / "github_output"
    from_outputs = perfgate(history, "reseed-plan", "--underfilled", '["sim/gamma"]',
                            "--commit", c3, "--target", "main",
                            GITHUB_OUTPUT=str(outputs))  # fmt: skip
    assert from_outputs.returncode == 0, from_outputs.stderr
    assert json.loads(from_outputs.stdout)["buckets"] == [
        {"id": "sim/gamma", "have": 0, "samples": 4}
    ]
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["reseed_needed"] == "true"
    assert json.loads(written["reseed_plan"])["bucket_ids"] == ["sim/gamma"]


def test_reseed_plan_for_a_commit_off_the_target_is_rejected(
    history: History, tmp_path: Path
) -> None:
    plan_path = tmp_path / "plan.json"
    done = perfgate(history, "reseed-plan", "--underfilled", '["sim/beta"]', "--commit",
                    history.side, "--target", "main", "--out", str(plan_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    seeded = perfgate(history, "seed", "--push", "--plan", str(plan_path), "--execute")
    assert seeded.returncode == 4
    assert not origin_has_baselines(history)


def test_a_failing_bucket_is_reported_and_the_others_are_recorded(history: History) -> None:
    c3 = history.commits[2]
    # A newer commit whose gamma benchmark crashes: a broken historical commit.
    git("checkout", "-q", c3, cwd=history.repo)
    bench = (history.repo / "bench.py").read_text()
    crash = 'if sys.argv[2] == "gamma":\n    sys.exit(3)\nout = pathlib.Path(sys.argv[1])'
    (history.repo / "bench.py").write_text(bench.replace("out = pathlib.Path(sys.argv[1])", crash))
    git("commit", "-qam", "gamma breaks", cwd=history.repo, env=IDENTITY)
    git("branch", "-f", "main", "HEAD", cwd=history.repo)
    git("checkout", "-q", "main", cwd=history.repo)
    git("push", "-q", "origin", "main", cwd=history.repo)
    done = perfgate(
        history, "seed", "--push", "--branch", "main", "--last", "1", "--samples", "1", "--execute"
    )
    assert done.returncode == 2, done.stderr
    summary = json.loads((history.repo / ".perfgate/seed/seed_records.json").read_text())
    status = {r["bucket"]: r["status"] for r in summary["records"]}
    assert status == {"sim/alpha": "recorded", "sim/beta": "recorded", "sim/gamma": "failed"}
    assert len(stored(history, "alpha")) == 1 and stored(history, "gamma") == []


def test_a_worktree_left_by_a_killed_seed_is_replaced_and_removed(history: History) -> None:
    c3 = history.commits[2]
    leftover = history.repo / ".perfgate/work/seed/worktrees" / c3[:12]
    git("worktree", "add", "-q", "--detach", str(leftover), history.commits[0], cwd=history.repo)
    (leftover / "stray.txt").write_text("from the killed run")
    done = perfgate(history, "seed", "--push", "--commit-branch", f"{c3}:main",
                    "--bucket", "sim/alpha", "--samples", "1", "--execute")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [s.value for s in stored(history, "alpha")] == [2000.0], "c3's own benchmark ran"
    assert not leftover.exists()
    assert len(worktrees(history)) == 1


def test_seeding_a_branch_records_samples_for_that_branch(history: History) -> None:
    git("branch", "develop", history.commits[1], cwd=history.repo)
    git("push", "-q", "origin", "develop", cwd=history.repo)
    done = perfgate(
        history, "seed", "--push", "--branch", "develop", "--last", "1", "--samples", "1",
        "--bucket", "sim/alpha", "--execute",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    samples = stored(history, "alpha")
    assert [(s.commit, s.target_branch) for s in samples] == [(history.commits[1], "develop")]
