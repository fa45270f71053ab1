"""Real git repositories for the tests: one committer identity, a bare origin with a clone.

A bare repository stands in for the remote (docs/design.md, Conventions); every commit a
test makes is authored by IDENTITY, so no test depends on the machine's git config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from perfgate.util.git import git

# Who commits in tests: passed as environment, so it reaches git in subprocesses too.
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Clone:
    """A bare origin, a clone of it, and the commit both hold."""

    origin: Path
    path: Path
    head: str


# The origin_clone fixture (tests/conftest.py): origin_with_clone's keyword arguments.
MakeClone = Callable[..., Clone]


def commit_all(repo: Path, message: str) -> str:
    """Stage everything in ``repo`` and commit it as IDENTITY (an empty commit when nothing
    changed); the new commit's sha."""
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", message, cwd=repo, env=IDENTITY)
    return git("rev-parse", "HEAD", cwd=repo).strip()


def empty_origin(root: Path, *, branch: str = "main", clone: str = "clone") -> tuple[Path, Path]:
    """A bare origin ``root/origin.git`` without commits, and a clone of it ``root/clone``
    on ``branch`` (nothing committed yet)."""
    origin = root / "origin.git"
    git("init", "-q", "--bare", "-b", branch, str(origin))
    path = root / clone
    git("clone", "-q", str(origin), str(path))
    git("checkout", "-q", "-B", branch, cwd=path)
    return origin, path


def origin_with_clone(
    root: Path,
    *,
    files: Mapping[str, str] | None = None,
    branch: str = "main",
    message: str = "init",
    clone: str = "clone",
) -> Clone:
    """A bare origin whose ``branch`` holds one commit of ``files`` (relative path -> text;
    none: an empty commit), and a clone of it on that branch."""
    origin, path = empty_origin(root, branch=branch, clone=clone)
    for name, text in (files or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    head = commit_all(path, message)
    git("push", "-q", "origin", branch, cwd=path)
    return Clone(origin=origin, path=path, head=head)
