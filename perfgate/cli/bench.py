"""Run benchmark buckets and write one result artifact each; locally, also judge them.

In CI each GPU job runs one bucket (`--bucket ID --out DIR`) and the aggregate job
judges them all with `gate`. On a laptop `bench` judges against the local baseline
branch and prints the verdict table; `--record` keeps the run's healthy figures there.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    DEFAULT_RESULTS,
    DEFAULT_WORK,
    EXIT_MEANINGS,
    VERDICT_OK,
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
from perfgate.config import Bucket, Config, ConfirmMode, load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.context import RunContext
    from perfgate.result import Result
    from perfgate.run.launch import BenchSettings, PlannedLaunch


def register(verbs: Verbs) -> None:
    """``bench``, and ``cache-key`` (where CI keeps a warm bucket's cache)."""
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
            "perfgate bench --dry-run --config examples/isaaclab/perfgate.yaml   # docker run",
        ),
        exits={
            ExitCode.OK: f"{VERDICT_OK}; unjudged: every benchmark ran",
            ExitCode.BLOCK: "judged locally: a regression (BLOCK)",
            ExitCode.HARD_FAILURE: "a benchmark failed (HARD_FAILURE), judged or not",
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
        "`compare` two runs, which needs 5 a side); a suspicious bucket may take more, and a push "
        "to a protected branch at least alerts.push_repeats (6 unless set)",
    )
    count.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="take exactly K samples of every bucket, never more to confirm (a qualification "
        "allocation: the same design for every bucket and runner)",
    )
    bench.add_argument(
        "--budget-minutes",
        type=float,
        metavar="M",
        help="runner minutes this run may spend beyond its plan (retries, re-measures, "
        "confirmation), shared by its buckets: a CI job's share of gate.budget_minutes, as "
        "the plan allots it (default: gate.budget_minutes, unlimited when unset)",
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
    bench.add_argument(
        "--verbose",
        action="store_true",
        help="print the numbers behind each budget notice (launch time, noise, pairs needed)",
    )
    bench.add_argument(
        "--dry-run",
        action="store_true",
        help="run nothing: print each bucket's first launch as it would start (the exact "
        "docker run for a container bucket), its cache and what is prepared before it",
    )
    add_report_dir(bench)
    add_json(bench, "the results (and, when judged, the verdict)")
    _register_cache_key(verbs)


def _register_cache_key(verbs: Verbs) -> None:
    """``cache-key``."""
    cache_key = add_verb(
        verbs,
        "cache-key",
        help="print where a CI job keeps its buckets' warm caches and its actions-cache keys",
        description="Print the directory a CI job keeps its buckets' warm caches in (R16) and "
        "the keys the rendered bench job restores them by: one cache for the lane (the "
        "buckets one runner job measures in turn), restored from the same launches, else the "
        "same lane, each following the drivers' pins in this checkout (Isaac Lab: the "
        "warp-lang pin of pyproject.toml). Buckets that all run cold have none: every key "
        "is then null and the reason says why. In CI the values also go to $GITHUB_OUTPUT "
        "(path, key, restore-launches, restore-lane, reason; empty when null), and the "
        "bench job restores and saves a cache only when the path is not empty.",
        handler=run_cache_key,
        examples=(
            "perfgate cache-key --lane lane-1 --bucket Isaac-Cartpole-Direct/physx "
            "--bucket Isaac-Cartpole-Direct/newton",
        ),
    )
    add_config(cache_key)
    cache_key.add_argument(
        "--bucket", action="append", required=True, metavar="ID", help="a bucket the job runs"
    )
    cache_key.add_argument(
        "--lane", default="lane-1", help="the lane's name, as `affected` plans it (%(default)s)"
    )
    cache_key.add_argument(
        "--work-dir", type=Path, default=DEFAULT_WORK, help="as bench's (default: %(default)s)"
    )


def run_cache_key(args: argparse.Namespace) -> int:
    """Print a lane's warm cache directory and keys; write them as step outputs in CI."""
    from perfgate import context
    from perfgate.run.launch import warm_cache_keys
    from perfgate.util.console import write_step_outputs

    config = load_config(args.config)
    buckets = config.select(ids=args.bucket)
    if not re.fullmatch(r"lane-[1-9][0-9]{0,3}", args.lane):
        raise UsageError(
            f"--lane {args.lane[:40]!r}: a lane is named lane-N, as `affected` plans it"
        )
    keys = warm_cache_keys(buckets, args.lane, Path.cwd(), args.work_dir)
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    outputs: dict[str, str | None] = dict.fromkeys(CACHE_KEY_OUTPUTS)
    if keys is None:
        ids = ", ".join(bucket.id for bucket in buckets)
        outputs["reason"] = (
            f"no warm cache: every bucket of the lane runs cold ({ids}), each attempt from "
            "an empty cache, so there is nothing to restore or save"
        )
    else:
        launches, lane = keys.restore
        saved = f"{launches}{run.ci.run_id or 'local'}-{run.ci.run_attempt or '1'}"
        outputs.update({"path": keys.path, "key": saved, "restore-launches": launches,
                        "restore-lane": lane})  # fmt: skip
    # Step outputs are strings: the bench job skips its actions/cache step on an empty path.
    write_step_outputs({name: value or "" for name, value in outputs.items()})
    print_json(outputs)
    return ExitCode.OK


#: What cache-key prints and writes as step outputs; without a warm cache every value but
#: the reason is null (an empty step output).
CACHE_KEY_OUTPUTS = ("path", "key", "restore-launches", "restore-lane", "reason")


def _echo(line: str) -> None:
    from perfgate.util.console import inert

    # stderr: stdout belongs to the tables, or to the one --json document.
    print(f"  | {inert(line)}", file=sys.stderr, flush=True)


def launch_json(planned: PlannedLaunch) -> dict[str, object]:
    """A planned launch for other tools: argv, the environment perfgate sets, cache, container."""
    warm = planned.warm
    return {
        "argv": list(planned.invocation.argv),
        "cwd": str(planned.invocation.cwd),
        # What perfgate sets; names the container passes through come from the runner.
        "env": dict(sorted(planned.invocation.env.items())),
        "cache": {
            "mode": "warm" if warm is not None else "cold",
            "path": str(warm.path) if warm is not None else None,
            "state": warm.state.value if warm is not None else "cold",
            "warmup_first": planned.warmup_first,
        },
        "container": planned.container.to_json() if planned.container is not None else None,
    }


def _plan(bucket: Bucket, settings: BenchSettings) -> PlannedLaunch:
    """``bucket``'s first launch; a checkout that cannot run it is a usage error naming both."""
    from perfgate.run.drivers.base import CheckoutUnsupported
    from perfgate.run.launch import plan_first_launch

    try:
        return plan_first_launch(bucket, settings)
    except CheckoutUnsupported as exc:
        raise UsageError(
            f"{bucket.id}: {exc}; bench reads the checkout in the current directory: run from "
            "the root of a checkout that has it, or select other buckets (--bucket, --tag)"
        ) from None


def _dry_run(buckets: tuple[Bucket, ...], settings: BenchSettings, args: argparse.Namespace) -> int:
    """Print each bucket's first launch as ``bench`` would start it; run nothing."""
    out = human(args)
    planned = {bucket.id: _plan(bucket, settings) for bucket in buckets}
    for bucket_id, launch in planned.items():
        print(bucket_id, file=out)
        warm = launch.warm
        if warm is None:
            print("  cache: cold (every attempt starts from an empty cache)", file=out)
        else:
            now = "cold now: an unmeasured warm-up launch fills it first"
            print(f"  cache: warm, kept in {warm.path} ({now if launch.warmup_first else 'warm'})",
                  file=out)  # fmt: skip
        resolved = launch.container
        if resolved is not None:
            for relative, target in sorted(resolved.links.items()):
                print(f"  before launch: link {relative} -> {target} in the checkout", file=out)
            print(f"  runs as: {resolved.user}", file=out)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(launch.invocation.env.items()))
        print(f"  environment: {env}", file=out)
        print(f"  {shlex.join(launch.invocation.argv)}", file=out)
    if args.json:
        print_json({"launches": {k: launch_json(v) for k, v in planned.items()}})
    return ExitCode.OK


