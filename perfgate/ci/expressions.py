"""The GitHub expressions workflows are gated with: branches, events, labels (R12, R14)."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.config import branch_problem
from perfgate.errors import ConfigError

#: A pull request carrying this label is benchmarked whatever files it touches.
RUN_LABEL = "perf-gate"


def expr_string(text: str) -> str:
    """A single-quoted literal inside a GitHub expression; '' escapes a quote.

    Inside an ``if:`` a literal holding ``${{`` would turn the whole condition into a
    template string, which is always true. Config validation refuses such values; this
    refuses them again rather than print one (R12, R14).
    """
    if "${{" in text or "}}" in text or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ConfigError(
            f"{text!r} cannot be a literal in a workflow expression: it holds '${{{{', '}}}}' "
            "or a control character; fix the value in perfgate.yaml"
        )
    return "'" + text.replace("'", "''") + "'"


def branch_condition(patterns: Sequence[str], ref: str = "github.ref") -> str:
    """A GitHub expression true when ``ref`` names a branch matched by one of ``patterns``."""
    terms: list[str] = []
    for pattern in patterns:
        problem = branch_problem(pattern, pattern=True)
        if problem:
            raise ConfigError(
                f"gate.protected_branches: {pattern!r} {problem}; it cannot be rendered as a "
                "workflow condition"
            )
        prefix = pattern.rstrip("*")
        if prefix == pattern:
            terms.append(f"{ref} == {expr_string('refs/heads/' + pattern)}")
        else:
            terms.append(f"startsWith({ref}, {expr_string('refs/heads/' + prefix)})")
    return " || ".join(terms)


def concurrency_group(prefix: str, *, coalesce_pushes: bool = False) -> str:
    """Pull requests share one group per PR (cancelled on update); everything else per commit.

    A ``labeled`` event for some other label gets a group of its own, so adding an
    unrelated label never cancels a running benchmark. Other events are keyed by event,
    ref and commit: a push of a commit to two protected branches, or a merge-group run and
    the push of the same commit, never wait on each other, and a third run of one of them
    can never cancel the other's pending run (and its publish) from the queue.

    ``coalesce_pushes`` keys pushes by branch alone: one push run per branch at a time,
    and GitHub keeps only the newest pending one (the others' changes are measured with
    it), so the pushes a branch pays for are bounded by how long a push run takes.
    """
    pr = "github.event_name == 'pull_request'"
    other_label = (
        f"github.event.action == 'labeled' && github.event.label.name != {expr_string(RUN_LABEL)}"
    )
    pushes = (
        "github.event_name == 'push' && format('push-{0}', github.ref) || "
        if coalesce_pushes
        else ""
    )
    return (
        f"{prefix}-${{{{ {pr} && !({other_label}) && "
        f"format('pr-{{0}}', github.event.pull_request.number) || "
        f"{pr} && format('label-{{0}}', github.run_id) || {pushes}"
        f"format('{{0}}-{{1}}-{{2}}', github.event_name, github.ref, github.sha) }}}}"
    )


def config_condition() -> str:
    """When the gate runs at all: not for drafts, nor for a label other than the run label."""
    label = expr_string(RUN_LABEL)
    return (
        "github.event_name != 'pull_request' || (!github.event.pull_request.draft && "
        f"(github.event.action != 'labeled' || github.event.label.name == {label}))"
    )


#: Only these events post statuses from the gate job itself; they run code already on
#: (or queued for) a protected branch. Every other event's gate job is read-only.
TRUSTED_EVENTS = ("push", "merge_group")


def trusted_event_condition() -> str:
    """A GitHub expression true for the events whose gate job may write statuses."""
    return " || ".join(f"github.event_name == {expr_string(e)}" for e in TRUSTED_EVENTS)
