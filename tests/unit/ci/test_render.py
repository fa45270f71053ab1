"""Wiring tests over the rendered workflows and composite actions (docs/design.md R12, R13).

They parse the YAML that ``python -m perfgate render`` produces for this
repository's demo matrix and for the Isaac Lab example, and assert each security
and correctness rule on the structure, not on the template text.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from perfgate import __version__
from perfgate.ci import render
from perfgate.ci.contexts import lane_timeout_minutes, publish_timeout
from perfgate.ci.expressions import branch_condition
from perfgate.ci.lanes import Lane, plan, split
from perfgate.ci.selection import affected, matches
from perfgate.ci.site import HOSTED_RUNNER, REPORT_ARTIFACT, Site, perfgate_source
from perfgate.ci.templating import TEMPLATES_DIR, Raw, environment, yaml_value
from perfgate.cli.ci import bench_job_needs, lane_rows
from perfgate.config import (
    AdmissionMode,
    AdmissionPolicy,
    AlertsSpec,
    Bucket,
    Config,
    ConfirmMode,
    ImageSpec,
    load_config,
)
from perfgate.errors import ConfigError, UsageError
from tests.paths import ROOT

SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
WRITE_SCOPES = {
    # workflow -> job -> the only scopes that may be write
    "perfgate.yml": {
        "config": {},
        "bench": {},
        # Pull requests run their own code in `gate`: it never holds a write scope (R12).
        "gate": {},
        "gate-trusted": {"statuses": "write"},
        "publish": {"contents": "write"},
        # Post-merge alerts (R18): the one job that writes issues (and records acceptances
        # on the baseline branch); dispatching bisects is a job of its own.
        "alert": {"contents": "write", "issues": "write"},
        "bisect-dispatch": {"actions": "write"},
        "report": {},
        # Only with report.pages: the one job that may deploy (and prove it with OIDC).
        "deploy-report": {"pages": "write", "id-token": "write"},
    },
    # Bisect never writes: it replays and judges, the baseline branch stays untouched; its
    # result reaches the alert's issue from a job that runs no benchmark.
    "perfgate-bisect.yml": {"plan": {}, "bisect": {}, "post": {"issues": "write"}},
    "perfgate-comment.yml": {"comment": {"pull-requests": "write", "statuses": "write"}},
    "perfgate-seed.yml": {"plan": {}, "seed": {"contents": "write"}},
    "perfgate-era.yml": {
        "roll": {"contents": "write"},
        "seed": {"contents": "write"},
        "verify-baselines": {},
    },
    "ci.yml": {"unit": {}, "lint": {}, "drift": {}},
    # Qualification measures the pool and writes no baselines: read-only throughout (R15).
    "perfgate-qualify.yml": {"plan": {}, "allocation": {}, "qualify": {}},
}


def _site(config_rel: str, out_rel: str) -> Site:
    config = load_config(ROOT / config_rel)
    return Site(
        config=dataclasses.replace(config, path=Path(config_rel)),
        out=Path(out_rel),
        config_ref="perfgate.yaml",
        self_ci=out_rel == ".",
        **bench_job_needs(config),
    )


SITES = {
    "demo": _site("perfgate.yaml", "."),
    "isaaclab": _site("examples/isaaclab/perfgate.yaml", "examples/isaaclab"),
    "pytest-benchmark": _site(
        "examples/pytest-benchmark/perfgate.yaml", "examples/pytest-benchmark"
    ),
}


def _parsed(site: Site) -> dict[str, Any]:
    return {
        str(file.path): yaml.safe_load(file.text)
        for file in render.render_site(site)
        if file.path.suffix in (".yml", ".yaml")
    }


@pytest.fixture(scope="module", params=sorted(SITES))
def rendered(request: pytest.FixtureRequest) -> tuple[Site, dict[str, Any]]:
    site = SITES[request.param]
    return site, _parsed(site)


def _workflows(docs: dict[str, Any]) -> dict[str, Any]:
    return {
        PurePosixPath(path).name: doc
        for path, doc in docs.items()
        if path.startswith(".github/workflows/")
    }


def _on(workflow: dict[str, Any]) -> dict[str, Any]:
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    trigger: dict[str, Any] = workflow.get("on", workflow.get(True))
    return trigger


def _steps(docs: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for path, doc in docs.items():
        if path.startswith(".github/workflows/"):
            for job in doc["jobs"].values():
                steps += job.get("steps", [])
        elif path.startswith("actions/"):
            steps += doc["runs"]["steps"]
    return steps


def nox_render_sites() -> tuple[tuple[str, str], ...]:
    """The (config, out) sites ``nox -s render`` renders: noxfile.py cannot be imported here."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    value = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "RENDER_SITES" for t in node.targets)
    )
    sites: tuple[tuple[str, str], ...] = ast.literal_eval(value)
    return sites


def test_committed_files_match_a_fresh_render() -> None:
    """The drift check: every committed generated file of every site nox renders equals its
    in-memory render."""
    sites = nox_render_sites()
    assert [out for _, out in sites] == [".", "examples/isaaclab", "examples/pytest-benchmark"]
    for config_rel, out_rel in sites:
        config = load_config(ROOT / config_rel)
        site = render.site_for(config, ROOT / out_rel, **bench_job_needs(config))
        site = dataclasses.replace(
            site,
            config=dataclasses.replace(site.config, path=Path(config_rel)),
            out=Path(out_rel),
            self_ci=render.is_perfgate_checkout(ROOT / out_rel),
        )
        assert render.drift(render.render_site(site), ROOT / out_rel) == [], (
            "generated files are stale; run `invoke render-workflows`"
        )


def test_every_generated_file_has_a_header_naming_template_and_command(rendered: Any) -> None:
    """R13: the first lines name the template (which exists) and the regenerate command."""
    site, _ = rendered
    for file in render.render_site(site):
        first, second = file.text.splitlines()[:2]
        assert first.startswith(render.GENERATED_MARKER)
        template = re.search(r"templates/(\S+);", first)
        assert template and (TEMPLATES_DIR / template.group(1)).is_file()
        assert "invoke render-workflows" in second
        assert site.command in second


