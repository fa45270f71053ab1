"""Who can put samples into the baseline: one set of checks for every line that can land.

A direct publish, a pending-samples file given with --pending, one left in the report
directory, and the pending-samples artifacts of earlier failed runs gathered through the
API: each line must be one a protected push of this perfgate.yaml could have measured
(its bucket, protected branches, the current experiment's hashes and epoch, a positive
finite figure). Batches parked on the origin by earlier perfgates are never landed:
nothing proves which run wrote them.

Real git throughout (a bare origin and a clone); the loopback server of
tests/github_server.py stands in for GitHub's workflow-run and artifact endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.samples import Sample, samples_from_result
from perfgate.cli import main
from perfgate.config import load_config
from perfgate.result import write_result
from perfgate.util.git import git
from tests.factories import make_result, of_experiment
from tests.git_support import IDENTITY, MakeClone
from tests.github_server import WRITE_TOKEN, FakeGitHub, serve

LIVE = "samples/cpu-test/cartpole/numpy.ndjson"
CONFIG = """
version: 1
gate:
  mode: blocking
  protected_branches: [main]
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""
THIS_RUN = 500


@pytest.fixture
def checkout(
    origin_clone: MakeClone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, str]:
    """A bare origin and a clone (the working directory) on a push to main."""
    made = origin_clone(files={"perfgate.yaml": CONFIG})
    origin, clone, sha = made.origin, made.path, made.head
    payload = tmp_path / "push.json"
    payload.write_text("{}", encoding="utf-8")
    for name, value in {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push",
                        "GITHUB_EVENT_PATH": str(payload), "GITHUB_REF": "refs/heads/main",
                        "GITHUB_SHA": sha, "GITHUB_REPOSITORY": "acme/sim",
                        "GITHUB_RUN_ID": str(THIS_RUN)}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    return origin, clone, sha


def result(sha: str, value: float, run: str):  # type: ignore[no-untyped-def]
    """A bench artifact of this config's cartpole/numpy, as a push to main writes it."""
    made = make_result("cartpole/numpy", value, commit=sha, run_id=run)
    return of_experiment(made, load_config(Path("perfgate.yaml")))


def results(directory: Path, sha: str, value: float, run: str) -> Path:
    write_result(result(sha, value, run), directory)
    return directory


def good_sample(sha: str, value: float, run: str) -> Sample:
    """A sample a protected push of this config measured (as a pending file keeps it)."""
    (sample,) = samples_from_result(result(sha, value, run), trusted_source="protected_branch")
    return sample


def forged(sha: str) -> dict[str, Sample]:
    """Lines no protected push of this config could have written, each named by its flaw."""
    base = good_sample(sha, 100.0, "66")
    return {
        "unknown bucket": replace(base, task="pendulum", sample_id="f1"),
        "unprotected target": replace(base, target_branch="feature", sample_id="f2"),
        "unprotected branch": replace(base, branch="feature", sample_id="f3"),
        "another experiment": replace(base, launch_hash="a" * 16, sample_id="f4"),
        "another epoch": replace(base, baseline_epoch=7, sample_id="f5"),
        "undeclared metric": replace(base, metric="startup_s", sample_id="f6"),
    }


def stored_values(origin: Path) -> list[float]:
    text = git("show", f"perf-baselines:{LIVE}", cwd=origin)
    return sorted(json.loads(line)["value"] for line in text.splitlines())


def ndjson(samples: list[Sample]) -> str:
    return "".join(f"{s.to_line()}\n" for s in samples)