def _run_context(config: Config, run_label: str | None) -> RunContext:
    """This run's context: its allocation's label, and its machine named as
    ``gate.runner_identity`` asks (a warning when it cannot be)."""
    from perfgate import context
    from perfgate.run import hardware
    from perfgate.util.console import annotate

    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    if run_label is not None:
        label = context.check_run_label(run_label)
        run = dataclasses.replace(run, ci=dataclasses.replace(run.ci, run_label=label))
    run, unnamed = hardware.identify_machine(run, config.gate.runner_identity, os.environ)
    if unnamed:
        annotate("warning", unnamed, stream=sys.stderr)
    return run


def run(args: argparse.Namespace) -> int:
    """Run buckets and write one result artifact each; locally also judge them."""
    from perfgate.run import hardware
    from perfgate.run.bench import run_buckets
    from perfgate.run.launch import BenchSettings
    from perfgate.run.sampling import as_run_measures, with_sample_count
    from perfgate.util.console import Progress, annotate, bench_table, on_github, say

    config: Config = load_config(args.config)
    for notice in config.notices:  # an opt-in that weakens the container, say: before any launch
        annotate("warning", notice, stream=sys.stderr)
    buckets = with_sample_count(selected(config, args), repeats=args.repeats, samples=args.samples)
    run = _run_context(config, args.run_label)
    if args.samples is None:
        # --samples is an exact design (a qualification allocation): nothing adds to it.
        buckets = as_run_measures(buckets, run, config.gate, config.alerts)
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
        image=config.image,
        job_started_at=job_started_at(os.environ, say),
    )
    if args.dry_run:
        return _dry_run(buckets, settings, args)
    from perfgate.baselines.confirm import StoreWindows
    from perfgate.baselines.store import open_store
    from perfgate.judge.calibration import configured_calibration
    from perfgate.judge.confirm import Confirmer
    from perfgate.run.paired import Confirmation, merge_base_checkout

    # Locally the local baseline branch; in CI the remote one, read-only (R9).
    store = open_store(config, local=not on_github())
    calibration = configured_calibration(config)
    judged = not (args.no_judge or on_github())
    if store is None:
        _without_baseline_branch(record=args.record, judged=judged, say=say)
    say(f"{len(buckets)} bucket(s) on {settings.hardware.slug}, results in {settings.out_dir}")
    if args.samples is None:
        # Before a minute is spent: budgets that cannot decide, with their numbers.
        from perfgate.cli.config import report_budgets

        noted = report_budgets(
            config, buckets, calibration, store, stream=sys.stderr, detailed=args.verbose
        )
        if noted and not args.verbose:
            say("`bench --verbose` or `perfgate validate` shows the numbers behind these")
    progress = Progress(len(buckets), echo=not args.quiet, figures=not judged)
    remote = store.remote if store is not None else None
    confirmation = Confirmation(
        judge=Confirmer(config, StoreWindows(config, store, say=say), calibration=calibration),
        bases=lambda bucket, result: merge_base_checkout(
            config, bucket, result, checkout=settings.checkout, work_dir=settings.work_root,
            remote=remote,
        ),
    )  # fmt: skip
    results = run_buckets(
        buckets,
        settings,
        on_start=progress.start,
        on_done=progress.finish,
        # --samples: exactly K samples, so nothing confirms (neither repeats nor pairs).
        confirm_mode=ConfirmMode.OFF if args.samples is not None else config.gate.confirm,
        confirmation=confirmation,
        budget_minutes=run_budget(config, args.budget_minutes),
    )
    out = human(args)
    if not judged:
        # In CI the aggregate job judges every bucket at once (nox -s gate).
        print(bench_table(results), file=out)
        if args.json:
            print_json({"results": [r.to_json() for r in results], "verdict": None})
        return _health_exit(results, config)
    from perfgate.baselines.evaluate import evaluate
    from perfgate.baselines.publish import record_samples
    from perfgate.report.surfaces import write_report
    from perfgate.report.terminal import terminal_table
    from perfgate.report.verdict import report_json

    report = evaluate(config, buckets, results, store)
    write_report(report, args.report_dir)
    print(terminal_table(report), file=out)
    if args.record and store is not None:  # without a store --record failed before any run
        record_samples(store, results, "local", "Record local baseline samples")
    # Outside git the `--record` closing_lines suggests would fail; the run said so up front.
    suggest_record = not args.record and store is not None
    for line in closing_lines(report, local_bench=suggest_record, gate=config.gate):
        say(line)
    if args.json:
        print_json({"results": [r.to_json() for r in results], "verdict": report_json(report)})
    return report.exit_code


