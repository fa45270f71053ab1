"""Choose the CI image for this run, or record an image era (docs/design.md R11).

The era key hashes the declared container inputs of the checkout. A manifest on the
baseline branch maps eras to immutable images; a miss falls back to the target branch's
tag (never the pull request's merge ref), then to a build. --record writes the manifest
and runs only on pushes to protected branches; a recorded era is immutable (exit 4)
unless --force REASON, which is kept in the record.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from perfgate.cli.common import (
    Verbs,
    add_baseline_source,
    add_config,
    add_verb,
    baseline_is_local,
    print_json,
)
from perfgate.config import load_config
from perfgate.errors import ExitCode, UsageError


def register(verbs: Verbs) -> None:
    """``resolve-image``."""
    resolve_image = add_verb(
        verbs,
        "resolve-image",
        help="choose the CI image for this run, or record an image era",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate resolve-image",
            "perfgate resolve-image --record registry/image@sha256:...   # protected pushes only",
        ),
        exits={
            ExitCode.MALFUNCTION: "the manifest could not be read or written, or the build failed",
            ExitCode.USAGE: (
                "no image block, a recorded era (without --force), or not a protected push"
            ),
        },
    )
    add_config(resolve_image)
    resolve_image.add_argument(
        "--checkout",
        type=Path,
        default=Path.cwd(),
        help="the source checkout whose era inputs are hashed (default: the current directory)",
    )
    resolve_image.add_argument(
        "--record",
        metavar="IMAGE",
        help="record IMAGE (immutable reference) for this checkout's era; protected pushes only",
    )
    resolve_image.add_argument(
        "--force",
        metavar="REASON",
        help="with --record: replace the image of an era the manifest has (refused, exit 4, "
        "without it); REASON is kept in the record",
    )
    add_baseline_source(resolve_image)
    resolve_image.add_argument(
        "--no-build", action="store_true", help="never fall back to image.build"
    )
    resolve_image.add_argument(
        "--target-branch",
        metavar="BRANCH",
        help="whose image tag is the fallback (default: this run's target branch; the seed "
        "workflow passes the branch it seeds)",
    )


def run(args: argparse.Namespace) -> int:
    """Choose the CI image (manifest hit, target-branch tag, build), or record an era."""
    from perfgate import context
    from perfgate.baselines.pushing import commit_to_branch
    from perfgate.baselines.store import open_store
    from perfgate.run import image
    from perfgate.util.console import say, write_step_outputs

    config = load_config(args.config)
    if config.image is None:
        raise UsageError(f"{config.path} has no 'image' block; add one to resolve CI images")
    spec = config.image
    checkout = args.checkout
    run = context.detect(os.environ, cwd=checkout, default_target=config.gate.target_branches[0])
    era = image.era_of(spec, checkout)
    store = open_store(config, local=baseline_is_local(args))
    if args.force is not None and (not args.record or not args.force.strip()):
        raise UsageError("--force REASON goes with --record IMAGE and needs a reason")
    if args.record:
        protected = ", ".join(config.gate.protected_branches)
        if not config.gate.is_protected_push(run.event, run.branch):
            raise UsageError(
                f"refusing to record an image era: the manifest is written only by pushes to "
                f"protected branches ({protected}); this run is a {run.event!r} event on "
                f"{run.branch!r}"
            )
        if store is None:
            raise UsageError("--record must run inside the repository's git checkout")
        record = image.EraRecord(
            era=era,
            image=args.record,
            commit=run.commit,
            details={"source": "record"},
            force=args.force,
        )
        commit = commit_to_branch(
            store.repo,
            store.branch,
            store.remote,
            image.manifest_editor(spec.manifest, record),
            record.message,
            store.retry,
            # Only the manifest is checked out: the samples on the branch can be large.
            paths=[spec.manifest],
        )
        state = f"recorded at {commit[:12]}" if commit else "already recorded"
        say(f"era {era.key} -> {args.record} {state} on {store.branch}")
        return ExitCode.OK
    manifest = None
    if store is not None:
        manifest = image.read_manifest(store.repo, store.refresh(), spec.manifest, store.branch)
    target_branch = args.target_branch or run.target_branch
    choice = image.choose(
        spec,
        era=era,
        manifest=manifest,
        target_branch=target_branch,
        usable=image.probe_with(spec.probe, checkout) if spec.probe else lambda _: True,
        build=(
            image.build_with(spec, target_branch, checkout)
            if spec.build and not args.no_build
            else None
        ),
    )
    write_step_outputs(choice.step_outputs())
    print_json(choice.to_json())
    return ExitCode.OK
