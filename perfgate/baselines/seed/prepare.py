"""From what a seed is asked to do to its plan: the reseed plan it follows, the commits and
targets it replays, their ancestry, and the runner's hardware partition (R4, R9)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from perfgate.baselines.reseed import ReseedPlan, load_plan
from perfgate.baselines.seed.plan import (
    DEFAULT_SEED_KEY,
    PlanRequest,
    SeedOptions,
    SeedPlan,
    SeedTarget,
    Selection,
    build_plan,
    preflight_ancestry,
    resolve_targets,
)
from perfgate.baselines.store import BaselineStore
from perfgate.config import Config
from perfgate.errors import UsageError


def reseed_scope(options: SeedOptions, config: Config) -> tuple[ReseedPlan | None, Selection]:
    """The reseed plan ``options`` name (None without one) and the selection left to apply.

    One job of a per-bucket matrix seeds its own bucket of the plan, if planned: --bucket
    narrows the plan, and an id ``config`` does not know is still a typo (exit 4).
    """
    if options.plan is None:
        return None, options.selection
    reseed = load_plan(options.plan)
    selection = options.selection
    if selection.ids:
        config.select(selection.ids)
        reseed = reseed.only(selection.ids)
        selection = replace(selection, ids=())
    return reseed, selection


def _targets(
    options: SeedOptions, config: Config, store: BaselineStore, reseed: ReseedPlan | None
) -> list[SeedTarget]:
    if reseed is not None:
        return resolve_targets(
            store.repo,
            remote=store.remote,
            commit_branches=[f"{reseed.commit}:{reseed.target_branch}"],
        )
    return resolve_targets(
        store.repo,
        remote=store.remote,
        branch=options.branch,
        last=options.last,
        commits=options.commits,
        commit_branches=options.commit_branches,
        # --branch X seeds samples for X unless --target says otherwise; bare --commits
        # fall back to the first gated branch.
        target=options.target or (None if options.branch else config.gate.target_branches[0]),
    )


def plan_seed(
    options: SeedOptions,
    config: Config,
    store: BaselineStore,
    *,
    hardware: str,
    reseed: ReseedPlan | None,
    selection: Selection,
    warn: Callable[[str], None],
) -> SeedPlan:
    """The plan of a seed on a runner of ``hardware``: its commits and targets (each an
    ancestor of its target's tip), the buckets ``selection`` and ``reseed`` name, and what
    the store already holds. ``warn`` hears of every commit dropped and every target
    ``config`` does not gate.
    """
    targets = _targets(options, config, store, reseed)
    # A reseed plan names the pushed commit of its target: anything else is a mistake.
    strict = options.strict_ancestry or reseed is not None
    targets, dropped = preflight_ancestry(store.repo, targets, store.remote, strict)
    for line in dropped:
        warn(line)
    gated = config.gate.target_branches
    for goal in sorted({t.target_branch for t in targets} - set(gated)):
        warn(
            f"samples for {goal} are read only by runs targeting {goal}, which "
            f"{config.path} does not gate (target_branches: {', '.join(gated)})"
        )
    if reseed is not None and reseed.hardware and hardware not in reseed.hardware:
        raise UsageError(
            f"this runner is {hardware}, but the reseed plan is for "
            f"{', '.join(reseed.hardware)}: its samples would fill another partition. "
            "Run the seed on a runner of that pool"
        )
    if reseed is not None:
        selection = replace(selection, ids=selection.ids + reseed.bucket_ids)
    request = PlanRequest(
        targets=tuple(targets),
        selection=selection,
        samples=options.samples,
        bucket_samples={b.id: b.samples for b in reseed.buckets} if reseed else {},
        seed_key=options.seed_key or (reseed.seed_key if reseed else None) or DEFAULT_SEED_KEY,
        hardware=hardware,
        override=config if options.config_given else None,
        min_samples=config.gate.baseline.min_samples,
    )
    return build_plan(store.repo, request, store)
