"""The rendered workflows' shell steps and the render/check commands, run for real.

GitHub itself cannot run here, so each shell step is taken from the rendered
YAML and run under bash with the environment GitHub would give it (the same
`bash --noprofile --norc -eo pipefail` invocation); `python -m perfgate` is
replaced by a recording stand-in only where the real verb belongs to another module.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.config import load_config
from tests.paths import ROOT
from tests.publishers import store_push_run

COPIED = [
    "perfgate",
    "examples",
    ".github",
    "actions",
    "perfgate.yaml",
    "noxfile.py",
    "tasks.py",
    "pyproject.toml",
]


def _copy_repo(dest: Path) -> Path:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest / name)
    return dest


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(cwd), **env}
    return subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _step(path: Path, job: str, step_id: str) -> dict[str, Any]:
    workflow = yaml.safe_load(path.read_text())
    step: dict[str, Any] = next(s for s in workflow["jobs"][job]["steps"] if s.get("id") == step_id)
    return step


def _action_script(name: str, step: str | None = None) -> str:
    """The first ``run`` script of a composite action, or that of the step named ``step``."""
    action = yaml.safe_load((ROOT / "actions" / name / "action.yml").read_text())
    script: str = next(
        s["run"] for s in action["runs"]["steps"] if "run" in s and step in (None, s["name"])
    )
    return script


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = cwd / "step.sh"
    path.write_text(script)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_check_fails_with_a_diff_when_a_rendered_file_is_hand_edited(tmp_path: Path) -> None:
    """`render --check` passes on the committed tree, exits 1 with a diff after an edit."""
    repo = _copy_repo(tmp_path)
    check = [sys.executable, "-m", "perfgate", "render", "--check"]
    assert _run(check, repo).returncode == 0
    action = repo / "actions/bench/action.yml"
    action.write_text(action.read_text().replace("retention-days: 7", "retention-days: 90"))
    result = _run(check, repo)
    assert result.returncode == 1
    assert "actions/bench/action.yml (on disk)" in result.stdout
    assert "-        retention-days: 90" in result.stdout
    assert "+        retention-days: 7" in result.stdout
    assert "invoke render-workflows" in result.stderr
    assert _run([sys.executable, "-m", "perfgate", "render"], repo).returncode == 0
    assert _run(check, repo).returncode == 0


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # pull_request: GITHUB_REF is refs/pull/7/merge, ref_name 7/merge; base_ref is the target.
        ({"PR_BASE_REF": "release/2.1", "PUSHED_REF_NAME": "7/merge"}, "release/2.1"),
        (
            {
                "MERGE_GROUP_BASE_REF": "refs/heads/develop",
                "PUSHED_REF_NAME": "gh-readonly-queue/develop/pr-7-abc",
            },
            "develop",
        ),
        ({"PUSHED_REF_NAME": "main"}, "main"),
    ],
)
def test_target_branch_follows_the_base_never_the_merge_ref(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    """R11: the image tag's branch is the PR base, the merge group base, or the pushed branch."""
    step = _step(ROOT / "examples/isaaclab/.github/workflows/perfgate.yml", "config", "target")
    output = tmp_path / "out"
    full = {"PR_BASE_REF": "", "MERGE_GROUP_BASE_REF": "", **env, "GITHUB_OUTPUT": str(output)}
    result = _bash(step["run"], tmp_path, full)
    assert result.returncode == 0, result.stderr
    assert _outputs(output) == {"target-branch": expected}


def _select_env(tmp_path: Path, event: str, **more: str) -> dict[str, str]:
    """The environment the rendered select step gets for ``event``: no run label, the
    step outputs in ``tmp_path/out``, this repository's perfgate and Python first."""
    return {
        "EVENT_NAME": event,
        "HAS_RUN_LABEL": "false",
        "TARGET_BRANCH": "main",  # the config job's target step
        "PERFGATE_CONFIG": "perfgate.yaml",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "PYTHONPATH": str(ROOT),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        **more,
    }


