"""Accept an intended change: from COMMIT on, BUCKET's level is the new one (R18).

Records the acceptance on the baseline branch (acknowledgements.ndjson). From then on
the gate's windows, the trend site and the post-merge alerts treat COMMIT as a known
level shift for the bucket: the window starts there, the change is never alerted again,
and an open alert issue for it is closed by the next push. Trusted writers only: a
maintainer (whose push to the baseline branch the remote accepts) or the job of a push to
the protected target branch itself; any other CI run (a pull request's, a dispatch, a
push to another branch) is refused. The same happens when the `perfgate-accepted`
label is put on the alert's issue, or a merged pull request carries it (or a
`perfgate-accept: BUCKET why` line in its description).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    EXIT_MEANINGS,
    Verbs,
    add_baseline_source,
    add_config,
    add_verb,
    baseline_is_local,
    repo_top,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.config import Config
    from perfgate.context import RunContext


def register(verbs: Verbs) -> None:
    """``accept``."""
    accept = add_verb(
        verbs,
        "accept",
        help="accept an intended change: the bucket's window starts at the commit",
        description=__doc__,
        handler=run,
        examples=(
            'perfgate accept --bucket cartpole/numpy --commit 1a2b3c4 --reason "exact solver" '
            "--remote",
        ),
        exits={ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION]},
    )
    add_config(accept)
    accept.add_argument("--bucket", required=True, metavar="ID", help="the bucket that changed")
    accept.add_argument(
        "--commit", required=True, metavar="SHA", help="the commit the new level starts at"
    )
    accept.add_argument("--reason", required=True, help="why the change is intended")
    accept.add_argument(
        "--metric", metavar="NAME", help="only this metric of the bucket (default: every one)"
    )
    accept.add_argument(
        "--target",
        metavar="BRANCH",
        help="a protected target branch of perfgate.yaml (default: the first target branch)",
    )
    add_baseline_source(accept)


def run(args: argparse.Namespace) -> int:
    """Check the bucket, metric and commit, then record the acceptance."""
    from perfgate import context
    from perfgate.baselines.acks import acknowledgement, record_acks
    from perfgate.baselines.seed.plan import branch_tip
    from perfgate.baselines.store import open_store
    from perfgate.errors import GitError
    from perfgate.util.console import say
    from perfgate.util.git import git, try_git

    repo = repo_top()
    config = load_config(args.config)
    here = context.detect(os.environ, default_target=config.gate.target_branches[0])
    target = args.target or config.gate.target_branches[0]
    if not _gated(config, target):
        raise UsageError(
            f"--target {target}: an acceptance is recorded by commit and applies wherever "
            "that commit lands, so only a branch the gate judges and protects may name one "
            f"(gate.target_branches: {', '.join(config.gate.target_branches)}; "
            f"gate.protected_branches: {', '.join(config.gate.protected_branches)} in "
            f"{config.path}); accept the change on the branch it is merged into"
        )
    if here.on_github and not _pushed_to(here, config, target):
        raise UsageError(
            f"refusing to accept a change from a {here.event!r} run on {here.branch!r}: in CI "
            f"only the push to the protected target branch {target!r} records one (or a "
            "maintainer, locally); put the perfgate-accepted label on the alert's issue"
        )
    (bucket,) = config.select([args.bucket])
    if args.metric is not None and bucket.metric_named(args.metric) is None:
        names = ", ".join(m.name for m in bucket.all_metrics)
        raise UsageError(f"--metric {args.metric}: bucket {bucket.id} measures {names}")
    try:
        commit = git("rev-parse", "--verify", "--quiet", f"{args.commit}^{{commit}}", cwd=repo)
    except GitError:
        raise UsageError(f"--commit {args.commit}: no such commit here; fetch it first") from None
    commit = commit.strip()
    store = open_store(config, local=baseline_is_local(args))
    assert store is not None  # repo_top found the repository
    tip = branch_tip(repo, target, store.remote)
    try:
        git("merge-base", "--is-ancestor", commit, tip, cwd=repo)
    except GitError:
        raise UsageError(
            f"--commit {args.commit} is not on {target}: an acceptance starts a level on the "
            "target branch, so name the commit as it landed there"
        ) from None
    by = (
        os.environ.get("GITHUB_ACTOR")
        or try_git("config", "user.name", cwd=repo)
        or os.environ.get("USER")
        or "unknown"
    )
    ack = acknowledgement(
        bucket=bucket.id, metric=args.metric, commit=commit, reason=args.reason, by=by,
        source="accept",
    )  # fmt: skip
    added = record_acks(store, [ack], f"Accept {bucket.id} at {commit[:12]}: {ack.reason}"[:200])
    where = f"{store.remote}/{store.branch}" if store.remote else f"{store.branch} (local)"
    if added:
        say(f"accepted {bucket.id} at {commit[:12]} on {where}: {ack.reason}")
    else:
        say(f"{bucket.id} at {commit[:12]} was accepted already on {where}")
    return ExitCode.OK


def _pushed_to(here: RunContext, config: Config, target: str) -> bool:
    """True for the job of a push to ``target`` when it is protected: the one CI run
    whose code and token are as trusted as the branch the acceptance applies to."""
    pushed = config.gate.is_protected_push(here.event, here.branch)
    return pushed and not here.is_pull_request and here.branch == target


def _gated(config: Config, branch: str) -> bool:
    """True for a target branch the gate judges and protects: its history grows only by
    trusted pushes, so a commit accepted on it is one the branch really landed."""
    targets = config.gate.target_branches
    gated = any(fnmatch.fnmatchcase(branch, pattern) for pattern in targets)
    return gated and config.gate.is_protected(branch)
