"""Seeding: replay historical commits to fill baselines (dry run by default; R9).

``plan`` decides what to run, ``replay`` runs it in throwaway worktrees through the
normal bench path, ``records`` says what became of every planned sample.
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
    bucket_hashes,
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
from perfgate.baselines.seed.records import (
    RecordStatus,
    SeedRecord,
    present_records,
    summary_json,
)
from perfgate.baselines.seed.replay import ExecuteSettings, execute, replay_checkout

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
    "bucket_hashes",
    "build_plan",
    "default_samples",
    "execute",
    "format_minutes",
    "parse_commit_branch",
    "preflight_ancestry",
    "present_records",
    "present_samples",
    "replay_checkout",
    "resolve_targets",
    "runner_minutes",
    "select_buckets",
    "summary_json",
]
