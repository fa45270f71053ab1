"""Post a verdict where reviewers look: commit statuses and one sticky PR comment.

Everything here renders verdict.json (``report.verdict.report_json``), so a same-repository
run and the fork hand-off post exactly the same thing, and text that came from a
pull request is only ever shown through ``report.untrusted.md_text``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from perfgate.config import PRIMARY
from perfgate.context import RunContext
from perfgate.github.client import GitHubClient, GitHubPermissionError
from perfgate.judge.verdicts import Verdict
from perfgate.report.row_text import deciding_change
from perfgate.report.summary import fit_markdown, summary_from_verdict
from perfgate.report.untrusted import md_text
from perfgate.util.console import annotate, say

MARKER = "<!-- perfgate-verdict -->"
AGGREGATE_CONTEXT = "perfgate"
DESCRIPTION_LIMIT = 140  # GitHub rejects longer commit status descriptions
ADVISORY_SUFFIX = " (advisory)"
# GitHub refuses comment bodies over 65536 characters; leave room for the footer.
COMMENT_LIMIT = 60_000
# PASS- and WARN-level verdicts leave the status green; the description says which.
PASSING = frozenset(v.label for v in Verdict if v.level in (Verdict.PASS, Verdict.WARN))
_SHA = re.compile(r"^[0-9a-f]{40}$")
_SAFE_URL = re.compile(r"^https?://[^\s()<>\[\]]+$")


@dataclass(frozen=True, kw_only=True)
class StatusUpdate:
    """One commit status to post."""

    context: str
    state: str
    description: str
    target_url: str | None


@dataclass(frozen=True, kw_only=True)
class CommentOutcome:
    """What happened to the sticky comment."""

    comment_id: int
    action: str  # created | updated | unchanged
    removed: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Published:
    """Everything one publish call posted."""

    statuses: tuple[StatusUpdate, ...]
    comment: CommentOutcome | None


def fit_description(text: str, *, advisory: bool) -> str:
    """One line within GitHub's 140 characters, ending in " (advisory)" when not blocking."""
    suffix = ADVISORY_SUFFIX if advisory else ""
    room = DESCRIPTION_LIMIT - len(suffix)
    line = " ".join(text.split())
    if len(line) > room:
        line = line[: room - 1].rstrip() + "…"
    return line + suffix


def plan_statuses(verdict: Mapping[str, Any], target_url: str | None) -> tuple[StatusUpdate, ...]:
    """The aggregate ``perfgate`` status first, then one ``perfgate (bucket)`` per bucket."""
    advisory = verdict.get("mode") != "blocking"
    overall = str(verdict.get("overall_verdict"))
    statuses = [
        StatusUpdate(
            context=AGGREGATE_CONTEXT,
            state="success" if overall in PASSING else "failure",
            description=fit_description(
                f"{overall}: {verdict.get('description', '')}", advisory=advisory
            ),
            target_url=target_url,
        )
    ]
    missing = set(verdict.get("coverage", {}).get("missing", ()))
    for row in verdict.get("rows", ()):
        bucket, label = str(row["bucket"]), str(row["verdict"])
        reported = bucket not in missing
        details = "; ".join(str(d) for d in row.get("details", ()))
        blocking = _blocking_metrics(row)
        if not reported:
            description = f"{label}: did not report"
        elif any(name != PRIMARY for name, _ in blocking):
            # A metric besides the primary blocks: name every one that does (the report
            # the status links to has the rest).
            description = f"{label}: {', '.join(text for _, text in blocking)}"
        else:
            description = f"{' '.join(filter(None, (label, deciding_change(row))))}: {details}"
        statuses.append(
            StatusUpdate(
                context=f"{AGGREGATE_CONTEXT} ({bucket})",
                state="success" if reported and label in PASSING else "failure",
                description=fit_description(description, advisory=advisory),
                target_url=target_url,
            )
        )
    return tuple(statuses)


# A metric's verdict that fails its bucket's status.
_BLOCKING = frozenset({Verdict.BLOCK.label, Verdict.HARD_FAILURE.label})


