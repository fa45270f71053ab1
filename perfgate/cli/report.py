"""Build the trend site: every bucket's history as static HTML with charts, readable offline.

Reads the baseline branch (the store's own read path) and the target branch's history,
judges every stored run against the window before it with the gate's own rule, and
writes index.html (a row per bucket, hardware and metric: latest figure, trend, verdict,
readiness) and one page per bucket (one chart per hardware and metric). The charts are
plotly.js from the `report` extra (pip install 'perfgate[report]'), copied into the site:
it needs no network, on GitHub Pages or unpacked from an artifact.
"""

from __future__ import annotations

import argparse
import os
import time
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


def register(verbs: Verbs) -> None:
    """``report``."""
    report = add_verb(
        verbs,
        "report",
        help="build the trend site (static HTML charts of every bucket's history)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate report --out site                 # from the local baseline branch",
            "perfgate report --out site --remote        # CI: the shared baseline branch",
        ),
        exits={ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION]},
    )
    add_config(report)
    report.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="where the site goes: a new or empty directory, or an earlier site (replaced)",
    )
    report.add_argument(
        "--target", metavar="BRANCH", help="default: the first target branch of perfgate.yaml"
    )
    report.add_argument(
        "--hardware",
        action="append",
        default=[],
        metavar="SLUG",
        help="only this hardware partition (repeatable; default: every one on the branch)",
    )
    add_selection(report, "chart")
    report.add_argument(
        "--last",
        type=int,
        default=30,
        metavar="N",
        help="runs in the index's sparklines and each page's run table (default: %(default)s)",
    )
    report.add_argument("--title", default="perfgate trends", help="the site's title")
    report.add_argument(
        "--jobs",
        type=int,
        default=usable_cpus(),
        metavar="N",
        help="processes judging the buckets' histories (default: the CPUs here, %(default)s)",
    )
    add_baseline_source(report)


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run(args: argparse.Namespace) -> int:
    """Read the history, judge it with the gate's rule, and write the site."""
    from perfgate.baselines.acks import accepted_levels, read_acks
    from perfgate.baselines.history import read_history
    from perfgate.baselines.store import open_store
    from perfgate.errors import UsageError
    from perfgate.judge.calibration import configured_calibration
    from perfgate.report.rule import TrendRule
    from perfgate.report.trend import build_site
    from perfgate.util.console import say

    if args.last < 1:
        raise UsageError(f"--last {args.last}: must be at least 1")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be at least 1")
    repo_top()
    config = load_config(args.config)
    buckets = selected(config, args)
    store = open_store(config, local=baseline_is_local(args))
    assert store is not None  # repo_top found the repository
    began = time.perf_counter()
    history = read_history(
        store,
        buckets,
        target_branch=args.target or config.gate.target_branches[0],
        min_samples=config.gate.baseline.min_samples,
        hardware=tuple(args.hardware),
    )
    acks, ack_notes = read_acks(store.repo, history.baseline_tip)
    accepted = accepted_levels(store.repo, acks, history.target_tip)
    rule = TrendRule.of(
        config.gate, config.buckets, configured_calibration(config), accepted, config.alerts
    )
    site = build_site(
        history, rule=rule, out=args.out, last=args.last, title=args.title, jobs=args.jobs
    )
    say(
        f"trend site in {site.out}: {site.pages} pages, {site.charts} charts, "
        f"{site.samples} samples, {site.bytes / 1e6:.1f} MB, "
        f"{time.perf_counter() - began:.1f} s; open {site.out / 'index.html'}"
    )
    for note in (*history.notes, *ack_notes):
        say(f"note: {note}")
    return ExitCode.OK
