"""Say per bucket whether its baseline can gate: READY, WARMING (filling) or EMPTY.

Per bucket, the largest group of stored samples of one fingerprint (target branch, the
three identity hashes, baseline epoch) on this hardware counts; a bucket is READY when
that group fills a minimum window. --require exits 1 unless every bucket is READY.
--newest-runtime counts only the runtime of the newest sample (the image the gate runs
now, after an era roll); --all-hardware takes each bucket's best hardware partition.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfgate.cli.common import (
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_config,
    add_selection,
    add_verb,
    baseline_is_local,
    repo_top,
    selected,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode
from perfgate.util import jsonfile


def register(verbs: Verbs) -> None:
    """``verify-baselines``."""
    verify = add_verb(
        verbs,
        "verify-baselines",
        help="say per bucket whether its baseline can gate",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate verify-baselines",
            "perfgate verify-baselines --remote --require --json readiness.json",
        ),
        exits={
            ExitCode.OK: "every bucket's readiness was said (with --require: every bucket READY)",
            ExitCode.BLOCK: "with --require: some bucket is not READY",
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    add_config(verify)
    where = verify.add_mutually_exclusive_group()
    where.add_argument("--hardware", metavar="SLUG", help="default: this machine's")
    where.add_argument(
        "--all-hardware",
        action="store_true",
        help="every hardware partition on the branch, each bucket on its best one (a hosted "
        "runner checking self-hosted pools)",
    )
    verify.add_argument(
        "--newest-runtime",
        action="store_true",
        help="count only the runtime of each bucket's newest sample (after an image era roll)",
    )
    verify.add_argument(
        "--target", metavar="BRANCH", help="default: the first target branch of perfgate.yaml"
    )
    add_selection(verify, "verify")
    verify.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    verify.add_argument(
        "--require", action="store_true", help="exit 1 unless every bucket is READY"
    )
    add_baseline_source(verify)


def run(args: argparse.Namespace) -> int:
    """Say per bucket whether its baseline can gate (READY), is filling (WARMING) or EMPTY."""
    from perfgate.baselines.store import open_store
    from perfgate.baselines.verify import Readiness, readiness_json, readiness_table, verify_store
    from perfgate.run import hardware
    from perfgate.util.console import say

    repo_top()
    config = load_config(args.config)
    buckets = selected(config, args)
    store = open_store(config, local=baseline_is_local(args))
    assert store is not None  # repo_top found the repository
    slugs = () if args.all_hardware else (args.hardware or hardware.detect().slug,)
    slug = ", ".join(slugs) or "every hardware partition"
    target = args.target or config.gate.target_branches[0]
    rows, notes, tip = verify_store(
        store,
        buckets,
        hardware=slugs,
        target_branch=target,
        min_samples=config.gate.baseline.min_samples,
        newest_runtime=args.newest_runtime,
    )
    print(f"baselines on {store.branch} for {target} on {slug}:")
    print(readiness_table(rows))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    report = readiness_json(
        rows, hardware=slug, target_branch=target, baseline_tip=tip, notes=notes
    )
    if args.json:
        jsonfile.write(args.json, report)
    if args.require and not report["ready"]:
        waiting = [r.bucket for r in rows if r.status is not Readiness.READY]
        say(f"not every bucket can gate yet: {', '.join(waiting)}")
        return ExitCode.BLOCK
    return ExitCode.OK
