"""Action pins live in one data file an update bot reads; workflows can use local actions."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml

from perfgate.ci import render
from perfgate.ci.site import Site
from perfgate.ci.templating import TEMPLATES_DIR, load_pins
from perfgate.config import ActionRef, load_config
from perfgate.errors import ConfigError
from tests.paths import ROOT

PINS = TEMPLATES_DIR / "pins" / "action.yml"


def _site(action_ref: ActionRef = ActionRef.SELF) -> Site:
    config = load_config(ROOT / "perfgate.yaml")
    config = dataclasses.replace(config, path=Path("perfgate.yaml"), action_ref=action_ref)
    return Site(config=config, out=Path(), config_ref="perfgate.yaml", self_ci=False)


def _uses(files: list[render.RenderedFile]) -> list[str]:
    found = []
    for file in files:
        doc = yaml.safe_load(file.text)
        jobs = doc.get("jobs", {}) if isinstance(doc, dict) else {}
        steps = [s for job in jobs.values() for s in job.get("steps", [])]
        if isinstance(doc, dict) and "runs" in doc:
            steps += doc["runs"].get("steps", [])
        found += [step["uses"] for step in steps if "uses" in step]
    return found


def test_the_pins_file_is_a_composite_action_dependabot_can_update() -> None:
    doc = yaml.safe_load(PINS.read_text(encoding="utf-8"))
    assert doc["runs"]["using"] == "composite"
    steps = doc["runs"]["steps"]
    assert {step["id"] for step in steps} == set(load_pins(PINS))
    dependabot = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert dependabot["updates"][0]["directories"] == ["/perfgate/ci/templates/pins"]


def test_rendered_files_follow_the_pins_file(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES_DIR, templates)
    pins = templates / "pins" / "action.yml"
    new_sha = "0123456789abcdef0123456789abcdef01234567"
    old = pins.read_text(encoding="utf-8")
    pins.write_text(
        old.replace("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2",
                    f"actions/checkout@{new_sha} # v9.9.9"),
        encoding="utf-8",
    )  # fmt: skip
    uses = _uses(render.render_site(_site(), templates))
    checkouts = [u for u in uses if u.startswith("actions/checkout@")]
    assert checkouts and all(u == f"actions/checkout@{new_sha}" for u in checkouts)


@pytest.mark.parametrize("loose", ["actions/checkout@v4", "actions/checkout@main"])
def test_a_pin_that_is_not_a_full_sha_is_refused(tmp_path: Path, loose: str) -> None:
    pins = tmp_path / "action.yml"
    pins.write_text(
        f"runs:\n  using: composite\n  steps:\n    - id: checkout\n      uses: {loose} # v4\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"action\.yml: checkout: .* full commit SHA"):
        load_pins(pins)


def test_local_action_ref_uses_the_checkout_after_it_is_made() -> None:
    files = render.render_site(_site(ActionRef.LOCAL))
    uses = _uses(files)
    assert not [u for u in uses if u.startswith("$/")]
    own = [u for u in uses if u.startswith("./actions/")]
    assert own
    for file in files:
        doc = yaml.safe_load(file.text)
        for name, job in (doc.get("jobs", {}) if isinstance(doc, dict) else {}).items():
            steps = [s.get("uses", "") for s in job.get("steps", [])]
            local = [i for i, u in enumerate(steps) if u.startswith("./actions/")]
            checkout = [i for i, u in enumerate(steps) if u.startswith("actions/checkout@")]
            assert not local or (checkout and checkout[0] < local[0]), (file.path, name)


def test_action_ref_is_read_from_perfgate_yaml(tmp_path: Path) -> None:
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        "version: 1\nworkflows: {action_ref: local}\n"
        "buckets:\n  - {task: cartpole, backends: [{physics: numpy}]}\n",
        encoding="utf-8",
    )
    assert load_config(config).action_ref is ActionRef.LOCAL
    config.write_text(config.read_text().replace("local", "remote"), encoding="utf-8")
    with pytest.raises(ConfigError, match="action_ref"):
        load_config(config)
