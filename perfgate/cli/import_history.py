"""Import an existing benchmark history as baselines (dry run unless --execute).

Reads github-action-benchmark's data.js (--data-js) or an asv results directory (--asv).
Each run's benchmark feeds the metrics of perfgate.yaml whose `benchmark:` names it, in a
bucket whose command.format reads the same figure, when unit and direction agree; the
dry run lists what maps, how much is stored already, and everything that does not map.
Samples are marked `trusted_source: import` and kept under the hardware the history was
measured on: `asv-<machine name>`, or `unknown-imported` for a data.js. A window reads a
hardware partition only for runs on that hardware, so an import feeds the gate once
--hardware declares the history's machine the same as your runners' (their slug, as
`perfgate verify-baselines` prints it). Like seed, it writes the local baseline branch
unless --push (the default in CI); importing again adds nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_config,
    add_selection,
    add_verb,
    baseline_is_local,
    selected,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError
from perfgate.util.console import render_table, say

if TYPE_CHECKING:
    from perfgate.baselines.imports.history import History
    from perfgate.baselines.imports.mapping import ImportPlan


def register(verbs: Verbs) -> None:
    """``import-history``."""
    parser = add_verb(
        verbs,
        "import-history",
        help="import an existing benchmark history as baselines (dry run unless --execute)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate import-history --data-js gh-pages/dev/bench/data.js   # dry run: the mapping",
            "perfgate import-history --asv results/ --hardware cpu-epyc_7763 --execute",
            "perfgate import-history --data-js data.js --hardware l40s --execute --push",
        ),
        exits={
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
            ExitCode.USAGE: "a file that is not the history it should be (the message names "
            "file, field and fix), nothing to map, or a bad command line",
        },
    )
    add_config(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data-js",
        type=Path,
        metavar="FILE",
        help="github-action-benchmark's data.js (or its data JSON file)",
    )
    source.add_argument(
        "--asv", type=Path, metavar="DIR", help="an asv results directory (results_dir)"
    )
    parser.add_argument(
        "--machine", metavar="NAME", help="with --asv: the machine to import (when it has several)"
    )
    parser.add_argument(
        "--asv-env",
        metavar="NAME",
        help="with --asv: the environment to import (when it has several)",
    )
    parser.add_argument(
        "--hardware",
        metavar="SLUG",
        help="the hardware partition the samples are kept under: declares the history was "
        "measured on that hardware (default: asv-<machine>, or unknown-imported)",
    )
    parser.add_argument(
        "--target",
        metavar="BRANCH",
        help="the branch the samples are for (default: the first target branch of perfgate.yaml)",
    )
    add_selection(parser, "import into")
    parser.add_argument("--execute", action="store_true", help="write the samples")
    add_baseline_source(
        parser,
        remote_flag="--push",
        remote_help="read the baseline branch on the configured remote and push the imported "
        "samples there (with --execute); the default in CI",
    )


def run(args: argparse.Namespace) -> int:
    """Read the history, print its mapping, and with --execute append its samples."""
    from perfgate.baselines.imports.mapping import plan_import, record
    from perfgate.baselines.store import open_store

    config = load_config(args.config)
    if args.data_js is not None and (args.machine or args.asv_env):
        raise UsageError("--machine and --asv-env choose within an asv results directory (--asv)")
    store = open_store(config, local=baseline_is_local(args))
    if store is None:
        raise UsageError("import-history must run inside the repository's git checkout")
    history = _read(args)
    plan = plan_import(
        history,
        config,
        store,
        buckets=selected(config, args),
        hardware=args.hardware or _default_hardware(history),
        target_branch=args.target or config.gate.target_branches[0],
    )
    print(plan_text(plan, declared=args.hardware is not None))
    if not plan.mapped:
        raise UsageError(
            f"nothing in {history.path} maps to a metric of {config.path} (see above): name each "
            "benchmark to keep with a metric's `benchmark:`, in a bucket reading that tool's output"
        )
    if not args.execute:
        print(f"dry run: nothing was written; add --execute to write {plan.new} new sample(s)")
        return ExitCode.OK
    outcome = record(plan, store, config)
    for warning in store.warnings:
        say(warning)
    landed = f" at {outcome.commit[:12]}" if outcome.commit else ""
    say(
        f"imported {outcome.added} sample(s) onto {store.branch}{landed} "
        f"({outcome.already_present} already present)"
    )
    return ExitCode.OK


def _read(args: argparse.Namespace) -> History:
    from perfgate.baselines.imports.asv import read_asv
    from perfgate.baselines.imports.datajs import read_data_js

    if args.data_js is not None:
        return read_data_js(args.data_js)
    return read_asv(args.asv, machine=args.machine, env=args.asv_env)


def _default_hardware(history: History) -> str:
    """The history's machine as a partition name, or ``unknown-imported``."""
    from perfgate.baselines.imports.history import IMPORTED_HARDWARE
    from perfgate.run.hardware import slugify

    if history.machine is None:
        return IMPORTED_HARDWARE
    return f"asv-{slugify(history.machine)[:100] or 'machine'}"


def plan_text(plan: ImportPlan, *, declared: bool) -> str:
    """The mapping table, what did not map, and where the samples go."""
    from perfgate.run import hardware

    history = plan.history
    lines = [
        f"{history.kind} history {history.path}: {len(history.runs)} run(s)"
        + (f" on machine {history.machine!r}" if history.machine else ""),
    ]
    if plan.mapped:
        rows = [
            [m.bucket, m.metric, m.benchmark, str(len(m.samples)), str(m.present), str(m.new)]
            for m in plan.mapped
        ]
        lines.append(
            render_table(["bucket", "metric", "benchmark", "runs", "present", "new"], rows)
        )
    if plan.unmapped:
        lines.append(f"not imported ({len(plan.unmapped)}):")
        lines += [f"  {note}" for note in plan.unmapped]
    here = hardware.detect().slug
    lines.append(
        f"samples go to the hardware partition {plan.hardware!r}, for {plan.target_branch}, "
        "marked trusted_source=import."
    )
    if not declared:
        lines.append(
            f"A window reads them only for runs on {plan.hardware!r} (this machine is {here!r}): "
            "if the history was measured on your runners' hardware, import with --hardware "
            "<their slug> to let the gate judge from them."
        )
    return "\n".join(lines)