def _blocking_metrics(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each metric of a verdict.json row that blocks it: its name, and how it is named.

    ``startup_s +18.0 % (BLOCK)``; the primary is named by its path.
    """
    metrics = row.get("metrics")
    found = []
    for metric in metrics if isinstance(metrics, list) else ():
        if not isinstance(metric, Mapping) or metric.get("verdict") not in _BLOCKING:
            continue
        if metric.get("gates") is False and metric.get("verdict") != Verdict.HARD_FAILURE.label:
            continue  # a report-only metric blocks nothing (unless the run lacked it)
        name = str(metric.get("name"))
        shown = str(metric.get("path") or name) if name == PRIMARY else name
        change = deciding_change(metric, interval_too=False)
        found.append((name, f"{shown} {change + ' ' if change else ''}({metric['verdict']})"))
    return found


def footer(head_sha: str, run_url: str | None) -> str:
    """``_Updated for <sha8> · [run](url)_``; anything not a plain SHA or URL is left out."""
    sha = head_sha[:8] if _SHA.match(head_sha) else "unknown commit"
    link = f" · [run]({run_url})" if run_url and _SAFE_URL.match(run_url) else ""
    return f"_Updated for {md_text(sha)}{link}_"


def comment_body(
    verdict: Mapping[str, Any], *, head_sha: str, run_url: str | None, trend_url: str | None = None
) -> str:
    """Marker + summary re-rendered from verdict.json + footer, within GitHub's size limit."""
    summary = fit_markdown(
        summary_from_verdict(verdict, trend_url=trend_url),
        COMMENT_LIMIT,
        "_Truncated: the full report is in the job summary and its artifact._",
    )
    return f"{MARKER}\n{summary}\n{footer(head_sha, run_url)}\n"


def _is_marker(comment: Mapping[str, Any]) -> bool:
    body = comment.get("body")
    return isinstance(body, str) and body.startswith(MARKER)


def written_by(item: Mapping[str, Any]) -> object:
    """Who opened an issue or wrote a comment (None when GitHub did not say)."""
    user = item.get("user")
    return user.get("login") if isinstance(user, Mapping) else None


def _oldest_first(comments: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(comments, key=lambda c: (str(c.get("created_at", "")), int(c["id"])))


ACTIONS_BOT = "github-actions[bot]"  # who GITHUB_TOKEN writes as


def poster(client: GitHubClient) -> str:
    """Who this token writes as: the token's user, else the Actions bot (whose installation
    token may not read ``/user``). Only its issues, markers and comments are perfgate's."""
    return client.viewer_login() or ACTIONS_BOT


def _markers(comments: Sequence[dict[str, Any]], author: object) -> list[dict[str, Any]]:
    """Marker comments written by ``author`` (this token's identity), oldest first.

    Anyone else's comment that carries the marker, a person's or another app's, is
    never adopted: editing it would put the verdict under text its author controls.
    """
    return _oldest_first([c for c in comments if _is_marker(c) and written_by(c) == author])


def upsert_comment(client: GitHubClient, number: int, body: str) -> CommentOutcome:
    """Edit the one marker comment in place, or create it; never leave two.

    Two gate runs can race: both see no comment and both create one. So after creating,
    list again; every run then keeps the oldest marker comment by the same author and
    deletes the others, which converges on one comment whichever run finishes last.
    Only a bot's marker comment is edited in place; a person's copy of the marker is
    neither edited nor deleted.
    """
    # Another app's token finds its identity from the comment it creates, below.
    author = poster(client)
    found = _markers(client.issue_comments(number), author)
    created: dict[str, Any] | None = None
    if not found:
        created = client.create_comment(number, body)
        # Only our own comments count: a planted marker by someone else is never edited.
        found = _markers(client.issue_comments(number), written_by(created))
        if all(c["id"] != created["id"] for c in found):
            found = _oldest_first([*found, created])
    keep, extras = found[0], found[1:]
    # Someone else's comment that happens to carry the marker is left alone.
    removed = tuple(int(c["id"]) for c in extras if written_by(c) == written_by(keep))
    changed = keep.get("body") != body
    if changed:
        client.update_comment(int(keep["id"]), body)
    if created is not None and keep["id"] == created["id"]:
        action = "created"
    else:
        action = "updated" if changed else "unchanged"
    for comment_id in removed:
        client.delete_comment(comment_id)
    return CommentOutcome(comment_id=int(keep["id"]), action=action, removed=removed)


def publish(
    client: GitHubClient,
    verdict: Mapping[str, Any],
    *,
    head_sha: str,
    pr_number: int | None,
    run_url: str | None,
    trend_url: str | None = None,
) -> Published:
    """Post the statuses on the PR head commit (never the merge commit), then the comment.

    ``trend_url``, the trusted config's ``report.url``, links each bucket to its trend page.
    """
    statuses = plan_statuses(verdict, run_url)
    for status in statuses:
        client.create_status(head_sha, **asdict(status))
    comment = None
    if pr_number is not None:
        body = comment_body(verdict, head_sha=head_sha, run_url=run_url, trend_url=trend_url)
        comment = upsert_comment(client, pr_number, body)
    return Published(statuses=statuses, comment=comment)


def _notice(verdict: Mapping[str, Any], reason: str, run_url: str | None, stream: TextIO) -> None:
    where = f"the job summary of {run_url}" if run_url else "the job summary"
    annotate(
        "notice",
        f"perfgate verdict {verdict.get('overall_verdict')} was not posted: {reason}. Read it in "
        f"{where} and in the uploaded report artifact (summary.md, verdict.json); for a fork "
        "pull request the trusted workflow_run job posts it",
        stream=stream,
    )


def post_from_run(
    verdict: Mapping[str, Any],
    run: RunContext,
    token: str | None,
    *,
    client: GitHubClient | None = None,
    stream: TextIO = sys.stdout,
    trend_url: str | None = None,
) -> Published | None:
    """``gate --post``: post when this run can write; otherwise print exactly one notice.

    A read-only token (fork pull requests, missing job permissions) never fails the gate:
    its exit code stays the verdict's (R8).
    """
    if run.is_fork:
        _notice(verdict, "fork pull requests get a read-only token", run.run_url, stream)
        return None
    if not token:
        _notice(verdict, "GITHUB_TOKEN is not set", run.run_url, stream)
        return None
    if not run.repository or not run.head_sha:
        _notice(verdict, "no GitHub repository and head commit in this run", run.run_url, stream)
        return None
    if client is None:
        client = GitHubClient(api_url=run.api_url, repository=run.repository, token=token)
    try:
        return publish(
            client,
            verdict,
            head_sha=run.head_sha,
            pr_number=run.pr_number if run.is_pull_request else None,
            run_url=run.run_url,
            trend_url=trend_url,
        )
    except GitHubPermissionError:
        _notice(verdict, "the token may not write statuses or comments here", run.run_url, stream)
        return None


def say_published(published: Published, head_sha: str, pr_number: int | None) -> None:
    """One line on what was posted: statuses, and what happened to the comment."""
    comment = published.comment
    say(
        f"posted {len(published.statuses)} commit status(es) on {head_sha[:12]}"
        + (
            f"; {comment.action} the comment on #{pr_number}"
            + (f", removed {len(comment.removed)} duplicate(s)" if comment.removed else "")
            if comment
            else ""
        )
    )
