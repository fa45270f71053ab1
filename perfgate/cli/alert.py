"""After a protected push: judge every bucket's history with the alert rule (R18).

Reads the target branch's history from the baseline branch (what publish just appended
to), replays each bucket and metric with the post-merge alert rule, and writes
REPORT_DIR/alerts.json: every regression with its suspect commits, every improvement.
With --post (the push workflow's alert job, `issues: write`) it first records the
acceptances the `perfgate-accepted` label on an alert's issue and the merged pull
request carry, then opens one `perfgate-regression` issue per regression, comments on
it from each later push that still shows it, and closes it on recovery or acceptance.
GitHub refusing one regression's issue is reported and the others are still posted;
alerts.json is written and the run exits 3.
With --dispatch (the one job holding `actions: write`) it dispatches perfgate-bisect.yml
for the ranges alerts.json asks to bisect. Only a push to a protected branch posts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.cli.common import (
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_config,
    add_json,
    add_verb,
    baseline_is_local,
    human,
    print_json,
    repo_top,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.alerting import Survey
    from perfgate.baselines.store import BaselineStore
    from perfgate.config import Config
    from perfgate.context import RunContext
    from perfgate.github.alerts import Failed, Posted, Reconciled
    from perfgate.github.client import GitHubClient
    from perfgate.judge.alerts import Change

DEFAULT_ALERTS = Path(".perfgate/alerts")
ALERTS_FILE = "alerts.json"


def register(verbs: Verbs) -> None:
    """``alert`` and ``post-bisect``."""
    alert = add_verb(
        verbs,
        "alert",
        help="after a protected push: alert regressions on the target branch (issues, bisects)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate alert              # what the rule says, from the local baseline branch",
            "perfgate alert --post       # CI: the push workflow's alert job",
            "perfgate alert --dispatch   # CI: dispatch the bisects alerts.json asks for",
        ),
        exits={
            ExitCode.MALFUNCTION: f"{EXIT_MEANINGS[ExitCode.MALFUNCTION]}; or GitHub refused "
            f"a regression's issue (the others were posted, {ALERTS_FILE} names it)"
        },
    )
    add_config(alert)
    alert.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_ALERTS,
        help=f"where {ALERTS_FILE} is written (and read by --dispatch; default: %(default)s)",
    )
    alert.add_argument(
        "--target", metavar="BRANCH", help="default: the pushed branch, else the first target"
    )
    what = alert.add_mutually_exclusive_group()
    what.add_argument(
        "--post",
        action="store_true",
        help="record acceptances, then open, comment on and close the regression issues "
        "(a push to a protected branch only, with a token holding issues: write)",
    )
    what.add_argument(
        "--dispatch",
        action="store_true",
        help=f"dispatch perfgate-bisect.yml for the ranges {ALERTS_FILE} asks to bisect",
    )
    add_json(alert, ALERTS_FILE)
    add_baseline_source(alert)

    post_bisect = add_verb(
        verbs,
        "post-bisect",
        help="post a bisect's result (bisect.json) on its alert's issue",
        description="Comment a bisect's result on the perfgate-regression issue it was "
        "dispatched for: the first bad commit with the figures on both sides. The issue must "
        "be a perfgate alert for the bisected bucket; a pull request's run posts nothing.",
        handler=run_post_bisect,
        examples=("perfgate post-bisect --result .perfgate/bisect/bisect.json --issue 12",),
        exits={ExitCode.MALFUNCTION: "the GitHub API failed"},
    )
    add_config(post_bisect)
    post_bisect.add_argument("--result", type=Path, required=True, help="bisect's --out file")
    post_bisect.add_argument(
        "--issue", type=int, required=True, metavar="N", help="the alert's issue"
    )


def run(args: argparse.Namespace) -> int:
    """Survey the history with the alert rule; post or dispatch when asked and allowed."""
    from perfgate import context
    from perfgate.baselines.store import open_store
    from perfgate.github.alerts import Reconciled
    from perfgate.util import jsonfile
    from perfgate.util.console import say

    repo_top()
    config = load_config(args.config)
    here = context.detect(os.environ, default_target=config.gate.target_branches[0])
    report = args.report_dir / ALERTS_FILE
    if args.dispatch:
        return _dispatch(report, config, here)
    pushed = here.branch if config.gate.is_protected_push(here.event, here.branch) else None
    target = args.target or pushed or config.gate.target_branches[0]
    store = open_store(config, local=baseline_is_local(args))
    assert store is not None  # repo_top found the repository
    client = _client(here, config) if args.post else None
    done = Reconciled()
    with _permissions("issues: write, and contents: write to record accepted changes"):
        if client is not None:
            _record_acceptances(client, config, store, here, target)
        found = _survey(config, store, target)
        if client is not None:
            from perfgate.github.alerts import reconcile

            done = reconcile(client, found, config, push_sha=here.commit or "")
    document = alerts_json(found, done)
    jsonfile.write(report, document)
    out = human(args)
    print(survey_text(found, done.posted, done.failed), file=out)
    say(f"{ALERTS_FILE} in {report}")
    from perfgate.util.console import write_step_outputs, write_step_summary

    write_step_outputs({"bisects": str(len(done.requests)), "open": str(len(found.open))})
    write_step_summary(survey_text(found, done.posted, done.failed))
    if args.json:
        print_json(document)
    return _refused(done.failed)


def _refused(failed: tuple[Failed, ...]) -> int:
    """Name each regression GitHub refused to post; exit 3 when there was one (R8)."""
    from perfgate.util.console import annotate

    for failure in failed:
        key = failure.key
        annotate(
            "error",
            f"the alert for {key.bucket} {key.metric} ({key.hardware}, since {key.bad[:12]}) "
            f"was not posted: {failure.error}. The other regressions were; the next push "
            "tries this one again",
        )
    return ExitCode.MALFUNCTION if failed else ExitCode.OK


@contextmanager
def _permissions(needed: str) -> Iterator[None]:
    """A refused write names the scopes this job needs (the client's 403 names the gate's)."""
    from perfgate.github.client import GitHubError, GitHubPermissionError

    try:
        yield
    except GitHubPermissionError as exc:
        raise GitHubError(
            f"GitHub refused a write ({exc.status}); give this job `permissions: {needed}` "
            "(the rendered workflows do)",
            status=exc.status,
        ) from None


def _client(here: RunContext, config: Config) -> GitHubClient | None:
    """A client when this run may post; otherwise one notice saying why not, and None."""
    from perfgate.github.alerts import refusal
    from perfgate.github.client import GitHubClient
    from perfgate.util.console import annotate

    token = os.environ.get("GITHUB_TOKEN")
    why = refusal(here, config, token)
    if why is not None:
        annotate("notice", f"perfgate alerts were not posted: {why}")
        return None
    assert token is not None and here.repository is not None
    return GitHubClient(api_url=here.api_url, repository=here.repository, token=token)


def _record_acceptances(
    client: GitHubClient, config: Config, store: BaselineStore, here: RunContext, target: str
) -> None:
    """Acceptances from alert issues' labels and the merged pull request, onto the branch."""
    from perfgate.baselines.acks import record_acks
    from perfgate.github.alerts import accepted_in_pulls, accepted_on_issues
    from perfgate.util.console import say

    acks = accepted_on_issues(client)
    merged, notes = accepted_in_pulls(client, config, here.commit or "", target)
    for note in notes:
        say(note)
    acks += merged
    if acks:
        added = record_acks(store, acks, f"Accept changes seen at {(here.commit or '')[:12]}")
        say(f"recorded {added} accepted change(s) on {store.branch} ({len(acks) - added} known)")


