"""In a trusted workflow_run job: validate a pull request run's report artifact, then post it.

A fork pull request's run holds a read-only token, so it uploads its report; this verb
checks the report (schema, size caps, run, head SHA, pull request, a verdict that
re-derives from its rows, coverage of every bucket of the base branch's config) before
posting statuses and the sticky comment. A rejected report fails the commit's status.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from perfgate.cli.common import Verbs, add_config, add_verb
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError


def register(verbs: Verbs) -> None:
    """``post-report``."""
    post_report = add_verb(
        verbs,
        "post-report",
        help="in a trusted workflow_run job: validate a pull request's report artifact and post it",
        description=__doc__,
        handler=run,
        examples=("perfgate post-report --report-dir downloaded-report/",),
        exits={
            ExitCode.MALFUNCTION: "the GitHub API failed",
            ExitCode.USAGE: (
                "the report was rejected (the message says why; the commit gets a failing status)"
            ),
        },
    )
    add_config(post_report)
    post_report.add_argument(
        "--report-dir",
        type=Path,
        required=True,
        help="the downloaded report artifact (verdict.json and context.json)",
    )


def run(args: argparse.Namespace) -> int:
    """Trusted workflow_run job: validate a pull request run's report artifact, then post it."""
    from perfgate import context
    from perfgate.github.client import GitHubClient
    from perfgate.github.handoff import (
        HandoffRejected,
        confirm_pull_request,
        flag_rejected_report,
        load_handoff,
        require_coverage,
        trusted_bucket_ids,
    )
    from perfgate.github.post import publish, say_published

    run = context.detect(os.environ)
    token = os.environ.get("GITHUB_TOKEN")
    if not run.repository or not token:
        raise UsageError(
            "post-report needs GITHUB_REPOSITORY and GITHUB_TOKEN (a job with `statuses: write` "
            "and `pull-requests: write`, triggered by workflow_run)"
        )
    event_path = os.environ.get("GITHUB_EVENT_PATH")
    try:
        payload = json.loads(Path(event_path).read_text(encoding="utf-8")) if event_path else {}
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the event payload {event_path}: {exc}") from None
    client = GitHubClient(api_url=run.api_url, repository=run.repository, token=token)
    try:
        handoff = load_handoff(
            args.report_dir,
            event_name=os.environ.get("GITHUB_EVENT_NAME", ""),
            payload=payload,
            repository=run.repository,
        )
        base_ref = confirm_pull_request(client, handoff, payload)
        require_coverage(handoff, trusted_bucket_ids(args.config, base_ref), args.report_dir)
    except HandoffRejected as exc:
        flag_rejected_report(client, payload, exc)
        raise
    published = publish(
        client,
        handoff.verdict,
        head_sha=handoff.head_sha,
        pr_number=handoff.pr_number,
        run_url=handoff.run_url,
        # This job runs the default branch's code and config: its report.url is trusted.
        trend_url=load_config(args.config).report.url,
    )
    say_published(published, handoff.head_sha, handoff.pr_number)
    return ExitCode.OK
