"""Qualify the runner pool: is runner-to-runner noise small enough for the gate to block?

Reads the result artifacts of N allocations (runner jobs, each `bench --run-label LABEL`)
that each took K samples of every selected bucket. Per bucket and overall it answers
STABLE_ENOUGH_TO_GATE, INCONCLUSIVE_DO_NOT_GATE (evidence missing: every gap is named) or
UNSTABLE_DO_NOT_GATE (a limit of `qualify:` in perfgate.yaml exceeded: the runners to
drain are named). Only the selected buckets are expected. It writes qualification.md and
qualification.json, and with --write-calibration the per-bucket noise calibration the
gate reads (gate.calibration). It never writes baselines. --plan only checks the scope
and prints what the run would cost (in CI: the allocation matrix).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    Verbs,
    add_config,
    add_json,
    add_selection,
    add_verb,
    human,
    print_json,
    selected,
)
from perfgate.config import Bucket, Config, FileRef, load_config
from perfgate.errors import ExitCode, UsageError
from perfgate.util import jsonfile

if TYPE_CHECKING:
    from perfgate.baselines.qualify.verdict import QualificationReport

DEFAULT_QUALIFY_REPORT = Path(".perfgate/qualify")


def register(verbs: Verbs) -> None:
    """``qualify``."""
    qualify = add_verb(
        verbs,
        "qualify",
        help="say whether the runner pool is stable enough for the gate to block",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate qualify --plan --backend numpy              # scope and cost, nothing run",
            "perfgate qualify --results .perfgate/qualify/results --allocations 5 --samples 3",
            "perfgate qualify --results DIR --require-ready --write-calibration ci/noise.json",
        ),
        exits={
            ExitCode.BLOCK: "with --require-ready: the pool is not STABLE_ENOUGH_TO_GATE",
            ExitCode.MALFUNCTION: "no result artifacts to qualify (did the allocations upload?)",
        },
    )
    add_config(qualify)
    qualify.add_argument(
        "--results",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="directories of the allocations' result artifacts (searched recursively)",
    )
    qualify.add_argument(
        "--allocations", type=int, metavar="N", help="allocations expected (qualify.allocations)"
    )
    qualify.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="samples per bucket and allocation (qualify.samples)",
    )
    qualify.add_argument(
        "--min-runners", type=int, metavar="M", help="distinct runners needed (qualify.min_runners)"
    )
    add_selection(qualify, "qualify")
    qualify.add_argument("--hardware", metavar="SLUG", help="expect this hardware slug")
    qualify.add_argument("--target", metavar="BRANCH", help="expect this target branch")
    qualify.add_argument("--commit", metavar="SHA", help="expect this commit (may be abbreviated)")
    qualify.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_QUALIFY_REPORT,
        help="where qualification.md and qualification.json go (default: %(default)s)",
    )
    qualify.add_argument(
        "--require-ready",
        action="store_true",
        help="exit 1 unless the pool is STABLE_ENOUGH_TO_GATE",
    )
    qualify.add_argument(
        "--write-calibration",
        type=Path,
        metavar="PATH",
        help="write the noise calibration of every STABLE bucket here (entries of other "
        "buckets or hardware in the file are kept); point gate.calibration at it",
    )
    qualify.add_argument(
        "--plan",
        action="store_true",
        help="check the scope and print the allocation plan and its runner time; run nothing",
    )
    add_json(qualify, "qualification.json")


def _design_value(flag: str, given: int | None, configured: int, least: int) -> int:
    value = configured if given is None else given
    if value < least:
        raise UsageError(f"{flag} {value}: at least {least} are needed")
    return value


def allocation_minutes(buckets: tuple[Bucket, ...], samples: int) -> int:
    """An allocation job's ``timeout-minutes``: every sample of every bucket with its
    retries, plus setup, and never under 30."""
    per_sample = sum((b.retries + 1) * b.timeout_minutes for b in buckets)
    return max(30, math.ceil(samples * per_sample) + 15)


def _plan(config: Config, buckets: tuple[Bucket, ...], allocations: int, samples: int) -> int:
    """Print the plan; on GitHub, the allocation matrix as step outputs.

    The selected buckets must share one runner pool: a qualification measures one pool.
    """
    from perfgate.util.console import render_table, say, write_step_outputs

    pools = sorted({bucket.runner for bucket in buckets})
    if len(pools) > 1:
        raise UsageError(
            "the selected buckets run on several runner pools ("
            + "; ".join(", ".join(pool) for pool in pools)
            + "): qualify one pool at a time with --bucket, --tag or --backend"
        )
    minutes = allocation_minutes(buckets, samples)
    rows = [[b.id, ", ".join(b.runner), f"{b.timeout_minutes:g}m", str(b.retries)] for b in buckets]
    print(render_table(["bucket", "runner", "timeout", "retries"], rows))
    print(
        f"\n{allocations} allocation(s) x {samples} sample(s) x {len(buckets)} bucket(s) = "
        f"{allocations * samples * len(buckets)} runs on [{', '.join(pools[0])}]; each "
        f"allocation job takes at most {minutes} minutes."
    )
    write_step_outputs(
        {
            # Which allocation job of the workflow runs: one per runner pool, numbered.
            "pool": str(config.runner_pools().index(pools[0]) + 1),
            "allocations": json.dumps([str(i) for i in range(1, allocations + 1)], allow_nan=False),
            "samples": str(samples),
            "timeout": str(minutes),
        }
    )
    say(f"plan for {config.path}: nothing was run")
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    """Qualify the pool from the allocations' artifacts; write the report (and calibration)."""
    from perfgate.baselines.qualify.coverage import Design
    from perfgate.baselines.qualify.observations import load_evidence
    from perfgate.baselines.qualify.verdict import QualVerdict, qualify
    from perfgate.baselines.store import open_store
    from perfgate.cli.config import report_recurrence
    from perfgate.report.qualification import (
        qualification_json,
        qualification_markdown,
        terminal_table,
    )
    from perfgate.util.console import annotate, on_github, say, write_step_summary

    config = load_config(args.config)
    buckets = selected(config, args)
    policy = config.qualify
    allocations = _design_value("--allocations", args.allocations, policy.allocations, 2)
    samples = _design_value("--samples", args.samples, policy.samples, 2)
    min_runners = _design_value("--min-runners", args.min_runners, policy.min_runners, 2)
    if min_runners > allocations:
        raise UsageError(
            f"--min-runners {min_runners} exceeds --allocations {allocations}: each allocation "
            "runs on one runner, so the pool could never qualify"
        )
    if args.plan:
        return _plan(config, buckets, allocations, samples)
    if not args.results:
        raise UsageError("--results DIR is required (or --plan to check the scope only)")
    design = Design(
        allocations=allocations,
        samples=samples,
        min_runners=min_runners,
        hardware=args.hardware,
        target_branch=args.target,
        commit=args.commit,
    )
    evidence = load_evidence(args.results)
    flags = {"bucket": args.bucket, "tag": args.tag, "backend": args.backend}
    report = qualify(
        config,
        buckets,
        evidence,
        design=design,
        flags={key: values for key, values in flags.items() if values},
    )
    document = qualification_json(report)
    markdown = qualification_markdown(report)
    args.report_dir.mkdir(parents=True, exist_ok=True)
    (args.report_dir / "qualification.md").write_text(markdown, encoding="utf-8")
    jsonfile.write(args.report_dir / "qualification.json", document)
    if on_github():
        write_step_summary(markdown)
    out = human(args)
    print(terminal_table(report), file=out)
    if args.write_calibration:
        _write_calibration(report, args.write_calibration)
    say(f"report in {args.report_dir / 'qualification.md'} and qualification.json")
    if report.verdict is not QualVerdict.STABLE:
        annotate("warning", f"runner pool: {report.verdict.value}", stream=out)
    report_recurrence(config, buckets, open_store(config, local=not on_github()))
    if args.json:
        print_json(document)
    if args.require_ready and report.verdict is not QualVerdict.STABLE:
        return ExitCode.BLOCK
    return ExitCode.OK


def _write_calibration(report: QualificationReport, path: Path) -> None:
    """Merge the STABLE buckets' noise into the calibration file at ``path``."""
    from perfgate.judge.calibration import NoiseCalibration, read_calibration, write_calibration
    from perfgate.util.console import annotate, say

    measured_at = datetime.now(UTC).isoformat(timespec="seconds")
    entries = [replace(entry, measured_at=measured_at) for entry in report.calibration()]
    calibrated = {entry.bucket for entry in entries}
    skipped = [b.bucket for b in report.buckets if b.bucket not in calibrated]
    if not entries:
        annotate(
            "warning",
            f"no bucket is STABLE_ENOUGH_TO_GATE, so {path} was not written: a calibration "
            "from an unstable or incomplete pool would set thresholds from bad evidence",
        )
        return
    current = (
        read_calibration(FileRef(path=path, where="--write-calibration"), report.policy)
        if path.exists()
        else NoiseCalibration(buckets=(), path=path)
    )
    write_calibration(current.merged(entries), path, report.policy)
    say(
        f"noise calibration of {len(entries)} bucket(s) written to {path}"
        + (f"; not calibrated (not STABLE): {', '.join(skipped)}" if skipped else "")
    )
