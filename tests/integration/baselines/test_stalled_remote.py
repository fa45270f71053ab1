"""A baseline remote that accepts connections and never answers (R8, R9).

Every read from it ends at its time limit, and every write at the publish deadline,
with an error saying the remote stalled (exit 3), instead of holding the job forever.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfgate.baselines.pushing import PushDeadline, PushRetryPolicy, commit_to_branch
from perfgate.baselines.reading import fetch_tip
from perfgate.baselines.samples import samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.errors import ExitCode, GateMalfunction
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.integration.baselines.test_store import result_at
from tests.stalled import ends_within, silent_server

# A guard far beyond the few seconds the calls below may take, far below forever.
GUARD_S = 60


@pytest.fixture
def stalled_clone(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A repository with one commit whose remote ``stalled`` never answers; its commit."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    sha = commit_all(repo, "only")
    with silent_server() as url:
        git("remote", "add", "stalled", url, cwd=repo)
        yield repo, sha


def test_reading_the_branch_from_a_stalled_remote_ends_at_its_time_limit(
    stalled_clone: tuple[Path, str],
) -> None:
    repo, _ = stalled_clone
    with pytest.raises(GateMalfunction, match="cannot read the baseline branch") as raised:
        ends_within(GUARD_S, lambda: fetch_tip(repo, "perf-baselines", "stalled", timeout=1))
    assert "timed out after 1 s" in str(raised.value)
    assert raised.value.exit_code is ExitCode.MALFUNCTION


def test_a_publish_to_a_stalled_remote_gives_up_at_its_deadline(
    stalled_clone: tuple[Path, str],
) -> None:
    repo, sha = stalled_clone
    store = BaselineStore(repo, branch="perf-baselines", remote="stalled",
                          retry=PushRetryPolicy(deadline_s=3))  # fmt: skip
    sample = samples_from_result(result_at(sha, 5.0), trusted_source="t")[0]
    began = time.monotonic()
    with pytest.raises(PushDeadline, match="timed out") as raised:
        ends_within(GUARD_S, lambda: store.append([sample], "stalled"))
    # The deadline, the last call's moment at it, and the process start-ups around them.
    assert time.monotonic() - began < 20
    assert raised.value.exit_code is ExitCode.MALFUNCTION


def test_a_branch_write_to_a_stalled_remote_gives_up_at_its_deadline(
    stalled_clone: tuple[Path, str],
) -> None:
    repo, _ = stalled_clone

    def write(tree: Path) -> bool:
        (tree / "note.txt").write_text("hello\n", encoding="utf-8")
        return True

    retry = PushRetryPolicy(deadline_s=3)
    with pytest.raises(PushDeadline, match="timed out"):
        ends_within(GUARD_S, lambda: commit_to_branch(repo, "side", "stalled", write, "note",
                                                      retry, ["note.txt"]))  # fmt: skip
