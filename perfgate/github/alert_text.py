"""The texts of regression issues (R18): their titles, bodies and comments, each within
GitHub's size limit, every text that came from commits or pull requests made inert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.baselines.acks import Acknowledgement
from perfgate.baselines.alerting import Finding, Survey
from perfgate.config import PRIMARY, Config
from perfgate.judge.goodness import signed_pct
from perfgate.report.untrusted import md_text
from perfgate.report.verdict import clipped
from perfgate.util.console import format_figure

LABEL = "perfgate-regression"
ACCEPTED_LABEL = "perfgate-accepted"
BISECT_WORKFLOW = "perfgate-bisect.yml"
TITLE_LIMIT = 200
#: A commit subject as an issue or comment quotes it: git lets a subject be any length.
SUSPECT_TITLE_LIMIT = 200
#: GitHub refuses issue and comment bodies over 65 536 characters; the marker line and
#: the note saying a text was cut fit in the rest.
BODY_LIMIT = 60_000
TRUNCATED = (
    "_…truncated to stay under GitHub's 65 536-character limit: the run's artifact "
    "(alerts.json, bisect.json) has the whole text._"
)
#: Marks the comment a push left, so a rerun of that push leaves no second one.
PUSHED = "<!-- perfgate-alert-push {sha} -->"


def _short(sha: str) -> str:
    return f"`{md_text(sha[:12])}`"


def commit_title(heading: str) -> str:
    """A commit's subject made inert, clipped first (escaping only makes it longer)."""
    return md_text(clipped(heading, SUSPECT_TITLE_LIMIT))


def fit(text: str) -> str:
    """``text`` within BODY_LIMIT characters: whole, or cut with a note saying so."""
    if len(text) <= BODY_LIMIT:
        return text
    kept = text[: BODY_LIMIT - len(TRUNCATED) - 2]
    # At a line when there is one, so no table row is left half drawn; one huge line
    # (free text of a result) is cut inside.
    lines = kept.rpartition("\n")[0] or kept
    return f"{lines}\n\n{TRUNCATED}"


def _series(finding: Finding) -> str:
    metric = finding.key.metric
    named = "" if metric == PRIMARY else f" {md_text(metric)}"
    return (
        f"**{md_text(finding.key.bucket)}**{named} (`{md_text(finding.metric_path)}`, "
        f"{md_text(finding.unit)}, on {md_text(finding.key.hardware)})"
    )


def title(finding: Finding) -> str:
    """``perfgate: cartpole/numpy -6.1 % since abc1234 (cpu-x)``, with a true minus sign."""
    metric = "" if finding.key.metric == PRIMARY else f" {finding.key.metric}"
    change = signed_pct(finding.episode.alert.change_pct)
    text = (
        f"perfgate: {finding.key.bucket}{metric} {change} % "
        f"since {finding.key.bad[:7]} ({finding.key.hardware})"
    )
    return text[:TITLE_LIMIT]


def bisect_decision(finding: Finding, max_minutes: float) -> tuple[bool, str]:
    """Whether to dispatch a bisect for ``finding``'s range, and the sentence that says so."""
    minutes = finding.bisect_minutes
    if finding.suspect_count <= 1:
        return False, "The range holds one commit: it is the change, nothing to bisect."
    if minutes is None:
        return False, (
            f"A bisect judges a bucket's primary metric only; this range of "
            f"{finding.suspect_count} commits is not bisected automatically."
        )
    cost = (
        f"A bisect of these {finding.suspect_count} commits costs at most {minutes:,.0f} "
        "runner-minutes"
    )
    if max_minutes <= 0:
        return False, f"{cost}; automatic bisects are off (alerts.bisect_max_minutes: 0)."
    if minutes > max_minutes:
        return False, (
            f"{cost}, over alerts.bisect_max_minutes ({max_minutes:g}): not dispatched. Run "
            f"{BISECT_WORKFLOW} by hand with good {finding.key.good[:12]} and bad "
            f"{finding.key.bad[:12]}."
        )
    return True, f"{cost}: dispatched ({BISECT_WORKFLOW}); its result is posted here."


