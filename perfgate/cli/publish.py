"""Append trusted samples to the baseline branch: pushes to protected branches only (R9).

Unhealthy results are refused by name and the exit code says so as the gate's would;
the healthy ones are still written. Concurrent publishers lose nothing: the store
fetches, reapplies and retries.
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


def run(args: argparse.Namespace) -> int:
    """Append trusted samples (pushes to protected branches only) to the baseline branch."""
    from perfgate import context
    from perfgate.baselines.publish import record_samples
    from perfgate.baselines.store import open_store
    from perfgate.console import say
    from perfgate.judge.gate import exit_code_for, load_results
    from perfgate.judge.verdicts import Verdict

    config = load_config(args.config)
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
    message = f"Append baseline samples from {run.commit}"
    refused = record_samples(store, results, "protected_branch", message)
    refused += len(artifacts.unreadable)
    if refused:
        # A failed run is never a baseline; the exit code says so as the gate's would (R8).
        say(f"{refused} unhealthy or unreadable result(s) were not published")
        return exit_code_for(Verdict.HARD_FAILURE, config.gate.mode)
    return ExitCode.OK
