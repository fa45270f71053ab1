"""Roll the CI image era (docs/design.md R11): build and record a new era's image, then reseed.

On a protected push the checkout's era key is looked up in the manifest on the baseline
branch:

- recorded: nothing to do;
- no manifest yet (bootstrap): the era is recorded against the image the baselines on the
  branch were measured with (the target branch's tag, pinned to its digest where the
  registry tells it), and only buckets without a READY window of that runtime are
  reseeded: a first push never builds, and never reseeds a bucket that can gate;
- new: the configured build runs, every ref is tagged and pushed, the first ref (pinned to
  its digest) is recorded, and every bucket is reseeded at the pushed commit, because a
  new runtime resets every bucket's identity.

Deciding is pure (:func:`plan_roll`); :func:`execute_roll` runs the commands and writes the
manifest, only after every command succeeded. Concurrent rolls converge on the first
record; a recorded era is replaced only when forced, with the reason kept in the record.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfgate.baselines.pushing import commit_to_branch
from perfgate.baselines.reseed import ReseedPlan, plan_buckets
from perfgate.baselines.seed.plan import runner_minutes
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import BucketReadiness, Readiness
from perfgate.config import Bucket, ImageRoll, ImageSpec
from perfgate.errors import ConfigError, GateMalfunction, ImageStepFailed, UsageError
from perfgate.identity import stable_hash
from perfgate.run.image import (
    Era,
    EraRecord,
    branch_values,
    digest_of,
    fill_reference,
    fill_template,
    manifest_editor,
    pinned,
    read_manifest,
    tag_for,
)
from perfgate.util.bounded import run_streaming

# Credentials of the baseline branch's git pushes: the registry commands never see them.
_GIT_CREDENTIALS = ("GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN")
_GIT_CREDENTIAL_PREFIXES = ("GIT_CONFIG_", "ACTIONS_ID_TOKEN_REQUEST_")
# Of the roll job's time, what the digest probe and the manifest's commit are left once
# every registry command is stopped: a stalled step then ends the roll with its name,
# before the job's own timeout cancels it without one.
RECORDING_MARGIN_S = 300.0


class RollAction(StrEnum):
    """What a roll does for the checkout's era."""

    NOTHING = "nothing"
    BOOTSTRAP = "bootstrap"
    ROLL = "roll"
    REBUILD = "rebuild"


@dataclass(frozen=True, kw_only=True)
class Command:
    """One registry command of a roll and the step it belongs to."""

    step: str
    argv: tuple[str, ...]

    def text(self) -> str:
        """The command as a shell would show it."""
        return shlex.join(self.argv)


@dataclass(frozen=True, kw_only=True)
class RollRequest:
    """A roll's inputs: the image block, the era, and the pushed commit and branch."""

    spec: ImageSpec
    era: Era
    commit: str
    branch: str
    buckets: tuple[Bucket, ...]
    min_samples: int
    force: str | None = None


@dataclass(frozen=True, kw_only=True)
class RollPlan:
    """What a roll will do; ``image`` is what it records (before pinning to a digest)."""

    action: RollAction
    request: RollRequest
    image: str
    commands: tuple[Command, ...] = ()
    refs: tuple[str, ...] = ()
    recorded: Mapping[str, Any] | None = None
    readiness: tuple[BucketReadiness, ...] = ()
    reseed: ReseedPlan

    @property
    def records(self) -> bool:
        """True when the roll writes the manifest."""
        return self.action is not RollAction.NOTHING


@dataclass(frozen=True, kw_only=True)
class RollOutcome:
    """What a roll did: the era's image now, who recorded it, and what to seed."""

    action: RollAction
    image: str
    recorded_here: bool
    baseline_commit: str | None
    reseed: ReseedPlan
    notes: tuple[str, ...] = ()


# -- pure decisions ---------------------------------------------------------------------


def roll_values(branch: str, era: Era, commit: str) -> dict[str, str]:
    """Placeholders of the roll's templates (config.ROLL_PLACEHOLDERS)."""
    return {**branch_values(branch, era), "sha": commit, "sha7": commit[:7]}


