"""Regression issues on GitHub: one per bucket, metric and suspect range (R18).

Only the trusted push job calls this, with a token holding ``issues: write`` (and, in
its own job, ``actions: write`` to dispatch bisects). Each issue is labelled
``perfgate-regression`` and its body starts with a marker carrying its key (bucket,
hardware, metric, last good and first bad commit) and whether a bisect was asked for, so
every push finds its issues again: the push that confirms a regression opens one, a later
push that still shows it comments on it (once per push), recovery or an accepted change
closes it with the figures. Text that came from commits or pull requests is only shown
through ``report.md_text``, each commit title clipped, and every body and comment stays
within GitHub's size limit. GitHub refusing one regression's issue costs that regression
alone: it is reported, and the others are still posted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from perfgate.baselines.acks import EVERY_BUCKET, Acknowledgement, acknowledgement
from perfgate.baselines.alerting import AlertKey, Finding, FindingState, Survey
from perfgate.config import Config
from perfgate.context import RunContext
from perfgate.github.alert_text import (
    ACCEPTED_LABEL,
    BISECT_WORKFLOW,
    LABEL,
    PUSHED,
    accepted_text,
    bisect_comment,
    bisect_decision,
    body,
    closing_text,
    follow_text,
    title,
)
from perfgate.github.client import GitHubClient, GitHubError, GitHubPermissionError
from perfgate.github.post import poster, written_by
from perfgate.report.verdict import clipped

LABELS = {
    LABEL: ("d73a4a", "perfgate: a confirmed performance regression on a protected branch"),
    ACCEPTED_LABEL: ("0e8a16", "perfgate: the change is intended; the next push records it"),
}
#: Authors whose pull request description may carry an acceptance (GitHub's
#: ``author_association``).
MEMBERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
#: GitHub's reason for refusing a write, as the log, the summary and alerts.json quote it.
ERROR_LIMIT = 500
_MARKER = re.compile(r"<!-- perfgate-alert (\{[^<>]*\}) -->")
# A line of a pull request's description: ``perfgate-accept: BUCKET [metric=NAME] why``.
_ACCEPT_LINE = re.compile(r"^[ \t]*perfgate-accept:[ \t]*(\S+)(?:[ \t]+metric=(\S+))?(.*)$", re.M)


@dataclass(frozen=True, kw_only=True)
class IssueState:
    """What an issue's marker records: its key, and the bisect asked for (if any)."""

    key: AlertKey
    bisect: Mapping[str, str] | None = None

    def marker(self) -> str:
        """The first line of the issue's body."""
        data = {"key": self.key.to_json(), "bisect": dict(self.bisect) if self.bisect else None}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return f"<!-- perfgate-alert {text} -->"


