"""A thin wrapper over the git command line."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from perfgate.errors import GitError


def git(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> str:
    """Run ``git args`` and return stdout; a non-zero exit raises GitError with stderr."""
    completed = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **env} if env else None,
        input=input_text,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise GitError(list(args), completed.returncode, completed.stderr)
    return completed.stdout


def try_git(*args: str, cwd: Path | None = None) -> str | None:
    """Like :func:`git`, but ``None`` (stripped output otherwise) when git fails or is absent."""
    try:
        return git(*args, cwd=cwd).strip()
    except (GitError, OSError):
        return None


def null_oid(like: str) -> str:
    """The null object id of the hash ``like`` (an object id) uses: a ref's "absent" value."""
    # Forty zeros name nothing in a SHA-256 repository: git refuses them as an old value.
    return "0" * len(like)


def resolve(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` points to, or None when it does not exist."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo).strip()
    except GitError:
        return None


def merge_base(repo: Path, target_branch: str | None, remote: str | None) -> str | None:
    """Where this checkout meets its target branch; HEAD when the target is unknown here."""
    head = resolve(repo, "HEAD")
    if head is None or not target_branch:
        return head
    candidates = [f"refs/remotes/{remote}/{target_branch}"] if remote else []
    candidates.append(f"refs/heads/{target_branch}")
    for ref in candidates:
        if resolve(repo, ref) is not None:
            try:
                return git("merge-base", "HEAD", ref, cwd=repo).strip()
            except GitError:
                continue
    return head