def test_every_job_has_minimal_explicit_permissions(rendered: Any) -> None:
    """R12: contents: read by default; each write scope only on the one job that needs it."""
    site, docs = rendered
    for name, workflow in _workflows(docs).items():
        assert workflow["permissions"] == {"contents": "read"}, name
        expected = dict(WRITE_SCOPES[name])
        if not site.config.report.pages:
            expected.pop("deploy-report", None)
        assert set(workflow["jobs"]) == set(expected), name
        for job_id, job in workflow["jobs"].items():
            writes = {k: v for k, v in job["permissions"].items() if v == "write"}
            assert writes == expected[job_id], f"{name}:{job_id}"


def test_no_secret_is_inherited_and_only_the_roll_step_reads_its_registry_secrets(
    rendered: Any,
) -> None:
    """R12: secrets by name only. The job token serves everything but the era roll's
    registry login, whose secrets (image.roll.secrets) reach the roll step alone."""
    site, docs = rendered
    roll = site.config.image.roll if site.config.image else None
    named = list(roll.secrets) if roll else []
    for path, doc in docs.items():
        text = yaml.safe_dump(doc)
        assert "inherit" not in text, path
        if path != ".github/workflows/perfgate-era.yml":
            assert "secrets." not in text, path
            continue
        step = next(s for s in doc["jobs"]["roll"]["steps"] if s.get("id") == "roll")
        read = {k: v for k, v in step["env"].items() if "secrets." in v}
        assert read == {name: f"${{{{ secrets.{name} }}}}" for name in named}
        step_free = dict(doc, jobs={**doc["jobs"], "roll": dict(doc["jobs"]["roll"], steps=[])})
        assert "secrets." not in yaml.safe_dump(step_free), path


def test_no_expression_is_expanded_inside_a_shell_script(rendered: Any) -> None:
    """R12: every ${{ }} reaches the shell through env:, never spliced into run:."""
    _, docs = rendered
    runs = [step["run"] for step in _steps(docs) if "run" in step]
    assert runs
    for script in runs:
        assert "${{" not in script, script


def test_every_third_party_action_is_pinned_by_commit_sha(rendered: Any) -> None:
    """R12: uses: is a 40-hex SHA, or this repository's own action at the running commit."""
    _, docs = rendered
    uses = [step["uses"] for step in _steps(docs) if "uses" in step]
    assert uses
    for ref in uses:
        assert ref.startswith("$/actions/") or SHA_PIN.match(ref), ref
    for path, file_text in ((f.path, f.text) for f in render.render_site(SITES["demo"])):
        for line in file_text.splitlines():
            if "uses:" in line and "@" in line:
                assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), (path, line)


