"""A thin wrapper over the git command line.

git never prompts (``GIT_TERMINAL_PROMPT=0``): a job with no one at the terminal fails
with git's reason instead of waiting for a password. A call that talks to a remote
(fetch, push, ls-remote, clone, pull) has a time limit: the caller's (what is left before
its deadline), else ``NETWORK_TIMEOUT_S``; running out is a GitTimeout (exit 3).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from perfgate.errors import GitError, GitTimeout
from perfgate.util.bounded import run_bounded

# Subcommands that talk to a remote, and so can stall on the network.
NETWORK = frozenset({"fetch", "push", "ls-remote", "clone", "pull"})
# How long a network call without a deadline of its own may take: far more than a fetch
# of a baseline branch needs, far less than a CI job's timeout.
NETWORK_TIMEOUT_S = 300.0
# What a call made at its deadline still gets, so the last attempt can answer at all.
LAST_CALL_S = 1.0


def git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: this process's, never prompting, with ``env`` on top."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}


def time_left(deadline: float) -> float:
    """The time limit of a network call made now towards ``deadline`` (``time.monotonic``)."""
    return min(NETWORK_TIMEOUT_S, max(LAST_CALL_S, deadline - time.monotonic()))


def git(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout: float | None = None,
) -> str:
    """Run ``git args`` and return stdout; a non-zero exit raises GitError with stderr.

    ``timeout``: seconds it may take (a network subcommand gets NETWORK_TIMEOUT_S without
    one); past it, git and what it started are killed and GitTimeout is raised.
    """
    if timeout is None and args and args[0] in NETWORK:
        timeout = NETWORK_TIMEOUT_S
    if timeout is None:
        completed = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=git_env(env),
            input=input_text,
            capture_output=True,
            text=True,
            check=False,
        )
    else:
        try:
            completed = run_bounded(["git", *args], timeout=timeout, cwd=cwd, env=git_env(env),
                                    input_text=input_text)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise GitTimeout(list(args), timeout) from None
    if completed.returncode != 0:
        raise GitError(list(args), completed.returncode, completed.stderr)
    return completed.stdout


def git_paths(*args: str, cwd: Path | None = None) -> tuple[str, ...]:
    """Run ``git args`` (which ask for ``-z`` output) and return the paths it prints, as
    the file system holds them: bytes that are not UTF-8 kept (``os.fsdecode``), so they
    still match their globs. A non-zero exit raises GitError with stderr."""
    completed = subprocess.run(["git", *args], cwd=cwd, env=git_env(), capture_output=True,
                               check=False)  # fmt: skip
    if completed.returncode != 0:
        raise GitError(list(args), completed.returncode, completed.stderr.decode(errors="replace"))
    return tuple(os.fsdecode(name) for name in completed.stdout.split(b"\0") if name)


def try_git(*args: str, cwd: Path | None = None, timeout: float | None = None) -> str | None:
    """Like :func:`git`, but ``None`` (stripped output otherwise) when git fails or is absent."""
    try:
        return git(*args, cwd=cwd, timeout=timeout).strip()
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
