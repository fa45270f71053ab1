"""``perfgate roll-era`` on real git repositories with a bare repository as origin.

No Docker engine or registry exists here, so the configured build, tag, push, login and
digest commands run tests/fixtures/fake_docker.py, a real subprocess that keeps a local
"registry" and logs every call. GitHub context comes from the standard environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perfgate.baselines.samples import Sample
from perfgate.baselines.store import BaselineStore
from perfgate.cli import main
from perfgate.config import load_config
from perfgate.identity import stable_hash
from perfgate.run.launch import bucket_hashes
from perfgate.util.git import git
from tests.git_support import MakeClone, commit_all
from tests.paths import FIXTURES, ROOT

FAKE = [sys.executable, str(FIXTURES / "fake_docker.py")]
BUCKETS = ["cartpole/numpy", "cartpole/python", "pendulum/numpy", "pendulum/python"]
TAG = "reg.example/lab:latest"


def config_text(digest: bool = True) -> str:
    fake = ", ".join(json.dumps(part) for part in FAKE)
    digest_line = f'  digest: [{fake}, digest, "{{image}}"]' if digest else "  digest: []"
    return f"""\
version: 1
gate:
  target_branches: [main]
  protected_branches: [main]
  baseline: {{branch: perf-baselines, remote: origin, min_samples: 3}}
defaults: {{timeout_minutes: 2, retries: 1}}
image:
  env_file: docker/.env.base
  env_keys: [ISAACSIM_VERSION]
  tags: {{main: "{TAG}"}}
{digest_line}
  roll:
    build: {{argv: [{fake}, build, "{{image}}"], image: "lab-build:{{era_short}}"}}
    refs: ["reg.example/lab:sha-{{sha7}}", "reg.example/lab:era-{{era_short}}"]
    tag: [{fake}, tag, "{{image}}", "{{ref}}"]
    push: [{fake}, push, "{{ref}}"]
    login: [{fake}, login]
    secrets: [REGISTRY_TOKEN]
buckets:
  - task: cartpole
    backends: [{{physics: numpy}}, {{physics: python}}]
  - task: pendulum
    backends: [{{physics: numpy}}, {{physics: python}}]
"""


@dataclass(frozen=True)
class Repo:
    origin: Path
    clone: Path
    state: Path
    tmp: Path

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.clone).strip()

    def calls(self) -> list[list[Any]]:
        log = self.state / "calls.log"
        lines = log.read_text().splitlines() if log.is_file() else []
        return [json.loads(line) for line in lines]

    def manifest(self) -> dict[str, Any] | None:
        try:
            text = git("show", "perf-baselines:image_era_manifest.json", cwd=self.origin)
        except Exception:
            return None
        data: dict[str, Any] = json.loads(text)
        return data

    def baseline_log(self) -> list[str]:
        try:
            return git("log", "--format=%s", "perf-baselines", cwd=self.origin).splitlines()
        except Exception:
            return []


def _commit(clone: Path, message: str) -> None:
    commit_all(clone, message)
    git("push", "-q", "origin", "main", cwd=clone)


@pytest.fixture
def repo(origin_clone: MakeClone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A clone of a bare origin with the config and era inputs; the cwd; a push to main."""
    files = {"docker/.env.base": "ISAACSIM_VERSION=5.1.0\n", "perfgate.yaml": config_text()}
    first = origin_clone(files=files)
    origin, clone = first.origin, first.path
    state = tmp_path / "docker-state"
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
    for name in ("FAKE_DOCKER_FAIL", "FAKE_DOCKER_BARRIER"):
        monkeypatch.delenv(name, raising=False)
    made = Repo(origin=origin, clone=clone, state=state, tmp=tmp_path)
    push_event(made, monkeypatch)
    return made


