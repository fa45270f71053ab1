"""Append trusted samples to the baseline branch: pushes to protected branches only (R9).

Unhealthy results are refused by name and the exit code says so as the gate's would;
the healthy ones are still written. Concurrent publishers lose nothing: a publish that
loses a race parks its samples on the origin for the next one, and retries until
gate.baseline.publish_deadline_minutes. Samples that still cannot land are kept in
REPORT_DIR/pending-samples.ndjson and the exit code is 3; a later publish given that
file with --pending lands them (samples stored already are skipped by id).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from perfgate.cli.common import Verbs, add_config, add_verb
from perfgate.config import load_config
from perfgate.errors import ExitCode, GateMalfunction, UsageError


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
                "blocking mode: some results were unhealthy and not published (the rest were)"
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


def run(args: argparse.Namespace) -> int:
    """Append trusted samples (pushes to protected branches only) to the baseline branch."""
    from perfgate import context
    from perfgate.baselines.publish import (
        PENDING_FILE,
        pending_files,
        read_pending,
        record_samples,
    )
    from perfgate.baselines.store import Sample, open_store
    from perfgate.console import say
    from perfgate.judge.gate import exit_code_for, load_results
    from perfgate.judge.verdicts import Verdict

    config = load_config(args.config)
    for notice in config.notices:
        say(f"notice: {notice}")
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    protected = ", ".join(config.gate.protected_branches)
    if run.event != "push" or not config.gate.is_protected(run.branch):
        raise UsageError(
            f"refusing to publish: baselines are written only by pushes to protected branches "
            f"({protected}); this run is a {run.event!r} event on {run.branch!r}. Locally, use "
            "`nox -s bench -- --record` to keep samples on your local baseline branch"
        )
    artifacts = load_results(args.results)
    for bad in artifacts.unreadable:
        say(f"refused {bad.problem}")
    results = artifacts.results
    if not results:
        raise GateMalfunction(
            f"no readable result artifacts in {args.results}: nothing was published"
        )
    # Store paths come only from buckets perfgate.yaml declares (R14): anything else is refused
    # before a single sample is written.
    known = set(config.bucket_ids())
    unknown = [r.bucket.id for r in results if r.bucket.id not in known]
    if unknown:
        raise UsageError(
            f"refusing to publish artifacts for buckets not in {config.path}: "
            f"{', '.join(sorted(set(unknown)))}; publish only the results of this config's "
            "bench jobs (nothing was written)"
        )
    foreign = [
        r.bucket.id
        for r in results
        if r.source.event != "push" or not config.gate.is_protected(r.source.branch)
    ]
    if foreign:
        raise UsageError(
            "refusing to publish artifacts not produced by a protected push: " + ", ".join(foreign)
        )
    store = open_store(config, local=False)
    if store is None:
        raise UsageError("publish must run inside the repository's git checkout")

    def accept(sample: Sample) -> str | None:
        # Only what a protected push of this config could have published rides along (R9, R14).
        if f"{sample.task}/{sample.backend_key}" not in known:
            return f"sample for a bucket not in {config.path}"
        if not config.gate.is_protected(sample.target_branch):
            return f"sample for the unprotected branch {sample.target_branch!r}"
        return None

    files, missing = pending_files(args.pending)
    carried, notes = read_pending(files, accept)
    for note in [*missing, *notes]:
        say(note)
    message = f"Append baseline samples from {run.commit}"
    refused = record_samples(
        store,
        results,
        "protected_branch",
        message,
        carried=carried,
        pending=args.report_dir / PENDING_FILE,
    )
    refused += len(artifacts.unreadable)
    if refused:
        # A failed run is never a baseline; the exit code says so as the gate's would (R8).
        say(f"{refused} unhealthy or unreadable result(s) were not published")
        return exit_code_for(Verdict.HARD_FAILURE, always_pass=config.gate.always_pass)
    return ExitCode.OK
