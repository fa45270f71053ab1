"""Roll the CI image era: build, push and record a new era's image, then plan its reseed.

A dry run unless --execute: it prints what the roll would build, push, record and seed,
and a bound on runner time. --execute acts, and only on a push to a protected branch (or
a dispatch on one):

  recorded era   nothing to do, and it says so;
  no manifest    bootstrap: record the era against the image the baselines were measured
                 with (the branch's tag, pinned to its digest where the registry tells
                 it); reseed only buckets without a READY window of that runtime;
  new era        run image.roll's build, tag and push its refs, record the first (pinned
                 to its digest), and plan a reseed of every bucket at the pushed commit.

A failed login, build, tag or push exits 3 naming the step and records nothing. A
recorded era is immutable: --force REASON rebuilds it and keeps the reason in the
record. The reseed plan goes to --out and, on GitHub, to the step outputs; `seed --plan`
runs it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    Verbs,
    add_baseline_source,
    add_config,
    add_verb,
    baseline_is_local,
)
from perfgate.config import Config, load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.era_roll import RollOutcome, RollPlan

TRUSTED_EVENTS = ("push", "workflow_dispatch")


def register(verbs: Verbs) -> None:
    """``roll-era``."""
    roll = add_verb(
        verbs,
        "roll-era",
        help="build and record a new image era, then plan its reseed (dry run unless --execute)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate roll-era                      # dry run: what "
            "it would build, record and seed",
            "perfgate roll-era --execute --out plan.json   # CI, protected pushes",
        ),
        exits={
            ExitCode.MALFUNCTION: (
                "a login, build, tag or push failed (named; the manifest is untouched)"
            ),
            ExitCode.USAGE: "a conflicting record without --force, or not a protected push",
        },
    )
    add_config(roll)
    roll.add_argument(
        "--checkout",
        type=Path,
        default=Path.cwd(),
        help="the source checkout whose era inputs are hashed and built (default: here)",
    )
    roll.add_argument("--execute", action="store_true", help="build, push, record and plan")
    roll.add_argument(
        "--force",
        metavar="REASON",
        help="rebuild and re-record an era the manifest has; REASON is kept in the record",
    )
    roll.add_argument(
        "--hardware",
        action="append",
        default=[],
        metavar="SLUG",
        help="bootstrap: look for READY windows on this hardware (repeatable; default: every "
        "hardware partition on the baseline branch)",
    )
    roll.add_argument(
        "--out",
        type=Path,
        default=Path(".perfgate/era/reseed-plan.json"),
        help="where --execute writes the reseed plan (default: %(default)s)",
    )
    add_baseline_source(roll)


def run(args: argparse.Namespace) -> int:
    """Plan the roll, print it, and with --execute (protected pushes only) carry it out."""
    from perfgate import context
    from perfgate.baselines.era_roll import RollRequest, execute_roll, plan_roll, roll_deadline
    from perfgate.baselines.reseed import emit_plan
    from perfgate.baselines.store import open_store
    from perfgate.baselines.verify import verify_store
    from perfgate.run import image
    from perfgate.util.console import say

    config = load_config(args.config)
    if config.image is None:
        raise UsageError(f"{config.path} has no 'image' block; there is no image era to roll")
    if args.force is not None and not args.force.strip():
        raise UsageError("--force needs a reason (it is written into the manifest record)")
    checkout = args.checkout
    where = context.detect(os.environ, cwd=checkout, default_target=config.gate.target_branches[0])
    commit, branch = where.commit, where.branch
    if not commit or not branch:
        raise UsageError(
            "roll-era needs the pushed commit and its branch: run it on a branch checkout, "
            "or in a push or dispatch run"
        )
    store = open_store(config, local=baseline_is_local(args))
    if store is None:
        raise UsageError("roll-era must run inside the repository's git checkout")
    era = image.era_of(config.image, checkout)
    tip = store.refresh()
    manifest = image.read_manifest(store.repo, tip, config.image.manifest, store.branch)
    request = RollRequest(
        spec=config.image,
        era=era,
        commit=commit,
        branch=branch,
        buckets=config.buckets,
        min_samples=config.gate.baseline.min_samples,
        force=args.force,
    )
    plan = plan_roll(
        request,
        manifest,
        # Bootstrap: a bucket with a READY window of its newest runtime (the image the
        # baselines were measured with) on any of its hardware partitions needs no seed.
        lambda: verify_store(
            store,
            config.buckets,
            hardware=args.hardware,
            target_branch=branch,
            min_samples=config.gate.baseline.min_samples,
            newest_runtime=True,
        )[0],
    )
    print(plan_report(plan, config, store.branch, manifest is None))
    trusted = where.event in TRUSTED_EVENTS and config.gate.is_protected(branch)
    refusal = (
        f"only pushes to protected branches ({', '.join(config.gate.protected_branches)}) and "
        f"dispatches on them may roll an era; this run is a {where.event!r} event on "
        f"{branch!r}"
    )
    if not args.execute:
        print(
            "dry run: nothing was built, pushed, recorded or planned; add --execute to act"
            + ("" if trusted or not plan.records else f" ({refusal})")
        )
        return ExitCode.OK
    if not trusted:
        raise UsageError(f"refusing to roll the image era: {refusal}")
    deadline = roll_deadline(config.image.roll, time.monotonic())
    outcome = execute_roll(
        plan, store=store, cwd=checkout, env=os.environ, log=say, deadline=deadline
    )
    for note in outcome.notes:
        say(note)
    say(outcome_line(outcome, plan, store.branch))
    write_outputs(outcome, plan)
    emit_plan(outcome.reseed, args.out)
    return ExitCode.OK


def plan_report(plan: RollPlan, config: Config, baseline_branch: str, bootstrap: bool) -> str:
    """What the roll will build, push, record and seed, and the runner time it costs."""
    from perfgate.baselines.era_roll import RollAction, reseed_minutes
    from perfgate.baselines.seed.plan import format_minutes
    from perfgate.util.console import render_table

    request, era = plan.request, plan.request.era
    spec = request.spec
    inputs = ", ".join(f"{k}={v}" for k, v in era.contract["fields"].items())
    lines = [
        f"era {era.key} of {request.branch} at {request.commit[:12]} ({inputs})",
        f"manifest: {spec.manifest} on {baseline_branch}"
        + (" does not exist yet" if bootstrap else ""),
    ]
    if plan.action is RollAction.NOTHING:
        recorded = plan.recorded or {}
        lines.append(
            f"era {era.key} is recorded as {plan.image} (commit "
            f"{str(recorded.get('commit'))[:12]}): nothing to build, push, record or seed"
        )
        return "\n".join(lines)
    digest = (
        "pinned to its registry digest where the registry tells it"
        if spec.digest
        else "as tagged (no image.digest)"
    )
    if plan.action is RollAction.BOOTSTRAP:
        lines.append(
            f"bootstrap: record this era as {plan.image}, the image the baselines on "
            f"{baseline_branch} were measured with ({digest}); reseed only buckets without "
            "a READY window of their newest runtime"
        )
        lines.append(
            render_table(
                ["bucket", "window", "samples", "needed"],
                [
                    [r.bucket, r.status.value, str(r.samples), str(r.min_samples)]
                    for r in plan.readiness
                ],
            )
        )
    else:
        why = (
            f"rebuild era {era.key} (recorded as {(plan.recorded or {}).get('image')}), "
            f"forced: {request.force}"
            if plan.action is RollAction.REBUILD
            else f"new era {era.key}: build and push its image"
        )
        lines.append(why)
    lines += [f"  {c.step}: {c.text()}" for c in plan.commands]
    lines.append(f"record: {era.key[:12]} -> {plan.image} ({digest})")
    reseed = plan.reseed
    if not reseed.buckets:
        lines.append("seed: nothing (every bucket has a READY window)")
        return "\n".join(lines)
    lines.append(
        f"seed: {len(reseed.buckets)} bucket(s) at {reseed.commit[:12]} for "
        f"{reseed.target_branch}, on each bucket's runners (`seed --plan`):"
    )
    by_id = {b.id: b for b in config.buckets}
    lines.append(
        render_table(
            ["bucket", "have", "seed", "timeout"],
            [
                [b.id, str(b.have), str(b.samples), f"{by_id[b.id].timeout_minutes:g}m"]
                for b in reseed.buckets
            ],
        )
    )
    plain, retried = reseed_minutes(reseed, config.buckets)
    build = (
        f"; the build is bounded by its job's {spec.roll.timeout_minutes}m"
        if spec.roll and plan.action is not RollAction.BOOTSTRAP
        else ""
    )
    lines.append(
        f"runner time: at most {format_minutes(plain)} of bucket runners by the buckets' "
        f"timeouts ({format_minutes(retried)} if every run needed its retries){build}"
    )
    return "\n".join(lines)


def outcome_line(outcome: RollOutcome, plan: RollPlan, baseline_branch: str) -> str:
    """One line: what the roll did."""
    key = plan.request.era.key
    if not plan.records:
        return f"era {key} is recorded as {outcome.image}; nothing to do"
    if not outcome.recorded_here:
        return f"era {key} is recorded as {outcome.image} by another roll; nothing recorded here"
    where = outcome.baseline_commit[:12] if outcome.baseline_commit else "?"
    return f"era {key} -> {outcome.image} recorded on {baseline_branch} at {where}"


def write_outputs(outcome: RollOutcome, plan: RollPlan) -> None:
    """``$GITHUB_OUTPUT``: what the roll did and the image, for the seed jobs."""
    from perfgate.util.console import write_step_outputs

    write_step_outputs(
        {
            "era_action": outcome.action.value,
            "era_key": plan.request.era.key,
            "image": outcome.image,
            "recorded": "true" if outcome.recorded_here else "false",
        }
    )
