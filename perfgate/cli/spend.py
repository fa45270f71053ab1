"""Sum what published runs cost, from the ledger on the baseline branch (R17).

Every publish keeps, beside its samples, what each bucket run cost its runner (setup,
launches, retries, warm-ups, waits). This sums it per day, per bucket and per CI run,
and says what a job's setup and one launch of each bucket took: the figures `nox -s
quality` otherwise assumes. Pull requests never write to the branch: what a pull
request's run cost is in its own summary and verdict.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from perfgate.cli.common import (
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_config,
    add_json,
    add_verb,
    baseline_is_local,
    repo_top,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.ledger import SpendSummary


def register(verbs: Verbs) -> None:
    """``spend``."""
    spend = add_verb(
        verbs,
        "spend",
        help="sum what published runs cost, per day, bucket and CI run",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate spend",
            "perfgate spend --remote --days 7 --json > spend.json",
        ),
        exits={
            ExitCode.OK: "the sums were printed (none when nothing is recorded yet)",
            ExitCode.USAGE: EXIT_MEANINGS[ExitCode.USAGE],
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    add_config(spend)
    spend.add_argument(
        "--days", type=int, metavar="N", help="only the last N days (default: everything kept)"
    )
    spend.add_argument("--hardware", metavar="SLUG", help="only this hardware (default: all)")
    add_json(spend, "the sums")
    add_baseline_source(spend)


def run(args: argparse.Namespace) -> int:
    """Sum the ledger on the baseline branch and print it."""
    from perfgate.baselines.ledger import summarise
    from perfgate.baselines.store import open_store
    from perfgate.util.console import say

    if args.days is not None and args.days < 1:
        raise UsageError(f"--days {args.days}: give a number of days of at least 1")
    repo_top()
    config = load_config(args.config)
    store = open_store(config, local=baseline_is_local(args))
    assert store is not None  # repo_top found the repository
    tip = store.refresh()
    records = store.spend(tip) if tip else []
    for warning in store.warnings:
        say(warning)
    if args.hardware:
        records = [r for r in records if r.hardware == args.hardware]
    since = (datetime.now(UTC) - timedelta(days=args.days - 1)).date() if args.days else None
    summary = summarise(records, since=since)
    out = sys.stderr if args.json else sys.stdout
    print(text(summary, f"{store.branch} at {tip[:12]}" if tip else store.branch), file=out)
    if args.json:
        print(
            json.dumps(document(summary, branch=store.branch, tip=tip), indent=2, allow_nan=False)
        )
    return ExitCode.OK


def text(summary: SpendSummary, where: str) -> str:
    """The sums as a reader reads them."""
    if not summary.per_run:
        return f"no run's cost is recorded on {where} yet (publish records it)"
    days = sorted(summary.by_day)
    width = max(len(bucket) for bucket in summary.by_bucket)
    lines = [
        f"what published runs cost, from {where}: {summary.minutes:.1f} runner-minutes in "
        f"{len(summary.per_run)} run(s), {days[0]} to {days[-1]}",
        "per day:",
    ]
    for day, t in sorted(summary.by_day.items()):
        lines.append(f"  {day}  {t.minutes:9.1f} min  {t.runs:4d} bucket run(s)")
    lines.append("per bucket:")
    for bucket, t in summary.by_bucket.items():
        launch = summary.launch_minutes.get(bucket)
        lines.append(
            f"  {bucket:<{width}}  {t.minutes:9.1f} min  {t.runs:4d} run(s), "
            f"{t.minutes / t.runs:.1f} min a run"
            + ("" if launch is None else f", a launch {launch:.2f} min")
        )
    setup = summary.setup_minutes
    lines += [
        f"per run (a CI run's buckets together; outside CI a bucket run alone): mean "
        f"{summary.minutes / len(summary.per_run):.1f} min, 95th percentile "
        f"{summary.per_run_percentile(0.95) or 0.0:.1f}, most {max(summary.per_run):.1f}",
        "a job's setup: "
        + (
            "not recorded (a bench job records it once it notes when it began)"
            if setup is None
            else f"{setup:.2f} min (the median over the jobs that recorded one)"
        ),
        "pull requests' runs are not on the branch: each one's cost is in its own summary",
    ]
    return "\n".join(lines)


def document(summary: SpendSummary, *, branch: str, tip: str | None) -> dict[str, Any]:
    """The sums as JSON: what ``nox -s quality`` reads to price runs as they were spent."""
    return {
        "branch": branch,
        "tip": tip,
        "runner_minutes": round(summary.minutes, 3),
        "runs": len(summary.per_run),
        "per_run": {
            "mean": round(summary.minutes / len(summary.per_run), 3) if summary.per_run else None,
            "p95": summary.per_run_percentile(0.95),
            "max": max(summary.per_run, default=None),
        },
        "by_day": [
            {"day": day.isoformat(), "bucket_runs": t.runs, "minutes": round(t.minutes, 3)}
            for day, t in sorted(summary.by_day.items())
        ],
        "by_bucket": [
            {"bucket": bucket, "runs": t.runs, "minutes": round(t.minutes, 3)}
            for bucket, t in summary.by_bucket.items()
        ],
        "setup_minutes": summary.setup_minutes,
        "launch_minutes": summary.launch_minutes,
    }
