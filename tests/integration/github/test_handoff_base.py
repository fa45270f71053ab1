"""A pull request's report is checked against its base branch's configuration (real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.github.handoff import trusted_bucket_ids
from perfgate.util.git import git
from tests.git_support import IDENTITY, origin_with_clone

CONFIG = "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{0}]\n"


def test_the_base_branch_configuration_says_which_buckets_a_report_covers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both_backends = CONFIG.format("{physics: numpy}, {physics: python}")
    clone = origin_with_clone(tmp_path, files={"perfgate.yaml": both_backends}).path
    config = clone / "perfgate.yaml"
    git("checkout", "-q", "-b", "release/1.0", cwd=clone)
    config.write_text(CONFIG.format("{physics: numpy}"))  # the release gates one backend
    git("commit", "-qam", "release", cwd=clone, env=IDENTITY)
    git("push", "-q", "origin", "release/1.0", cwd=clone)
    git("checkout", "-q", "main", cwd=clone)
    git("fetch", "-q", "origin", cwd=clone)
    monkeypatch.chdir(clone)

    both = ("cartpole/numpy", "cartpole/python")
    assert trusted_bucket_ids(Path("perfgate.yaml"), "release/1.0") == ("cartpole/numpy",)
    assert trusted_bucket_ids(Path("perfgate.yaml"), "main") == both
    # No base branch known, or one this clone lacks: the trusted checkout's own file.
    assert trusted_bucket_ids(Path("perfgate.yaml"), None) == both
    assert trusted_bucket_ids(Path("perfgate.yaml"), "gone") == both
