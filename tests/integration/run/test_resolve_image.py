"""``perfgate resolve-image`` on real git repositories with a bare repository as origin.

GitHub context comes from the standard environment and an event payload file, as on a
runner. No registry or Docker engine is contacted: the default is to trust the tag, and
the probe/build fallbacks run real (tiny) subprocesses.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.errors import ExitCode, Stalled
from perfgate.run.image import digest_of, pinned, probe_with
from perfgate.util.git import git
from tests.git_support import IDENTITY, MakeClone
from tests.stalled import ends_within

REGISTRY = "registry.example/isaac-lab"
CONFIG = f"""
version: 1
gate:
  target_branches: [develop, main, "release/*"]
  protected_branches: [develop, main, "release/*"]
  baseline: {{branch: perf-baselines, remote: origin}}
image:
  env_file: docker/.env.base
  env_keys: [ISAACSIM_BASE_IMAGE, ISAACSIM_VERSION]
  pins: [{{file: pyproject.toml, package: warp-lang}}]
  tags:
    main: "{REGISTRY}:latest"
    "release/*": "{REGISTRY}:latest-release-{{branch_leaf}}"
    develop: "{REGISTRY}:latest-develop"
buckets:
  - task: cartpole
    backends: [{{physics: numpy}}]
"""
ENV_BASE = """# Isaac Sim base
ISAACSIM_BASE_IMAGE=nvcr.io/nvidia/isaac-sim
ISAACSIM_VERSION="5.1.0"
DOCKER_USER_HOME=/root
"""
PYPROJECT = '[project]\nname = "x"\ndependencies = ["warp-lang==1.9.0", "numpy>=1.26"]\n'


@pytest.fixture
def checkout(origin_clone: MakeClone) -> Path:
    """A clone of a bare origin holding the config and the era inputs; the cwd of each test."""
    files = {"docker/.env.base": ENV_BASE, "pyproject.toml": PYPROJECT, "perfgate.yaml": CONFIG}
    return origin_clone(files=files, branch="develop").path


def github(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, event: str, payload: dict[str, Any],
           **env: str) -> Path:  # fmt: skip
    """GitHub's environment for one event; returns the $GITHUB_OUTPUT file."""
    event_path = tmp_path / f"{event}.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    output = tmp_path / f"output-{event}-{len(list(tmp_path.iterdir()))}"
    values = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": "org/repo",
        "GITHUB_SHA": "f" * 40,
        "GITHUB_RUN_ID": "1",
        "GITHUB_OUTPUT": str(output),
        **env,
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return output


def pull_request(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, base: str) -> Path:
    head = {"ref": "feature", "sha": "a" * 40, "repo": {"full_name": "org/repo"}}
    payload = {"number": 7, "pull_request": {"number": 7, "base": {"ref": base}, "head": head}}
    # GITHUB_REF is the synthetic merge ref: it must never pick the image.
    return github(monkeypatch, tmp_path, "pull_request", payload, GITHUB_REF="refs/pull/7/merge",
                  GITHUB_BASE_REF=base, GITHUB_HEAD_REF="feature")  # fmt: skip


def push(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, branch: str) -> Path:
    return github(monkeypatch, tmp_path, "push", {"ref": f"refs/heads/{branch}"},
                  GITHUB_REF=f"refs/heads/{branch}")  # fmt: skip


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines())


def resolve(*args: str) -> dict[str, str]:
    assert main(["resolve-image", *args]) == 0
    output = Path(os.environ["GITHUB_OUTPUT"])
    return outputs(output)


