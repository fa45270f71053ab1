"""The fork hand-off: a pull request run's report, validated before a trusted job posts it.

A fork pull request's run holds a read-only token, so it uploads its report
directory (verdict.json, summary.md, context.json) as an artifact. The trusted
``workflow_run`` job reads it with ``load_handoff``: everything in it was written
by code from the pull request, so it is bounded, schema-checked, bound to the
triggering run's head commit, and later re-rendered rather than pasted (R12).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config import load_config
from perfgate.context import PULL_REQUEST_EVENTS, RunContext
from perfgate.errors import ConfigError, UsageError
from perfgate.github.client import GitHubClient
from perfgate.github.post import AGGREGATE_CONTEXT, fit_description
from perfgate.judge.verdicts import Verdict
from perfgate.report.verdict import MAX_VERDICT_BYTES
from perfgate.util import jsonfile
from perfgate.util.git import try_git

CONTEXT_FILE = "context.json"
VERDICT_FILE = "verdict.json"
MAX_CONTEXT_BYTES = 16 * 1024
_SHA = re.compile(r"^[0-9a-f]{40}$")


class HandoffRejected(ConfigError):
    """A report artifact failed validation; nothing from it was posted."""


@dataclass(frozen=True, kw_only=True)
class Handoff:
    """A validated report, bound to the commit and pull request of the run that made it."""

    verdict: dict[str, Any]
    repository: str
    head_sha: str
    pr_number: int | None
    # True when the trusted event itself lists the pull request; else ask the API.
    pr_confirmed: bool
    run_url: str | None


def context_json(run: RunContext) -> dict[str, Any]:
    """context.json: which run, commit and pull request a report belongs to."""
    return {
        "schema_version": 1,
        "repository": run.repository,
        "pr_number": run.pr_number if run.is_pull_request else None,
        "head_sha": run.head_sha,
        "run_id": run.ci.run_id,
    }


def write_context(run: RunContext, report_dir: Path) -> Path:
    """Write context.json beside verdict.json for the hand-off."""
    return jsonfile.write(report_dir / CONTEXT_FILE, context_json(run))


def _problems(schema: str, data: Any) -> list[str]:
    errors = jsonfile.validator(schema).iter_errors(data)
    return [
        jsonfile.problem(error, limit=200)
        for error in sorted(errors, key=lambda e: list(e.absolute_path))
    ]


_SEVERITY = {verdict.label: verdict.severity for verdict in Verdict}


def validate_verdict(data: Any, trusted_buckets: Sequence[str] = ()) -> list[str]:
    """Schema and consistency problems of a verdict.json document; empty when valid.

    The verdict is re-derived from the rows (the worst row wins, a bucket that did not
    report is a HARD_FAILURE, a row is at least as bad as each of its metrics that gates),
    and every bucket the trusted configuration expects must be among the rows, so a report
    cannot claim an all-clear its own rows contradict or drop a bucket to hide it (R6).
    """
    problems = _problems("verdict", data)
    if problems:
        return problems
    expected = data["coverage"]["expected"]
    rows = data["rows"]
    if [row["bucket"] for row in rows] != expected:
        problems.append("rows: the rows do not match coverage.expected one for one")
    dropped = sorted(set(trusted_buckets) - set(expected))
    if dropped:
        problems.append(f"coverage.expected: leaves out configured bucket(s) {', '.join(dropped)}")
    if not set(data["coverage"]["missing"]) <= set(expected):
        problems.append("coverage.missing: names buckets that were not expected")
    by_bucket = {row["bucket"]: row for row in rows}
    for bucket in data["coverage"]["missing"]:
        if bucket in by_bucket and by_bucket[bucket]["verdict"] != "HARD_FAILURE":
            problems.append(f"rows: {bucket} did not report but is not a HARD_FAILURE")
    for row in rows:
        for metric in row.get("metrics", ()):
            if metric["gates"] and _SEVERITY[metric["verdict"]] > _SEVERITY[row["verdict"]]:
                problems.append(
                    f"rows: {row['bucket']} is {row['verdict']} but its metric "
                    f"{metric['name']} is {metric['verdict']}"
                )
    worst = max((row["verdict"] for row in rows), key=_SEVERITY.__getitem__, default=None)
    if worst is None:
        problems.append("rows: empty; a report without buckets cannot be posted")
    elif data["overall_verdict"] != worst:
        problems.append(f"overall_verdict: {data['overall_verdict']} but the worst row is {worst}")
    passing = Verdict[data["overall_verdict"]].level in (Verdict.PASS, Verdict.WARN)
    if (data["status_state"] == "success") != passing:
        problems.append("status_state: does not follow from overall_verdict")
    return problems


def _read_json(path: Path, limit: int) -> Any:
    if path.is_symlink() or not path.is_file():
        raise HandoffRejected(f"{path}: missing or not a regular file in the report artifact")
    size = path.stat().st_size
    if size > limit:
        raise HandoffRejected(f"{path}: {size} bytes, over the {limit}-byte cap; not posted")
    try:
        return jsonfile.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, jsonfile.JsonError) as exc:
        raise HandoffRejected(f"{path}: not valid UTF-8 JSON ({exc}); not posted") from None


def _reject(path: Path, problems: list[str]) -> HandoffRejected:
    listed = "; ".join(problems[:3]) + (
        f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
    )
    return HandoffRejected(f"{path}: rejected, nothing posted: {listed}")


def load_handoff(
    report_dir: Path,
    *,
    event_name: str,
    payload: Mapping[str, Any],
    repository: str,
    trusted_buckets: Sequence[str] = (),
) -> Handoff:
    """Validate a downloaded report directory against the trusted ``workflow_run`` event."""
    if event_name != "workflow_run":
        raise UsageError(
            f"post-report runs in a job triggered by workflow_run (this one is {event_name!r}): "
            "the event payload names the run and commit the report must belong to"
        )
    run = payload.get("workflow_run")
    if not isinstance(run, Mapping) or not _SHA.match(str(run.get("head_sha", ""))):
        raise UsageError("the workflow_run event payload has no workflow_run.head_sha")
    head_sha = str(run["head_sha"])

    context_path = report_dir / CONTEXT_FILE
    context = _read_json(context_path, MAX_CONTEXT_BYTES)
    problems = _problems("context", context)
    if problems:
        raise _reject(context_path, problems)
    if context["repository"] != repository:
        problems.append(f"repository {context['repository']!r} is not {repository!r}")
    if context["run_id"] != str(run.get("id")):
        problems.append(f"run_id {context['run_id']} is not the triggering run {run.get('id')}")
    if context["head_sha"] != head_sha:
        problems.append(
            f"head_sha {context['head_sha']} is not the triggering run's head commit {head_sha}"
        )
    pr_number = context["pr_number"]
    listed: set[int] = {
        pull["number"]
        for pull in run.get("pull_requests") or ()
        if isinstance(pull, Mapping) and isinstance(pull.get("number"), int)
    }
    if pr_number is not None and run.get("event") not in PULL_REQUEST_EVENTS:
        problems.append(f"pr_number {pr_number} given for a {run.get('event')!r} run")
    if pr_number is not None and listed and pr_number not in listed:
        problems.append(f"pull request #{pr_number} is not one of the run's {sorted(listed)}")
    if problems:
        raise _reject(context_path, problems)

    verdict_path = report_dir / VERDICT_FILE
    verdict = _read_json(verdict_path, MAX_VERDICT_BYTES)
    problems = validate_verdict(verdict, trusted_buckets)
    if problems:
        raise _reject(verdict_path, problems)
    html_url = run.get("html_url")
    return Handoff(
        verdict=verdict,
        repository=repository,
        head_sha=head_sha,
        pr_number=pr_number,
        pr_confirmed=pr_number is None or pr_number in listed,
        run_url=html_url if isinstance(html_url, str) else None,
    )


def confirm_pull_request(
    client: GitHubClient, handoff: Handoff, payload: Mapping[str, Any]
) -> str | None:
    """Make sure the report's pull request is the run's; return that pull request's base branch.

    Fork runs list no pull requests in the event, so GitHub is asked whose head the
    commit is (and, with it, the base branch).
    """
    if handoff.pr_number is None:
        return None
    if handoff.pr_confirmed:
        run = payload.get("workflow_run")
        for pull in (run.get("pull_requests") or ()) if isinstance(run, Mapping) else ():
            if isinstance(pull, Mapping) and pull.get("number") == handoff.pr_number:
                return _base_ref(pull)
        return None
    pull = client.pull_request(handoff.pr_number)
    head = pull.get("head") if isinstance(pull, Mapping) else None
    actual = head.get("sha") if isinstance(head, Mapping) else None
    if actual != handoff.head_sha:
        raise HandoffRejected(
            f"pull request #{handoff.pr_number} has head {actual}, not the triggering run's "
            f"{handoff.head_sha}: the report names another pull request; nothing posted"
        )
    return _base_ref(pull)


def _base_ref(pull: object) -> str | None:
    """The branch a pull request (as GitHub describes it) merges into, if it says."""
    base = pull.get("base") if isinstance(pull, Mapping) else None
    ref = base.get("ref") if isinstance(base, Mapping) else None
    return ref if isinstance(ref, str) else None


def trusted_bucket_ids(config: Path, base_ref: str | None) -> tuple[str, ...]:
    """The buckets a report must cover: the base branch's configuration (protected code).

    Falls back to the trusted checkout's own file when the base branch has none here.
    """
    if base_ref:
        text = try_git("show", f"refs/remotes/origin/{base_ref}:{config.as_posix()}")
        if text is not None:
            with tempfile.TemporaryDirectory(prefix="perfgate-base-") as tmp:
                copy = Path(tmp) / config.name
                copy.write_text(text + "\n", encoding="utf-8")
                try:
                    return load_config(copy).bucket_ids()
                except ConfigError:
                    pass  # a broken base configuration: judge by the checkout's instead
    return load_config(config).bucket_ids()


def require_coverage(handoff: Handoff, trusted_buckets: Sequence[str], report_dir: Path) -> None:
    """Reject a report that leaves out a bucket the trusted configuration expects (R6)."""
    problems = validate_verdict(handoff.verdict, trusted_buckets)
    if problems:
        raise _reject(report_dir / VERDICT_FILE, problems)


def flag_rejected_report(
    client: GitHubClient, payload: Mapping[str, Any], error: Exception
) -> None:
    """A rejected report still fails the run's commit: never silence where a verdict belongs."""
    run = payload.get("workflow_run")
    head_sha = run.get("head_sha") if isinstance(run, dict) else None
    if not isinstance(head_sha, str) or not _SHA.fullmatch(head_sha):
        return
    url = run.get("html_url") if isinstance(run, dict) else None
    client.create_status(
        head_sha,
        state="failure",
        context=AGGREGATE_CONTEXT,
        description=fit_description(f"report rejected: {error}", advisory=False),
        target_url=url if isinstance(url, str) else None,
    )