def _pr_repo(tmp_path: Path, changed: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy2(ROOT / "examples/isaaclab/perfgate.yaml", repo / "perfgate.yaml")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / changed).parent.mkdir(parents=True, exist_ok=True)
    (repo / changed).write_text("change\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "merge commit of the pull request")
    return repo


@pytest.mark.parametrize(
    ("event", "label", "changed", "run"),
    [
        ("pull_request", "false", "README.md", "false"),
        ("pull_request", "false", "source/isaaclab/envs/x.py", "true"),
        ("pull_request", "false", "source/isaaclab/envs/caf\u00e9.py", "true"),  # never quoted
        ("pull_request", "false", "source/isaaclab/envs/caf\udce9.py", "true"),  # no UTF-8
        ("pull_request", "true", "README.md", "true"),
        ("push", "false", "README.md", "true"),
        ("merge_group", "false", "README.md", "true"),
    ],
)
def test_select_step_skips_gpu_jobs_for_unrelated_pull_requests(
    tmp_path: Path, event: str, label: str, changed: str, run: str
) -> None:
    """The paths filter: a PR touching no bucket's paths runs nothing unless labelled."""
    step = _step(ROOT / "examples/isaaclab/.github/workflows/perfgate.yml", "config", "select")
    repo = _pr_repo(tmp_path, changed)
    output = tmp_path / "out"
    result = _bash(step["run"], repo, _select_env(tmp_path, event, HAS_RUN_LABEL=label))
    assert result.returncode == 0, result.stderr
    outputs = _outputs(output)
    assert outputs["run"] == run
    assert len(json.loads(outputs["buckets"])) == (9 if run == "true" else 0)


def _select_step(tmp_path: Path, *, coalesce_pushes: bool) -> dict[str, Any]:
    """The config job's select step of the Isaac Lab example rendered with pushes
    coalesced or not."""
    import dataclasses

    from perfgate.ci import render

    site = tmp_path / "site"
    site.mkdir()
    shutil.copy2(ROOT / "examples/isaaclab/perfgate.yaml", site / "perfgate.yaml")
    config = dataclasses.replace(
        load_config(site / "perfgate.yaml"), coalesce_pushes=coalesce_pushes
    )
    render.write(render.render_site(render.site_for(config, site)), site)
    return _step(site / ".github/workflows/perfgate.yml", "config", "select")


@pytest.mark.parametrize(
    ("changed", "measured", "run"),
    [
        ("README.md", True, "false"),  # nothing a bucket selects changed since it was measured
        ("source/isaaclab/envs/x.py", True, "true"),
        ("README.md", False, "true"),  # never measured on the branch: every bucket
    ],
)
def test_coalesced_pushes_share_a_group_per_branch_and_measure_what_changed_since_measured(
    tmp_path: Path, changed: str, measured: bool, run: str
) -> None:
    """workflows.coalesce_pushes: the pushes a run follows may have been superseded
    unmeasured, so a push measures the buckets whose paths changed since the baseline
    branch last measured them (on origin, read with the step's credentials)."""
    workflow = yaml.safe_load(
        (ROOT / "examples/isaaclab/.github/workflows/perfgate.yml").read_text()
    )
    assert "format('push-{0}', github.ref)" in workflow["concurrency"]["group"]
    step = _select_step(tmp_path, coalesce_pushes=True)
    assert step == _step(ROOT / "examples/isaaclab/.github/workflows/perfgate.yml",
                         "config", "select")  # fmt: skip
    clone, _ = _pushed_repo(tmp_path, changed, measured=measured, full=True)
    output = tmp_path / "out"
    env = _select_env(tmp_path, "push", GITHUB_TOKEN="tok",
                      GITHUB_SERVER_URL="https://github.example")  # fmt: skip
    result = _bash(step["run"], clone, env)
    assert result.returncode == 0, result.stderr
    assert _outputs(output)["run"] == run
    assert len(json.loads(_outputs(output)["buckets"])) == (9 if run == "true" else 0)


def _pushed_repo(
    tmp_path: Path, changed: str, *, measured: bool = False, full: bool = False
) -> tuple[Path, str]:
    """A clone of a bare origin whose last push changed ``changed``; the commit it follows.

    ``measured``: origin's baseline branch holds a push run of every bucket at that commit;
    ``full``: the clone has the whole history (else the pushed commit alone)."""
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    _git(tmp_path, "init", "-q", "--bare", str(origin))
    # GitHub serves any reachable commit by its SHA (a fetch of github.event.before).
    _git(origin, "config", "uploadpack.allowReachableSHA1InWant", "true")
    work.mkdir()
    shutil.copy2(ROOT / "examples/isaaclab/perfgate.yaml", work / "perfgate.yaml")
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "before")
    before = _git(work, "rev-parse", "HEAD").strip()
    (work / changed).parent.mkdir(parents=True, exist_ok=True)
    (work / changed).write_text("change\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "the push")
    _git(work, "push", "-q", str(origin), "HEAD:refs/heads/main")
    if measured:
        store_push_run(work, before)
        baseline = load_config(work / "perfgate.yaml").gate.baseline.branch
        _git(work, "push", "-q", str(origin), f"refs/heads/{baseline}")
    clone = tmp_path / "clone"
    # What the config job checks out: the pushed commit alone, or (fetch-depth: 0) all.
    depth = () if full else ("--depth=1",)
    _git(tmp_path, "clone", "-q", *depth, "--branch=main", f"file://{origin}", str(clone))
    return clone, before


@pytest.mark.parametrize(
    ("changed", "before", "run"),
    [
        ("README.md", "parent", "false"),  # a push that touches no bucket runs no GPU job
        ("source/isaaclab/envs/x.py", "parent", "true"),
        ("source/isaaclab/envs/caf\u00e9.py", "parent", "true"),
        ("README.md", "0" * 40, "true"),  # a new branch: every bucket
        ("README.md", "f" * 40, "true"),  # a rewritten history: every bucket, said
    ],
)
def test_a_push_runs_only_the_buckets_it_touches_since_the_commit_it_follows(
    tmp_path: Path, changed: str, before: str, run: str
) -> None:
    step = _select_step(tmp_path, coalesce_pushes=False)
    clone, parent = _pushed_repo(tmp_path, changed)
    output = tmp_path / "out"
    env = _select_env(tmp_path, "push", PUSH_BEFORE=parent if before == "parent" else before,
                      GITHUB_TOKEN="tok", GITHUB_SERVER_URL="https://github.example")  # fmt: skip
    result = _bash(step["run"], clone, env)
    assert result.returncode == 0, result.stderr
    outputs = _outputs(output)
    assert outputs["run"] == run
    assert len(json.loads(outputs["buckets"])) == (9 if run == "true" else 0)
    assert json.loads(outputs["lanes"])["include"] or run == "false"
    if before == "f" * 40:
        assert "cannot be read (a rewritten history): every bucket runs" in result.stdout


def _fake_python(tmp_path: Path, exit_code: int = 0, verdict: str | None = None) -> Path:
    """A `python` that records perfgate verb calls (direct or via nox); else the real one.

    The gate, publish and seed verbs belong to other modules; here only the
    arguments the composite actions hand them are under test.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_verdict = (
        f"mkdir -p \"$PERFGATE_REPORT\"; echo '{json.dumps({'overall_verdict': verdict})}'"
        ' > "$PERFGATE_REPORT/verdict.json"'
        if verdict
        else ":"
    )
    script = f"""#!/usr/bin/env bash
# `python -m nox -s VERB -- ARGS` (perfgate's own tree) records as `VERB ARGS`, like
# `python -m perfgate VERB ARGS` (any other repository): the session only wraps the verb.
if [ "$1" = "-m" ] && [ "$2" = "nox" ] && [ "$3" = "-s" ]; then
  verb="$4"; shift 4
  if [ "$1" = "--" ]; then shift; fi
  set -- -m perfgate "$verb" "$@"
fi
if [ "$1" = "-m" ] && [ "$2" = "perfgate" ]; then
  shift 2
  printf '%s\\0' "$@" > "{tmp_path}/perfgate-args"
  git config --get-regexp 'http\\..*extraheader' > "{tmp_path}/git-auth" || true
  {write_verdict}
  exit {exit_code}
fi
exec "{sys.executable}" "$@"
"""
    (bin_dir / "python").write_text(script)
    (bin_dir / "python").chmod(0o755)
    return bin_dir


def _perfgate_args(tmp_path: Path) -> list[str]:
    return (tmp_path / "perfgate-args").read_text().split("\0")[:-1]


SEED_EMPTY = {
    "PERFGATE_CONFIG": "perfgate.yaml",
    "SEED_BRANCH": "",
    "SEED_TARGET": "",
    "SEED_LAST": "",
    "SEED_COMMITS": "",
    "SEED_COMMIT_BRANCH": "",
    "SEED_PLAN": "",
    "SEED_BUCKETS": "",
    "SEED_TAGS": "",
    "SEED_BACKENDS": "",
    "SEED_SAMPLES": "",
    "SEED_STRICT_ANCESTRY": "false",
    "SEED_DRY_RUN": "true",
}


def test_seed_action_passes_empty_inputs_through_as_all_and_dry_runs(tmp_path: Path) -> None:
    """Empty inputs mean "all" (no flag, no sentinel); the default is a dry run."""
    bin_dir = _fake_python(tmp_path)
    env = {**SEED_EMPTY, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = _bash(_action_script("seed"), tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert _perfgate_args(tmp_path) == ["seed", "--config", "perfgate.yaml", "--push"]


def test_seed_action_turns_every_input_into_its_flag(tmp_path: Path) -> None:
    """Lists split on commas and spaces; values with shell syntax stay single arguments."""
    bin_dir = _fake_python(tmp_path)
    env = {
        **SEED_EMPTY,
        "SEED_BRANCH": "develop",
        "SEED_TARGET": "main",
        "SEED_LAST": "3",
        "SEED_COMMITS": "aaa,bbb ccc",
        "SEED_COMMIT_BRANCH": "aaa:main",
        "SEED_BUCKETS": "t/physx, t/newton",
        "SEED_TAGS": "camera",
        "SEED_BACKENDS": "physx",
        "SEED_SAMPLES": "5",
        "SEED_STRICT_ANCESTRY": "true",
        "SEED_DRY_RUN": "false",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_action_script("seed"), tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert _perfgate_args(tmp_path) == [
        *("seed", "--config", "perfgate.yaml", "--push", "--branch", "develop", "--target", "main"),
        *("--last", "3"),
        *("--commits", "aaa", "bbb", "ccc", "--commit-branch", "aaa:main"),
        *("--bucket", "t/physx", "--bucket", "t/newton", "--tag", "camera"),
        *("--backend", "physx", "--samples", "5", "--strict-ancestry", "--execute"),
    ]
    hostile = {**env, "SEED_BUCKETS": "$(touch pwned);*", "SEED_BRANCH": "a b"}
    assert _bash(_action_script("seed"), tmp_path, hostile).returncode == 0
    args = _perfgate_args(tmp_path)
    assert not (tmp_path / "pwned").exists()
    assert args[args.index("--branch") + 1] == "a b"
    assert args[args.index("--bucket") + 1] == "$(touch"


def test_seed_action_seeds_one_bucket_of_a_reseed_plan(tmp_path: Path) -> None:
    """The era workflow's matrix job: the roll's plan, narrowed to its own bucket."""
    bin_dir = _fake_python(tmp_path)
    env = {
        **SEED_EMPTY,
        "SEED_PLAN": "/runner/temp/reseed plan.json",
        "SEED_BUCKETS": "Isaac-Cartpole-Direct/physx",
        "SEED_DRY_RUN": "false",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_action_script("seed"), tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert _perfgate_args(tmp_path) == [
        *("seed", "--config", "perfgate.yaml", "--push", "--plan", "/runner/temp/reseed plan.json"),
        *("--bucket", "Isaac-Cartpole-Direct/physx", "--execute"),
    ]


ERA_WORKFLOW = ROOT / "examples/isaaclab/.github/workflows/perfgate-era.yml"


@pytest.mark.parametrize("force", ["", "rebuilt upstream; $(touch pwned)"])
def test_era_roll_step_executes_and_forces_only_with_a_reason(tmp_path: Path, force: str) -> None:
    """The roll step always executes (the workflow runs only for trusted events); the
    dispatch's force reason reaches perfgate as one argument, never as shell."""
    bin_dir = _fake_python(tmp_path)
    step = _step(ERA_WORKFLOW, "roll", "roll")
    env = {
        "PERFGATE_CONFIG": "perfgate.yaml",
        "PERFGATE_FORCE": force,
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://github.com",
        "RUNNER_TEMP": str(tmp_path),
        "NGC_API_KEY": "ngc",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(step["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    expected = ["roll-era", "--config", "perfgate.yaml", "--execute"]
    expected += ["--out", f"{tmp_path}/reseed-plan.json"]
    assert _perfgate_args(tmp_path) == expected + (["--force", force] if force else [])
    assert not (tmp_path / "pwned").exists()


def test_era_verify_step_checks_exactly_the_planned_buckets(tmp_path: Path) -> None:
    bin_dir = _fake_python(tmp_path)
    verify = yaml.safe_load(ERA_WORKFLOW.read_text())["jobs"]["verify-baselines"]
    step = next(s for s in verify["steps"] if "run" in s)
    env = {
        "PERFGATE_CONFIG": "perfgate.yaml",
        "RESEED_TARGET": "develop",
        "RESEED_BUCKETS": "a/physx b/newton_rtx_renderer",
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://github.com",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(step["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert _perfgate_args(tmp_path) == [
        *("verify-baselines", "--config", "perfgate.yaml", "--target", "develop"),
        *("--all-hardware", "--newest-runtime", "--require"),
        *("--bucket", "a/physx", "--bucket", "b/newton_rtx_renderer"),
    ]


@pytest.mark.parametrize(("exit_code", "verdict"), [(0, "PASS"), (2, "HARD_FAILURE"), (3, None)])
def test_gate_action_records_outputs_before_propagating_the_exit(
    tmp_path: Path, exit_code: int, verdict: str | None
) -> None:
    """The gate step writes its outputs for every outcome, then exits as perfgate did."""
    bin_dir = _fake_python(tmp_path, exit_code=exit_code, verdict=verdict)
    output = tmp_path / "out"
    env = {
        "PERFGATE_CONFIG": "perfgate.yaml",
        "PERFGATE_RESULTS": "res",
        "PERFGATE_REPORT": str(tmp_path / "report"),
        "PERFGATE_POST": "true",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://github.com",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_action_script("gate"), tmp_path, env)
    assert result.returncode == exit_code
    assert _outputs(output) == {"exit-code": str(exit_code), "verdict": verdict or "MISSING"}
    assert _perfgate_args(tmp_path) == [
        *("gate", "--results", "res", "--report-dir", str(tmp_path / "report")),
        *("--config", "perfgate.yaml", "--post"),
    ]
    if verdict is None:
        assert "::error::" in result.stdout


def test_gate_action_reads_the_baseline_branch_with_the_token_and_posts_only_when_told(
    tmp_path: Path,
) -> None:
    """The gate fetches the baseline branch: in a private repository git needs the job
    token (as in publish, seed and resolve-image). Without post it never passes --post."""
    bin_dir = _fake_python(tmp_path, verdict="PASS")
    env = {
        "PERFGATE_CONFIG": "perfgate.yaml",
        "PERFGATE_RESULTS": "res",
        "PERFGATE_REPORT": str(tmp_path / "report"),
        "PERFGATE_POST": "false",
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://github.com",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_action_script("gate"), tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "--post" not in _perfgate_args(tmp_path)
    header = base64.b64encode(b"x-access-token:tok").decode()
    assert (tmp_path / "git-auth").read_text() == (
        f"http.https://github.com/.extraheader AUTHORIZATION: basic {header}\n"
    )


@pytest.mark.parametrize(("target", "flag"), [("release/2.1", True), ("", False)])
def test_resolve_image_action_passes_the_target_branch_when_given(
    tmp_path: Path, target: str, flag: bool
) -> None:
    """The seed job names the samples' branch; empty leaves the run's own target branch."""
    bin_dir = _fake_python(tmp_path)
    env = {
        "PERFGATE_CONFIG": "perfgate.yaml",
        "PERFGATE_TARGET_BRANCH": target,
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://github.com",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_action_script("resolve-image"), tmp_path, env)
    assert result.returncode == 0, result.stderr
    expected = ["resolve-image", "--config", "perfgate.yaml"]
    assert _perfgate_args(tmp_path) == expected + (["--target-branch", target] if flag else [])


def _comment_post_step() -> dict[str, Any]:
    workflow = yaml.safe_load((ROOT / ".github/workflows/perfgate-comment.yml").read_text())
    step: dict[str, Any] = next(s for s in workflow["jobs"]["comment"]["steps"] if "run" in s)
    return step


@pytest.mark.parametrize(
    ("conclusion", "outcome", "report"),
    [
        ("cancelled", "", False),  # download skipped: a superseded run
        ("success", "failure", False),  # the gate was skipped: no artifact
        ("failure", "success", False),  # an artifact without a verdict (gate malfunction)
    ],
)
def test_comment_consumer_gives_a_notice_and_stays_green_without_a_report(
    tmp_path: Path, conclusion: str, outcome: str, report: bool
) -> None:
    """No report to post is not a failure of the trusted job: one notice, exit 0."""
    bin_dir = _fake_python(tmp_path)
    (tmp_path / "perfgate-report").mkdir()
    env = {
        "RUNNER_TEMP": str(tmp_path),
        "RUN_CONCLUSION": conclusion,
        "DOWNLOAD_OUTCOME": outcome,
        "GITHUB_TOKEN": "tok",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_comment_post_step()["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("::notice") == 1 and conclusion in result.stdout
    assert not (tmp_path / "perfgate-args").exists()


def test_comment_consumer_posts_a_downloaded_report(tmp_path: Path) -> None:
    """With the artifact downloaded, the trusted job hands it to `perfgate post-report`."""
    bin_dir = _fake_python(tmp_path)
    report = tmp_path / "perfgate-report"
    report.mkdir()
    (report / "verdict.json").write_text("{}")
    env = {
        "RUNNER_TEMP": str(tmp_path),
        "RUN_CONCLUSION": "success",
        "DOWNLOAD_OUTCOME": "success",
        "PERFGATE_CONFIG": _comment_post_step()["env"]["PERFGATE_CONFIG"],
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    result = _bash(_comment_post_step()["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    # The rendered config path, as the gate workflow uses it (not a bare default).
    assert env["PERFGATE_CONFIG"] == "perfgate.yaml"
    assert _perfgate_args(tmp_path) == [
        *("post-report", "--report-dir", str(report), "--config", "perfgate.yaml")
    ]
    assert "::notice" not in result.stdout


def test_bench_and_publish_actions_call_their_sessions_as_designed(tmp_path: Path) -> None:
    """`perfgate bench --bucket ID --out DIR` and `perfgate publish --results DIR`."""
    bin_dir = _fake_python(tmp_path)
    env = {
        "PERFGATE_BUCKETS": 'a"b/physx c*/newton',
        "PERFGATE_BUDGET": "12.5",
        "PERFGATE_RESULTS": "results dir",
        "PERFGATE_CONFIG": "perfgate.yaml",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_TOKEN": "tok",
        "GITHUB_SERVER_URL": "https://ghe.example",
    }
    header = base64.b64encode(b"x-access-token:tok").decode()
    auth = f"http.https://ghe.example/.extraheader AUTHORIZATION: basic {header}\n"
    bench = yaml.safe_load((ROOT / "actions/bench/action.yml").read_text())["runs"]["steps"][0]
    (tmp_path / "cx").mkdir()  # a glob character in an id stays a character
    benched = _bash(bench["run"], tmp_path, env)
    assert benched.returncode == 0
    assert _perfgate_args(tmp_path) == [
        *("bench", "--bucket", 'a"b/physx', "--bucket", "c*/newton"),
        *("--budget-minutes", "12.5", "--out", "results dir", "--config", "perfgate.yaml"),
    ]
    # No share given: the bench falls back to gate.budget_minutes itself.
    assert _bash(bench["run"], tmp_path, {**env, "PERFGATE_BUDGET": ""}).returncode == 0
    assert "--budget-minutes" not in _perfgate_args(tmp_path)
    # The bench reads the baseline window to confirm a suspicious bucket (its benchmark
    # never sees the header: execution drops GIT_CONFIG* and *TOKEN* from its environment).
    assert (tmp_path / "git-auth").read_text() == auth
    assert f"::add-mask::{header}" in benched.stdout
    (tmp_path / "git-auth").write_text("")
    publish_env = {**env, "PERFGATE_REPORT": "report dir", "PERFGATE_PENDING": "pending dir"}
    published = _bash(
        _action_script("publish-baseline", "Publish the samples"), tmp_path, publish_env
    )
    assert published.returncode == 0
    assert _perfgate_args(tmp_path) == [
        *("publish", "--results", "results dir", "--report-dir", "report dir"),
        *("--gather-pending", "pending dir", "--config", "perfgate.yaml"),
    ]
    # The token reaches git for this step only, as an HTTP header for this server,
    # and is masked in the log; nothing is written to any git config file.
    assert (tmp_path / "git-auth").read_text() == auth
    assert f"::add-mask::{header}" in published.stdout


def test_the_lanes_the_config_job_plans_hold_every_bucket_of_perfgate_matrix_json(
    tmp_path: Path,
) -> None:
    """The bench matrix is the config job's `lanes` output: every bucket of
    `perfgate matrix --json` in one lane of its runners, each lane's timeout and budget
    share as planned."""
    from perfgate.ci.contexts import lane_timeout_minutes
    from perfgate.ci.lanes import plan
    from perfgate.cli.ci import bench_job_needs

    config = "examples/isaaclab/perfgate.yaml"
    listed = _run([sys.executable, "-m", "perfgate", "matrix", "--json", "--config", config], ROOT)
    assert listed.returncode == 0, listed.stderr
    buckets = {b["id"]: b for b in json.loads(listed.stdout)}
    step = _step(ROOT / "examples/isaaclab/.github/workflows/perfgate.yml", "config", "select")
    output = tmp_path / "out"
    env = _select_env(tmp_path, "workflow_dispatch", PUSH_BEFORE="",
                      PERFGATE_CONFIG=str(ROOT / config))  # fmt: skip
    result = _bash(step["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    rows = json.loads(_outputs(output)["lanes"])["include"]
    ids = [bucket for row in rows for bucket in row["buckets"].split()]
    assert sorted(ids) == sorted(buckets)
    loaded = load_config(ROOT / config)
    warm = bench_job_needs(loaded)["warm_buckets"]
    for row, lane in zip(rows, plan(loaded, loaded.buckets), strict=True):
        assert all(buckets[b]["runner"] == row["runner"] for b in row["buckets"].split())
        assert row["timeout"] == lane_timeout_minutes(lane, loaded, warm)
        assert float(row["budget"]) == lane.budget_minutes


def test_affected_without_a_readable_file_is_a_usage_error(tmp_path: Path) -> None:
    """A missing changed-files list exits 4 with a message, not a traceback."""
    result = _run(
        [sys.executable, "-m", "perfgate", "affected", "--changed-files", str(tmp_path / "no")],
        ROOT,
    )
    assert result.returncode == 4
    assert "cannot read the changed-files list" in result.stderr


def test_publish_gathers_earlier_samples_itself_never_by_an_unfiltered_listing() -> None:
    """Which earlier runs' samples ride along is publish's decision (each run checked
    through the API: a failed push of this workflow on a protected branch), never a listing
    in the action's shell (`gh run list` without a branch took any branch's runs)."""
    action = yaml.safe_load((ROOT / "actions/publish-baseline/action.yml").read_text())
    scripts = [step.get("run", "") for step in action["runs"]["steps"]]
    assert not any("gh run" in script for script in scripts)
    (publish,) = [script for script in scripts if "publish -- --results" in script]
    assert '--gather-pending "$PERFGATE_PENDING"' in publish