def roll_commands(
    roll: ImageRoll, values: Mapping[str, str]
) -> tuple[tuple[str, ...], tuple[Command, ...]]:
    """The refs to push and the commands: login, build, one tag and one push per ref."""
    image = fill_reference(roll.build.image, values, "image.roll.build.image")
    refs = tuple(
        fill_reference(ref, values, f"image.roll.refs[{i}]") for i, ref in enumerate(roll.refs)
    )
    commands: list[Command] = []
    if roll.login:
        commands.append(Command(step="login", argv=roll.login))
    build = {**values, "image": image}
    commands.append(
        Command(
            step="build",
            argv=tuple(fill_template(a, build, "image.roll.build.argv") for a in roll.build.argv),
        )
    )
    for step, argv in (("tag", roll.tag), ("push", roll.push)):
        for ref in refs:
            filled = {**values, "image": image, "ref": ref}
            commands.append(
                Command(
                    step=step,
                    argv=tuple(fill_template(a, filled, f"image.roll.{step}") for a in argv),
                )
            )
    return refs, tuple(commands)


def seed_key_for(era: Era, image: str) -> str:
    """The seed key of an era's reseed: a rebuilt era's image measures the commit anew."""
    return f"era-{era.key[:12]}-{stable_hash({'image': image}, length=8)}"


def plan_roll(
    request: RollRequest,
    manifest: Mapping[str, Any] | None,
    readiness: Callable[[], Sequence[BucketReadiness]],
) -> RollPlan:
    """Decide the roll; ``readiness`` is asked only when bootstrapping (no manifest yet)."""
    era, spec = request.era, request.spec
    empty = ReseedPlan(
        commit=request.commit,
        target_branch=request.branch,
        min_samples=request.min_samples,
        buckets=(),
    )
    entry = (manifest or {}).get("eras", {}).get(era.key)
    if entry is not None and request.force is None:
        return RollPlan(
            action=RollAction.NOTHING,
            request=request,
            image=entry["image"],
            recorded=entry,
            reseed=empty,
        )
    login = (Command(step="login", argv=spec.roll.login),) if spec.roll and spec.roll.login else ()
    if manifest is None and request.force is None:
        tag = tag_for(spec, request.branch, era)
        if tag is None:
            raise UsageError(
                f"no manifest yet and no image.tags pattern matches {request.branch!r}, so the "
                "image the baselines were measured with is unknown; record it with "
                "`resolve-image --record IMAGE`, or build this era with `roll-era --force REASON`"
            )
        rows = tuple(readiness())
        waiting = [r for r in rows if r.status is not Readiness.READY]
        return RollPlan(
            action=RollAction.BOOTSTRAP,
            request=request,
            image=tag,
            commands=login,
            readiness=rows,
            reseed=replace(
                empty,
                buckets=plan_buckets(
                    [r.bucket for r in waiting],
                    {r.bucket: r.samples for r in waiting},
                    request.min_samples,
                ),
            ),
        )
    if spec.roll is None:
        raise ConfigError(
            f"perfgate.yaml: image.roll: era {era.key} needs a new image and nothing is "
            'configured to build it; add image.roll (docs/isaaclab.md "CI images") or record '
            "an image with `resolve-image --record IMAGE`"
        )
    refs, commands = roll_commands(spec.roll, roll_values(request.branch, era, request.commit))
    every = [b.id for b in request.buckets]
    return RollPlan(
        action=RollAction.ROLL if entry is None else RollAction.REBUILD,
        request=request,
        image=refs[0],
        commands=commands,
        refs=refs,
        recorded=entry,
        reseed=replace(empty, buckets=plan_buckets(every, {}, request.min_samples)),
    )


def reseed_minutes(reseed: ReseedPlan, buckets: Sequence[Bucket]) -> tuple[float, float]:
    """Upper bounds of bucket-runner time for the reseed (the seed's, of its planned runs):
    by timeouts, and with every retry."""
    by_id = {b.id: b for b in buckets}
    return runner_minutes((by_id[p.id], p.samples) for p in reseed.buckets if p.id in by_id)


# -- I/O at the edges -------------------------------------------------------------------


def registry_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the baseline branch's git credentials: the registry needs none of them."""
    return {
        key: value
        for key, value in env.items()
        if key not in _GIT_CREDENTIALS and not key.startswith(_GIT_CREDENTIAL_PREFIXES)
    }


def roll_deadline(roll: ImageRoll | None, now: float) -> float:
    """When the roll's registry commands must have finished (``time.monotonic`` clock)."""
    job_s = 60.0 * (roll.timeout_minutes if roll is not None else ImageRoll.timeout_minutes)
    return now + job_s - min(RECORDING_MARGIN_S, job_s / 2)