def test_a_batch_parked_on_the_origin_is_never_landed(
    checkout: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anyone with push access can write refs/perfgate/incoming/*: an unknown bucket, a
    feature target and an arbitrary figure for the real bucket all landed before."""
    origin, clone, sha = checkout
    lines = [*forged(sha).values(), good_sample(sha, 1e9, "67")]
    blob = git("hash-object", "-w", "--stdin", cwd=clone, input_text=ndjson(lines)).strip()
    tree = git("mktree", cwd=clone, input_text=f"100644 blob {blob}\tbatch.ndjson\n").strip()
    commit = git("commit-tree", tree, "-m", "batch", cwd=clone, env=IDENTITY).strip()
    ref = "refs/perfgate/incoming/perf-baselines/x"
    git("push", "-q", "origin", f"{commit}:{ref}", cwd=clone)

    assert main(["publish", "--results", str(results(tmp_path / "r", sha, 101.0, "1"))]) == 0
    assert stored_values(origin) == [101.0]
    err = capsys.readouterr().err
    assert f"({ref}) are not landed" in err and "nothing shows which run wrote them" in err


def test_a_direct_publish_refuses_a_result_of_another_experiment(
    checkout: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin, _, sha = checkout
    write_result(result(sha, 100.0, "1"), tmp_path / "r")
    other = make_result("cartpole/numpy", 1e9, commit=sha, run_id="1")  # another config's
    write_result(other, tmp_path / "other")
    assert main(["publish", "--results", str(tmp_path / "other")]) == 2  # refused: blocking
    err = capsys.readouterr().err
    assert "refused cartpole/numpy: a sample of another experiment" in err
    assert git("ls-remote", str(origin), "perf-baselines") == ""


@pytest.mark.parametrize("source", ["--pending file", "report directory"])
def test_every_pending_line_passes_the_checks_of_a_direct_publish(
    checkout: tuple[Path, Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    source: str,
) -> None:
    """A pending file says nothing of who wrote it, wherever it lies: each line is held to
    what a protected push of this config could have measured, and a refused one is named."""
    origin, _, sha = checkout
    bad = forged(sha)
    text = ndjson([good_sample(sha, 99.0, "2"), *bad.values()])
    report = tmp_path / "report"
    report.mkdir()
    argv = ["publish", "--results", str(results(tmp_path / "r", sha, 101.0, "1")),
            "--report-dir", str(report)]  # fmt: skip
    if source == "--pending file":
        (tmp_path / "pending-samples.ndjson").write_text(text, encoding="utf-8")
        argv += ["--pending", str(tmp_path / "pending-samples.ndjson")]
    else:
        (report / "pending-samples.ndjson").write_text(text, encoding="utf-8")
    assert main(argv) == 0
    assert stored_values(origin) == [99.0, 101.0]
    refused = [line for line in capsys.readouterr().err.splitlines() if "refused" in line]
    assert len(refused) == len(bad), refused
    reasons = (
        "a bucket not in",
        "the unprotected branch 'feature'",
        "measured on the unprotected branch",
        "another experiment",
        "baseline epoch 7",
        "'startup_s', which cartpole/numpy does not declare",
    )
    for why in reasons:
        assert any(why in line for line in refused), (why, refused)
    assert not (report / "pending-samples.ndjson").exists()  # landed or refused: done


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve() as state:
        yield state


def test_gathered_samples_come_only_from_failed_push_runs_of_this_workflow_on_protected_branches(
    checkout: tuple[Path, Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    github: FakeGitHub,
) -> None:
    """GitHub says what each run was; a run that is not a failed push of this workflow, in
    this repository, on a protected branch, for a commit on that branch, is not read."""
    origin, clone, sha = checkout
    # A commit that is no part of main, pushed as a tag named like it: its push run's
    # head_branch would be "main" too.
    git("checkout", "-q", "-b", "side", cwd=clone)
    git("commit", "-q", "--allow-empty", "-m", "side", cwd=clone, env=IDENTITY)
    side = git("rev-parse", "HEAD", cwd=clone).strip()
    git("checkout", "-q", "main", cwd=clone)
    github.repository = "acme/sim"
    github.add_run(THIS_RUN, head_sha=sha, conclusion=None, status="in_progress")
    pending = "pending-samples.ndjson"
    trusted = github.add_run(401, head_sha=sha)
    untrusted = {
        402: github.add_run(402, head_sha=sha, head_branch="feature"),
        403: github.add_run(403, head_sha=sha, path=".github/workflows/other.yml"),
        404: github.add_run(404, head_sha=side),
        405: github.add_run(405, head_sha=sha, head_repository={"full_name": "mallory/sim"}),
    }
    github.add_run(406, head_sha=sha)  # failed, but kept nothing
    github.add_artifact(trusted["id"], "perfgate-pending-samples",
                        {pending: ndjson([good_sample(sha, 98.0, "401"),
                                          forged(sha)["unknown bucket"]])})  # fmt: skip
    for run_id in untrusted:
        github.add_artifact(run_id, "perfgate-pending-samples",
                            {pending: ndjson([good_sample(sha, 1e9, str(run_id))])})  # fmt: skip
    monkeypatch.setenv("GITHUB_API_URL", github.base_url)
    monkeypatch.setenv("GITHUB_TOKEN", WRITE_TOKEN)

    gathered = tmp_path / "gathered"
    argv = ["publish", "--results", str(results(tmp_path / "r", sha, 101.0, "1")),
            "--report-dir", str(tmp_path / "report"),
            "--gather-pending", str(gathered)]  # fmt: skip
    assert main(argv) == 0
    assert stored_values(origin) == [98.0, 101.0]
    assert sorted(p.relative_to(gathered).as_posix() for p in gathered.rglob("*.ndjson")) == [
        f"401/{pending}"
    ]
    err = capsys.readouterr().err
    for run_id, why in ((402, "'feature', which is not a protected branch"),
                        (403, "not of this workflow (.github/workflows/perfgate.yml)"),
                        (404, f"its commit {side[:12]} is not on 'main'"),
                        (405, "its head repository is not acme/sim")):  # fmt: skip
        assert f"run {run_id}: a " in err or f"run {run_id}: its" in err, err
        assert why in err, (why, err)
    assert "a sample for a bucket not in" in err
    assert WRITE_TOKEN not in err
    listed = [r for r in github.requests if r.path.endswith("/actions/workflows/161335/runs")]
    assert [(r.query["event"], r.query["status"]) for r in listed] == [(["push"], ["failure"])]
