"""A commit checked out beside the change: a throwaway worktree (R16).

Seeding and bisecting replay commits in throwaway worktrees; paired confirmation checks
out the merge base the same way (``run.paired``), and ``compare --measure`` both sides.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from perfgate.errors import GitError, GitTimeout
from perfgate.util.git import git, try_git

# How long fetching a commit's LFS content may take: assets can be gigabytes, far more
# than a fetch of the baseline branch, but a stalled LFS server must still end the wait.
LFS_PULL_TIMEOUT_S = 1800.0


def _remove_worktree(repo: Path, path: Path) -> None:
    if path.exists():
        try:
            git("worktree", "remove", "--force", "--force", str(path), cwd=repo)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
    git("worktree", "prune", cwd=repo)


def tracks_lfs(repo: Path, commit: str) -> bool:
    """True when a ``.gitattributes`` at ``commit`` routes files through Git LFS."""
    found = try_git("grep", "-q", "filter=lfs", commit, "--", ":(glob)**/.gitattributes", cwd=repo)
    return found is not None


@contextmanager
def replay_checkout(repo: Path, commit: str, root: Path, *, lfs: bool = False) -> Iterator[Path]:
    """A throwaway detached worktree of ``commit`` (cleaned), always removed.

    Checked out with LFS smudging off; with ``lfs`` and LFS-tracked files at ``commit``,
    their content is then fetched (``git lfs pull``), as the change's own checkout has it:
    a benchmark's assets are part of what it measures. A fetch that fails raises GitError.
    """
    path = root / commit[:12]
    # A seed killed outright (SIGKILL) cannot clean up; its leftover goes first.
    _remove_worktree(repo, path)
    root.mkdir(parents=True, exist_ok=True)
    env = {"GIT_LFS_SKIP_SMUDGE": "1"}
    try:
        git("worktree", "add", "--detach", "--force", str(path), commit, cwd=repo, env=env)
        git("clean", "-fdx", cwd=path, env=env)
        if lfs and tracks_lfs(repo, commit):
            try:
                git("lfs", "pull", cwd=path, timeout=LFS_PULL_TIMEOUT_S)
            except GitTimeout:
                raise
            except GitError as exc:
                raise GitError(
                    exc.args_list,
                    exc.returncode,
                    f"{exc.stderr.strip()}\n{commit[:12]} tracks files with Git LFS and its "
                    "content could not be fetched: install git-lfs (apt-get install git-lfs) "
                    "and check the remote's LFS storage",
                ) from None
        yield path
    finally:
        _remove_worktree(repo, path)
