"""Samples earlier publishes could not land, gathered from their runs' artifacts (R9, R14).

A publish that failed kept its samples as the ``perfgate-pending-samples`` artifact of its
run; only that run's jobs can upload to it, so the artifact is as trustworthy as the run
itself. A run counts only when GitHub says it is a failed ``push`` run of this workflow
(the same file), in this repository, on a protected branch, for a commit that is on that
branch (a tag of the same name runs with ``head_branch`` set to the tag). Its lines are
then checked, one by one, like any sample a publish lands.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.baselines.publish import PENDING_FILE
from perfgate.github.client import GitHubClient, GitHubError
from perfgate.result import PENDING_ARTIFACT

# A pending file holds a few thousand lines at most; an archive past this is not one.
MAX_ARCHIVE_BYTES = 16 * 1024 * 1024
# How many of the newest failed push runs are looked at (each costs two API calls).
RUNS = 50


@dataclass(frozen=True, kw_only=True)
class Gathered:
    """The pending files saved from trusted runs, and a note per run left out or failed."""

    files: tuple[Path, ...]
    notes: tuple[str, ...]


def gather_pending(
    client: GitHubClient,
    *,
    run_id: str,
    protected: Callable[[str], bool],
    on_branch: Callable[[str, str], bool],
    into: Path,
) -> Gathered:
    """Download the pending samples of this workflow's failed push runs into ``into``.

    ``protected`` says whether a branch is protected, ``on_branch(commit, branch)`` whether
    the commit is on the branch's history. Each file lands at ``into/<run id>/``.
    """
    this = client.workflow_run(run_id)
    path, workflow_id = this.get("path"), this.get("workflow_id")
    if not isinstance(path, str) or not isinstance(workflow_id, int):
        raise GitHubError(f"GET actions/runs/{run_id}: no workflow path or id in the answer")
    files, notes = [], []
    for run in client.failed_push_runs(workflow_id, per_page=RUNS):
        if str(run.get("id")) == run_id:
            continue
        why = _distrust(run, path=path, repository=client.repository, protected=protected,
                        on_branch=on_branch)  # fmt: skip
        if why:
            notes.append(f"run {run.get('id')}: {why}; its pending samples are not read")
            continue
        try:
            text = _pending_text(client, run["id"])
        except GitHubError as exc:
            notes.append(f"run {run['id']}: {exc}; its pending samples wait for the next publish")
            continue
        if text is None:
            continue  # most failed runs kept nothing
        target = into / str(run["id"]) / PENDING_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        files.append(target)
    return Gathered(files=tuple(files), notes=tuple(notes))


def _distrust(
    run: dict[str, Any],
    *,
    path: str,
    repository: str,
    protected: Callable[[str], bool],
    on_branch: Callable[[str, str], bool],
) -> str | None:
    """Why ``run`` is not a failed push run of this workflow on a protected branch; or None."""
    branch, sha = run.get("head_branch"), run.get("head_sha")
    if not isinstance(run.get("id"), int):
        return "no run id"
    if run.get("event") != "push" or run.get("conclusion") != "failure":
        return f"a {run.get('event')!r} run that ended {run.get('conclusion')!r}, not a failed push"
    if run.get("path") != path:
        return f"a run of {run.get('path')!r}, not of this workflow ({path})"
    for key in ("repository", "head_repository"):
        owner = run.get(key)
        if not isinstance(owner, dict) or owner.get("full_name") != repository:
            return f"its {key.replace('_', ' ')} is not {repository}"
    if not isinstance(branch, str) or not protected(branch):
        return f"a push to {branch!r}, which is not a protected branch"
    if not isinstance(sha, str) or not on_branch(sha, branch):
        return f"its commit {str(sha)[:12]} is not on {branch!r}"
    return None


def _pending_text(client: GitHubClient, run_id: int) -> str | None:
    """The pending-samples file a run kept, or None when it kept none (or it expired)."""
    listed = [
        artifact
        for artifact in client.run_artifacts(run_id, PENDING_ARTIFACT)
        if artifact.get("name") == PENDING_ARTIFACT and not artifact.get("expired")
        and isinstance(artifact.get("id"), int)
        and (artifact.get("workflow_run") or {}).get("id") in (None, run_id)
    ]  # fmt: skip
    if not listed:
        return None
    archive = client.download_artifact(listed[0]["id"], MAX_ARCHIVE_BYTES)
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            info = opened.getinfo(PENDING_FILE)
            if info.file_size > MAX_ARCHIVE_BYTES:
                raise GitHubError(f"{PENDING_FILE} in run {run_id}'s artifact is too large")
            return opened.read(info).decode("utf-8", errors="replace")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise GitHubError(
            f"run {run_id}'s {PENDING_ARTIFACT} artifact is unreadable ({exc})"
        ) from None
