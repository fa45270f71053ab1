"""Judge every result artifact against its baseline window and write the report surfaces.

Writes summary.md, verdict.json and junit.xml into the report directory; on GitHub also
the step summary and step outputs. With --post, posts commit statuses and the sticky PR
comment when the token may write, and prints one notice otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from perfgate.cli.common import (
    EXIT_MEANINGS,
    VERDICT_OK,
    Verbs,
    add_baseline_source,
    add_config,
    add_json,
    add_report_dir,
    add_selection,
    add_verb,
    baseline_is_local,
    closing_lines,
    human,
    print_json,
    selected,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode


def register(verbs: Verbs) -> None:
    """``gate``."""
    gate = add_verb(
        verbs,
        "gate",
        help="judge result artifacts and write the report",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate gate --results .perfgate/results",
            "perfgate gate --results results/ --remote --json > verdict.json",
            "perfgate gate --results results/ --post   # in CI: statuses and the PR comment",
        ),
        exits={
            ExitCode.OK: VERDICT_OK,
            ExitCode.BLOCK: EXIT_MEANINGS[ExitCode.BLOCK],
            ExitCode.HARD_FAILURE: "a benchmark failed or did not report (HARD_FAILURE)",
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    add_config(gate)
    gate.add_argument("--results", type=Path, required=True, help="directory of result artifacts")
    add_report_dir(gate)
    add_selection(gate, "expect")
    add_baseline_source(gate)
    gate.add_argument(
        "--post",
        action="store_true",
        help="post commit statuses and the sticky PR comment when the token may write; "
        "otherwise print one notice (the exit code stays the verdict's)",
    )
    add_json(gate, "verdict.json")


def run(args: argparse.Namespace) -> int:
    """Judge every result artifact against its baseline and write the report surfaces."""
    from perfgate import context
    from perfgate.artifacts import load_results
    from perfgate.baselines.evaluate import evaluate
    from perfgate.baselines.store import open_store
    from perfgate.report.surfaces import write_github_surfaces, write_report
    from perfgate.report.terminal import terminal_table
    from perfgate.report.verdict import row_json, verdict_document
    from perfgate.util.console import annotate, say

    config = load_config(args.config)
    expected = selected(config, args)
    artifacts = load_results(args.results)
    report = evaluate(
        config,
        expected,
        artifacts.results,
        open_store(config, local=baseline_is_local(args)),
        unreadable=artifacts.unreadable,
    )
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    report = dataclasses.replace(report, run_url=run.run_url)
    # Every surface renders verdict.json: its rows built once, the document encoded once.
    rows = [row_json(row) for row in report.rows]
    document = verdict_document(report, rows)
    verdict = document.data
    paths = write_report(report, args.report_dir, document)
    if run.on_github:
        from perfgate.github.handoff import write_context

        # Lets the trusted workflow_run job post a fork pull request's verdict (R12).
        write_context(run, args.report_dir)
    write_github_surfaces(report, verdict=verdict)
    out = human(args)
    print(terminal_table(report, rows_json=rows), file=out)
    for note in report.notes:
        annotate("warning", note, stream=out)
    say(f"report in {paths['summary']} and {paths['verdict']}")
    if args.post:
        from perfgate.github.post import post_from_run, say_published

        published = post_from_run(
            verdict,
            run,
            os.environ.get("GITHUB_TOKEN"),
            stream=out,
            trend_url=report.trend_url,
        )
        if published is not None:
            say_published(published, run.head_sha or "", run.pr_number)
    for line in closing_lines(report, local_bench=False, gate=config.gate):
        say(line)
    if args.json:
        print_json(verdict)
    return report.exit_code