def _without_baseline_branch(*, record: bool, judged: bool, say: Callable[[str], None]) -> None:
    """Outside a git repository there is no baseline branch: ``--record`` fails before any
    benchmark runs, and a judged run says up front that it measures without comparing."""
    if record:
        raise UsageError(
            "--record needs a git repository to hold the baseline branch, and this directory "
            "is in none: run bench from the project's git checkout (or `git init` this one)"
        )
    if judged:
        say(
            "not in a git repository: no baseline branch to compare with or record into, so "
            "this run's figures are measured, not compared (run from a git checkout to keep "
            "baselines)"
        )


def run_budget(config: Config, given: float | None) -> float | None:
    """The runner minutes this run may spend beyond its plan: ``--budget-minutes`` (a CI
    job's share), else ``gate.budget_minutes``; a share that is no number of minutes is a
    usage error."""
    if given is None:
        return config.gate.budget_minutes
    if not math.isfinite(given) or given < 0:
        raise UsageError(f"--budget-minutes {given}: give the runner minutes, 0 or more")
    return given


#: Set by the rendered bench job's first step: when the runner job began (epoch seconds).
JOB_STARTED_ENV = "PERFGATE_JOB_STARTED"
# A job runs at most GitHub's 35 days (self-hosted); an older start is not this job's.
_JOB_AGE_LIMIT_S = 35 * 24 * 3600.0