def _survey(config: Config, store: BaselineStore, target: str) -> Survey:
    from perfgate.baselines.acks import accepted_levels, read_acks
    from perfgate.baselines.alerting import survey
    from perfgate.baselines.history import read_history
    from perfgate.util.console import say

    history = read_history(
        store, config.buckets, target_branch=target, min_samples=config.gate.baseline.min_samples
    )
    acks, warnings = read_acks(store.repo, history.baseline_tip)
    for warning in warnings:
        say(f"note: {warning}")
    return survey(config, history, accepted_levels(store.repo, acks, history.target_tip))


def _dispatch(report: Path, config: Config, here: RunContext) -> int:
    """Dispatch the bisects a trusted alert run asked for."""
    from perfgate.github.alerts import BisectRequest, dispatch
    from perfgate.util import jsonfile
    from perfgate.util.console import say

    try:
        document = jsonfile.read(report)
    except jsonfile.JsonError as exc:
        raise UsageError(f"{report}: cannot read the alert run's {ALERTS_FILE} ({exc})") from None
    raw = document.get("bisects", []) if isinstance(document, dict) else []
    try:
        requests = [BisectRequest.from_json(item) for item in raw]
    except ValueError as exc:
        raise UsageError(f"{report}: {exc}") from None
    if not requests:
        say("no bisect to dispatch")
        return ExitCode.OK
    client = _client(here, config)
    if client is None:
        return ExitCode.OK
    with _permissions("actions: write"):
        count = dispatch(client, requests, here.branch or config.gate.target_branches[0])
    say(f"dispatched {count} bisect(s) of perfgate-bisect.yml")
    return ExitCode.OK