def test_every_checkout_drops_its_credentials(rendered: Any) -> None:
    """R12: persist-credentials: false, so later steps cannot reuse the token via git."""
    _, docs = rendered
    checkouts = [s for s in _steps(docs) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts
    for step in checkouts:
        assert step["with"]["persist-credentials"] is False


def test_the_bench_matrix_is_the_config_jobs_lanes_and_they_cover_every_bucket_once(
    rendered: Any,
) -> None:
    """The bench job fans out over the lanes the config job planned (``affected``): every
    bucket in exactly one lane of its runner pool, each lane's artifacts named by it."""
    site, docs = rendered
    bench = docs[".github/workflows/perfgate.yml"]["jobs"]["bench"]
    assert bench["strategy"]["matrix"] == "${{ fromJSON(needs.config.outputs.lanes) }}"
    assert bench["runs-on"] == "${{ matrix.runner }}"
    assert bench["timeout-minutes"] == "${{ matrix.timeout }}"
    assert bench["strategy"]["fail-fast"] is False
    rows = lane_rows(site.config, site.config.buckets)
    ids = [bucket for row in rows for bucket in row["buckets"].split()]
    assert sorted(ids) == sorted(site.config.bucket_ids())
    by_id = {b.id: b for b in site.config.buckets}
    for row in rows:
        assert all(list(by_id[b].runner) == row["runner"] for b in row["buckets"].split())
        assert row["artifact"] == f"perfgate-result-{row['lane']}"
        assert row["logs"] == f"perfgate-log-{row['lane']}"
    per_pool = {tuple(r["runner"]) for r in rows}
    assert len(rows) <= site.config.bench_jobs * len(per_pool)


def test_a_lanes_timeout_covers_its_planned_launches_its_budget_share_and_one_overrun() -> None:
    """Under a run budget a lane may start its planned launches (a protected push's,
    alerts.push_repeats of them, each allowed its timeout, a cold cache's warm-up first),
    wait for a fit machine, spend its share of the budget and overrun by one launch."""
    config = load_config(ROOT / "examples/isaaclab/perfgate.yaml")
    warm = bench_job_needs(config)["warm_buckets"]
    assert config.gate.budget_minutes is not None
    for lane in plan(config, config.buckets):
        pushed = [b.as_pushed(config.alerts) for b in lane.buckets]
        wait = config.admission.wait_seconds / 60.0
        planned = sum((b.repeats + 1) * b.timeout_minutes + wait for b in pushed)
        overrun = max(b.timeout_minutes for b in pushed)
        assert lane.budget_minutes is not None
        expected = max(30, math.ceil(planned + lane.budget_minutes + overrun) + 15)
        assert lane_timeout_minutes(lane, config, warm) == expected
    # A push of more samples needs longer: the timeout covers it.
    more = dataclasses.replace(config, alerts=AlertsSpec(push_repeats=12))
    lane = plan(config, config.buckets)[0]
    assert lane_timeout_minutes(lane, more, warm) > lane_timeout_minutes(lane, config, warm)


def test_lanes_are_fixed_by_the_matrix_and_a_run_starts_only_those_it_measures() -> None:
    """The split keeps a lane's buckets (and its warm cache) whatever a change touches;
    the run's budget is shared out over the lanes that run, in proportion to launch time."""
    config = dataclasses.replace(load_config(ROOT / "examples/isaaclab/perfgate.yaml"),
                                 bench_jobs=3)  # fmt: skip
    lanes = split(config)
    assert len(lanes) == 3
    assert sorted(b.id for lane in lanes for b in lane.buckets) == sorted(config.bucket_ids())
    loads = [sum(b.launch_minutes or 0 for b in lane.buckets) for lane in lanes]
    assert max(loads) - min(loads) <= max(b.launch_minutes or 0 for b in config.buckets)
    touched = [lanes[1].buckets[0]]
    (only,) = plan(config, touched)
    assert (only.number, [b.id for b in only.buckets]) == (2, [touched[0].id])
    assert only.budget_minutes == config.gate.budget_minutes  # the whole budget for one lane
    shares = [lane.budget_minutes or 0.0 for lane in plan(config, config.buckets)]
    assert config.gate.budget_minutes - 0.01 < sum(shares) <= config.gate.budget_minutes


def test_isaaclab_example_has_the_nine_l40s_buckets() -> None:
    """examples/isaaclab: the reference gate's nine buckets on self-hosted L40S runners."""
    config = SITES["isaaclab"].config
    assert len(config.buckets) == 9
    assert {b.driver for b in config.buckets} == {"isaaclab"}
    assert {b.runner for b in config.buckets} == {("self-hosted", "gpu-l40s")}
    newton_touching = [b.id for b in config.buckets if "newton" in b.backend_key]
    assert len(newton_touching) == 5
    g1 = next(b for b in config.buckets if b.id == "Isaac-Velocity-Flat-G1/newton")
    assert g1.noise_floor_for("l40s", 0.0) == 2.06
    cartpole = next(b for b in config.buckets if b.id == "Isaac-Cartpole-Direct/physx")
    assert [f.value for f in cartpole.floors_for("l40s")] == [100.0]
    camera = [b for b in config.buckets if "Shadow-Camera" in b.task]
    # Without a run budget: 20 min, one retry: 40 per sample. One repeat, or a sample
    # started at the 40-minute budget: 80; pairs up to the 180-minute budget, the last
    # pair 80 more: 260; three re-measured samples and two minutes' wait: 122; plus 15.
    assert {job_timeout_minutes(b, config.gate.confirm, config.admission) for b in camera} == {
        80 + 260 + 122 + 15
    }


def test_isaaclab_example_benches_its_checkout_in_the_resolved_image() -> None:
    """The example runs the PR checkout inside the CI image, never the runner's own isaaclab."""
    site = SITES["isaaclab"]
    config = site.config
    for bucket in config.buckets:
        assert bucket.container is not None, bucket.id
        # The checkout replaces the image's editable Isaac Lab install (the driver's profile
        # says where), and no flag of that profile is copied into the example.
        assert bucket.container.checkout_mount is None
        assert not any("EULA" in arg for arg in bucket.container.extra_args)
        assert bucket.container.image is None  # always the one resolve-image chose
    assert config.image is not None
    assert config.image.env_file == "docker/.env.base"
    assert config.image.env_keys == ("ISAACSIM_BASE_IMAGE", "ISAACSIM_VERSION")
    assert set(config.image.tags) == {"main", "develop", "release/*"}
    steps = _bench_steps(site)
    uses = [s.get("uses") for s in steps]
    assert uses.index("$/actions/resolve-image") < uses.index("$/actions/bench")


def test_isaaclab_example_installs_pinned_perfgate_not_the_checkout() -> None:
    """Isaac Lab's root is the project under test: setup installs a pinned perfgate."""
    demo, example = _parsed(SITES["demo"]), _parsed(SITES["isaaclab"])
    source = example["actions/setup/action.yml"]["inputs"]["perfgate-source"]["default"]
    assert source == SITES["isaaclab"].config.perfgate_source == "perfgate==0.1.0"
    assert demo["actions/setup/action.yml"]["inputs"]["perfgate-source"]["default"] == "."
    install = example["actions/setup/action.yml"]["runs"]["steps"][-1]
    assert install["env"] == {"PERFGATE_SOURCE": "${{ inputs.perfgate-source }}"}
    assert '"$PERFGATE_SOURCE"' in install["run"] and " . " not in install["run"] + " "
    default = dataclasses.replace(
        SITES["isaaclab"],
        config=dataclasses.replace(SITES["isaaclab"].config, perfgate_source=None),
    )
    assert perfgate_source(default) == f"perfgate=={__version__}"


def test_only_the_jobs_that_run_the_benchmark_install_what_it_needs() -> None:
    """The checkout is installed where its benchmark runs anyway, never in a writing job."""
    workflows = _workflows(_parsed(SITES["pytest-benchmark"]))
    installing = {
        (name, job_id)
        for name, workflow in workflows.items()
        for job_id, job in workflow["jobs"].items()
        if any(s.get("name") == "Install what the benchmark needs" for s in job.get("steps", []))
    }
    assert {name for name, _ in installing} == {
        "perfgate.yml", "perfgate-bisect.yml", "perfgate-seed.yml", "perfgate-qualify.yml"
    }  # fmt: skip
    for name, job_id in installing:
        job = workflows[name]["jobs"][job_id]
        step = next(s for s in job["steps"] if s.get("name") == "Install what the benchmark needs")
        assert step["run"] == "python -m pip install -e '.[bench]'"
        # No job that installs the checkout writes anything but seeded baselines.
        assert set(job["permissions"].values()) <= {"read"} or name == "perfgate-seed.yml"
    for site in ("demo", "isaaclab"):  # nothing declared: no such step
        assert "Install what the benchmark needs" not in str(_parsed(SITES[site]))


def test_actions_call_perfgates_sessions_here_and_the_package_elsewhere(rendered: Any) -> None:
    """In perfgate's tree the actions run its Nox sessions, as a developer does locally;
    another repository has no perfgate noxfile, so they run `python -m perfgate VERB`."""
    site, docs = rendered
    verbs = {
        "bench": "bench",
        "gate": "gate",
        "publish-baseline": "publish",
        "resolve-image": "resolve-image",
        "seed": "seed",
    }
    for action, verb in verbs.items():
        scripts = [s["run"] for s in docs[f"actions/{action}/action.yml"]["runs"]["steps"]
                   if "run" in s]  # fmt: skip
        call = f"python -m nox -s {verb} -- " if site.self_ci else f"python -m perfgate {verb} "
        assert any(call in s for s in scripts), action
        if not site.self_ci:
            assert not any("nox" in s for s in scripts), action


def test_publish_runs_only_on_pushes_to_protected_branches(rendered: Any) -> None:
    """R9: the only job with contents: write runs for protected pushes, after the gate."""
    site, docs = rendered
    workflow = docs[".github/workflows/perfgate.yml"]
    publish = workflow["jobs"]["publish"]
    condition = publish["if"]
    assert "github.event_name == 'push'" in condition
    assert branch_condition(site.config.gate.protected_branches) in condition
    assert _on(workflow)["push"]["branches"] == list(site.config.gate.protected_branches)
    publish_steps = [s for s in publish["steps"] if s.get("uses") == "$/actions/publish-baseline"]
    assert len(publish_steps) == 1


def test_gate_survives_failed_buckets_but_not_cancellation(rendered: Any) -> None:
    """The gate judges after a failed bench job (a missing bucket is named) but a cancelled,
    superseded run neither judges nor publishes: !cancelled(), never always()."""
    _, docs = rendered
    workflow = docs[".github/workflows/perfgate.yml"]
    for job_id in ("gate", "gate-trusted", "publish"):
        assert workflow["jobs"][job_id]["if"].startswith("!cancelled() && "), job_id
    assert "always()" not in yaml.safe_dump(workflow)
    assert workflow["jobs"]["gate"]["needs"] == ["config", "bench"]
    assert workflow["jobs"]["gate-trusted"]["needs"] == ["config", "bench"]
    assert workflow["jobs"]["publish"]["needs"] == ["config", "bench", "gate-trusted"]
    action = docs["actions/gate/action.yml"]
    script = next(s["run"] for s in action["runs"]["steps"] if "run" in s)
    assert 'gate -- --results "$PERFGATE_RESULTS" --report-dir "$PERFGATE_REPORT"' in script or (
        'perfgate gate --results "$PERFGATE_RESULTS" --report-dir "$PERFGATE_REPORT"' in script
    )


def test_pull_request_gate_is_read_only_and_only_trusted_events_post(rendered: Any) -> None:
    """R12: PR code never gets a write token. `gate` (every event but push and merge_group)
    is read-only and does not post; `gate-trusted` posts, for push and merge_group only."""
    _, docs = rendered
    jobs = docs[".github/workflows/perfgate.yml"]["jobs"]
    trusted = "(github.event_name == 'push' || github.event_name == 'merge_group')"
    gate, posting = jobs["gate"], jobs["gate-trusted"]
    assert gate["if"].endswith(f"&& !{trusted}")
    assert posting["if"].endswith(f"&& {trusted}")
    assert gate["permissions"] == {"contents": "read"}
    assert posting["permissions"] == {"contents": "read", "statuses": "write"}
    judge = {job_id: next(s for s in jobs[job_id]["steps"] if s.get("uses") == "$/actions/gate")
             for job_id in ("gate", "gate-trusted")}  # fmt: skip
    assert judge["gate"]["with"]["post"] == "false"
    assert judge["gate-trusted"]["with"]["post"] == "true"
    # The action never posts unless told to.
    assert docs["actions/gate/action.yml"]["inputs"]["post"]["default"] == "false"
    # The report the comment workflow posts is uploaded whatever the verdict.
    upload = next(s for s in docs["actions/gate/action.yml"]["runs"]["steps"]
                  if "upload-artifact" in s.get("uses", ""))  # fmt: skip
    assert upload["if"] == "always()" and upload["with"]["name"] == REPORT_ARTIFACT


def test_the_config_job_of_coalesced_pushes_fetches_the_history_a_push_compares(
    rendered: Any,
) -> None:
    """A coalesced push compares each bucket's last measured commit, anywhere in the
    branch's history (affected --since-measured); a pull request needs its merge commit
    and the base tip, and so does every run of a site whose pushes are not coalesced."""
    site, docs = rendered
    config_job = _workflows(docs)["perfgate.yml"]["jobs"]["config"]
    checkout = next(s for s in config_job["steps"] if "actions/checkout@" in s.get("uses", ""))
    select = next(s for s in config_job["steps"] if s.get("id") == "select")
    if site.config.coalesce_pushes:
        assert checkout["with"]["fetch-depth"] == (
            "${{ github.event_name == 'push' && '0' || '2' }}"
        )
        assert '--since-measured "$TARGET_BRANCH"' in select["run"]
        assert select["env"]["TARGET_BRANCH"] == "${{ steps.target.outputs.target-branch }}"
    else:
        assert checkout["with"]["fetch-depth"] == 2
        assert "--since-measured" not in select["run"]


def test_jobs_reading_the_baseline_branch_fetch_full_history(rendered: Any) -> None:
    """Ancestry and merge-base need every commit and origin/<target>: fetch-depth 0 (with
    actions/checkout that fetches +refs/heads/*:refs/remotes/origin/*)."""
    site, docs = rendered
    workflows = _workflows(docs)
    full = [
        workflows["perfgate.yml"]["jobs"]["gate"],
        workflows["perfgate.yml"]["jobs"]["gate-trusted"],
        workflows["perfgate.yml"]["jobs"]["publish"],
        *workflows["perfgate-seed.yml"]["jobs"].values(),
    ]
    if site.config.image is not None:  # resolve-image reads the manifest on the baseline branch
        full.append(workflows["perfgate.yml"]["jobs"]["bench"])
    for job in full:
        checkout = next(s for s in job["steps"] if "actions/checkout@" in s.get("uses", ""))
        assert checkout["with"]["fetch-depth"] == 0, job["name"]
    # Every step that fetches or pushes the baseline branch carries the job token for git.
    call = "python -m nox -s" if site.self_ci else "python -m perfgate"
    for action in ("gate", "publish-baseline", "resolve-image", "seed"):
        script = next(s["run"] for s in docs[f"actions/{action}/action.yml"]["runs"]["steps"]
                      if call in s.get("run", ""))  # fmt: skip
        assert "export GIT_CONFIG_COUNT=1" in script, action
        assert script.index("GIT_CONFIG_COUNT") < script.index(call), action


def test_triggers_concurrency_and_draft_skip(rendered: Any) -> None:
    """Drafts skipped with ready_for_review subscribed; PRs cancel, pushes keyed by commit."""
    site, docs = rendered
    workflow = docs[".github/workflows/perfgate.yml"]
    on = _on(workflow)
    assert {"opened", "synchronize", "reopened", "ready_for_review"} <= set(
        on["pull_request"]["types"]
    )
    assert on["pull_request"]["branches"] == list(site.config.gate.target_branches)
    assert "merge_group" in on and "workflow_dispatch" in on
    group = workflow["concurrency"]["group"]
    assert "format('pr-{0}', github.event.pull_request.number)" in group
    # Other runs are keyed by event, branch and commit: no push waits on another's group,
    # and none can cancel another's pending run (and its publish) from the queue.
    assert group.endswith("|| format('{0}-{1}-{2}', github.event_name, github.ref, github.sha) }}")
    assert workflow["concurrency"]["cancel-in-progress"] == (
        "${{ github.event_name == 'pull_request' }}"
    )
    jobs = workflow["jobs"]
    assert jobs["config"]["if"] == (
        "github.event_name != 'pull_request' || (!github.event.pull_request.draft && "
        "(github.event.action != 'labeled' || github.event.label.name == 'perf-gate'))"
    )
    for job_id, job in jobs.items():
        if job_id != "config":
            assert "config" in ([job["needs"]] if isinstance(job["needs"], str) else job["needs"])
            assert "needs.config.outputs.run == 'true'" in job["if"]


def test_image_follows_the_target_branch_never_the_merge_ref(rendered: Any) -> None:
    """R11: the target branch comes from base_ref / the merge group's base / the pushed ref."""
    _, docs = rendered
    config = docs[".github/workflows/perfgate.yml"]["jobs"]["config"]
    target = next(s for s in config["steps"] if s.get("id") == "target")
    assert target["env"] == {
        "PR_BASE_REF": "${{ github.base_ref }}",
        "MERGE_GROUP_BASE_REF": "${{ github.event.merge_group.base_ref }}",
        "PUSHED_REF_NAME": "${{ github.ref_name }}",
    }
    assert config["outputs"]["target-branch"] == "${{ steps.target.outputs.target-branch }}"
    text = yaml.safe_dump(docs[".github/workflows/perfgate.yml"])
    assert "github.ref }}" not in text and "head_ref" not in text


def _checkout_step(site: Site) -> dict[str, Any]:
    """The bench job's checkout (after the step that notes when the job began)."""
    steps = _bench_steps(site)
    assert steps[0]["run"].startswith('echo "PERFGATE_JOB_STARTED=$(date +%s)"')
    return next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))


