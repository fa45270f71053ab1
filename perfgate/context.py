"""Where and why this run happens: commit, branches and CI identity.

GitHub context comes only from GitHub's standard environment variables and the
event payload; outside GitHub it comes from the local git checkout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfgate.errors import GateMalfunction, UsageError
from perfgate.result import CiInfo
from perfgate.util.git import try_git

PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# A run label names a cache directory and appears in reports: one plain path component.
_RUN_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_run_label(label: str) -> str:
    """``label`` when it is a usable run label; otherwise a usage error saying what is."""
    if not _RUN_LABEL.fullmatch(label):
        raise UsageError(
            f"run label {label!r} (--run-label or PERFGATE_RUN_LABEL): use 1 to 128 letters, "
            "digits, '.', '_' and '-', starting with a letter or digit (e.g. qualify-a1)"
        )
    return label


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """Commit, branches and CI identifiers of one run."""

    commit: str | None
    branch: str | None
    target_branch: str | None
    event: str
    on_github: bool = False
    repository: str | None = None
    server_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    pr_number: int | None = None
    head_sha: str | None = None
    head_repository: str | None = None
    ci: CiInfo = field(default_factory=CiInfo)

    @property
    def is_pull_request(self) -> bool:
        """True for pull_request-triggered runs."""
        return self.event in PULL_REQUEST_EVENTS

    @property
    def is_fork(self) -> bool:
        """True when the PR's head lives in another repository."""
        return (
            self.is_pull_request
            and self.head_repository is not None
            and self.head_repository != self.repository
        )

    @property
    def run_url(self) -> str | None:
        """Link to the Actions run, when there is one."""
        if not (self.repository and self.ci.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.ci.run_id}"

    def source_json(self) -> dict[str, Any]:
        """Source identity as stored in a result artifact."""
        return {
            "commit": self.commit,
            "branch": self.branch,
            "target_branch": self.target_branch,
            "event": self.event,
            "pr_number": self.pr_number,
            "head_sha": self.head_sha,
            "repository": self.repository,
        }


def _strip_heads(ref: str | None) -> str | None:
    """The branch a ref names; None for tags and other non-branch refs."""
    if not ref:
        return None
    if ref.startswith("refs/heads/"):
        return ref.removeprefix("refs/heads/")
    return None if ref.startswith("refs/") else ref


def _queue_base(ref: str | None) -> str | None:
    """``main`` from a merge-queue ref ``gh-readonly-queue/main/pr-12-<sha>``."""
    branch = _strip_heads(ref) or ""
    base, sep, _ = branch.removeprefix("gh-readonly-queue/").rpartition("/pr-")
    return base if sep and branch.startswith("gh-readonly-queue/") else None


def detect(
    env: Mapping[str, str],
    cwd: Path | None = None,
    default_target: str | None = None,
) -> RunContext:
    """Read the run context from GitHub's environment, else from git in ``cwd``."""
    if env.get("GITHUB_ACTIONS") == "true":
        return _from_github(env)
    branch = try_git("branch", "--show-current", cwd=cwd) or None
    target = env.get("PERFGATE_TARGET_BRANCH") or default_target
    return RunContext(
        commit=try_git("rev-parse", "HEAD", cwd=cwd),
        branch=branch,
        target_branch=target,
        event="local",
        # A local allocation of a qualification names its (simulated) runner this way.
        ci=CiInfo(runner_name=env.get("RUNNER_NAME") or None),
    )


def _from_github(env: Mapping[str, str]) -> RunContext:
    event_name = env.get("GITHUB_EVENT_NAME", "")
    payload: dict[str, Any] = {}
    event_path = env.get("GITHUB_EVENT_PATH")
    if event_path and Path(event_path).is_file():
        try:
            payload = json.loads(Path(event_path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GateMalfunction(
                f"{event_path}: the GitHub event payload (GITHUB_EVENT_PATH) is unreadable: {exc}"
            ) from None
    repository = env.get("GITHUB_REPOSITORY")
    pr_number = head_sha = head_repository = None
    if event_name in PULL_REQUEST_EVENTS:
        pull = payload.get("pull_request", {})
        pr_number = pull.get("number") or payload.get("number")
        head = pull.get("head", {})
        head_sha = head.get("sha")
        head_repository = (head.get("repo") or {}).get("full_name")
        branch = env.get("GITHUB_HEAD_REF") or head.get("ref")
        target = env.get("GITHUB_BASE_REF") or pull.get("base", {}).get("ref")
    elif event_name == "merge_group":
        group = payload.get("merge_group", {})
        head_sha = group.get("head_sha")
        branch = _strip_heads(group.get("head_ref") or env.get("GITHUB_REF"))
        target = _strip_heads(group.get("base_ref")) or _queue_base(
            group.get("head_ref") or env.get("GITHUB_REF")
        )
    else:
        branch = _strip_heads(env.get("GITHUB_REF"))
        target = branch
        head_sha = env.get("GITHUB_SHA")
    # A job that checked out another commit than the run's (the qualify workflow's
    # commit input) says which one it measured.
    commit = env.get("PERFGATE_COMMIT") or env.get("GITHUB_SHA")
    if commit and env.get("PERFGATE_COMMIT") and not _SHA.fullmatch(commit):
        raise UsageError(f"PERFGATE_COMMIT {commit!r} is not a full commit SHA")
    return RunContext(
        commit=commit,
        branch=branch,
        target_branch=target,
        event=event_name or "unknown",
        on_github=True,
        repository=repository,
        server_url=env.get("GITHUB_SERVER_URL", "https://github.com"),
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        pr_number=int(pr_number) if pr_number is not None else None,
        head_sha=head_sha,
        head_repository=head_repository or repository,
        ci=CiInfo(
            run_id=env.get("GITHUB_RUN_ID"),
            run_attempt=env.get("GITHUB_RUN_ATTEMPT"),
            workflow=env.get("GITHUB_WORKFLOW"),
            job=env.get("GITHUB_JOB"),
            runner_name=env.get("RUNNER_NAME"),
            log_artifact=_artifact_name(env.get("PERFGATE_LOG_ARTIFACT")),
        ),
    )


def _artifact_name(name: str | None) -> str | None:
    """An artifact name GitHub accepts (letters, digits, ``._-``), else None: it is only
    shown, as a link's text, so a bad one is dropped rather than failing the run."""
    return name if name and re.fullmatch(r"[A-Za-z0-9._-]{1,200}", name) else None
