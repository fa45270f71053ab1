"""Replay historical commits to fill baselines (dry run unless --execute).

Each commit is checked out in a throwaway worktree and each selected bucket runs that
commit's own benchmark through the normal bench path. The dry run prints the plan (commits
x buckets x samples, what is already stored) and a bound on runner time; --execute runs
it and appends the samples. Seeding again with the same --seed-key skips what is stored.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    DEFAULT_WORK,
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_selection,
    add_verb,
    baseline_is_local,
)
from perfgate.config import DEFAULT_CONFIG, Config, load_config
from perfgate.errors import ExitCode, UsageError
from perfgate.util import jsonfile
from perfgate.util.console import annotate, format_figure, render_table, say

if TYPE_CHECKING:
    from perfgate.baselines.seed.plan import SeedOptions, SeedPlan
    from perfgate.baselines.seed.records import SeedRecord
    from perfgate.baselines.store import BaselineStore


def register(verbs: Verbs) -> None:
    """``seed``."""
    seed = add_verb(
        verbs,
        "seed",
        help="replay historical commits to fill baselines (dry run unless --execute)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate seed --branch main --last 5                # dry run: the plan and its cost",
            "perfgate seed --branch main --last 5 --execute      # "
            "measure, keep on the local branch",
            "perfgate seed --plan plan.json --execute --push     # CI: a reseed plan, pushed",
        ),
        exits={
            ExitCode.HARD_FAILURE: "some seed runs failed (the others were recorded)",
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    seed.add_argument(
        "--config",
        type=Path,
        default=None,
        help="seed every commit with this perfgate.yaml (default: each commit's own, "
        "and ./perfgate.yaml for the store and the default target)",
    )
    source = seed.add_mutually_exclusive_group(required=True)
    source.add_argument("--branch", metavar="BRANCH", help="replay the newest commits of BRANCH")
    source.add_argument("--commits", nargs="+", metavar="SHA", help="replay these commits")
    source.add_argument(
        "--commit-branch",
        action="append",
        default=[],
        metavar="SHA:BRANCH",
        help="replay SHA for target BRANCH (repeatable)",
    )
    source.add_argument(
        "--plan",
        type=Path,
        metavar="FILE",
        help="a reseed plan (`perfgate reseed-plan`, `perfgate roll-era`); --bucket narrows it",
    )
    seed.add_argument(
        "--last", type=int, default=5, metavar="N", help="with --branch: how many commits (5)"
    )
    seed.add_argument(
        "--target",
        metavar="BRANCH",
        help="the branch the samples are for (default: --branch, else the first "
        "target branch of perfgate.yaml)",
    )
    add_selection(seed, "seed")
    seed.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="samples per bucket and commit (default: enough for the commits to fill "
        "one minimum window together)",
    )
    seed.add_argument(
        "--strict-ancestry",
        action="store_true",
        help="reject (exit 4) commits that are not ancestors of the target tip instead of "
        "dropping them",
    )
    seed.add_argument("--execute", action="store_true", help="run the plan and write samples")
    seed.add_argument(
        "--seed-key",
        help="names this seeding: the same key skips samples already stored; a new key "
        "measures the same commits again (default: the --plan's key, else 'seed')",
    )
    seed.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK / "seed",
        help="worktrees, logs and results (default: %(default)s)",
    )
    seed.add_argument(
        "--summary",
        type=Path,
        default=Path(".perfgate/seed/seed_records.json"),
        help="the summary of the records (default: %(default)s)",
    )
    add_baseline_source(
        seed,
        remote_flag="--push",
        remote_help="read the baseline branch on the configured remote and push the seeded "
        "samples there (with --execute); the default in CI",
    )


def run(args: argparse.Namespace) -> int:
    """Replay historical commits and append their samples (dry run unless --execute)."""
    from perfgate.baselines.seed.plan import SeedOptions, Selection
    from perfgate.baselines.store import open_store

    current = load_config(args.config or DEFAULT_CONFIG)
    store = open_store(current, local=baseline_is_local(args))
    if store is None:
        raise UsageError("seed must run inside the repository's git checkout")
    options = SeedOptions(
        branch=args.branch,
        last=args.last,
        commits=tuple(args.commits or ()),
        commit_branches=tuple(args.commit_branch),
        plan=args.plan,
        target=args.target,
        selection=Selection(
            ids=tuple(args.bucket), tags=tuple(args.tag), backends=tuple(args.backend)
        ),
        samples=args.samples,
        strict_ancestry=args.strict_ancestry,
        execute=args.execute,
        seed_key=args.seed_key,
        work_dir=args.work_dir.resolve(),
        summary=args.summary,
        config_given=args.config is not None,
    )
    return seed_command(options, current, store)


def plan_table(plan: SeedPlan) -> str:
    """Commits x buckets x samples, with what is already stored and the timeout of each."""
    from perfgate.baselines.seed.plan import format_minutes, runner_minutes

    rows = [
        [
            e.target.commit[:12],
            e.target.target_branch,
            e.bucket.id,
            str(len(e.indices)),
            str(len(e.present)),
            str(e.stored),
            str(len(e.missing)),
            f"{e.bucket.timeout_minutes:g}m",
        ]
        for e in plan.entries
    ]
    table = render_table(
        ["commit", "target", "bucket", "samples", "present", "stored", "to run", "timeout"], rows
    )
    plain, retried = runner_minutes((e.bucket, len(e.missing)) for e in plan.entries)
    commits = len({(e.target.commit, e.target.target_branch) for e in plan.entries})
    lines = [
        f"{table}\n",
        f"{commits} commit(s), {len(plan.entries)} bucket run(s), {plan.runs} sample "
        f"run(s) on {plan.hardware} ({plan.present} already present).",
        f"Runner time: at most {format_minutes(plain)} by the buckets' timeouts "
        f"({format_minutes(retried)} if every run needed its retries).",
    ]
    if plan.stored > plan.present:
        lines.append(
            f"present: this seed's own samples (seed key {plan.seed_key}), which a replay "
            f"skips; stored: every sample of the experiment at that commit ({plan.stored}, "
            "e.g. from `bench --record` or a push), which windows read but a seed does not "
            "count as its own"
        )
    return "\n".join(lines)


def records_table(records: Sequence[SeedRecord]) -> str:
    """One row per planned sample: what happened to it."""
    rows = [
        [
            r.commit[:12],
            r.target_branch,
            r.bucket,
            str(r.sample_index),
            r.status.value,
            format_figure(r.value),
            r.detail or "",
        ]
        for r in records
    ]
    return render_table(["commit", "target", "bucket", "index", "status", "figure", "note"], rows)


def seed_command(options: SeedOptions, current: Config, store: BaselineStore) -> int:
    """Plan, print, and with ``execute`` run and summarise."""
    from perfgate import context
    from perfgate.baselines.reseed import plan_text
    from perfgate.baselines.seed.prepare import plan_seed, reseed_scope
    from perfgate.baselines.seed.records import RecordStatus, summary_json
    from perfgate.baselines.seed.replay import ExecuteSettings, execute
    from perfgate.run import hardware

    reseed, selection = reseed_scope(options, current)
    if reseed is not None:
        print(plan_text(reseed))
        if not reseed.buckets:
            return ExitCode.OK
    machine = hardware.detect()
    plan = plan_seed(
        options,
        current,
        store,
        hardware=machine.slug,
        reseed=reseed,
        selection=selection,
        warn=lambda line: annotate("warning", line),
    )
    print(plan_table(plan))
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    if not options.execute:
        print("dry run: nothing was run or written; add --execute to run this plan")
        return ExitCode.OK
    records: list[SeedRecord] = []
    run, unnamed = hardware.identify_machine(
        context.detect(os.environ, cwd=store.repo), current.gate.runner_identity, os.environ
    )
    if unnamed:
        annotate("warning", unnamed)
    settings = ExecuteSettings(
        repo=store.repo,
        store=store,
        work_dir=options.work_dir,
        hardware=machine,
        context=run,
        admission=current.admission,
        image=current.image,
    )
    try:
        execute(plan, settings, records.append)
    finally:
        jsonfile.write(options.summary, summary_json(plan, records, executed=True))
        print(records_table(records))
        say(f"seed summary in {options.summary}")
    failed = [r for r in records if r.status is RecordStatus.FAILED]
    if failed:
        annotate(
            "error",
            f"{len(failed)} seed run(s) failed; the others were recorded. "
            f"See {options.summary} and the logs under {options.work_dir}",
        )
        return ExitCode.HARD_FAILURE
    return ExitCode.OK