def _bench_steps(site: Site) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _parsed(site)[".github/workflows/perfgate.yml"]["jobs"]["bench"][
        "steps"
    ]
    return steps


def test_image_is_resolved_on_the_bench_runner_when_configured() -> None:
    """R11: with an image block each bench job resolves its image for the target branch."""
    demo = SITES["demo"]
    without = _bench_steps(demo)
    assert not any(s.get("uses") == "$/actions/resolve-image" for s in without)
    assert "image" not in next(s for s in without if s.get("uses") == "$/actions/bench")["with"]
    spec = ImageSpec(env_file="docker/.env.base", env_keys=("ISAACSIM_VERSION",))
    steps = _bench_steps(
        dataclasses.replace(demo, config=dataclasses.replace(demo.config, image=spec))
    )
    resolve = [s for s in steps if s.get("uses") == "$/actions/resolve-image"]
    bench = next(s for s in steps if s.get("uses") == "$/actions/bench")
    assert len(resolve) == 1 and steps.index(resolve[0]) < steps.index(bench)
    assert resolve[0]["with"]["target-branch"] == "${{ needs.config.outputs.target-branch }}"
    assert bench["with"]["image"] == "${{ steps.image.outputs.image }}"


def test_a_warm_buckets_job_restores_its_cache_and_fetches_lfs_content() -> None:
    """R16: the Isaac Lab example's caches roll from run to run through the actions cache,
    keyed as upstream's perf-smoke job keys its JIT cache; its checkout has LFS content."""
    example = _parsed(SITES["isaaclab"])
    bench = next(s for s in _bench_steps(SITES["isaaclab"]) if s.get("uses") == "$/actions/bench")
    checkout = _checkout_step(SITES["isaaclab"])
    assert checkout["with"]["lfs"] is True
    steps = example["actions/bench/action.yml"]["runs"]["steps"]
    names = [s["name"] for s in steps]
    assert names.index("Restore the warm cache") < names.index("Benchmark the buckets")
    keys = next(s for s in steps if s["name"] == "Warm cache keys")
    assert "perfgate cache-key" in keys["run"] and keys["id"] == "warm"
    assert keys["env"]["PERFGATE_LANE"] == "${{ inputs.lane }}"
    restore = next(s for s in steps if s["name"] == "Restore the warm cache")
    assert restore["with"]["restore-keys"].splitlines() == [
        "${{ steps.warm.outputs.restore-launches }}",
        "${{ steps.warm.outputs.restore-lane }}",
    ]
    assert bench["with"]["buckets"] == "${{ matrix.buckets }}"
    assert bench["with"]["lane"] == "${{ matrix.lane }}"
    assert bench["with"]["budget-minutes"] == "${{ matrix.budget }}"
    # The demo's buckets run cold, with nothing in LFS: neither step exists there.
    demo = _parsed(SITES["demo"])
    assert "Warm cache keys" not in [
        s["name"] for s in demo["actions/bench/action.yml"]["runs"]["steps"]
    ]
    assert "lfs" not in _checkout_step(SITES["demo"])["with"]
    # An image per commit replaces the era's image: no resolve-image step then.
    demo_site = SITES["demo"]
    per_commit = dataclasses.replace(
        demo_site.config, image=ImageSpec(per_commit="ci.example/app:sha-{sha}")
    )
    steps = _bench_steps(dataclasses.replace(demo_site, config=per_commit))
    assert not any(s.get("uses") == "$/actions/resolve-image" for s in steps)