def body(finding: Finding, survey: Survey, config: Config, bisect_note: str) -> str:
    """The issue: the change with its interval, the suspects, the trend link, the bisect."""
    alert = finding.episode.alert
    confirmed = finding.sha(alert.confirmed)
    lines = [
        f"{_series(finding)} got slower on `{md_text(survey.target_branch)}`: "
        f"**{md_text(alert.effect_text())}** (95 % interval), from "
        f"{format_figure(alert.before)} to {format_figure(alert.after)} {md_text(finding.unit)}, "
        f"confirmed by {alert.runs} pushes up to {_short(confirmed)}.",
        "",
        f"Suspect commits (first-parent, after the last good run at {_short(finding.key.good)} "
        f"up to the first bad one at {_short(finding.key.bad)}):",
        "",
        "| commit | title |",
        "|---|---|",
        *(f"| {_short(s.sha)} | {commit_title(s.title)} |" for s in finding.suspects),
    ]
    if finding.suspect_count > len(finding.suspects):
        lines.append(f"| … | {finding.suspect_count - len(finding.suspects)} more |")
    lines += ["", bisect_note]
    page = config.report.page_url(finding.bucket.file_stem)
    if page:
        lines += ["", f"Trend: [{md_text(finding.key.bucket)}]({page})"]
    lines += [
        "",
        "Is it intended (a more accurate solver, a new feature)? Add the "
        f"`{ACCEPTED_LABEL}` label to this issue: the next push records it and the window "
        "starts at the change. Or run `perfgate accept --bucket "
        f"{md_text(finding.key.bucket)} --commit {md_text(finding.key.bad[:12])} "
        '--reason "..."`.',
    ]
    return fit("\n".join(lines))


def follow_text(finding: Finding, sha: str) -> str:
    """A later push's comment: the regression with every run since it."""
    latest = finding.episode.latest
    return fit(
        f"{PUSHED.format(sha=sha)}\nStill slower at {_short(sha)}: "
        f"**{md_text(latest.effect_text())}** against the level before it, over "
        f"{latest.runs} pushes since the change ({format_figure(latest.after)} "
        f"{md_text(finding.unit)})."
    )


def closing_text(finding: Finding) -> str:
    """The comment that closes the issue: recovered with the figures, or accepted."""
    episode = finding.episode
    if episode.recovery is not None:
        recovery = episode.recovery
        return fit(
            f"Recovered at {_short(finding.sha(recovery.first))} (confirmed at "
            f"{_short(finding.sha(recovery.confirmed))}): the level is back at "
            f"{format_figure(recovery.level)} {md_text(finding.unit)}, "
            f"{md_text(recovery.effect_text())} against the level before the regression "
            f"({format_figure(episode.alert.before)}). Closing."
        )
    at = episode.accepted_at if episode.accepted_at is not None else episode.alert.first_bad
    return fit(
        f"Accepted as intended at {_short(finding.sha(at))}: the window starts there and this "
        f"change is not alerted again ({md_text(episode.latest.effect_text())} over "
        f"{episode.latest.runs} pushes). Closing."
    )


def accepted_text(ack: Acknowledgement) -> str:
    """The comment that closes an issue whose change was accepted at the change itself."""
    return fit(
        f"Accepted as intended at {_short(ack.commit)} ({md_text(ack.reason)}; "
        f"{md_text(ack.by)}): the window starts there and this change is not alerted again. "
        "Closing."
    )


def bisect_comment(result: Mapping[str, Any], titles: Mapping[str, str], unit: str) -> str:
    """The bisect's result as the alert's issue shows it: the first bad commit, both sides."""
    good, bad = str(result.get("good", "")), str(result.get("bad", ""))
    head = f"Bisect of {_short(good)}..{_short(bad)} ({result.get('candidates', '?')} commits)"
    status = result.get("status")
    if status != "found":
        why = result.get("why") or ""
        maybe = [str(s) for s in result.get("possibly_first_bad") or []]
        if maybe:
            why = "the first bad commit is one of " + ", ".join(_short(s) for s in maybe)
        return fit(
            f"{head}: no single first bad commit ({md_text(str(status))}). {md_text(str(why))}"
        )
    first_bad = str(result.get("first_bad") or "")
    last_good = str(result.get("last_good") or "")
    bad_step = result.get("first_bad_step") or {}
    good_step = result.get("last_good_step") or {}
    change = result.get("change_pct")
    change_text = f" ({change:+.1f} %)".replace("-", "\u2212") if isinstance(change, float) else ""
    return fit(
        f"{head}: the first bad commit is **{_short(first_bad)}** "
        f"{commit_title(titles.get(first_bad, ''))}\n\n"
        f"| | commit | figure |\n|---|---|---|\n"
        f"| last good | {_short(last_good)} | {format_figure(good_step.get('figure'))} "
        f"{md_text(unit)} |\n"
        f"| first bad | {_short(first_bad)} | {format_figure(bad_step.get('figure'))} "
        f"{md_text(unit)}{change_text} |"
    )