def job_started_at(env: Mapping[str, str], say: Callable[[str], None]) -> float | None:
    """When the runner job began, from ``$PERFGATE_JOB_STARTED`` (None when unset); a value
    that is no time of this job is said and ignored, never charged as setup."""
    raw = env.get(JOB_STARTED_ENV, "").strip()
    if not raw:
        return None
    try:
        started = float(raw)
    except ValueError:
        started = math.nan
    age = time.time() - started
    if not (math.isfinite(started) and -60.0 <= age <= _JOB_AGE_LIMIT_S):
        say(f"{JOB_STARTED_ENV}={raw[:40]!r} is not when this job began (epoch seconds, as "
            "`date +%s` prints them); the job's setup is not recorded")  # fmt: skip
        return None
    return min(started, time.time())


def _health_exit(results: Sequence[Result], config: Config) -> int:
    """Unjudged, a failed benchmark is still a HARD_FAILURE (R3): exit 2 unless always_pass."""
    from perfgate.judge.gate import exit_code_for
    from perfgate.judge.verdicts import Verdict
    from perfgate.util.console import say

    failed = [r.bucket.id for r in results if not r.health.healthy]
    if not failed:
        return ExitCode.OK
    code = exit_code_for(Verdict.HARD_FAILURE, always_pass=config.gate.always_pass)
    say(
        f"exit {code}: {len(failed)} bucket(s) failed ({', '.join(failed)})"
        + ("; gate.always_pass keeps the run green" if code == ExitCode.OK else "")
    )
    return code
