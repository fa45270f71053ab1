"""A commit checked out beside the change: a throwaway worktree, and the merge base (R16).

Seeding and bisecting replay commits in throwaway worktrees; paired confirmation measures
the merge base beside the change, checked out the same way with its own perfgate.yaml and
benchmark, so both sides of a pair run as their own commit declares them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from perfgate.config import Bucket, Config, load_config
from perfgate.errors import GitError, GitTimeout, PerfgateError
from perfgate.git import git, git_env, merge_base, try_git
from perfgate.result import Result
from perfgate.run.drivers import get_driver
from perfgate.run.launch import bucket_hashes
from perfgate.run.paired import BaseCheckout

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
    found = subprocess.run(
        ["git", "grep", "-q", "filter=lfs", commit, "--", ":(glob)**/.gitattributes"],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


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


@contextmanager
def merge_base_checkout(
    config: Config,
    bucket: Bucket,
    result: Result,
    *,
    checkout: Path,
    work_dir: Path,
    remote: str | None,
) -> Iterator[BaseCheckout | str]:
    """The merge base of ``checkout`` (the change) checked out under ``work_dir`` with its
    own bucket, or why it cannot be measured; ``remote`` holds the target branch."""
    repo = try_git("rev-parse", "--show-toplevel", cwd=checkout)
    if repo is None:
        yield "not a git checkout, so there is no merge base to measure"
        return
    top = Path(repo).resolve()
    commit, why = _base_commit(top, result, remote)
    if commit is None:
        yield why
        return
    try:
        where = checkout.resolve().relative_to(top)
        config_path: Path | None = (checkout / config.path).resolve().relative_to(top)
    except ValueError:
        where, config_path = Path(), None
    # The base gets what the change's checkout has: its LFS content (the assets) too.
    lfs = get_driver(bucket.driver).needs_lfs
    with ExitStack() as stack:
        try:
            worktree = stack.enter_context(
                replay_checkout(top, commit, work_dir / "paired", lfs=lfs)
            )
        except GitError as exc:
            yield f"the merge base {commit[:12]} cannot be checked out like the change: {exc}"
            return
        found = _base_bucket(config, bucket, result, worktree, config_path)
        if isinstance(found, str):
            yield found
        else:
            yield BaseCheckout(commit=commit, checkout=worktree / where, bucket=found)


def _base_commit(top: Path, result: Result, remote: str | None) -> tuple[str | None, str]:
    """The commit to measure beside the change, or None and why there is none.

    It is the merge base with the target branch; when the change is the merge base
    itself (a push to the target, a clean checkout of it), its first parent; with
    uncommitted changes on the merge base, HEAD.
    """
    head = try_git("rev-parse", "HEAD", cwd=top)
    if head is None:
        return None, "this checkout has no commit yet"
    base = merge_base(top, result.source.target_branch or None, remote) or head
    if base != head:
        return base, ""
    if try_git("status", "--porcelain", "--untracked-files=no", cwd=top):
        return head, ""
    parent = try_git("rev-parse", "--verify", "--quiet", "HEAD^1", cwd=top)
    return parent, "" if parent else f"{head[:12]} has no parent commit to compare with"


def _base_bucket(
    config: Config, bucket: Bucket, result: Result, worktree: Path, config_path: Path | None
) -> Bucket | str:
    """The bucket as the merge base declares it, or why it cannot be compared."""
    if config_path is None:
        base_config = config  # a config outside the repository: every commit uses it
    else:
        path = worktree / config_path
        if not path.is_file():
            return f"the merge base has no {config_path}"
        try:
            base_config = load_config(path)
        except PerfgateError as exc:
            return f"the merge base's {config_path} is not usable: {exc}"
    found = next((b for b in base_config.buckets if b.id == bucket.id), None)
    if found is None:
        return f"the merge base's perfgate.yaml has no bucket {bucket.id}"
    if bucket_hashes(found) != (result.identity.launch_hash, result.identity.benchmark_hash):
        return "the merge base runs another experiment (its launch or benchmark hash differs)"
    return found
