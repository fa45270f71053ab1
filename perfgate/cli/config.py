"""Check perfgate.yaml and print the bucket matrix it expands to."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perfgate.cli.common import (
    DEFAULT_RESULTS,
    DEFAULT_WORK,
    Verbs,
    add_config,
    add_selection,
    add_verb,
    print_json,
    selected,
)
from perfgate.config import Bucket, Config, load_config
from perfgate.errors import ConfigError, ExitCode, PerfgateError, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.store import BaselineStore
    from perfgate.judge.calibration import NoiseCalibration


def register(verbs: Verbs) -> None:
    """``validate`` and ``matrix``."""
    validate = add_verb(
        verbs,
        "validate",
        help="check perfgate.yaml",
        description="Validate perfgate.yaml and say how many buckets it expands to; warn of "
        "confirmation budgets that cannot decide. With --checkout, plan every bucket's launch "
        "on that checkout as the benchmark job would (CLI flavour and flags, task id and "
        "aliases, presets, output naming) and fail, one line per problem with the buckets it "
        "stops, where a launch would certainly fail; what a static read cannot be sure of is "
        "a warning.",
        handler=run_validate,
        examples=(
            "perfgate validate",
            "perfgate validate --config examples/isaaclab/perfgate.yaml",
            "perfgate validate --checkout .   # what the rendered config job runs",
        ),
        exits={
            ExitCode.OK: "perfgate.yaml is valid (with --checkout: every bucket can launch)",
            ExitCode.USAGE: "perfgate.yaml is invalid, or a bucket cannot launch on --checkout",
        },
    )
    add_config(validate)
    validate.add_argument(
        "--checkout",
        type=Path,
        metavar="DIR",
        help="plan every bucket's launch on this checkout (no benchmark is run)",
    )
    matrix = add_verb(
        verbs,
        "matrix",
        help="print the expanded bucket matrix",
        description="Print the expanded bucket matrix: a table, or JSON for other tools.",
        handler=run_matrix,
        examples=(
            "perfgate matrix",
            "perfgate matrix --json --tag camera",
            'perfgate matrix --json | jq -r ".[].id"',
        ),
    )
    add_config(matrix)
    matrix.add_argument("--json", action="store_true", help="print JSON for other tools")
    add_selection(matrix, "list")


def run_validate(args: argparse.Namespace) -> int:
    """Validate perfgate.yaml and say how many buckets it expands to."""
    from perfgate.judge.calibration import configured_calibration

    config = load_config(args.config)
    calibration = configured_calibration(config)
    if calibration is not None:
        print(f"{calibration.path}: ok, {len(calibration.buckets)} calibrated bucket(s)")
    print(f"{config.path}: ok, {len(config.buckets)} buckets")
    for notice in config.notices:
        print(f"notice: {notice}")
    from perfgate.baselines.store import open_store
    from perfgate.util.console import on_github

    store = open_store(config, local=not on_github())
    report_budgets(config, config.buckets, calibration, store)
    report_recurrence(config, config.buckets, store)
    for line in worst_case_lines(config):
        print(line)
    if args.checkout is not None:
        from perfgate.util.console import annotate

        found = plan_launches(config.buckets, args.checkout)
        for text, ids in found.doubts:
            annotate("warning", f"{bucket_names(ids)}: {text}")
        if found.problems:
            stopped = len({bucket_id for _, ids in found.problems for bucket_id in ids})
            raise ConfigError(
                f"{stopped} of {len(config.buckets)} bucket(s) cannot launch on {args.checkout}:"
                + "".join(f"\n  {bucket_names(ids)}: {text}" for text, ids in found.problems)
            )
        print(f"{args.checkout}: every bucket's launch is planned")
    return ExitCode.OK


@dataclass(frozen=True, kw_only=True)
class Preflight:
    """What planning every bucket's launch on a checkout found, each text once with the
    buckets it concerns (in the order first met)."""

    problems: tuple[tuple[str, tuple[str, ...]], ...]
    doubts: tuple[tuple[str, tuple[str, ...]], ...]


def bucket_names(ids: Sequence[str]) -> str:
    """Bucket ids, one task's backends together: ``Task/{physx,newton}``, ``Other/physx``."""
    backends: dict[str, list[str]] = {}
    for bucket_id in ids:
        task, _, backend = bucket_id.rpartition("/")
        backends.setdefault(task, []).append(backend)
    return ", ".join(
        f"{task}/{keys[0]}" if len(keys) == 1 else f"{task}/{{{','.join(keys)}}}"
        for task, keys in backends.items()
    )


