"""A replayed commit's LFS content from a server that never answers (R8, R16).

A `git-lfs` stand-in on PATH stalls as a pull from an unreachable LFS server does: the
checkout ends at its time limit with an error saying so, and leaves no worktree behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.errors import ExitCode, GitTimeout
from perfgate.run import checkout as checkout_module
from perfgate.run.checkout import replay_checkout
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.stalled import ends_within


def test_an_lfs_pull_that_stalls_ends_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    (repo / ".gitattributes").write_text("*.usd filter=lfs diff=lfs merge=lfs -text\n")
    (repo / "robot.usd").write_text("version https://git-lfs.github.com/spec/v1\n")
    sha = commit_all(repo, "an LFS-tracked asset")
    stand_in = tmp_path / "lfs-bin" / "git-lfs"
    stand_in.parent.mkdir()
    # The shell waits for its child, which holds git's output pipes: both must go.
    stand_in.write_text("#!/bin/sh\nsleep 60\ntrue\n", encoding="utf-8")
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(checkout_module, "LFS_PULL_TIMEOUT_S", 1.0)
    root = tmp_path / "replays"

    def replay() -> None:
        with replay_checkout(repo, sha, root, lfs=True):
            pytest.fail("the checkout was handed over without its LFS content")

    with pytest.raises(GitTimeout, match="git lfs pull timed out after 1 s") as raised:
        ends_within(30, replay)
    assert raised.value.exit_code is ExitCode.MALFUNCTION
    assert not (root / sha[:12]).exists()