def push_event(repo: Repo, monkeypatch: pytest.MonkeyPatch, event: str = "push") -> Path:
    """GitHub's environment for a push (or another event) of the clone's HEAD to main."""
    payload = repo.tmp / "event.json"
    payload.write_text(json.dumps({"ref": "refs/heads/main"}))
    output = repo.tmp / f"output-{len(list(repo.tmp.glob('output-*')))}"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(payload),
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_SHA": repo.head(),
        "GITHUB_REPOSITORY": "org/repo",
        "GITHUB_RUN_ID": "1",
        "GITHUB_OUTPUT": str(output),
        # The roll step holds the git token and the registry secret; the registry
        # commands must see only the latter.
        "GITHUB_TOKEN": "git-token",
        "REGISTRY_TOKEN": "registry-secret",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return output


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def record_by_hand(repo: Repo, image: str) -> str:
    assert main(["resolve-image", "--record", image]) == 0
    manifest = repo.manifest()
    assert manifest is not None
    return next(key for key, entry in manifest["eras"].items() if entry["image"] == image)


def new_era_inputs(repo: Repo, monkeypatch: pytest.MonkeyPatch, version: str = "6.0.0") -> None:
    (repo.clone / "docker" / ".env.base").write_text(f"ISAACSIM_VERSION={version}\n")
    _commit(repo.clone, f"Isaac Sim {version}")
    push_event(repo, monkeypatch)


