"""Run benchmark buckets and write one result artifact each; locally, also judge them.

In CI each GPU job runs one bucket (`--bucket ID --out DIR`) and the aggregate job
judges them all with `gate`. On a laptop `bench` judges against the local baseline
branch and prints the verdict table; `--record` keeps the run's healthy figures there.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from perfgate.cli.common import (
    DEFAULT_RESULTS,
    DEFAULT_WORK,
    EXIT_MEANINGS,
    Verbs,
    add_config,
    add_json,
    add_report_dir,
    add_selection,
    add_verb,
    closing_lines,
    human,
    print_json,
    selected,
)
from perfgate.config import Config, ConfirmMode, load_config
from perfgate.errors import ExitCode, UsageError


def register(verbs: Verbs) -> None:
    """``bench``."""
    bench = add_verb(
        verbs,
        "bench",
        help="run buckets and write their result artifacts",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate bench",
            "perfgate bench --bucket cartpole/numpy --record",
            "perfgate bench --bucket ID --out results/ --no-judge   # what a CI job runs",
        ),
        exits={
            ExitCode.BLOCK: "judged locally, blocking mode: a regression",
            ExitCode.HARD_FAILURE: "judged locally, blocking mode: a benchmark failed",
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    add_config(bench)
    add_selection(bench, "run")
    bench.add_argument(
        "--out", type=Path, default=DEFAULT_RESULTS, help="result directory (default: %(default)s)"
    )
    bench.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK,
        help="logs, attempt outputs and caches (default: %(default)s)",
    )
    bench.add_argument(
        "--no-judge",
        action="store_true",
        help="only run and write artifacts (CI never judges here)",
    )
    bench.add_argument(
        "--record",
        action="store_true",
        help="after judging, keep this run's healthy figures on the local baseline branch",
    )
    count = bench.add_mutually_exclusive_group()
    count.add_argument(
        "--repeats",
        type=int,
        metavar="N",
        help="take N samples of every bucket instead of its configured repeats (e.g. to "
        "`compare` two runs, which needs 5 a side); a suspicious bucket may take more",
    )
    count.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="take exactly K samples of every bucket, never more to confirm (a qualification "
        "allocation: the same design for every bucket and runner)",
    )
    bench.add_argument(
        "--run-label",
        default=os.environ.get("PERFGATE_RUN_LABEL") or None,
        metavar="LABEL",
        help="name the allocation this run belongs to (a qualification's runner job); "
        "recorded in each artifact and keys its caches (default: $PERFGATE_RUN_LABEL)",
    )
    bench.add_argument(
        "--quiet",
        action="store_true",
        help="do not stream the benchmark's output while it runs (its log file keeps it all)",
    )
    add_report_dir(bench)
    add_json(bench, "the results (and, when judged, the verdict)")


def _echo(line: str) -> None:
    # stderr: stdout belongs to the tables, or to the one --json document.
    print(f"  | {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run buckets and write one result artifact each; locally also judge them."""
    from perfgate import context
    from perfgate.console import Progress, bench_table, on_github, say
    from perfgate.run import hardware
    from perfgate.run.bench import BenchSettings, run_buckets

    config: Config = load_config(args.config)
    buckets = selected(config, args)
    count = args.samples if args.samples is not None else args.repeats
    if count is not None:
        flag = "--samples" if args.samples is not None else "--repeats"
        if not 1 <= count <= 100:
            raise UsageError(f"{flag} {count}: take between 1 and 100 samples")
        buckets = tuple(
            dataclasses.replace(
                b,
                repeats=count,
                # --samples: exactly K, so confirmation has no room to take more.
                max_repeats=count if args.samples is not None else max(b.max_repeats, count),
            )
            for b in buckets
        )
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    if args.run_label is not None:
        run = dataclasses.replace(run, run_label=context.check_run_label(args.run_label))
    settings = BenchSettings(
        checkout=Path.cwd(),
        # Absolute: the benchmark may change directory and must still find its cache.
        work_root=args.work_dir.resolve(),
        out_dir=args.out.resolve(),
        hardware=hardware.detect(),
        context=run,
        echo=None if args.quiet else _echo,
        say=say,
        admission=config.admission,
    )
    say(f"{len(buckets)} bucket(s) on {settings.hardware.slug}, results in {settings.out_dir}")
    from perfgate.baselines.store import open_store
    from perfgate.judge.calibration import configured_calibration
    from perfgate.judge.confirm import WindowConfirmer

    # Locally the local baseline branch; in CI the remote one, read-only (R9).
    store = open_store(config, local=not on_github())
    if args.samples is None:
        # Before a minute is spent: budgets that cannot decide, with their numbers.
        from perfgate.cli.config import report_budgets

        report_budgets(config, buckets, configured_calibration(config), stream=sys.stderr)
    progress = Progress(len(buckets), echo=not args.quiet)
    confirmer = WindowConfirmer(
        config,
        store,
        say=say,
        calibration=configured_calibration(config),
        checkout=settings.checkout,
        work_dir=settings.work_root,
    )
    results = run_buckets(
        buckets,
        settings,
        on_start=progress.start,
        on_done=progress.finish,
        # --samples: exactly K samples, so nothing confirms (neither repeats nor pairs).
        confirm_mode=ConfirmMode.OFF if args.samples is not None else config.gate.confirm,
        confirm=confirmer,
        pairing=confirmer,
        budget_minutes=config.gate.budget_minutes,
    )
    out = human(args)
    if args.no_judge or on_github():
        # In CI the aggregate job judges every bucket at once (nox -s gate).
        print(bench_table(results), file=out)
        if args.json:
            print_json({"results": [r.to_json() for r in results], "verdict": None})
        return ExitCode.OK
    from perfgate.baselines.publish import record_samples
    from perfgate.judge.gate import evaluate
    from perfgate.report.surfaces import write_report
    from perfgate.report.terminal import terminal_table
    from perfgate.report.verdict import report_json

    report = evaluate(config, buckets, results, store)
    write_report(report, args.report_dir)
    print(terminal_table(report), file=out)
    if args.record:
        if store is None:
            raise UsageError("--record needs a git repository to hold the baseline branch")
        record_samples(store, results, "local", "Record local baseline samples")
    min_samples = config.gate.baseline.min_samples
    for line in closing_lines(report, local_bench=not args.record, min_samples=min_samples):
        say(line)
    if args.json:
        print_json({"results": [r.to_json() for r in results], "verdict": report_json(report)})
    return report.exit_code
