"""CI verbs: render workflows and composite actions, and say which buckets a change touches."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate.cli.common import Verbs, add_config, add_verb
from perfgate.config import Bucket, Config, load_config
from perfgate.errors import ExitCode, UsageError

RENDER_HELP = """Render workflows and composite actions from perfgate's templates by perfgate.yaml.

--check re-renders in memory, prints a unified diff and exits 1 when any generated file
is stale (the drift check CI runs).
"""
AFFECTED_HELP = """List the buckets whose `paths:` globs match a change, and the runner
jobs (lanes) that measure them.

Reads one repository-relative path per line (`--changed-files`), or compares each
bucket's paths between the commit the baseline branch last measured it at on a branch and
HEAD (`--since-measured`: a coalesced push, whose superseded pushes were never measured);
a bucket without `paths:` is always affected. The matrix is split into at most
`workflows.bench_jobs` lanes per runner pool (fixed by the whole matrix, so a lane keeps
its warm caches); only the lanes holding an affected bucket run, and the run's budget
(`gate.budget_minutes`) is shared out over them.
On GitHub it also writes the `run`, `buckets` and `lanes` (the bench matrix) step outputs.
"""


def register(verbs: Verbs) -> None:
    """``render`` and ``affected``."""
    render = add_verb(
        verbs,
        "render",
        help="render workflows and composite actions from perfgate's templates",
        description=RENDER_HELP,
        handler=run_render,
        examples=(
            "perfgate render",
            "perfgate render --check",
            "perfgate render --config examples/isaaclab/perfgate.yaml --out examples/isaaclab",
        ),
        exits={
            ExitCode.BLOCK: "--check: a generated file is stale (the diff is printed)",
        },
    )
    add_config(render)
    render.add_argument(
        "--out",
        type=Path,
        default=Path(),
        help="repository root to render into (default: %(default)s)",
    )
    render.add_argument(
        "--check",
        action="store_true",
        help="re-render in memory, print a unified diff and exit 1 when anything is stale",
    )
    affected = add_verb(
        verbs,
        "affected",
        help="list the buckets a change touches",
        description=AFFECTED_HELP,
        handler=run_affected,
        examples=(
            "git diff --name-only origin/main... > changed.txt && "
            "perfgate affected --changed-files changed.txt",
            "perfgate affected --since-measured main",
        ),
    )
    add_config(affected)
    source = affected.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--changed-files", type=Path, metavar="FILE", help="file with one changed path per line"
    )
    source.add_argument("--all", action="store_true", help="select every bucket (forced run)")
    source.add_argument(
        "--since-measured",
        metavar="BRANCH",
        help="select the buckets whose paths changed since the baseline branch last measured "
        "them on BRANCH (a coalesced push: the pushes it follows may be unmeasured); every "
        "bucket never measured there, and every bucket when the baseline branch cannot be read",
    )


def _relative(path: Path) -> Path:
    # Generated headers name the paths; keep them relative so they do not depend on the machine.
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def bench_job_needs(config: Config) -> dict[str, Any]:
    """What the buckets' drivers need of the rendered bench job (render.Site's fields): the
    buckets whose caches stay warm (R16), and whether checkouts need Git LFS content."""
    from perfgate.result import CacheState
    from perfgate.run.drivers import get_driver
    from perfgate.run.launch import cache_state

    return {
        "warm_buckets": frozenset(
            b.id for b in config.buckets if cache_state(b) is CacheState.WARM
        ),
        "lfs": any(get_driver(b.driver).needs_lfs for b in config.buckets),
    }


def run_render(args: argparse.Namespace) -> int:
    """Render workflows and composite actions, or (``--check``) diff them against the tree."""
    from perfgate.ci import render
    from perfgate.util.console import say

    config = load_config(_relative(args.config))
    out = _relative(args.out)
    site = render.site_for(
        config, out, self_ci=render.is_perfgate_checkout(out), **bench_job_needs(config)
    )
    files = render.render_site(site)
    if args.check:
        diffs = render.drift(files, out)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            say(
                f"{len(diffs)} generated file(s) under {out} are stale; "
                f"run `{render.RENDER_TASK}` (or `{site.command}`) and commit the result"
            )
            return ExitCode.BLOCK
        print(f"perfgate: {len(files)} generated file(s) under {out} are up to date")
        return ExitCode.OK
    changed = render.write(files, out)
    for path in changed:
        print(f"wrote {path}")
    print(f"perfgate: {len(files)} file(s) rendered under {out}, {len(changed)} changed")
    return ExitCode.OK


def run_affected(args: argparse.Namespace) -> int:
    """Say which buckets a change touches; on GitHub also write ``run`` and ``buckets`` outputs."""
    from perfgate.ci.selection import affected
    from perfgate.util.console import say, write_step_outputs

    config = load_config(args.config)
    if args.all:
        selected = config.buckets
    elif args.since_measured is not None:
        selected = _since_measured(config, args.since_measured)
    else:
        try:
            # A name that is no UTF-8 (git's unquoted output) still matches its globs.
            changed = args.changed_files.read_text(
                encoding="utf-8", errors="surrogateescape"
            ).splitlines()
        except OSError as exc:
            raise UsageError(
                f"{args.changed_files}: cannot read the changed-files list ({exc.strerror}); "
                "pass a file with one repository-relative path per line, or --all"
            ) from None
        selected = affected(config.buckets, changed)
    ids = [bucket.id for bucket in selected]
    for bucket_id in ids:
        print(bucket_id)
    say(f"{len(ids)} of {len(config.buckets)} bucket(s) affected")
    rows = lane_rows(config, selected)
    for row in rows:
        budget = f", {row['budget']} min of the run's budget" if row["budget"] else ""
        say(f"{row['lane']} on {'+'.join(row['runner'])}: {row['buckets']}{budget}")
    write_step_outputs(
        {
            "run": "true" if ids else "false",
            "buckets": json.dumps(ids, allow_nan=False),
            "lanes": json.dumps({"include": rows}, allow_nan=False),
        }
    )
    return ExitCode.OK


def _since_measured(config: Config, target_branch: str) -> tuple[Bucket, ...]:
    """The buckets a file their paths select changed for since the baseline branch last
    measured them on ``target_branch``; every bucket when it cannot say."""
    from perfgate.baselines.measured import changed_since, last_measured
    from perfgate.baselines.store import open_store
    from perfgate.ci.selection import affected
    from perfgate.errors import PerfgateError
    from perfgate.util.console import say

    if not target_branch:
        raise UsageError("--since-measured: name the branch whose pushes are measured")
    store = open_store(config, local=False)
    if store is None:
        raise UsageError(
            "--since-measured: not inside a git repository; run it in the checkout whose "
            "pushes are measured"
        )
    try:
        measured_at = last_measured(store, config.buckets, target_branch=target_branch,
                                    head="HEAD")  # fmt: skip
        changes = changed_since(store.repo, measured_at, "HEAD")
    except (PerfgateError, OSError) as exc:  # measuring too much is safe; nothing is not
        say(f"what was last measured on {target_branch} cannot be read ({exc}): every bucket runs")
        return config.buckets
    for bucket in config.buckets:
        if measured_at[bucket.id] is None:
            say(f"{bucket.id}: its experiment was never measured at a commit of this history")
    return tuple(
        b for b in config.buckets if (files := changes[b.id]) is None or affected([b], files)
    )


def lane_rows(config: Config, measured: Sequence[Bucket]) -> list[dict[str, Any]]:
    """The bench matrix's ``include`` rows: one per lane that measures any of ``measured``."""
    from perfgate.ci.contexts import lane_timeout_minutes
    from perfgate.ci.lanes import plan
    from perfgate.ci.site import RESULT_ARTIFACT_PREFIX
    from perfgate.result import LOG_ARTIFACT_PREFIX

    warm = bench_job_needs(config)["warm_buckets"]
    return [
        {
            "lane": lane.name,
            "title": lane.title,
            "buckets": " ".join(b.id for b in lane.buckets),
            "artifact": RESULT_ARTIFACT_PREFIX + lane.name,
            "logs": LOG_ARTIFACT_PREFIX + lane.name,
            "runner": list(lane.runner),
            "timeout": lane_timeout_minutes(lane, config, warm),
            # A string: an empty one leaves the bench at gate.budget_minutes (none set).
            # Exact: the shares, rounded down to 3 decimals, add up to at most the budget.
            "budget": "" if lane.budget_minutes is None else f"{lane.budget_minutes:.3f}",
        }
        for lane in plan(config, measured)
    ]
