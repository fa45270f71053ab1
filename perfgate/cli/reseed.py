"""Turn the gate's under-filled buckets into a plan that `seed --plan` measures.

A bucket is under-filled when it measured a figure but its window holds fewer than the
minimum samples. The plan names one commit (the pushed one), its target branch, and per
bucket how many samples are still missing.
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
    """``reseed-plan``."""
    reseed = add_verb(
        verbs,
        "reseed-plan",
        help="turn the gate's under-filled buckets into a seed plan",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate reseed-plan --report .perfgate/report/verdict.json --out plan.json",
            "perfgate reseed-plan --underfilled '[\"cartpole/numpy\"]' --commit SHA --target main",
        ),
    )
    add_config(reseed)
    origin = reseed.add_mutually_exclusive_group(required=True)
    origin.add_argument("--report", type=Path, metavar="FILE", help="the gate's verdict.json")
    origin.add_argument(
        "--underfilled", metavar="JSON", help="the gate's `underfilled` step output"
    )
    reseed.add_argument("--commit", metavar="SHA", help="with --underfilled (default: this run's)")
    reseed.add_argument(
        "--target", metavar="BRANCH", help="with --underfilled (default: this run's)"
    )
    reseed.add_argument("--out", type=Path, metavar="FILE", help="write the plan here")


def run(args: argparse.Namespace) -> int:
    """Turn the gate's under-filled buckets into a plan for `seed --plan`."""
    from perfgate import context
    from perfgate.baselines.reseed import (
        ReseedPlan,
        emit_plan,
        parse_underfilled,
        plan_buckets,
        plan_from_report,
    )

    config = load_config(args.config)
    min_samples = config.gate.baseline.min_samples
    if args.report is not None:
        try:
            report = json.loads(args.report.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"{args.report}: not a readable verdict.json: {exc}") from None
        plan = plan_from_report(report, min_samples, str(args.report))
    else:
        run = context.detect(os.environ, default_target=config.gate.target_branches[0])
        commit, target = args.commit or run.commit, args.target or run.target_branch
        if not commit or not target:
            raise UsageError("--underfilled needs --commit and --target (or a GitHub push run)")
        plan = ReseedPlan(
            commit=commit,
            target_branch=target,
            min_samples=min_samples,
            buckets=plan_buckets(parse_underfilled(args.underfilled), {}, min_samples),
        )
    emit_plan(plan, args.out)
    return ExitCode.OK
