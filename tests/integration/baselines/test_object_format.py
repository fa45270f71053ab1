"""The baseline store in SHA-256 repositories: every ref update names that hash's null id (R9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.baselines.pushing import PushDeadline, PushRetryPolicy, commit_to_branch
from perfgate.baselines.store import BaselineStore
from perfgate.errors import GateMalfunction
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.integration.baselines.test_store import result_at, samples_from_result, window

# Far below the default 600 s: a write that retries what cannot change fails the test
# quickly instead of hanging it.
SHORT = PushRetryPolicy(deadline_s=5)


def sha256_repo(path: Path, *, bare: bool = False) -> Path:
    """A SHA-256 repository on ``main`` at ``path``."""
    git("init", "-q", *(["--bare"] if bare else []), "--object-format=sha256", "-b", "main",
        str(path))  # fmt: skip
    return path


def sha256_clone(tmp_path: Path) -> tuple[Path, str]:
    """A SHA-256 repository with one commit, pushed to a SHA-256 bare ``origin``."""
    origin = sha256_repo(tmp_path / "origin.git", bare=True)
    clone = sha256_repo(tmp_path / "clone")
    git("remote", "add", "origin", str(origin), cwd=clone)
    sha = commit_all(clone, "only")
    git("push", "-q", "origin", "main", cwd=clone)
    return clone, sha


def test_a_sha256_repository_records_and_reads_a_local_baseline(tmp_path: Path) -> None:
    repo = sha256_repo(tmp_path / "repo")
    sha = commit_all(repo, "only")
    assert len(sha) == 64
    store = BaselineStore(repo, branch="perf-baselines", retry=SHORT)
    sample = samples_from_result(result_at(sha, 5.0), trusted_source="local")[0]
    first = store.append([sample], "local")
    assert first.added == 1 and first.commit is not None
    assert git("rev-parse", "perf-baselines", cwd=repo).strip() == first.commit
    assert window(store, sha).values == (5.0,)
    # A second write moves the existing branch (its old value is a real id).
    later = samples_from_result(result_at(sha, 6.0, run_id="later"), trusted_source="local")[0]
    assert store.append([later], "again").added == 1
    assert sorted(window(store, sha).values) == [5.0, 6.0]


def test_a_sha256_remote_records_and_reads_a_baseline(tmp_path: Path) -> None:
    clone, sha = sha256_clone(tmp_path)
    store = BaselineStore(clone, branch="perf-baselines", remote="origin", retry=SHORT)
    sample = samples_from_result(result_at(sha, 7.0), trusted_source="t")[0]
    assert store.append([sample], "remote").added == 1
    reader = BaselineStore(clone, branch="perf-baselines", remote="origin")
    assert window(reader, sha).values == (7.0,)


@pytest.mark.parametrize("remote", [None, "origin"])
def test_a_sha256_branch_is_written_by_commit_to_branch(tmp_path: Path, remote: str | None) -> None:
    clone, _ = sha256_clone(tmp_path)

    def write(tree: Path) -> bool:
        (tree / "note.txt").write_text("hello\n", encoding="utf-8")
        return True

    commit = commit_to_branch(clone, "side", remote, write, "note", SHORT, ["note.txt"])
    assert commit is not None and len(commit) == 64
    where = "origin/side" if remote else "side"
    assert git("show", f"{where}:note.txt", cwd=clone) == "hello\n"


def test_a_local_write_git_refuses_for_good_fails_at_once(tmp_path: Path) -> None:
    """Only a lost race on the ref is retried: git refusing the ref itself is reported."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    sha = commit_all(repo, "only")
    store = BaselineStore(repo, branch="bad..name", retry=PushRetryPolicy(deadline_s=10))
    sample = samples_from_result(result_at(sha, 5.0), trusted_source="local")[0]
    with pytest.raises(GateMalfunction, match="cannot write the local branch") as raised:
        store.append([sample], "local")
    assert not isinstance(raised.value, PushDeadline)


def test_a_local_write_that_loses_a_race_is_built_again_on_the_new_tip(tmp_path: Path) -> None:
    repo = sha256_repo(tmp_path / "repo")
    commit_all(repo, "only")
    calls = []

    def other(tree: Path) -> bool:
        (tree / "other.txt").write_text("theirs\n", encoding="utf-8")
        return True

    def mine(tree: Path) -> bool:
        calls.append(tree)
        if len(calls) == 1:
            # Another writer moves the branch while this commit is being built.
            commit_to_branch(repo, "side", None, other, "other", SHORT, ["other.txt"])
        (tree / "mine.txt").write_text("mine\n", encoding="utf-8")
        return True

    commit = commit_to_branch(repo, "side", None, mine, "mine", SHORT, ["mine.txt"])
    assert len(calls) == 2
    assert git("rev-parse", "side", cwd=repo).strip() == commit
    assert git("ls-tree", "--name-only", "side", cwd=repo).split() == ["mine.txt", "other.txt"]