def test_pull_request_into_develop_uses_the_develop_tag(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull_request(monkeypatch, tmp_path, "develop")
    got = resolve()
    assert got["image"] == f"{REGISTRY}:latest-develop"
    assert (got["matched"], got["source"]) == ("false", "tag")
    assert len(got["era_key"]) == 16


def test_pull_request_into_a_release_branch_uses_that_release_tag(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull_request(monkeypatch, tmp_path, "release/2.1")
    assert resolve()["image"] == f"{REGISTRY}:latest-release-2.1"


def test_merge_group_uses_its_base_branch_tag(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = {"merge_group": {"head_sha": "b" * 40, "base_ref": "refs/heads/main",
               "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-" + "c" * 40}}  # fmt: skip
    github(monkeypatch, tmp_path, "merge_group", payload,
           GITHUB_REF="refs/heads/gh-readonly-queue/main/pr-7-" + "c" * 40)  # fmt: skip
    assert resolve()["image"] == f"{REGISTRY}:latest"


def test_push_uses_its_own_branch_tag(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    push(monkeypatch, tmp_path, "develop")
    assert resolve()["image"] == f"{REGISTRY}:latest-develop"


def test_seed_dispatch_resolves_for_the_branch_it_seeds_not_the_dispatch_ref(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seed workflow runs on the dispatch ref but seeds --target: --target-branch wins."""
    github(monkeypatch, tmp_path, "workflow_dispatch", {}, GITHUB_REF="refs/heads/develop")
    assert resolve()["image"] == f"{REGISTRY}:latest-develop"
    assert resolve("--target-branch", "release/3.0")["image"] == f"{REGISTRY}:latest-release-3.0"


def test_recorded_era_is_a_manifest_hit_for_every_later_run(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    immutable = f"{REGISTRY}@sha256:" + "1" * 64
    push(monkeypatch, tmp_path, "develop")
    era = resolve()["era_key"]
    assert main(["resolve-image", "--record", immutable]) == 0
    manifest = json.loads(git("show", "origin/perf-baselines:image_era_manifest.json"))
    assert manifest["eras"][era]["image"] == immutable
    assert manifest["eras"][era]["inputs"]["pin:warp-lang"] == "1.9.0"
    subject = git("log", "-1", "--format=%s", "origin/perf-baselines").strip()
    assert subject == f"[image_era] Record {era[:12]} -> {immutable}"
    # Recording the same era again changes nothing.
    assert main(["resolve-image", "--record", immutable]) == 0
    assert git("rev-list", "--count", "origin/perf-baselines").strip() == "1"

    pull_request(monkeypatch, tmp_path, "main")
    got = resolve()
    assert (got["image"], got["matched"], got["source"]) == (immutable, "true", "manifest")


def test_new_era_inputs_miss_the_manifest(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    push(monkeypatch, tmp_path, "develop")
    assert main(["resolve-image", "--record", f"{REGISTRY}@sha256:" + "2" * 64]) == 0
    env_base = checkout / "docker" / ".env.base"
    env_base.write_text(ENV_BASE.replace("5.1.0", "6.0.0"), encoding="utf-8")
    pull_request(monkeypatch, tmp_path, "develop")
    got = resolve()
    assert (got["matched"], got["image"]) == ("false", f"{REGISTRY}:latest-develop")


def test_pull_requests_may_not_record_an_era(
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pull_request(monkeypatch, tmp_path, "develop")
    assert main(["resolve-image", "--record", f"{REGISTRY}:evil"]) == 4
    assert "refusing to record" in capsys.readouterr().err
    assert git("ls-remote", "origin", "perf-baselines").strip() == ""


@pytest.mark.parametrize(
    "image", [f"{REGISTRY}:ok\nfoo=bar", "--privileged", f"{REGISTRY}:ok --rm", f"{REGISTRY}\r"]
)
def test_recording_anything_but_an_image_reference_is_refused_and_writes_nothing(
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    image: str,
) -> None:
    """A recorded line break would make every later resolve-image's step output fail."""
    push(monkeypatch, tmp_path, "develop")
    assert main(["resolve-image", f"--record={image}"]) == 4
    err = capsys.readouterr().err
    assert "is not an image reference" in err and err.count("\n") == 1, err
    assert git("ls-remote", "origin", "perf-baselines").strip() == ""
    assert resolve()["image"] == f"{REGISTRY}:latest-develop"


def test_a_bad_image_already_in_the_manifest_is_a_clean_malfunction(
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What an older perfgate let through: named, with the way to replace it."""
    push(monkeypatch, tmp_path, "develop")
    era = resolve()["era_key"]
    manifest = {"schema_version": 1, "eras": {era: {"image": f"{REGISTRY}:ok\nfoo=bar"}}}
    blob = git("hash-object", "-w", "--stdin", input_text=json.dumps(manifest)).strip()
    tree = git("mktree", input_text=f"100644 blob {blob}\timage_era_manifest.json\n").strip()
    commit = git("commit-tree", tree, "-m", "old", env=IDENTITY).strip()
    git("push", "-q", "origin", f"{commit}:refs/heads/perf-baselines")
    assert main(["resolve-image"]) == 3
    err = capsys.readouterr().err
    assert "is not an image reference" in err and "--force" in err
    assert "foo=bar" not in Path(os.environ["GITHUB_OUTPUT"]).read_text(encoding="utf-8")


def test_a_branch_that_makes_a_bad_tag_is_refused_naming_the_template(
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = checkout / "perfgate.yaml"
    config.write_text(config.read_text().replace("latest-release-{branch_leaf}", "{branch}"))
    github(monkeypatch, tmp_path, "workflow_dispatch", {}, GITHUB_REF="refs/heads/develop")
    assert main(["resolve-image", "--target-branch", "release/3.0"]) == 4
    err = capsys.readouterr().err
    assert "image.tags['release/*']" in err and "is not an image reference" in err
    assert "{branch_slug}" in err


def test_unusable_tag_falls_back_to_the_build(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = tmp_path / "built.txt"
    config = checkout / "perfgate.yaml"
    config.write_text(
        config.read_text().replace(
            "  tags:",
            f"  probe: [{json.dumps(sys.executable)}, -c, 'import sys; sys.exit(1)', '{{image}}']\n"
            f"  build:\n"
            f"    argv: [{json.dumps(sys.executable)}, -c, 'import sys, pathlib; "
            f"pathlib.Path(sys.argv[1]).write_text(sys.argv[2])', {json.dumps(str(built))}, "
            f"'{{image}}']\n"
            f"    image: 'local/isaac-lab:era-{{era_short}}'\n"
            "  tags:",
        )
    )
    pull_request(monkeypatch, tmp_path, "develop")
    got = resolve()
    assert got["source"] == "build"
    assert got["image"] == f"local/isaac-lab:era-{got['era_key'][:12]}"
    assert built.read_text() == got["image"]


def test_unresolvable_era_input_fails_loudly_naming_the_file(
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (checkout / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    pull_request(monkeypatch, tmp_path, "develop")
    assert main(["resolve-image"]) == 4
    err = capsys.readouterr().err
    assert "pyproject.toml" in err and "warp-lang" in err


def test_digest_is_read_from_the_command_output_and_pinned_to_the_tag(tmp_path: Path) -> None:
    digest = "sha256:" + "ab" * 32
    prints = [sys.executable, "-c", f"print('Name: {{image}}'); print('Digest: {digest}')"]
    assert digest_of(prints, "reg/lab:latest", tmp_path, os.environ) == digest
    assert pinned("reg/lab:latest", digest) == f"reg/lab:latest@{digest}"
    assert pinned("reg/lab@" + digest, digest) == "reg/lab@" + digest
    assert pinned("reg/lab:latest", None) == "reg/lab:latest"
    fails = [sys.executable, "-c", f"print('{digest}'); raise SystemExit(1)"]
    assert digest_of(fails, "reg/lab:latest", tmp_path, os.environ) is None
    assert digest_of(["no-such-docker-here"], "x", tmp_path, os.environ) is None
    silent = [sys.executable, "-c", "print('no digest')"]
    assert digest_of(silent, "x", tmp_path, os.environ) is None


@pytest.mark.parametrize("which", ["probe", "digest"])
def test_a_registry_probe_that_never_answers_is_a_clear_malfunction(
    tmp_path: Path, which: str
) -> None:
    # The shell waits for its child, which holds the output pipes: both must go.
    stalls = ["sh", "-c", "sleep 60; echo sha256:never"]

    def probe() -> object:
        if which == "probe":
            return probe_with(stalls, tmp_path, timeout=0.5)("reg/lab:latest")
        return digest_of(stalls, "reg/lab:latest", tmp_path, os.environ, timeout=0.5)

    with pytest.raises(Stalled, match=r"did not answer within 0\.5 s") as raised:
        ends_within(30, probe)
    assert raised.value.exit_code is ExitCode.MALFUNCTION
