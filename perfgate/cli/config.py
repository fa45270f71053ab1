"""Check perfgate.yaml and print the bucket matrix it expands to."""

from __future__ import annotations

import argparse
import json

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from perfgate.cli.common import Verbs, add_config, add_selection, add_verb, selected
from perfgate.config import Bucket, Config, load_config
from perfgate.errors import ExitCode, PerfgateError

if TYPE_CHECKING:
    from perfgate.judge.calibration import NoiseCalibration


def register(verbs: Verbs) -> None:
    """``validate`` and ``matrix``."""
    validate = add_verb(
        verbs,
        "validate",
        help="check perfgate.yaml",
        description="Validate perfgate.yaml and say how many buckets it expands to.",
        handler=run_validate,
        examples=(
            "perfgate validate",
            "perfgate validate --config examples/isaaclab/perfgate.yaml",
        ),
    )
    add_config(validate)
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
    report_budgets(config, config.buckets, calibration)
    return ExitCode.OK


def report_budgets(
    config: Config,
    buckets: Sequence[Bucket],
    calibration: NoiseCalibration | None,
    stream: TextIO | None = None,
) -> None:
    """A warning for each budget that cannot decide (R17), read against the baseline branch
    when there is one (its recorded noise and launch durations); a branch that cannot be
    read only costs the check its recorded figures."""
    from perfgate.baselines.store import open_store
    from perfgate.console import annotate, on_github
    from perfgate.judge.confirm import budget_warnings

    store = open_store(config, local=not on_github())
    try:
        warnings = budget_warnings(config, buckets, store, calibration)
    except PerfgateError as exc:
        annotate("notice", f"budgets checked without recorded samples ({exc})", stream=stream)
        warnings = budget_warnings(config, buckets, None, calibration)
    for level, text in warnings:
        annotate(level, text, stream=stream)


def run_matrix(args: argparse.Namespace) -> int:
    """Print the expanded bucket matrix."""
    config = load_config(args.config)
    buckets = selected(config, args)
    if args.json:
        print(json.dumps([b.matrix_entry() for b in buckets], indent=2, allow_nan=False))
        return ExitCode.OK
    from perfgate.console import render_table

    rows = [
        [b.id, b.driver, f"{b.timeout_minutes:g}m", ",".join(b.runner), ",".join(b.tags)]
        for b in buckets
    ]
    print(render_table(["bucket", "driver", "timeout", "runner", "tags"], rows))
    return ExitCode.OK
