"""Seeding: replay historical commits to fill baselines (dry run by default; R9).

``prepare`` turns what a seed is asked to do into a plan, which ``plan`` builds (what to
run, what is stored); ``replay`` runs it in throwaway worktrees through the normal bench
path, ``records`` says what became of every planned sample.
"""

from perfgate.baselines.seed.plan import (
    DEFAULT_SEED_KEY,
    PlanEntry,
    PlanRequest,
    SeedOptions,
    SeedPlan,
    SeedTarget,
    Selection,
    branch_tip,
    build_plan,
    default_samples,
    format_minutes,
    parse_commit_branch,
    preflight_ancestry,
    present_samples,
    resolve_targets,
    runner_minutes,
    select_buckets,
)
from perfgate.baselines.seed.prepare import plan_seed, reseed_scope
from perfgate.baselines.seed.records import (
    RecordStatus,
    SeedRecord,
    present_records,
    summary_json,
)
from perfgate.baselines.seed.replay import ExecuteSettings, execute

__all__ = [
    "DEFAULT_SEED_KEY",
    "ExecuteSettings",
    "PlanEntry",
    "PlanRequest",
    "RecordStatus",
    "SeedOptions",
    "SeedPlan",
    "SeedRecord",
    "SeedTarget",
    "Selection",
    "branch_tip",
    "build_plan",
    "default_samples",
    "execute",
    "format_minutes",
    "parse_commit_branch",
    "plan_seed",
    "preflight_ancestry",
    "present_records",
    "present_samples",
    "reseed_scope",
    "resolve_targets",
    "runner_minutes",
    "select_buckets",
    "summary_json",
]
