"""No CI run spends more than its budget (R17), on the rendered workflow itself.

GitHub cannot run here, so a stand-in runner plays it: the rendered config job's
select step plans the lanes, then each lane's bench job runs at once (as GitHub fans a
matrix out), its steps taken from the rendered YAML and run under bash as a runner runs
them, with real `perfgate bench` processes and a benchmark whose every first attempt
fails after its launch time. Retries are what a run spends beyond its plan: across every
lane they stay within gate.budget_minutes, and each lane within its share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from perfgate.ci import render
from perfgate.config import load_config
from perfgate.result import SpendKind, read_result
from tests.factories import fake_matrix
from tests.paths import ROOT

# A lane's share is two launches: a retry fits however long a busy runner takes to start
# the benchmark (up to 0.8 of a launch more than it sleeps), a second never does.
LAUNCH_S = 1.0
BUDGET_S = 4 * LAUNCH_S


def _config(repo: Path) -> Path:
    """Six buckets of a benchmark whose every first attempt fails, in two runner jobs,
    under a budget of four launches."""
    path = fake_matrix(repo, "slow_flaky", [f"b{k}" for k in range(6)], runner=["ubuntu-latest"],
                       retries=1, launch_minutes=LAUNCH_S / 60.0)  # fmt: skip
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["gate"] = {"budget_minutes": BUDGET_S / 60.0}
    document["workflows"] = {"bench_jobs": 2}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=repo, check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def _steps(path: Path, job: str | None = None) -> list[dict[str, Any]]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = (
        document["jobs"][job]["steps"] if job else document["runs"]["steps"]
    )
    return steps


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    path = cwd / f"step-{len(list(cwd.glob('step-*.sh')))}.sh"
    path.write_text(script, encoding="utf-8")
    return subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
        cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def test_a_rendered_run_spends_no_more_than_its_budget_across_every_lane(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    config = load_config(_config(repo))
    render.write(render.render_site(render.site_for(config, repo)), repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a project with a flaky benchmark")
    sha = _git(repo, "rev-parse", "HEAD")
    python = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
              "PYTHONPATH": str(ROOT), "FAKE_LAUNCH_S": str(LAUNCH_S)}  # fmt: skip
    github = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_dispatch",
              "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": sha, "GITHUB_RUN_ID": "7",
              "GITHUB_RUN_ATTEMPT": "1", "GITHUB_REPOSITORY": "acme/sim",
              "GITHUB_SERVER_URL": "https://github.example", "GITHUB_TOKEN": "tok"}  # fmt: skip

    # The config job: the rendered select step plans the lanes.
    workflow = repo / ".github/workflows/perfgate.yml"
    select = next(s for s in _steps(workflow, "config") if s.get("id") == "select")
    output = tmp_path / "config-output"
    env = {**python, **github, "EVENT_NAME": "workflow_dispatch", "HAS_RUN_LABEL": "false",
           "PUSH_BEFORE": "", "PERFGATE_CONFIG": "perfgate.yaml",
           "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output)}  # fmt: skip
    planned = _bash(select["run"], repo, env)
    assert planned.wait() == 0, planned.stdout.read() if planned.stdout else ""
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    lanes = json.loads(outputs["lanes"])["include"]
    assert len(lanes) == 2

    # Each lane's bench job at once: the step that notes when it began, then the bench
    # action's own script, each with the environment the rendered YAML gives it.
    noted = next(s for s in _steps(workflow, "bench") if s["name"] == "Note when the job began")
    bench = next(s for s in _steps(repo / "actions/bench/action.yml")
                 if s["name"] == "Benchmark the buckets")  # fmt: skip
    jobs = []
    for lane in lanes:
        job_env = tmp_path / f"{lane['lane']}.env"
        started = _bash(noted["run"], repo, {"GITHUB_ENV": str(job_env)})
        assert started.wait() == 0
        set_env = dict(line.split("=", 1) for line in job_env.read_text().splitlines())
        env = {**python, **github, **set_env, "PERFGATE_BUCKETS": lane["buckets"],
               "PERFGATE_BUDGET": lane["budget"], "PERFGATE_CONFIG": "perfgate.yaml",
               "PERFGATE_RESULTS": str(tmp_path / "results" / lane["lane"]),
               "PERFGATE_IMAGE": "", "PERFGATE_TARGET_BRANCH": "main"}  # fmt: skip
        jobs.append((lane, _bash(bench["run"], repo, env)))
    for lane, job in jobs:
        job.wait(timeout=60 * lane["timeout"])

    results = {
        lane["lane"]: [read_result(p) for p in (tmp_path / "results" / lane["lane"]).iterdir()]
        for lane, _ in jobs
    }
    assert sorted(r.bucket.id for rs in results.values() for r in rs) == sorted(config.bucket_ids())
    retried = [r for rs in results.values() for r in rs if r.health.retried]
    refused = [r for rs in results.values() for r in rs if r.health.not_retried]
    assert retried and refused, "the budget paid for some retries and refused the rest"
    spent = {
        name: sum(r.spend.of(SpendKind.RETRY).seconds for r in rs if r.spend)
        for name, rs in results.items()
    }
    for lane, _ in jobs:
        assert spent[lane["lane"]] <= float(lane["budget"]) * 60.0, (lane, spent)
    assert sum(spent.values()) <= BUDGET_S, spent
    # The same run as one job per bucket, each with the whole budget, would have retried all.
    assert len(retried) < len(config.buckets)