def _grouped(found: Sequence[tuple[str, str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    by_text: dict[str, list[str]] = {}
    for text, bucket_id in found:
        by_text.setdefault(text, []).append(bucket_id)
    return tuple((text, tuple(dict.fromkeys(ids))) for text, ids in by_text.items())


def plan_launches(buckets: Sequence[Bucket], checkout: Path) -> Preflight:
    """Plan each bucket's launch on ``checkout`` with its driver, as the bench job would.

    No benchmark runs: the driver reads the checkout (its CLI, registered task ids, preset
    names) and builds the command. What certainly stops a launch is a problem: the job
    fails on a free runner in seconds instead of on a GPU. What the read cannot tell (an id
    registered where no read can see it) is a doubt. Each is said once, with its buckets.
    """
    from perfgate.run.drivers import get_driver, isaaclab
    from perfgate.run.drivers.base import CheckoutUnsupported
    from perfgate.run.execution import AttemptDirs

    if not checkout.is_dir():
        raise UsageError(f"--checkout {checkout}: no such directory")
    problems: list[tuple[str, str]] = []
    doubts: list[tuple[str, str]] = []
    # One scan of the checkout's sources for every isaaclab bucket.
    sources = (
        isaaclab.scan_sources(checkout) if any(b.driver == "isaaclab" for b in buckets) else None
    )
    with tempfile.TemporaryDirectory(prefix="perfgate-plan-") as tmp:
        dirs = AttemptDirs(number=1, output_dir=Path(tmp) / "out", cache_dir=Path(tmp) / "cache")
        for bucket in buckets:
            try:
                if bucket.driver == "isaaclab":
                    found = isaaclab.survey(checkout.resolve(), bucket, sources).findings
                    problems += [(text, bucket.id) for text in found.problems]
                    doubts += [(text, bucket.id) for text in found.doubts]
                else:
                    get_driver(bucket.driver).invocation(bucket, dirs, checkout.resolve())
            except (CheckoutUnsupported, ConfigError) as exc:
                problems.append((str(exc), bucket.id))
    return Preflight(problems=_grouped(problems), doubts=_grouped(doubts))


def report_budgets(
    config: Config,
    buckets: Sequence[Bucket],
    calibration: NoiseCalibration | None,
    store: BaselineStore | None,
    stream: TextIO | None = None,
    *,
    detailed: bool = True,
) -> int:
    """A warning for each budget that cannot decide (R17), read against ``store`` (the
    baseline branch's recorded noise and launch durations) when there is one, with its
    numbers when ``detailed``; a branch that cannot be read only costs the check its
    recorded figures. Returns how many it printed."""
    from perfgate.baselines.confirm import recorded_runs
    from perfgate.judge.budget_check import budget_warnings
    from perfgate.util.console import annotate

    try:
        warnings = budget_warnings(config, buckets, lambda: recorded_runs(store, buckets),
                                   calibration)  # fmt: skip
    except PerfgateError as exc:
        annotate("notice", f"budgets checked without recorded samples ({exc})", stream=stream)
        warnings = budget_warnings(config, buckets, lambda: {}, calibration)
    for note in warnings:
        annotate(note.level, note.text(detailed=detailed), stream=stream)
    return len(warnings)


def report_recurrence(
    config: Config, buckets: Sequence[Bucket], store: BaselineStore | None
) -> None:
    """A warning when the recorded runs' machines never recur (gate.runner_identity)."""
    from perfgate.baselines.recurrence import recurrence_note
    from perfgate.util.console import annotate

    try:
        note = recurrence_note(store, buckets, config.gate.runner_identity)
    except PerfgateError as exc:
        annotate("notice", f"runner identities not checked ({exc})")
        return
    if note:
        annotate("warning", note)


def worst_case_lines(config: Config) -> list[str]:
    """The most a pull request's run, a push's and a merged pull request (both) may cost in
    runner minutes as this configuration bounds them (R17), and what each figure rests on."""
    from perfgate.ci.lanes import worst_case
    from perfgate.cli.ci import bench_job_needs

    warm = bench_job_needs(config)["warm_buckets"]
    bills = {"a pull request": worst_case(config, push=False, warm=warm),
             "a push": worst_case(config, push=True, warm=warm)}  # fmt: skip
    lines = []
    for what, bill in bills.items():
        extra = (
            f"the run's budget {bill.extra:g}"
            if bill.capped
            else f"{bill.extra:.0f} of retries and confirmation its counts allow "
            "(no gate.budget_minutes caps them)"
        )
        lines.append(
            f"worst case, {what}: {bill.total:.0f} runner-min ({bill.jobs} job(s): setup "
            f"{bill.setup:.0f}, planned launches and waits {bill.planned:.0f}, {extra})"
        )
    merged = sum(bill.total for bill in bills.values())
    lines.append(f"worst case, a merged pull request (its run and its push): {merged:.0f} "
                 "runner-min, at the buckets' launch_minutes (else their timeouts)")  # fmt: skip
    unknown = bills["a push"].unknown_setup
    if unknown:
        lines.append(
            f"notice: no setup_minutes for the runners {', '.join(unknown)}: each job's setup "
            "(checkout, image, caches) is counted as 0 until declared"
        )
    return lines


def run_matrix(args: argparse.Namespace) -> int:
    """Print the expanded bucket matrix."""
    config = load_config(args.config)
    buckets = selected(config, args)
    if args.json:
        print_json([_matrix_json(config, bucket) for bucket in buckets])
        return ExitCode.OK
    from perfgate.util.console import render_table

    rows = [
        [b.id, b.driver, f"{b.timeout_minutes:g}m", ",".join(b.runner), ",".join(b.tags)]
        for b in buckets
    ]
    print(render_table(["bucket", "driver", "timeout", "runner", "tags"], rows))
    return ExitCode.OK


def _matrix_json(config: Config, bucket: Bucket) -> dict[str, Any]:
    """A bucket's matrix entry with its resolved container, cache state and first launch.

    ``launch`` is what ``bench --dry-run`` prints for the bucket from this checkout (the
    exact ``docker run`` of a container bucket; ``$PERFGATE_IMAGE`` stands for an image
    resolve-image chooses in CI), or ``launch_error`` when this checkout cannot plan it.
    """
    from perfgate import context
    from perfgate.cli.bench import launch_json
    from perfgate.result import Hardware
    from perfgate.run.container import IMAGE_ENV
    from perfgate.run.drivers.base import CheckoutUnsupported
    from perfgate.run.launch import BenchSettings, cache_state, container_of, plan_first_launch

    entry = bucket.matrix_entry()
    entry["cache"] = cache_state(bucket).value
    resolved = container_of(bucket, config.image)
    entry["container"] = resolved.to_json() if resolved is not None else None
    settings = BenchSettings(
        checkout=Path.cwd(),
        work_root=DEFAULT_WORK.resolve(),
        out_dir=DEFAULT_RESULTS.resolve(),
        hardware=Hardware(slug="planned"),  # planning reads no hardware
        context=context.detect(os.environ, default_target=config.gate.target_branches[0]),
        image=config.image,
    )
    env = {**os.environ, IMAGE_ENV: os.environ.get(IMAGE_ENV) or "$" + IMAGE_ENV}
    try:
        entry["launch"] = launch_json(plan_first_launch(bucket, settings, env))
    except (CheckoutUnsupported, PerfgateError) as exc:
        entry["launch"] = None
        entry["launch_error"] = str(exc)
    return entry