def alerts_json(found: Survey, done: Reconciled) -> dict[str, Any]:
    """The machine-readable survey: each regression and improvement, what was posted, and
    what GitHub refused."""

    def change(c: Change) -> dict[str, Any]:
        return {"change_pct": c.change_pct, "interval_pct": list(c.interval_pct),
                "before": c.before, "after": c.after, "runs": c.runs}  # fmt: skip

    return {
        "target_branch": found.target_branch,
        "tip": found.tip,
        "series": found.series,
        "regressions": [
            {
                **f.key.to_json(),
                "state": f.state,
                "alert": change(f.episode.alert),
                "latest": change(f.episode.latest),
                "confirmed_at": f.sha(f.episode.alert.confirmed),
                "suspects": [{"sha": s.sha, "title": s.title} for s in f.suspects],
                "suspect_count": f.suspect_count,
                "bisect_minutes": f.bisect_minutes,
            }
            for f in found.findings
        ],
        "improvements": [
            {
                "bucket": i.bucket,
                "hardware": i.hardware,
                "metric": i.metric,
                "good": i.good,
                "bad": i.bad,
                **change(i.change),
            }
            for i in found.improvements
        ],
        "posted": [
            {"action": p.action, "issue": p.issue, **p.key.to_json(), "detail": p.detail}
            for p in done.posted
        ],
        "bisects": [r.to_json() for r in done.requests],
        "failed": [{**f.key.to_json(), "error": f.error} for f in done.failed],
        "notes": list(found.notes),
    }


def survey_text(found: Survey, posted: Sequence[Posted] = (), failed: Sequence[Failed] = ()) -> str:
    """The human summary: open regressions, those closed, improvements, what was posted
    and what GitHub refused."""
    from perfgate.baselines.alerting import FindingState
    from perfgate.util.console import format_figure

    lines = [
        f"post-merge alerts on {found.target_branch} at {found.tip[:12]}: {found.series} "
        f"series; {len(found.open)} open regression(s), {len(found.improvements)} improvement(s)"
    ]
    for f in found.findings:
        episode = f.episode
        if f.state is FindingState.OPEN:
            lines.append(
                f"  REGRESSION {f.key.bucket} {f.key.metric} ({f.key.hardware}): "
                f"{episode.latest.effect_text()} since {f.key.bad[:12]} (last good "
                f"{f.key.good[:12]}, {f.suspect_count} suspect commit(s)); "
                f"{format_figure(episode.latest.after)} {f.unit}"
            )
        elif f.state is FindingState.RECOVERED and episode.recovery is not None:
            lines.append(
                f"  recovered  {f.key.bucket} {f.key.metric}: the change since "
                f"{f.key.bad[:12]} is gone at {f.sha(episode.recovery.first)[:12]}"
            )
        else:
            lines.append(f"  accepted   {f.key.bucket} {f.key.metric} since {f.key.bad[:12]}")
    for i in found.improvements:
        lines.append(
            f"  improved   {i.bucket} {i.metric} ({i.hardware}): {i.change.effect_text()} "
            f"since {i.bad[:12]}"
        )
    for p in posted:
        lines.append(f"  {p.action} #{p.issue} ({p.key.bucket} {p.key.metric})")
    for failure in failed:
        key = failure.key
        lines.append(f"  NOT POSTED ({key.bucket} {key.metric}): {failure.error}")
    return "\n".join(lines)


def run_post_bisect(args: argparse.Namespace) -> int:
    """Comment a bisect's result on its alert's issue (a trusted run only)."""
    from perfgate import context
    from perfgate.github.alerts import post_bisect, titles_of, why_not_post_bisect
    from perfgate.github.client import GitHubClient
    from perfgate.util import jsonfile
    from perfgate.util.console import annotate, say
    from perfgate.util.git import try_git

    config = load_config(args.config)
    here = context.detect(os.environ)
    token = os.environ.get("GITHUB_TOKEN")
    why = why_not_post_bisect(here, token)
    if why is not None:
        annotate("notice", f"the bisect result was not posted: {why}")
        return ExitCode.OK
    if args.issue < 1:
        raise UsageError(f"--issue {args.issue}: an issue number is at least 1")
    try:
        result = jsonfile.read(args.result)
    except jsonfile.JsonError as exc:
        raise UsageError(f"{args.result}: not a bisect result ({exc})") from None
    if not isinstance(result, dict):
        raise UsageError(f"{args.result}: not a bisect result (not a JSON object)")
    bucket = config.find(result.get("bucket"))
    unit = bucket.metric.unit if bucket else ""
    shas = [str(s) for s in (result.get("first_bad"), result.get("last_good")) if s]
    listing = try_git("log", "--no-walk", "--format=%H%x1f%s", *shas) if shas else None
    assert token is not None and here.repository is not None
    client = GitHubClient(api_url=here.api_url, repository=here.repository, token=token)
    try:
        with _permissions("issues: write"):
            post_bisect(client, args.issue, result, titles_of((listing or "").splitlines()), unit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    say(f"posted the bisect result on issue #{args.issue}")
    return ExitCode.OK
