"""The stand-in CI image and docker: what container tests share.

No Docker engine exists on test machines. tests/fixtures/isaaclab_standin.py lays out a
directory as Isaac Lab's CI image is laid out (docker/Dockerfile.base) and
tests/fixtures/fake_docker.py, a `docker` on PATH, runs ``docker run`` against it with real
bind mounts in a private mount namespace and ``chroot``. That needs root, ``unshare``,
``chroot`` and ``setpriv``: without them these tests skip naming what is missing, unless
``PERFGATE_REQUIRE_CONTAINER=1`` (set by .ci/run) makes them fail instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perfgate.util.git import git
from tests.fixtures import fake_docker
from tests.fixtures import isaaclab_standin as standin
from tests.git_support import commit_all
from tests.paths import FIXTURES

REQUIRE = "PERFGATE_REQUIRE_CONTAINER"
#: What resolve-image would hand the bench job (PERFGATE_IMAGE) for the stand-in image.
IMAGE = "nvcr.io/nvidian/isaac-lab:standin"


def require_container_standin() -> None:
    """Skip (or, under PERFGATE_REQUIRE_CONTAINER=1, fail) when the stand-in cannot run."""
    missing = standin.image_missing()
    if missing is None:
        return
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"the stand-in docker and image need {missing} ({REQUIRE}=1 requires them)")
    pytest.skip(f"the stand-in docker and image need {missing}")


def docker_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `docker` on PATH that is tests/fixtures/fake_docker.py; returns its state directory."""
    state = tmp_path / "docker-state"
    bin_dir = tmp_path / "docker-bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(
        f'#!/bin/sh\nexec {sys.executable} {FIXTURES / "fake_docker.py"} "$@"\n', encoding="utf-8"
    )
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
    return state


def register(state: Path, ref: str, image: Path, *, after_s: float = 0.0) -> None:
    """Make ``ref`` runnable by the stand-in docker (from ``after_s`` seconds on)."""
    fake_docker.register_image(state, ref, image, after_s=after_s)


def change_over_base(root: Path, *, base_cost: float, head_cost: float) -> tuple[Path, str, str]:
    """An Isaac Lab repository: ``develop`` at the merge base, a change checked out on top
    whose steps cost ``head_cost`` where the base's cost ``base_cost``. (repo, base, head)."""
    repo = standin.write_checkout(root, step_cost=base_cost)
    git("init", "-q", "-b", "develop", cwd=repo)
    base = commit_all(repo, "isaac lab at the merge base")
    git("checkout", "-q", "-b", "change", cwd=repo)
    standin.write_checkout(repo, step_cost=head_cost)
    head = commit_all(repo, "a change that makes every step slower")
    return repo, base, head