def read_state(body: object) -> IssueState | None:
    """The marker of an issue body (None: not a perfgate alert)."""
    match = _MARKER.search(body) if isinstance(body, str) else None
    if match is None:
        return None
    try:
        data = json.loads(match.group(1))
        bisect = data.get("bisect")
        return IssueState(
            key=AlertKey.from_json(data["key"]),
            bisect={str(k): str(v) for k, v in bisect.items()}
            if isinstance(bisect, dict)
            else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _with_state(body: str, state: IssueState) -> str:
    return _MARKER.sub(lambda _: state.marker(), body, count=1)


@dataclass(frozen=True, kw_only=True)
class BisectRequest:
    """A perfgate-bisect.yml run to dispatch for an alert's suspect range."""

    issue: int
    bucket: str
    good: str
    bad: str
    minutes: float

    def inputs(self) -> dict[str, str]:
        """The workflow_dispatch inputs."""
        return {"bucket": self.bucket, "good": self.good, "bad": self.bad,
                "dry-run": "false", "issue": str(self.issue)}  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """As alerts.json lists it."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BisectRequest:
        """A request read back from alerts.json; ValueError when it is not one."""
        try:
            request = cls(issue=int(data["issue"]), bucket=str(data["bucket"]),
                          good=str(data["good"]), bad=str(data["bad"]),
                          minutes=float(data["minutes"]))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a bisect request: {exc}") from None
        if not all(
            re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", s) for s in (request.good, request.bad)
        ):
            raise ValueError("a bisect request names its commits by full SHA")
        return request


@dataclass(frozen=True, kw_only=True)
class Posted:
    """One thing done on GitHub, for the log and alerts.json."""

    action: str  # opened | commented | closed | bisect-requested
    issue: int
    key: AlertKey
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Failed:
    """A regression whose issue GitHub refused to open, comment on or close."""

    key: AlertKey
    error: str


@dataclass(frozen=True, kw_only=True)
class Reconciled:
    """What one alert run did on GitHub, the bisects it asks for and what was refused."""

    posted: tuple[Posted, ...] = ()
    requests: tuple[BisectRequest, ...] = ()
    failed: tuple[Failed, ...] = ()


def refusal(run: RunContext, config: Config, token: str | None) -> str | None:
    """Why this run may not post alerts (None: it may).

    Only a push to a protected branch runs trusted code with a write token: a pull
    request's run, a fork's, a merge group's or a dispatch posts nothing (R12, R18).
    """
    if run.is_pull_request or run.is_fork:
        return "a pull request's run never posts alerts (only the push job of a protected branch)"
    if run.event != "push":
        return f"this is a {run.event!r} run; only a push to a protected branch posts alerts"
    if not config.gate.is_protected(run.branch):
        return f"{run.branch!r} is not a protected branch (gate.protected_branches)"
    if not token:
        return "GITHUB_TOKEN is not set (the alert job needs issues: write)"
    if not run.repository or not run.commit:
        return "no GitHub repository and pushed commit in this run"
    return None


def why_not_post_bisect(run: RunContext, token: str | None) -> str | None:
    """Why this run may not post a bisect's result (None: it may): never a pull request."""
    if run.is_pull_request or run.event not in ("workflow_dispatch", "push"):
        return f"a {run.event!r} run posts no bisect result (perfgate-bisect.yml's own job does)"
    if not token:
        return "GITHUB_TOKEN is not set (the job needs issues: write)"
    if not run.repository:
        return "no GitHub repository in this run"
    return None


# ----------------------------------------------------------------------------------------
# Posting
# ----------------------------------------------------------------------------------------


def perfgate_issues(
    client: GitHubClient, state: str = "all"
) -> dict[AlertKey, tuple[dict[str, Any], IssueState]]:
    """Every alert issue perfgate opened, by key (the oldest wins).

    An issue counts only when the label, a marker and its author say so: the author must
    be whoever this token writes as (the Actions bot, or the token's user), so a marker
    someone else wrote into an issue is never taken for perfgate's state.
    """
    author = poster(client)
    found: dict[AlertKey, tuple[dict[str, Any], IssueState]] = {}
    for issue in client.issues(LABEL, state=state):
        marker = read_state(issue.get("body"))
        if marker is not None and written_by(issue) == author and marker.key not in found:
            found[marker.key] = (issue, marker)
    return found


def reconcile(
    client: GitHubClient,
    survey: Survey,
    config: Config,
    *,
    push_sha: str,
) -> Reconciled:
    """Open, comment on and close the issues the survey calls for; the bisects to dispatch.

    GitHub refusing one regression's writes is recorded in ``failed`` and the others go
    on; a token that may not write issues at all stops the run (every write would fail).
    """
    for name, (color, description) in LABELS.items():
        client.ensure_label(name, color, description)
    known = perfgate_issues(client)
    author = poster(client)
    posted: list[Posted] = []
    requests: list[BisectRequest] = []
    failed: list[Failed] = []
    for finding in survey.findings:
        with _alone(failed, finding.key):
            request = _follow(client, finding, known.get(finding.key), survey, config,
                              push_sha=push_sha, author=author, posted=posted)  # fmt: skip
            if request is not None:
                requests.append(request)
                posted.append(Posted(action="bisect-requested", issue=request.issue,
                                     key=finding.key))  # fmt: skip
    # An acceptance at the change itself means the rule never sees the regression again:
    # its issue is closed as accepted.
    found = {finding.key for finding in survey.findings}
    for key, (issue, _) in known.items():
        level = survey.acceptance(key)
        if key in found or level is None or issue.get("state") != "open":
            continue
        with _alone(failed, key):
            number = int(issue["number"])
            client.create_comment(number, accepted_text(level.ack))
            client.update_issue(number, state="closed", state_reason="not_planned")
            posted.append(Posted(action="closed", issue=number, key=key, detail="accepted"))
    return Reconciled(posted=tuple(posted), requests=tuple(requests), failed=tuple(failed))


@contextmanager
def _alone(failed: list[Failed], key: AlertKey) -> Iterator[None]:
    """One regression's writes: GitHub refusing them is noted, and the others still go."""
    try:
        yield
    except GitHubPermissionError:
        raise  # the token may not write issues: every other regression would fail alike
    except GitHubError as exc:
        failed.append(Failed(key=key, error=clipped(str(exc), ERROR_LIMIT)))


def _follow(
    client: GitHubClient,
    finding: Finding,
    entry: tuple[dict[str, Any], IssueState] | None,
    survey: Survey,
    config: Config,
    *,
    push_sha: str,
    author: str,
    posted: list[Posted],
) -> BisectRequest | None:
    """Open, comment on or close ``finding``'s issue (``entry``: the one it has), noting
    each write in ``posted``; the bisect to dispatch for its range, if any. ``author``:
    who perfgate writes as, whose follow-up markers alone count."""
    if finding.state is not FindingState.OPEN:
        if entry is not None and entry[0].get("state") == "open":
            number = int(entry[0]["number"])
            client.create_comment(number, closing_text(finding))
            reason = "completed" if finding.state is FindingState.RECOVERED else "not_planned"
            client.update_issue(number, state="closed", state_reason=reason)
            posted.append(Posted(action="closed", issue=number, key=finding.key,
                                 detail=finding.state))  # fmt: skip
        return None
    wanted, note = bisect_decision(finding, config.alerts.bisect_max_minutes)
    asked = IssueState(key=finding.key, bisect={"status": "requested", "at": push_sha})
    if entry is None:
        state = asked if wanted else IssueState(key=finding.key)
        created = client.create_issue(
            title(finding),
            f"{state.marker()}\n{body(finding, survey, config, note)}\n",
            [LABEL],
        )
        number = int(created["number"])
        oldest = _kept(client, finding.key, number)
        if oldest != number:
            posted.append(Posted(action="closed", issue=number, key=finding.key,
                                 detail=f"duplicate of #{oldest}"))  # fmt: skip
            return None
        posted.append(Posted(action="opened", issue=number, key=finding.key))
    elif entry[0].get("state") != "open":
        return None  # closed by a person: left alone (the accepted label accepts the change)
    else:
        issue, state = entry
        number = int(issue["number"])
        sha = finding.sha(finding.episode.latest.confirmed)
        newer = finding.episode.latest.confirmed > finding.episode.alert.confirmed
        if newer and sha == push_sha and not _commented(client, number, sha, author):
            client.create_comment(number, follow_text(finding, sha))
            posted.append(Posted(action="commented", issue=number, key=finding.key))
        # A bisect is asked for once per range: the marker remembers it was.
        wanted = wanted and state.bisect is None
        if wanted:
            client.update_issue(number, body=_with_state(str(issue.get("body") or ""), asked))
    if not wanted or finding.bisect_minutes is None:
        return None
    return BisectRequest(
        issue=number,
        bucket=finding.key.bucket,
        good=finding.key.good,
        bad=finding.key.bad,
        minutes=finding.bisect_minutes,
    )


def _kept(client: GitHubClient, key: AlertKey, created: int) -> int:
    """The issue kept for ``key`` after creating ``created``: two alert jobs can race, both
    finding none and both opening one; every run keeps the oldest and closes its own
    newer copy, so one issue remains whichever finishes last."""
    entry = perfgate_issues(client).get(key)
    oldest = int(entry[0]["number"]) if entry is not None else created
    if oldest != created:
        client.create_comment(created, f"Opened twice by racing pushes: see #{oldest}.")
        client.update_issue(created, state="closed", state_reason="not_planned")
    return oldest


def _commented(client: GitHubClient, number: int, sha: str, author: str) -> bool:
    """True when perfgate itself commented on issue ``number`` for push ``sha``: a marker in
    anyone else's comment would otherwise silence that push's follow-up."""
    marker = PUSHED.format(sha=sha)
    return any(
        written_by(c) == author and str(c.get("body", "")).startswith(marker)
        for c in client.issue_comments(number)
    )


def accepted_on_issues(client: GitHubClient) -> list[Acknowledgement]:
    """An acceptance for each open alert issue carrying the ``perfgate-accepted`` label."""
    found = []
    for issue, state in perfgate_issues(client, state="open").values():
        names = {label.get("name") for label in issue.get("labels", []) if isinstance(label, dict)}
        if ACCEPTED_LABEL not in names:
            continue
        found.append(
            acknowledgement(
                bucket=state.key.bucket,
                metric=state.key.metric,
                commit=state.key.bad,
                reason=f"accepted on issue #{issue['number']}: {issue.get('title', '')}",
                by=f"the {ACCEPTED_LABEL} label on issue #{issue['number']}",
                source="issue-label",
            )
        )
    return found


def accepted_in_pulls(
    client: GitHubClient, config: Config, sha: str, target_branch: str
) -> tuple[list[Acknowledgement], list[str]]:
    """Acceptances a pull request merged as ``sha`` carries: the ``perfgate-accepted``
    label (every bucket; only people with triage access label) or, from an author who is
    an owner, member or collaborator, ``perfgate-accept: BUCKET [metric=NAME] why`` lines
    in its description. Only a pull request merged into ``target_branch`` as exactly this
    commit counts; a bucket or metric the config does not declare is named in a note,
    never recorded."""
    found: list[Acknowledgement] = []
    notes: list[str] = []
    known = {b.id: b for b in config.buckets}
    for pull in client.commit_pulls(sha):
        base = pull.get("base")
        if pull.get("merge_commit_sha") != sha or not pull.get("merged_at"):
            continue
        if not isinstance(base, dict) or base.get("ref") != target_branch:
            continue
        number, heading = pull.get("number"), str(pull.get("title") or "")
        names = {label.get("name") for label in pull.get("labels", []) if isinstance(label, dict)}
        if ACCEPTED_LABEL in names:
            found.append(acknowledgement(
                bucket=EVERY_BUCKET, commit=sha, reason=f"pull request #{number}: {heading}",
                by=f"the {ACCEPTED_LABEL} label on pull request #{number}", source="pull-request",
            ))  # fmt: skip
        lines = _ACCEPT_LINE.findall(str(pull.get("body") or ""))
        if lines and pull.get("author_association") not in MEMBERS:
            # Its author can still edit the description after the merge: their word is
            # not enough. A maintainer labels the alert's issue instead.
            notes.append(
                f"pull request #{number}: perfgate-accept lines by an author outside the "
                "repository's members are not recorded; put the perfgate-accepted label on "
                "the alert's issue instead"
            )
            lines = []
        for bucket, metric, why in lines:
            declared = known.get(bucket)
            if declared is None or (metric and declared.metric_named(metric) is None):
                what = f"{bucket!r} metric {metric!r}" if declared else repr(bucket)
                notes.append(
                    f"pull request #{number}: perfgate-accept names {what}, which "
                    f"{config.path} does not declare; not recorded"
                )
                continue
            found.append(acknowledgement(
                bucket=bucket, metric=metric or None, commit=sha,
                reason=why.strip() or f"pull request #{number}: {heading}",
                by=f"pull request #{number}", source="pull-request",
            ))  # fmt: skip
    return found, notes


def dispatch(client: GitHubClient, requests: Sequence[BisectRequest], ref: str) -> int:
    """Dispatch perfgate-bisect.yml for each request on ``ref``; returns how many."""
    for request in requests:
        client.dispatch_workflow(BISECT_WORKFLOW, ref, request.inputs())
    return len(requests)


def post_bisect(
    client: GitHubClient,
    number: int,
    result: Mapping[str, Any],
    titles: Mapping[str, str],
    unit: str,
) -> IssueState:
    """Comment the bisect's result on alert issue ``number`` and record it in its marker.

    The issue must be a perfgate alert for the bisected bucket: a bisect never posts on
    another issue.
    """
    issue = client.issue(number)
    state = read_state(issue.get("body"))
    names = {label.get("name") for label in issue.get("labels", []) if isinstance(label, dict)}
    ours = written_by(issue) == poster(client)
    if state is None or not ours or LABEL not in names or state.key.bucket != result.get("bucket"):
        raise ValueError(
            f"issue #{number} is not a perfgate alert for {result.get('bucket')!r}: "
            "the bisect result was not posted there"
        )
    client.create_comment(number, bisect_comment(result, titles, unit))
    status = str(result.get("status") or "inconclusive")
    record = {"status": status, "first_bad": str(result.get("first_bad") or "")}
    done = IssueState(key=state.key, bisect=record)
    client.update_issue(number, body=_with_state(str(issue.get("body") or ""), done))
    return done


def titles_of(lines: Sequence[str]) -> dict[str, str]:
    """``sha<US>title`` lines (``git log --format=%H%x1f%s``) as a mapping."""
    fields = (line.partition("\x1f") for line in lines)
    return {sha: heading for sha, _, heading in fields if sha}
