"""Append trusted samples to the baseline branch: pushes to protected branches only (R9).

Unhealthy results are refused by name and the exit code says so as the gate's would;
the healthy ones are still written. Concurrent publishers lose nothing: a publish that
loses a race builds again on the new tip, until gate.baseline.publish_deadline_minutes.
Samples that still cannot land are kept in REPORT_DIR/pending-samples.ndjson and the exit
code is 3; a later publish given that file with --pending (or, on GitHub, gathering the
failed push runs' files with --gather-pending) lands them (samples stored already are
skipped by id). Every sample, a pending file's too, must be one a protected push of this
perfgate.yaml could have measured: its bucket, protected branches, and the current
experiment's hashes.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import Verbs, add_config, add_verb
from perfgate.config import Config, load_config
from perfgate.errors import ExitCode, GateMalfunction, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.store import BaselineStore
    from perfgate.context import RunContext


def register(verbs: Verbs) -> None:
    """``publish``."""
    publish = add_verb(
        verbs,
        "publish",
        help="append trusted samples to the baseline branch",
        description=__doc__,
        handler=run,
        examples=("perfgate publish --results results/   # CI, on pushes to protected branches",),
        exits={
            ExitCode.HARD_FAILURE: (
                "some results were unhealthy and not published (the rest were; exit 0 with "
                "gate.always_pass)"
            ),
            ExitCode.MALFUNCTION: "the samples could not be pushed",
            ExitCode.USAGE: "not a protected push, or artifacts from elsewhere",
        },
    )
    add_config(publish)
    publish.add_argument(
        "--results", type=Path, required=True, help="directory of result artifacts"
    )
    publish.add_argument(
        "--report-dir",
        type=Path,
        default=Path(".perfgate/report"),
        help="where samples that cannot land are kept, as pending-samples.ndjson "
        "(default: %(default)s)",
    )
    publish.add_argument(
        "--pending",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="pending-samples file of an earlier publish to land too, or a directory searched "
        "for them (repeatable)",
    )
    publish.add_argument(
        "--gather-pending",
        type=Path,
        metavar="DIR",
        help="on GitHub: download into DIR the pending samples this workflow's failed push "
        "runs on protected branches kept (each run checked through the API; needs "
        "actions: read), and land them too",
    )


def run(args: argparse.Namespace) -> int:
    """Append trusted samples (pushes to protected branches only) to the baseline branch."""
    from perfgate import context
    from perfgate.artifacts import load_results
    from perfgate.baselines.publish import (
        PENDING_FILE,
        PUSHED_SOURCE,
        pending_files,
        read_pending,
        record_samples,
        refuse_untrusted_results,
        refuse_untrusted_run,
        sample_check,
    )
    from perfgate.baselines.store import open_store
    from perfgate.judge.gate import exit_code_for
    from perfgate.judge.verdicts import Verdict
    from perfgate.util.console import say

    config = load_config(args.config)
    for notice in config.notices:
        say(f"notice: {notice}")
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    refuse_untrusted_run(config, run)
    artifacts = load_results(args.results)
    for bad in artifacts.unreadable:
        say(f"refused {bad.problem}")
    results = artifacts.results
    if not results:
        raise GateMalfunction(
            f"no readable result artifacts in {args.results}: nothing was published"
        )
    refuse_untrusted_results(config, results)
    store = open_store(config, local=False)
    if store is None:
        raise UsageError("publish must run inside the repository's git checkout")

    # One set of checks for every line that can land (R9, R14): this run's samples, and
    # each pending file's, wherever it came from.
    check = sample_check(config)
    files, notes = pending_files(args.pending)
    if args.gather_pending is not None:
        gathered, gather_notes = _gather(args.gather_pending, run, config, store)
        files, notes = [*files, *gathered], [*notes, *gather_notes]
    carried, refusals = read_pending(files, check)
    for note in [*notes, *refusals]:
        say(note)
    message = f"Append baseline samples from {run.commit}"
    refused = record_samples(
        store,
        results,
        PUSHED_SOURCE,
        message,
        carried=carried,
        pending=args.report_dir / PENDING_FILE,
        check=check,
    )
    refused += len(artifacts.unreadable)
    if refused:
        # A failed run is never a baseline; the exit code says so as the gate's would (R8).
        say(f"{refused} unhealthy or unreadable result(s) were not published")
        return exit_code_for(Verdict.HARD_FAILURE, always_pass=config.gate.always_pass)
    return ExitCode.OK


def _gather(
    into: Path, run: RunContext, config: Config, store: BaselineStore
) -> tuple[list[Path], list[str]]:
    """The pending files of this workflow's trusted failed push runs, and notes; a failing
    API only delays them (this publish's own samples still land)."""
    from perfgate.baselines.publish import on_branch_tips
    from perfgate.github.client import GitHubClient, GitHubError
    from perfgate.github.pending import gather_pending

    token = os.environ.get("GITHUB_TOKEN", "")
    if not (run.on_github and run.repository and run.ci.run_id and token.strip()):
        return [], ["--gather-pending: not a GitHub job with GITHUB_TOKEN; nothing gathered"]
    on_branch = on_branch_tips(store, store.remote or config.gate.baseline.remote)
    client = GitHubClient(api_url=run.api_url, repository=run.repository, token=token)
    try:
        gathered = gather_pending(
            client,
            run_id=run.ci.run_id,
            protected=config.gate.is_protected,
            on_branch=on_branch,
            into=into,
        )
    except GitHubError as exc:
        return [], [
            f"cannot list earlier runs ({exc}); samples they kept wait for the next publish"
        ]
    return list(gathered.files), list(gathered.notes)