def test_comment_consumer_never_checks_out_or_runs_the_pr_head(rendered: Any) -> None:
    """R12: workflow_run consumer: default-branch code, the report artifact as data only;
    it posts for every pull request, same repository and fork alike."""
    _, docs = rendered
    workflow = docs[".github/workflows/perfgate-comment.yml"]
    assert set(_on(workflow)) == {"workflow_run"}
    gate_name = docs[".github/workflows/perfgate.yml"]["name"]
    assert _on(workflow)["workflow_run"]["workflows"] == [gate_name]
    job = workflow["jobs"]["comment"]
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    for step in job["steps"]:
        assert "ref" not in step.get("with", {}), step
        assert "repository" not in step.get("with", {}), step
    steps_text = yaml.safe_dump(job["steps"])
    assert "head_sha" not in steps_text and "head_branch" not in steps_text
    assert "pull_request_target" not in yaml.safe_dump(workflow)
    download = next(s for s in job["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"]["name"] == REPORT_ARTIFACT
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    post = next(s for s in job["steps"] if "run" in s)
    assert 'python -m perfgate post-report --report-dir "$report"' in post["run"]


def test_comment_consumer_stays_green_without_a_report(rendered: Any) -> None:
    """A cancelled or skipped run, or one that uploaded no report, gives a notice, not a red job."""
    _, docs = rendered
    job = docs[".github/workflows/perfgate-comment.yml"]["jobs"]["comment"]
    download = next(s for s in job["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["id"] == "download"
    assert download["continue-on-error"] is True
    assert download["if"] == (
        "github.event.workflow_run.conclusion == 'success' || "
        "github.event.workflow_run.conclusion == 'failure'"
    )
    for step in job["steps"]:
        if step is not download and "uses" in step:
            assert step["if"] == "steps.download.outcome == 'success'", step["name"]
    post = next(s for s in job["steps"] if "run" in s)
    assert "if" not in post  # it always runs: it posts, or it says why not
    assert post["env"]["DOWNLOAD_OUTCOME"] == "${{ steps.download.outcome }}"
    assert post["env"]["RUN_CONCLUSION"] == "${{ github.event.workflow_run.conclusion }}"
    assert "::notice" in post["run"]


def test_era_workflow_is_rendered_only_for_a_config_with_an_image_block(rendered: Any) -> None:
    """R11: only a config that resolves CI images has an era to roll."""
    site, docs = rendered
    has_era = ".github/workflows/perfgate-era.yml" in docs
    assert has_era == (site.config.image is not None)
    assert has_era == (site is SITES["isaaclab"])  # perfgate's own demo matrix has none


def test_era_workflow_rolls_on_protected_pushes_then_seeds_then_verifies() -> None:
    """roll (build, push, record; protected pushes or a dispatch with force) -> seed (each
    bucket on its own runners, from the roll's plan, in the roll's image) -> verify."""
    site = SITES["isaaclab"]
    config = site.config
    assert config.image is not None and config.image.roll is not None
    workflow = _parsed(site)[".github/workflows/perfgate-era.yml"]
    trigger = _on(workflow)
    assert set(trigger) == {"push", "workflow_dispatch"}
    assert trigger["push"]["branches"] == list(config.gate.protected_branches)
    assert trigger["workflow_dispatch"]["inputs"]["force"]["default"] == ""
    # Rolls queue, never cancel each other: the next one reads the manifest this one wrote.
    assert workflow["concurrency"] == {"group": "perfgate-era", "cancel-in-progress": False}
    jobs = workflow["jobs"]
    roll, seed, verify = jobs["roll"], jobs["seed"], jobs["verify-baselines"]
    assert roll["runs-on"] == list(config.image.roll.runner)
    assert roll["timeout-minutes"] == config.image.roll.timeout_minutes
    step = next(s for s in roll["steps"] if s.get("id") == "roll")
    assert step["env"]["PERFGATE_FORCE"] == "${{ inputs.force }}"
    assert "roll-era --config" in step["run"] and "--execute" in step["run"]
    assert 'export DOCKER_CONFIG="$RUNNER_TEMP/' in step["run"]
    assert set(roll["outputs"]) == {"image", "reseed-needed", "reseed-plan"}

    assert seed["needs"] == "roll"
    assert seed["if"] == "needs.roll.outputs.reseed-needed == 'true'"
    rows = seed["strategy"]["matrix"]["include"]
    assert [r["bucket"] for r in rows] == list(config.bucket_ids())
    samples = config.gate.baseline.min_samples
    for row, bucket in zip(rows, config.buckets, strict=True):
        assert row["runner"] == list(bucket.runner)
        attempts = samples * bucket.repeats * (bucket.retries + 1)  # a seed never confirms
        assert row["timeout"] == max(30, math.ceil(attempts * bucket.timeout_minutes) + 15)
    planned = "contains(fromJSON(needs.roll.outputs.reseed-plan).bucket_ids, matrix.bucket)"
    assert all(s["if"] == planned for s in seed["steps"])
    action = next(s for s in seed["steps"] if s.get("uses") == "$/actions/seed")
    assert action["with"]["plan"] == "${{ runner.temp }}/reseed-plan.json"
    assert action["with"]["buckets"] == "${{ matrix.bucket }}"
    assert action["with"]["dry-run"] == "false"
    assert action["with"]["image"] == "${{ needs.roll.outputs.image }}"

    assert verify["needs"] == ["roll", "seed"]
    assert verify["if"] == "!cancelled() && needs.roll.outputs.reseed-needed == 'true'"
    assert verify["runs-on"] == HOSTED_RUNNER
    check = next(s for s in verify["steps"] if "run" in s)
    for flag in ("--all-hardware", "--newest-runtime", "--require", '--target "$RESEED_TARGET"'):
        assert flag in check["run"]


def test_seed_workflow_passes_every_input_through_and_dry_runs_by_default(rendered: Any) -> None:
    """Seed inputs reach the action verbatim (no `|| default`); the write job is not a dry run."""
    _, docs = rendered
    workflow = docs[".github/workflows/perfgate-seed.yml"]
    inputs = _on(workflow)["workflow_dispatch"]["inputs"]
    assert inputs["dry-run"]["default"] is True
    assert inputs["target"]["default"] == ""  # empty: perfgate seed's own default
    action_inputs = docs["actions/seed/action.yml"]["inputs"]
    for job in workflow["jobs"].values():
        seed = next(s for s in job["steps"] if s.get("uses") == "$/actions/seed")
        for name in inputs:
            assert seed["with"][name] == f"${{{{ inputs.{name} }}}}"
            assert name in action_inputs
        assert "||" not in yaml.safe_dump(seed)
    assert workflow["jobs"]["plan"]["if"] == "inputs.dry-run"
    assert workflow["jobs"]["seed"]["if"] == "${{ !inputs.dry-run }}"


def test_seed_resolves_the_image_first_when_configured(rendered: Any) -> None:
    """R11: the seeding job benchmarks, so with an image block it resolves the image for the
    samples' target branch and seeds in it; the dry run resolves (and builds) nothing."""
    site, docs = rendered
    jobs = docs[".github/workflows/perfgate-seed.yml"]["jobs"]
    assert not any(s.get("uses") == "$/actions/resolve-image" for s in jobs["plan"]["steps"])
    steps = jobs["seed"]["steps"]
    uses = [s.get("uses") for s in steps]
    seed = steps[uses.index("$/actions/seed")]
    if site.config.image is None:
        assert "$/actions/resolve-image" not in uses and "image" not in seed["with"]
        return
    resolve = steps[uses.index("$/actions/resolve-image")]
    assert uses.index("$/actions/resolve-image") < uses.index("$/actions/seed")
    first = site.config.gate.target_branches[0]
    assert resolve["with"]["target-branch"] == (
        f"${{{{ inputs.target || inputs.branch || '{first}' }}}}"
    )
    assert seed["with"]["image"] == "${{ steps.image.outputs.image }}"


def test_action_inputs_are_kebab_case_and_reach_shell_through_env(rendered: Any) -> None:
    """Composite action inputs are kebab-case; scripts read them only from env."""
    _, docs = rendered
    for path, doc in docs.items():
        if not path.startswith("actions/"):
            continue
        for name in doc.get("inputs", {}):
            assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name), (path, name)
        for step in doc["runs"]["steps"]:
            if "run" in step:
                assert step["shell"] == "bash"


def test_hostile_bucket_values_cannot_inject_into_yaml_or_shell() -> None:
    """A task name with quotes, ${{ and newlines stays one inert string in the matrix."""
    hostile = "x\"\n  evil: 1\n${{ secrets.TOKEN }}'; rm -rf / #"
    demo = SITES["demo"]
    bucket = dataclasses.replace(demo.config.buckets[0], task=hostile, runner=("a${{ 1 }}", "b\n"))
    config = dataclasses.replace(demo.config, buckets=(bucket, *demo.config.buckets[1:]))
    site = dataclasses.replace(demo, config=config, config_ref='p"\n${{ github.token }}')
    docs = _parsed(site)
    normal = _parsed(demo)
    workflow = docs[".github/workflows/perfgate.yml"]
    assert set(workflow) == set(normal[".github/workflows/perfgate.yml"])
    assert set(workflow["jobs"]) == set(normal[".github/workflows/perfgate.yml"]["jobs"])
    # The matrix is the config job's output, never rendered text; its rows reach shell
    # only through env: (the bench action), and name their artifacts by lane alone.
    assert workflow["jobs"]["bench"]["strategy"]["matrix"] == (
        "${{ fromJSON(needs.config.outputs.lanes) }}"
    )
    (row, *_) = lane_rows(config, config.buckets)
    assert row["buckets"].split()[0] == f"{hostile}/{bucket.backend_key}".split()[0]
    assert re.fullmatch(r"perfgate-result-lane-[0-9]+", row["artifact"])
    assert re.fullmatch(r"perfgate-log-lane-[0-9]+", row["logs"])
    # GitHub evaluates ${{ }} in any string: every expression left in a value is the
    # escape ${{ '${{' }}, which evaluates to the literal text.
    value = workflow["env"]["PERFGATE_CONFIG"]
    assert all(e == "${{ '${{' }}" for e in re.findall(r"\$\{\{.*?\}\}", value)), value
    for step in _steps(docs):
        assert "secrets.TOKEN" not in step.get("run", "")
        assert "${{" not in step.get("run", "")


def test_yaml_value_quotes_everything_and_refuses_unknown_objects() -> None:
    """Printed values are JSON scalars (valid YAML); only Raw text passes verbatim."""
    assert yaml_value("a: b") == '"a: b"'
    assert yaml_value(["x", 1, True]) == '["x", 1, true]'
    assert yaml_value(Raw("plain: yes")) == "plain: yes"
    assert yaml.safe_load(yaml_value("${{ x }}")) == "${{ '${{' }} x }}"
    with pytest.raises(TypeError):
        yaml_value(Path("x"))


def test_undefined_template_variables_fail_loudly(tmp_path: Path) -> None:
    """StrictUndefined: a typo in a template is an error, not an empty string."""
    (tmp_path / "t.j2").write_text("a: << missing >>\n")
    with pytest.raises(Exception, match="missing"):
        environment(tmp_path).get_template("t.j2").render({})
    with pytest.raises(UsageError):
        environment(tmp_path / "absent")


def job_timeout_minutes(
    bucket: Bucket, confirm: ConfirmMode, admission: AdmissionPolicy | None = None
) -> int:
    """The timeout of a lane of ``bucket`` alone, without a run budget, in a pull request's
    run (no push samples added)."""
    demo = SITES["demo"].config
    config = dataclasses.replace(
        demo,
        gate=dataclasses.replace(demo.gate, confirm=confirm, budget_minutes=None),
        admission=admission or AdmissionPolicy(mode=AdmissionMode.OFF),
        alerts=AlertsSpec(push_repeats=1),
    )
    return lane_timeout_minutes(Lane(number=1, runner=bucket.runner, buckets=(bucket,)), config)


def test_job_timeout_covers_every_attempt_plus_margin_at_least_30() -> None:
    """Per-bucket job timeout-minutes = max(30, ceil(repeats * (retries + 1) * timeout) + 15)."""
    bucket = dataclasses.replace(SITES["demo"].config.buckets[0], repeats=1)
    cases = [(2, 0, 30), (15, 0, 30), (20, 0, 35), (12.5, 0, 30), (40.2, 0, 56)]
    cases += [(10, 1, 35), (20, 1, 55), (12.5, 2, 53), (5, 1, 30)]
    for minutes, retries, expected in cases:
        changed = dataclasses.replace(bucket, timeout_minutes=minutes, retries=retries)
        assert job_timeout_minutes(changed, ConfirmMode.OFF) == expected, (minutes, retries)


def test_job_timeout_covers_the_confirmation_samples_up_to_the_budget() -> None:
    """Confirming: every sample up to max_repeats, or a sample started just before the budget."""
    bucket = dataclasses.replace(
        SITES["demo"].config.buckets[0], timeout_minutes=10, retries=0, repeats=2, max_repeats=6
    )
    unbounded = dataclasses.replace(bucket, repeat_budget_minutes=None)
    assert job_timeout_minutes(unbounded, ConfirmMode.REPEAT) == 6 * 10 + 15
    assert job_timeout_minutes(unbounded, ConfirmMode.OFF) == max(30, 2 * 10 + 15)
    budget = dataclasses.replace(bucket, repeat_budget_minutes=25)
    assert job_timeout_minutes(budget, ConfirmMode.REPEAT) == 25 + 10 + 15
    # The repeats are always taken, whatever the budget.
    tight = dataclasses.replace(bucket, repeat_budget_minutes=1, repeats=4)
    assert job_timeout_minutes(tight, ConfirmMode.REPEAT) == 4 * 10 + 15


def test_job_timeout_covers_paired_confirmation_and_admission() -> None:
    """Paired: two samples a pair up to max_pairs or the pair budget; admission: its budgets."""
    bucket = dataclasses.replace(
        SITES["demo"].config.buckets[0], timeout_minutes=10, retries=0, repeats=2,
        max_repeats=6, repeat_budget_minutes=None, max_pairs=5, pair_budget_minutes=None,
    )  # fmt: skip
    assert job_timeout_minutes(bucket, ConfirmMode.PAIRED) == 6 * 10 + 2 * 5 * 10 + 15
    budget = dataclasses.replace(bucket, pair_budget_minutes=30)
    assert job_timeout_minutes(budget, ConfirmMode.PAIRED) == 6 * 10 + 30 + 20 + 15
    policy = AdmissionPolicy(remeasure=2, wait_seconds=90)
    assert job_timeout_minutes(bucket, ConfirmMode.OFF, policy) == 2 * 10 + 20 + 2 + 15
    off = dataclasses.replace(policy, mode=AdmissionMode.OFF)
    assert job_timeout_minutes(bucket, ConfirmMode.OFF, off) == max(30, 2 * 10 + 15)


def test_branch_condition_renders_exact_and_prefix_patterns() -> None:
    """Protected branch patterns become GitHub expressions; unsupported globs are refused."""
    assert branch_condition(["main", "release/**"]) == (
        "github.ref == 'refs/heads/main' || startsWith(github.ref, 'refs/heads/release/')"
    )
    with pytest.raises(ConfigError, match="release/\\*/x"):
        branch_condition(["release/*/x"])
    # Values config validation refuses are refused here again, never printed into an if:.
    for hostile in ("it's", "main${{ github.event.head_commit.message }}", "a}}b", "x\n"):
        with pytest.raises(ConfigError):
            branch_condition([hostile])


def test_drift_reports_edits_and_stale_generated_files(tmp_path: Path) -> None:
    """drift() diffs an edited file and names a generated file no longer rendered."""
    files = render.render_site(SITES["demo"])
    render.write(files, tmp_path)
    assert render.drift(files, tmp_path) == []
    target = tmp_path / ".github/workflows/perfgate.yml"
    target.write_text(target.read_text().replace("timeout-minutes: 15", "timeout-minutes: 16", 1))
    stale = tmp_path / "actions/old/action.yml"
    stale.parent.mkdir(parents=True)
    stale.write_text(f"{render.GENERATED_MARKER} templates/x; do not edit\n")
    handwritten = tmp_path / ".github/workflows/mine.yml"
    handwritten.write_text("name: mine\n")
    diffs = render.drift(files, tmp_path)
    assert len(diffs) == 2
    assert "-    timeout-minutes: 16" in diffs[0] and "+    timeout-minutes: 15" in diffs[0]
    assert "no longer rendered" in diffs[1]
    render.write(files, tmp_path)
    assert not stale.exists() and handwritten.exists()
    assert render.drift(files, tmp_path) == []


def test_site_for_requires_the_config_inside_the_output_tree(tmp_path: Path) -> None:
    """Workflows run from the rendered root, so the config must live under it."""
    config: Config = SITES["demo"].config
    with pytest.raises(UsageError, match="is not inside"):
        render.site_for(dataclasses.replace(config, path=tmp_path / "a.yaml"), tmp_path / "b")


def test_path_selection_uses_github_glob_semantics() -> None:
    """'*' stays in a directory, '**' crosses them, a bucket without paths always runs."""
    assert matches("source/a/b.py", "source/**")
    assert matches("pyproject.toml", "pyproject.toml")
    assert matches("docs/x.md", "docs/")
    assert not matches("source/a/b.py", "source/*")
    assert matches("a/b/c.py", "**/*.py")
    config = SITES["isaaclab"].config
    assert affected(config.buckets, ["README.md"]) == ()
    assert len(affected(config.buckets, ["source/isaaclab/x.py"])) == 9
    demo = SITES["demo"].config
    assert affected(demo.buckets, []) == demo.buckets


def test_gate_action_exposes_the_step_outputs_perfgate_writes(rendered: Any) -> None:
    """The gate writes status_state, description and underfilled to $GITHUB_OUTPUT; the
    action passes each on, so later jobs (a reseed, a notifier) can use them."""
    _, docs = rendered
    outputs = docs["actions/gate/action.yml"]["outputs"]
    for name, key in (
        ("status-state", "status_state"),
        ("description", "description"),
        ("underfilled", "underfilled"),
    ):
        assert outputs[name]["value"] == f"${{{{ steps.gate.outputs.{key} }}}}"


def test_the_publish_job_outlasts_the_publish_deadline(rendered: Any) -> None:
    """A publish that cannot land keeps its samples: the job must not time out before."""
    site, docs = rendered
    publish = docs[".github/workflows/perfgate.yml"]["jobs"]["publish"]
    deadline = site.config.gate.baseline.publish_deadline_minutes
    assert publish["timeout-minutes"] >= deadline + 10
    assert publish["permissions"] == {"contents": "write", "actions": "read"}
    steps = docs["actions/publish-baseline/action.yml"]["runs"]["steps"]
    kept = next(s for s in steps if s["name"] == "Keep the samples that could not land")
    assert kept["if"] == "failure()"
    assert kept["with"]["path"].endswith("/pending-samples.ndjson")
    assert publish_timeout(10) == 25 and publish_timeout(0.5) == 16
