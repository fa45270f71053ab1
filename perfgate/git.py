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


def resolve(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` points to, or None when it does not exist."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo).strip()
    except GitError:
        return None
