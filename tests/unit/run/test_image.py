"""Image choice as pure decisions: era key inputs, tag per target branch, fallback order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.config import ImageSpec, load_config
from perfgate.config.image import PinInput
from perfgate.errors import ConfigError, EraConflict, GateMalfunction
from perfgate.identity import stable_hash
from perfgate.run.image import (
    Era,
    EraRecord,
    ImageSource,
    choose,
    era_of,
    manifest_editor,
    parse_env_file,
    parse_manifest,
    tag_for,
    with_era,
)

SPEC = ImageSpec(
    env_file="docker/.env.base",
    env_keys=("ISAACSIM_BASE_IMAGE", "ISAACSIM_VERSION"),
    tags={
        "main": "reg/lab:latest",
        "release/*": "reg/lab:latest-release-{branch_leaf}",
        "develop": "reg/lab:latest-develop",
        "*": "reg/lab:pr-{branch_slug}",
    },
)
ERA = Era(key="0123456789abcdef", contract={"image_era_version": 1, "fields": {}})


def test_env_file_parsing_skips_comments_and_strips_quotes() -> None:
    text = "# base\nISAACSIM_VERSION=\"5.1.0\"\nexport A='x y'\n\nB=plain=with=equals\nnoequals\n"
    assert parse_env_file(text) == {
        "ISAACSIM_VERSION": "5.1.0",
        "A": "x y",
        "B": "plain=with=equals",
    }


def test_env_only_era_key_hashes_like_the_reference_gate(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / ".env.base").write_text(
        "ISAACSIM_BASE_IMAGE=nvcr.io/nvidia/isaac-sim\nISAACSIM_VERSION=5.1.0\nOTHER=ignored\n"
    )
    era = era_of(SPEC, tmp_path)
    fields = {"ISAACSIM_BASE_IMAGE": "nvcr.io/nvidia/isaac-sim", "ISAACSIM_VERSION": "5.1.0"}
    assert era.key == stable_hash({"image_era_version": 1, "fields": fields})


def test_era_key_changes_with_each_declared_input(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    env = tmp_path / "docker" / ".env.base"
    env.write_text("ISAACSIM_BASE_IMAGE=a\nISAACSIM_VERSION=1\n")
    (tmp_path / "Dockerfile").write_text("FROM a\n")
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["warp-lang==1.9.0"]\n')
    spec = ImageSpec(
        env_file=SPEC.env_file,
        env_keys=SPEC.env_keys,
        files=("Dockerfile",),
        pins=(PinInput(file="pyproject.toml", package="warp-lang"),),
        tags=SPEC.tags,
    )
    keys = {era_of(spec, tmp_path).key}
    env.write_text("ISAACSIM_BASE_IMAGE=a\nISAACSIM_VERSION=2\n")
    keys.add(era_of(spec, tmp_path).key)
    (tmp_path / "Dockerfile").write_text("FROM b\n")
    keys.add(era_of(spec, tmp_path).key)
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["warp-lang==1.10.0"]\n')
    keys.add(era_of(spec, tmp_path).key)
    assert len(keys) == 4


def test_missing_era_inputs_fail_naming_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\.env\.base: cannot read"):
        era_of(SPEC, tmp_path)
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / ".env.base").write_text("ISAACSIM_BASE_IMAGE=a\n")
    with pytest.raises(ConfigError, match="has no ISAACSIM_VERSION"):
        era_of(SPEC, tmp_path)


@pytest.mark.parametrize(
    ("target", "tag"),
    [
        ("main", "reg/lab:latest"),
        ("develop", "reg/lab:latest-develop"),
        ("release/2.1", "reg/lab:latest-release-2.1"),
        ("feature/x", "reg/lab:pr-feature-x"),
        (None, None),
    ],
)
def test_tag_follows_the_target_branch(target: str | None, tag: str | None) -> None:
    assert tag_for(SPEC, target, ERA) == tag


def test_unknown_tag_placeholder_is_a_config_error() -> None:
    spec = ImageSpec(env_file="e", env_keys=("K",), tags={"main": "reg:{brnch}"})
    with pytest.raises(ConfigError, match="placeholder 'brnch'"):
        tag_for(spec, "main", ERA)


def test_manifest_hit_wins_over_the_tag() -> None:
    manifest = {"eras": {ERA.key: {"image": "reg/lab@sha256:" + "a" * 64}}}
    choice = choose(
        SPEC, era=ERA, manifest=manifest, target_branch="main", usable=lambda _: True, build=None
    )
    assert (choice.image, choice.matched, choice.source) == (
        "reg/lab@sha256:" + "a" * 64,
        True,
        ImageSource.MANIFEST,
    )


def test_miss_uses_the_target_branch_tag() -> None:
    choice = choose(
        SPEC, era=ERA, manifest={"eras": {}}, target_branch="release/3.0",
        usable=lambda _: True, build=None,
    )  # fmt: skip
    assert (choice.image, choice.matched, choice.source) == (
        "reg/lab:latest-release-3.0",
        False,
        ImageSource.TAG,
    )


def test_unusable_tag_falls_back_to_the_build() -> None:
    choice = choose(
        SPEC, era=ERA, manifest=None, target_branch="main", usable=lambda _: False,
        build=lambda era: f"local:{era.key}",
    )  # fmt: skip
    assert (choice.image, choice.source) == (f"local:{ERA.key}", ImageSource.BUILD)


def test_no_tag_and_no_build_is_an_error() -> None:
    spec = ImageSpec(env_file="e", env_keys=("K",), tags={"main": "reg:latest"})
    with pytest.raises(ConfigError, match=r"no image\.tags pattern matches"):
        choose(spec, era=ERA, manifest=None, target_branch="dev", usable=lambda _: True, build=None)
    with pytest.raises(GateMalfunction, match="is not available"):
        choose(spec, era=ERA, manifest=None, target_branch="main", usable=lambda _: False,
               build=None)  # fmt: skip


def test_malformed_manifest_is_a_malfunction_naming_where() -> None:
    with pytest.raises(GateMalfunction, match=r"perf-baselines:m\.json: not valid JSON"):
        parse_manifest("{", "perf-baselines:m.json")
    with pytest.raises(GateMalfunction, match="expected"):
        parse_manifest('{"eras": {"k": {"img": "x"}}}', "m.json")


def record(image: str, commit: str | None, **how: Any) -> EraRecord:
    """``image`` recorded for ERA at ``commit``."""
    return EraRecord(era=ERA, image=image, commit=commit, **how)


def test_recorded_eras_are_immutable() -> None:
    manifest = with_era(None, record("reg@sha256:" + "1" * 64, "c" * 40))
    assert manifest["eras"][ERA.key]["image"] == "reg@sha256:" + "1" * 64
    assert with_era(manifest, record("reg@sha256:" + "1" * 64, None)) == manifest
    with pytest.raises(EraConflict, match="is immutable") as refused:
        with_era(manifest, record("reg@sha256:" + "2" * 64, None))
    assert refused.value.exit_code == 4
    # A concurrent roll that lost the race converges on the recorded image.
    assert (
        with_era(manifest, record("reg@sha256:" + "2" * 64, None, keep_recorded=True)) == manifest
    )


def test_a_forced_record_replaces_the_era_and_keeps_the_reason_and_history() -> None:
    manifest = with_era(
        None, record("reg@sha256:" + "1" * 64, "a" * 40, details={"source": "roll"})
    )
    once = with_era(manifest, record("reg@sha256:" + "2" * 64, "b" * 40, force="broken CUDA layer"))
    twice = with_era(once, record("reg@sha256:" + "3" * 64, "c" * 40, force="again"))
    entry = twice["eras"][ERA.key]
    assert (entry["image"], entry["forced"], entry["commit"]) == (
        "reg@sha256:" + "3" * 64,
        "again",
        "c" * 40,
    )
    assert [e["image"] for e in entry["replaced"]] == [
        "reg@sha256:" + "1" * 64,
        "reg@sha256:" + "2" * 64,
    ]
    assert entry["replaced"][0]["source"] == "roll"
    assert "replaced" not in entry["replaced"][1]


def test_manifest_editor_reports_whether_it_changed_anything(tmp_path: Path) -> None:
    apply = manifest_editor("image_era_manifest.json", record("reg@sha256:" + "1" * 64, None))
    assert apply(tmp_path) is True
    assert apply(tmp_path) is False
    assert parse_manifest((tmp_path / "image_era_manifest.json").read_text(), "m")["eras"]


BASE_CONFIG = """
version: 1
buckets:
  - task: cartpole
    backends: [{physics: numpy}]
"""


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            "image: {env_file: e, env_keys: [K], tags: {main: x}, tag: y}",
            r"image\.tag: unknown key",
        ),
        ("image: {env_keys: [K], tags: {main: x}}", "env_keys needs env_file"),
        ("image: {env_file: e, env_keys: [K]}", "needs tags .* or per_commit"),
        ("image: {per_commit: 'ci:sha-{branch}'}", r"placeholder \{branch\} is unknown"),
        ("image: {tags: {main: x}}", "the era key needs inputs"),
    ],
)
def test_image_block_is_validated(tmp_path: Path, block: str, message: str) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(BASE_CONFIG + block + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_image_block_is_read_in_declaration_order(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    block = "image: {env_file: e, env_keys: [K], tags: {'release/*': r, main: m, '*': d}}"
    path.write_text(BASE_CONFIG + block + "\n", encoding="utf-8")
    spec = load_config(path).image
    assert spec is not None and list(spec.tags) == ["release/*", "main", "*"]
    assert spec.manifest == "image_era_manifest.json"