def run_command(command: Command, cwd: Path, env: Mapping[str, str], deadline: float) -> None:
    """Run one registry command until ``deadline``; a failure or a stall raises ImageStepFailed
    naming the step (exit 3), with the stalled command's whole process group killed."""
    left = max(1.0, deadline - time.monotonic())
    try:
        code = run_streaming(command.argv, timeout=left, cwd=cwd, env=env)
    except OSError as exc:
        detail = f"could not start ({exc.strerror})"
    except subprocess.TimeoutExpired:
        detail = f"did not finish within the roll's time ({left / 60:.1f} min left) and was stopped"
    else:
        if code == 0:
            return
        detail = f"exited {code}"
    raise ImageStepFailed(
        f"era roll step '{command.step}' failed: {command.text()} {detail}; the manifest is "
        "unchanged, so the next push (or a dispatch) rolls this era again"
    )


def recorded_entry(store: BaselineStore, spec: ImageSpec, era: Era) -> Mapping[str, Any] | None:
    """The era's manifest entry at the newest tip of the baseline branch, if any."""
    manifest = read_manifest(store.repo, store.refresh(), spec.manifest, store.branch)
    entry: Mapping[str, Any] | None = (manifest or {}).get("eras", {}).get(era.key)
    return entry


def execute_roll(
    plan: RollPlan,
    *,
    store: BaselineStore,
    cwd: Path,
    env: Mapping[str, str],
    log: Callable[[str], None],
    deadline: float,
) -> RollOutcome:
    """Run the plan's commands until ``deadline``, then record the era; nothing is recorded
    after a failure."""
    request, era, spec = plan.request, plan.request.era, plan.request.spec
    if plan.action is RollAction.NOTHING:
        return RollOutcome(
            action=plan.action,
            image=plan.image,
            recorded_here=False,
            baseline_commit=None,
            reseed=plan.reseed,
        )
    clean_env = registry_env(env)
    first_push = next((c for c in plan.commands if c.step == "push"), None)
    for command in plan.commands:
        if command is first_push and plan.action is RollAction.ROLL:
            # A concurrent roll of this era may have recorded it while this one built.
            entry = recorded_entry(store, spec, era)
            if entry is not None:
                return _converged(plan, entry, "recorded while this roll built; nothing pushed")
        log(f"{command.step}: {command.text()}")
        run_command(command, cwd, clean_env, deadline)
    digest = digest_of(spec.digest, plan.image, cwd, clean_env) if spec.digest else None
    if spec.digest and digest is None:
        log(f"note: no digest for {plan.image} ({shlex.join(spec.digest)}); recording the tag")
    image = pinned(plan.image, digest)
    details: dict[str, Any] = {"source": plan.action.value, "branch": request.branch}
    if plan.refs:
        details["refs"] = list(plan.refs)
    if plan.action is RollAction.BOOTSTRAP:
        details["tag"] = plan.image
    record = EraRecord(
        era=era,
        image=image,
        commit=request.commit,
        details=details,
        keep_recorded=True,
        force=request.force,
    )
    baseline_commit = commit_to_branch(
        store.repo,
        store.branch,
        store.remote,
        manifest_editor(spec.manifest, record),
        record.message,
        store.retry,
        paths=[spec.manifest],
    )
    if baseline_commit is None:
        # The editor changes nothing only when the era is recorded already.
        entry = recorded_entry(store, spec, era)
        if entry is None:
            raise GateMalfunction(
                f"era {era.key} vanished from {spec.manifest} on {store.branch} during the "
                "roll; check who rewrites the baseline branch, then roll again"
            )
        return _converged(plan, entry, "already recorded by a concurrent roll")
    return RollOutcome(
        action=plan.action,
        image=image,
        recorded_here=True,
        baseline_commit=baseline_commit,
        reseed=replace(plan.reseed, seed_key=seed_key_for(era, image)),
    )


def _converged(plan: RollPlan, entry: Mapping[str, Any], why: str) -> RollOutcome:
    """Another roll recorded this era first: use its image; its own roll reseeds."""
    return RollOutcome(
        action=plan.action,
        image=entry["image"],
        recorded_here=False,
        baseline_commit=None,
        reseed=replace(plan.reseed, buckets=()),
        notes=(
            f"era {plan.request.era.key} {why}: it is {entry['image']} "
            f"(commit {str(entry.get('commit'))[:12]}), whose roll reseeds",
        ),
    )