def test_new_era_builds_pushes_records_and_plans_a_reseed_of_every_bucket(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record_by_hand(repo, "reg.example/lab@sha256:" + "1" * 64)
    new_era_inputs(repo, monkeypatch)
    output = push_event(repo, monkeypatch)
    head = repo.head()
    plan_path = repo.tmp / "plan.json"

    assert main(["roll-era", "--execute", "--out", str(plan_path)]) == 0
    got = outputs(output)
    era = got["era_key"]
    sha_ref, era_ref = f"reg.example/lab:sha-{head[:7]}", f"reg.example/lab:era-{era[:12]}"
    calls = repo.calls()
    assert [c[0] for c in calls] == ["login", "build", "tag", "tag", "push", "push", "digest"]
    assert [c[1:-1] for c in calls[4:6]] == [[sha_ref], [era_ref]]
    # The registry commands see the registry secret, never the git token.
    assert all(c[-1] == {"git_token": False, "secret": True} for c in calls)

    pushed = (repo.state / "registry" / hashlib.sha256(sha_ref.encode()).hexdigest()).read_bytes()
    recorded = f"{sha_ref}@sha256:{hashlib.sha256(pushed).hexdigest()}"
    manifest = repo.manifest()
    assert manifest is not None and len(manifest["eras"]) == 2
    entry = manifest["eras"][era]
    assert entry["image"] == recorded and got["image"] == recorded
    assert entry["commit"] == head and entry["source"] == "roll"
    assert entry["refs"] == [sha_ref, era_ref] and entry["inputs"] == {"ISAACSIM_VERSION": "6.0.0"}
    assert repo.baseline_log()[0] == f"[image_era] Record {era[:12]} -> {recorded}"

    plan = json.loads(plan_path.read_text())
    assert (plan["commit"], plan["target_branch"]) == (head, "main")
    assert plan["buckets"] == [{"id": b, "have": 0, "samples": 3} for b in BUCKETS]
    assert plan["seed_key"].startswith(f"era-{era[:12]}-")
    assert (got["era_action"], got["recorded"], got["reseed_needed"]) == ("roll", "true", "true")
    assert json.loads(got["reseed_plan"]) == plan

    # The existing seed path takes the plan as it is, one bucket per matrix job.
    capsys.readouterr()
    assert main(["seed", "--plan", str(plan_path), "--bucket", "pendulum/python"]) == 0
    table = capsys.readouterr().out
    assert "pendulum/python" in table and "cartpole/numpy" not in table
    assert "1 commit(s), 1 bucket run(s), 3 sample run(s)" in table


def test_known_era_does_nothing_and_says_so(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    image = "reg.example/lab@sha256:" + "2" * 64
    era = record_by_hand(repo, image)
    before = repo.baseline_log()
    output = push_event(repo, monkeypatch)
    capsys.readouterr()

    assert main(["roll-era", "--execute", "--out", str(repo.tmp / "plan.json")]) == 0
    said = capsys.readouterr()
    assert f"era {era} is recorded as {image}" in said.out + said.err
    assert "nothing to build, push, record or seed" in said.out
    assert repo.calls() == [] and repo.baseline_log() == before
    got = outputs(output)
    assert (got["era_action"], got["image"], got["reseed_needed"]) == ("nothing", image, "false")
    assert json.loads((repo.tmp / "plan.json").read_text())["buckets"] == []


def _sample(bucket: Any, commit: str, index: int, runtime: str, stamp: str) -> Sample:
    launch_hash, benchmark_hash = bucket_hashes(bucket)
    return Sample(
        sample_id=f"{bucket.file_stem}-{runtime}-{index}",
        trusted_source="protected_branch",
        timestamp=stamp,
        value=100.0 + index,
        hardware="l40s",
        task=bucket.task,
        backend_key=bucket.backend_key,
        commit=commit,
        branch="main",
        target_branch="main",
        launch_hash=launch_hash,
        benchmark_hash=benchmark_hash,
        runtime_hash=runtime,
        baseline_epoch=bucket.baseline_epoch,
        metric_path="runtime.total_fps.mean",
        direction="higher",
        unit="env-steps/s",
    )


def test_bootstrap_records_the_measured_image_without_reseeding_ready_buckets(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No manifest yet: no build; record the tag's digest; reseed only what cannot gate."""
    buckets = {b.id: b for b in load_config(repo.clone / "perfgate.yaml").buckets}
    head = repo.head()
    old, new = "r" * 16, "s" * 16
    samples = [
        # cartpole/numpy: READY (3 of 3) on the current runtime.
        *(_sample(buckets["cartpole/numpy"], head, i, new, f"2026-01-0{i + 1}") for i in range(3)),
        # cartpole/python: WARMING (1 of 3).
        _sample(buckets["cartpole/python"], head, 0, new, "2026-01-01"),
        # pendulum/numpy: 4 of an older runtime, but its newest sample has another one.
        *(_sample(buckets["pendulum/numpy"], head, i, old, f"2026-01-0{i + 1}") for i in range(4)),
        _sample(buckets["pendulum/numpy"], head, 9, new, "2026-01-09"),
        # pendulum/python: EMPTY.
    ]
    store = BaselineStore(repo.clone, branch="perf-baselines", remote="origin")
    assert store.append(samples, "seed").added == len(samples)
    # The image the baselines were measured with is the branch's tag, published.
    subprocess.run([*FAKE, "build", TAG], check=True)
    subprocess.run([*FAKE, "push", TAG], check=True)
    (repo.state / "calls.log").unlink()
    output = push_event(repo, monkeypatch)
    plan_path = repo.tmp / "plan.json"

    capsys.readouterr()
    assert main(["roll-era"]) == 0
    dry = capsys.readouterr().out
    assert "bootstrap" in dry and "dry run" in dry
    assert repo.manifest() is None and repo.calls() == []

    assert main(["roll-era", "--execute", "--out", str(plan_path)]) == 0
    assert [c[0] for c in repo.calls()] == ["login", "digest"]
    pushed = (repo.state / "registry" / hashlib.sha256(TAG.encode()).hexdigest()).read_bytes()
    recorded = f"{TAG}@sha256:{hashlib.sha256(pushed).hexdigest()}"
    manifest = repo.manifest()
    assert manifest is not None
    (era, entry), *others = manifest["eras"].items()
    assert not others and entry["image"] == recorded
    assert (entry["source"], entry["tag"]) == ("bootstrap", TAG)
    got = outputs(output)
    assert (got["era_action"], got["image"], got["era_key"]) == ("bootstrap", recorded, era)
    plan = json.loads(plan_path.read_text())
    assert plan["buckets"] == [
        {"id": "cartpole/python", "have": 1, "samples": 2},
        {"id": "pendulum/numpy", "have": 1, "samples": 2},
        {"id": "pendulum/python", "have": 0, "samples": 3},
    ]

    # The era workflow's verify job (hosted: no hardware of its own) sees the same.
    report = repo.tmp / "verify.json"
    flags = ["verify-baselines", "--all-hardware", "--json", str(report)]
    assert main([*flags, "--newest-runtime"]) == 0
    newest = {b["bucket"]: b["status"] for b in json.loads(report.read_text())["buckets"]}
    assert newest == {"cartpole/numpy": "READY", "cartpole/python": "WARMING",
                      "pendulum/numpy": "WARMING", "pendulum/python": "EMPTY"}  # fmt: skip
    assert main(flags) == 0  # the largest group: the old image's window
    largest = {b["bucket"]: b["status"] for b in json.loads(report.read_text())["buckets"]}
    assert largest["pendulum/numpy"] == "READY"

    # The bootstrapped era is now known: the next push does nothing.
    assert main(["roll-era", "--execute", "--out", str(plan_path)]) == 0
    assert json.loads(plan_path.read_text())["buckets"] == []
    assert len(repo.baseline_log()) == 2  # the samples, then the one record


def test_bootstrap_without_a_registry_digest_records_the_tag(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo.clone / "perfgate.yaml").write_text(config_text(digest=False))
    _commit(repo.clone, "no digest command")
    output = push_event(repo, monkeypatch)
    assert main(["roll-era", "--execute", "--out", str(repo.tmp / "plan.json")]) == 0
    manifest = repo.manifest()
    assert manifest is not None
    assert [e["image"] for e in manifest["eras"].values()] == [TAG]
    assert outputs(output)["reseed_needed"] == "true"  # nothing was READY: every bucket


def _roll_in_subprocess(clone: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "perfgate", "roll-era", "--execute", "--out", "plan.json"],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_concurrent_rolls_of_a_new_era_record_it_once(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_era = record_by_hand(repo, "reg.example/lab@sha256:" + "3" * 64)
    new_era_inputs(repo, monkeypatch)
    first = repo.head()
    # A second push lands before either roll finished: same new era, another commit.
    second_clone = repo.tmp / "second"
    git("clone", "-q", str(repo.origin), str(second_clone))
    (second_clone / "README").write_text("another change\n")
    commit_all(second_clone, "second")
    git("push", "-q", "origin", "main", cwd=second_clone)
    second = git("rev-parse", "HEAD", cwd=second_clone).strip()
    monkeypatch.setenv("FAKE_DOCKER_BARRIER", "2")  # both builds run at the same time

    rolls = {
        sha: _roll_in_subprocess(
            clone, {"GITHUB_SHA": sha, "GITHUB_OUTPUT": str(clone / "github-output")}
        )
        for sha, clone in ((first, repo.clone), (second, second_clone))
    }
    done = {sha: process.communicate(timeout=120) for sha, process in rolls.items()}
    for sha, process in rolls.items():
        assert process.returncode == 0, done[sha][1]
    assert [c[0] for c in repo.calls()].count("build") == 2

    manifest = repo.manifest()
    assert manifest is not None and len(manifest["eras"]) == 2
    records = [s for s in repo.baseline_log() if s.startswith("[image_era] Record")]
    assert len(records) == 2  # the hand-made one and exactly one roll
    new = next(entry for key, entry in manifest["eras"].items() if key != old_era)
    winner = new["commit"]
    assert winner in (first, second)
    plans = {
        sha: json.loads((clone / "plan.json").read_text())
        for sha, clone in ((first, repo.clone), (second, second_clone))
    }
    # The winner reseeds; the other roll uses the winner's image and plans nothing.
    assert [b["id"] for b in plans[winner]["buckets"]] == BUCKETS
    loser = second if winner == first else first
    assert plans[loser]["buckets"] == []
    assert "another roll" in done[loser][1]
    images = {
        sha: outputs(clone / "github-output")["image"]
        for sha, clone in ((first, repo.clone), (second, second_clone))
    }
    assert images[first] == images[second] == new["image"]


@pytest.mark.parametrize("step", ["build", "tag", "push", "login"])
def test_a_failed_registry_step_records_nothing_and_exits_3_naming_it(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], step: str
) -> None:
    record_by_hand(repo, "reg.example/lab@sha256:" + "4" * 64)
    before = (repo.manifest(), repo.baseline_log())
    new_era_inputs(repo, monkeypatch)
    output = push_event(repo, monkeypatch)
    monkeypatch.setenv("FAKE_DOCKER_FAIL", step)
    capsys.readouterr()

    assert main(["roll-era", "--execute", "--out", str(repo.tmp / "plan.json")]) == 3
    err = capsys.readouterr().err
    assert f"era roll step '{step}' failed" in err and "manifest is unchanged" in err
    assert (repo.manifest(), repo.baseline_log()) == before
    assert not (repo.tmp / "plan.json").exists() and not output.exists()


def test_a_recorded_era_is_immutable_unless_forced_with_a_reason(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = "reg.example/lab@sha256:" + "5" * 64
    era = record_by_hand(repo, first)
    capsys.readouterr()

    assert main(["resolve-image", "--record", "reg.example/lab@sha256:" + "6" * 64]) == 4
    assert "is immutable" in capsys.readouterr().err
    assert repo.manifest()["eras"][era]["image"] == first  # type: ignore[index]
    assert main(["roll-era", "--execute", "--force", " "]) == 4
    assert repo.calls() == []

    output = push_event(repo, monkeypatch, event="workflow_dispatch")
    plan_path = repo.tmp / "plan.json"
    reason = "base image rebuilt upstream with a CUDA fix"
    assert main(["roll-era", "--execute", "--force", reason, "--out", str(plan_path)]) == 0
    assert "build" in [c[0] for c in repo.calls()]
    entry = repo.manifest()["eras"][era]  # type: ignore[index]
    assert entry["image"] != first and entry["image"] == outputs(output)["image"]
    assert entry["forced"] == reason and entry["source"] == "rebuild"
    assert [e["image"] for e in entry["replaced"]] == [first]
    assert repo.baseline_log()[0].endswith(f"(forced: {reason})")
    # A rebuilt era is measured again at the same commit: the seed key follows the image.
    plan = json.loads(plan_path.read_text())
    assert [b["id"] for b in plan["buckets"]] == BUCKETS
    assert plan["seed_key"] == f"era-{era[:12]}-{stable_hash({'image': entry['image']}, length=8)}"


def test_dry_run_prints_the_plan_and_a_runner_time_bound_and_touches_nothing(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record_by_hand(repo, "reg.example/lab@sha256:" + "7" * 64)
    new_era_inputs(repo, monkeypatch)
    before = repo.baseline_log()
    capsys.readouterr()

    assert main(["roll-era"]) == 0
    out = capsys.readouterr().out
    head = repo.head()
    assert f"build: {sys.executable}" in out and f"push: {sys.executable}" in out
    assert f"reg.example/lab:sha-{head[:7]}" in out
    assert "record:" in out and "pinned to its registry digest" in out
    assert "seed: 4 bucket(s)" in out
    # 4 buckets x 3 runs x 2 repeats x 2 minutes; x2 with the one retry each.
    assert "runner time: at most 48m" in out and "(1h 36m if every run needed its retries)" in out
    assert "dry run: nothing was built" in out
    assert repo.calls() == [] and repo.baseline_log() == before


def test_only_protected_pushes_may_execute_a_roll(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record_by_hand(repo, "reg.example/lab@sha256:" + "8" * 64)
    new_era_inputs(repo, monkeypatch)
    before = repo.baseline_log()
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    monkeypatch.setenv("GITHUB_HEAD_REF", "feature")
    capsys.readouterr()

    assert main(["roll-era", "--execute"]) == 4
    assert "refusing to roll the image era" in capsys.readouterr().err
    assert repo.calls() == [] and repo.baseline_log() == before


def test_a_stalled_registry_step_is_stopped_at_the_rolls_deadline_and_records_nothing(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A push to a registry that stopped answering held the roll until its job's timeout."""
    record_by_hand(repo, "reg.example/lab@sha256:" + "4" * 64)
    before = (repo.manifest(), repo.baseline_log())
    new_era_inputs(repo, monkeypatch)
    push_event(repo, monkeypatch)
    # The registry commands get 3 s instead of what the job's timeout leaves them.
    monkeypatch.setattr("perfgate.baselines.era_roll.roll_deadline", lambda _, now: now + 3)
    monkeypatch.setenv("FAKE_DOCKER_STALL", "push")
    capsys.readouterr()

    started = time.monotonic()
    assert main(["roll-era", "--execute"]) == 3
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    assert "era roll step 'push'" in err and "did not finish" in err
    assert "manifest is unchanged" in err
    assert (repo.manifest(), repo.baseline_log()) == before
    child = int((repo.state / "stalled-child.pid").read_text())
    assert not _alive(child), "the stalled step's own child was left running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child the fake never reaped is a zombie, not a running process.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
