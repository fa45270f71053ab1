"""perfgate-qualify.yml: plan -> N allocations on the pool's runners -> qualify (R10, R12, R15).

The seed's defect this guards against: the sampling side and the qualifying side kept
separate bucket lists, so a rescoped run sampled one scope and judged another. Here one
set of allowlists drives plan, bench and qualify, and a test keeps it that way.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate import cli
from perfgate.ci import render
from perfgate.ci.contexts import qualify_pools
from perfgate.ci.site import QUALIFY_RESULT_PREFIX, Site
from perfgate.cli.common import add_selection
from perfgate.config import load_config
from tests.paths import ROOT

SITES = {
    "demo": ("perfgate.yaml", "."),
    "isaaclab": ("examples/isaaclab/perfgate.yaml", "examples/isaaclab"),
}
WORKFLOW = ".github/workflows/perfgate-qualify.yml"
# One line of the shared selection snippet (templates/actions/_selection.sh.j2).
SELECTION_LINE = re.compile(
    r'for item in \$\{(?P<env>\w+)//,/ \}; do selection\+=\((?P<flag>--[\w-]+) "\$item"\); done'
)


def _docs(name: str) -> dict[str, Any]:
    config_rel, out_rel = SITES[name]
    config = load_config(ROOT / config_rel)
    site = Site(
        config=dataclasses.replace(config, path=Path(config_rel)),
        out=Path(out_rel),
        config_ref="perfgate.yaml",
        self_ci=out_rel == ".",
    )
    return {str(f.path): yaml.safe_load(f.text) for f in render.render_site(site)}


@pytest.fixture(scope="module", params=sorted(SITES))
def site(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param, _docs(request.param)


def _selection(script: str) -> dict[str, str]:
    """env variable -> flag, as the script builds its selection."""
    return {m["env"]: m["flag"] for m in SELECTION_LINE.finditer(script)}


def _step(steps: list[dict[str, Any]], **match: str) -> dict[str, Any]:
    return next(s for s in steps if all(s.get(k) == v for k, v in match.items()))


def test_one_selection_drives_plan_bench_and_qualify(site: tuple[str, dict[str, Any]]) -> None:
    """The same allowlist inputs reach plan, every allocation's bench and qualify, built
    into the same flags by the same snippet; bench and qualify both accept those flags."""
    _, docs = site
    jobs = docs[WORKFLOW]["jobs"]
    plan = _step(jobs["plan"]["steps"], id="plan")
    bench_action = docs["actions/qualify-bench/action.yml"]["runs"]["steps"][0]
    qualify_action = _step(docs["actions/qualify/action.yml"]["runs"]["steps"], id="qualify")
    scripts = {"plan": plan, "bench": bench_action, "qualify": qualify_action}
    expected = {
        "QUALIFY_BUCKETS": "--bucket",
        "QUALIFY_TAGS": "--tag",
        "QUALIFY_BACKENDS": "--backend",
    }
    for name, step in scripts.items():
        assert _selection(step["run"]) == expected, name
        command = next(line for line in step["run"].splitlines() if '"${selection[@]}"' in line)
        verb = "bench" if name == "bench" else "qualify"
        assert re.search(rf"(perfgate|nox -s) {verb}\b", command), (name, command)
    selection = argparse.ArgumentParser(add_help=False)
    add_selection(selection, "run")
    assert set(expected.values()) == {flag for a in selection._actions for flag in a.option_strings}
    # Each environment variable carries the same workflow input everywhere.
    inputs = {"QUALIFY_BUCKETS": "buckets", "QUALIFY_TAGS": "tags", "QUALIFY_BACKENDS": "backends"}
    allocation = next(job for job_id, job in jobs.items() if job_id.startswith("allocation"))
    bench_with = _step(allocation["steps"], name="Benchmark")["with"]
    qualify_with = _step(jobs["qualify"]["steps"], name="Qualify")["with"]
    for env, name in inputs.items():
        assert plan["env"][env] == f"${{{{ inputs.{name} }}}}"
        assert bench_with[name] == qualify_with[name] == f"${{{{ inputs.{name} }}}}"
        assert bench_action["env"][env] == qualify_action["env"][env] == f"${{{{ inputs.{name} }}}}"
    # Both verbs take every selection flag (an unknown value is theirs to refuse, exit 4).
    parser = cli.build_parser()
    for verb in ("bench", "qualify"):
        args = parser.parse_args([verb, "--bucket", "b/x", "--tag", "t", "--backend", "x"])
        assert (args.bucket, args.tag, args.backend) == (["b/x"], ["t"], ["x"])


def test_allocations_run_on_the_pools_labels_each_with_its_own_run_label(
    site: tuple[str, dict[str, Any]],
) -> None:
    name, docs = site
    workflow = docs[WORKFLOW]
    dispatch = workflow.get("on", workflow.get(True))
    assert set(dispatch) == {"workflow_dispatch"}
    assert set(dispatch["workflow_dispatch"]["inputs"]) == {
        "allocations",
        "samples",
        "min-runners",
        "buckets",
        "tags",
        "backends",
        "commit",
        "require-ready",
    }
    jobs = workflow["jobs"]
    job = jobs["allocation"]
    runners = {b.runner for b in load_config(ROOT / SITES[name][0]).buckets}
    assert [tuple(job["runs-on"])] == sorted(runners)  # static: reviewable, actionlint-checked
    assert (
        job["strategy"]["matrix"]["allocation"] == "${{ fromJSON(needs.plan.outputs.allocations) }}"
    )
    assert job["strategy"]["fail-fast"] is False
    assert job["if"] == "needs.plan.outputs.pool == '1'"
    checkout = job["steps"][0]
    assert checkout["with"]["ref"] == "${{ needs.plan.outputs.commit }}"  # one pinned commit
    bench = _step(job["steps"], name="Benchmark")
    # R10: run id and attempt (bench's cache key) plus this label: one cache per allocation.
    assert bench["with"]["run-label"] == "allocation-${{ matrix.allocation }}"
    assert bench["with"]["samples"] == "${{ needs.plan.outputs.samples }}"
    action = docs["actions/qualify-bench/action.yml"]["runs"]["steps"]
    assert action[0]["env"]["PERFGATE_RUN_LABEL"] == "${{ inputs.run-label }}"
    uploads = [s for s in action if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads[0]["with"]["name"] == QUALIFY_RESULT_PREFIX + "${{ inputs.run-label }}"
    download = docs["actions/qualify/action.yml"]["runs"]["steps"][0]
    assert download["with"]["pattern"] == QUALIFY_RESULT_PREFIX + "*"
    assert download["with"]["merge-multiple"] is False  # same file names in every allocation
    qualify = jobs["qualify"]
    assert qualify["needs"] == ["plan", "allocation"]
    assert "!cancelled()" in qualify["if"] and "needs.plan.result == 'success'" in qualify["if"]
    assert _step(qualify["steps"], name="Qualify")["with"]["commit"] == (
        "${{ needs.plan.outputs.commit }}"
    )
    assert all(j["permissions"] == {"contents": "read"} for j in jobs.values())


def test_an_image_config_resolves_the_image_on_the_allocation_runner() -> None:
    steps = _docs("isaaclab")[WORKFLOW]["jobs"]["allocation"]["steps"]
    uses = [s.get("uses") for s in steps]
    assert uses.index("$/actions/resolve-image") < uses.index("$/actions/qualify-bench")
    assert _step(steps, name="Benchmark")["with"]["image"] == "${{ steps.image.outputs.image }}"
    demo = _docs("demo")[WORKFLOW]["jobs"]["allocation"]["steps"]
    assert "$/actions/resolve-image" not in [s.get("uses") for s in demo]


def test_each_runner_pool_gets_its_own_allocation_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(
        "version: 1\n"
        "buckets:\n"
        "  - task: cartpole\n"
        "    runner: [self-hosted, gpu-a]\n"
        "    backends: [{physics: numpy}]\n"
        "  - task: pendulum\n"
        "    runner: [self-hosted, gpu-b]\n"
        "    backends: [{physics: numpy}, {physics: python}]\n",
        encoding="utf-8",
    )
    config = load_config(path)
    pools = qualify_pools(config)
    assert [(p["job"], p["runner"]) for p in pools] == [
        ("allocation-1", ["self-hosted", "gpu-a"]),
        ("allocation-2", ["self-hosted", "gpu-b"]),
    ]
    assert [p["condition"] for p in pools] == [
        "\"needs.plan.outputs.pool == '1'\"",
        "\"needs.plan.outputs.pool == '2'\"",
    ]
    # The plan names the pool the selection runs on, by the same numbering.
    output = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert cli.main(["qualify", "--config", str(path), "--plan", "--tag", "always",
                     "--bucket", "pendulum/numpy"]) == 4  # fmt: skip
    assert "several runner pools" in capsys.readouterr().err
    assert cli.main(["qualify", "--config", str(path), "--plan", "--backend", "python"]) == 0
    assert "pool=2" in output.read_text(encoding="utf-8").splitlines()
