"""The context each workflow and composite action is rendered with (R12, R13).

Every decision (which jobs, which branches, the bench matrix, the expressions GitHub
evaluates) is made here, in Python; the Jinja templates only lay the values out.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from perfgate.ci.expressions import (
    branch_condition,
    concurrency_group,
    config_condition,
    expr_string,
    trusted_event_condition,
)
from perfgate.ci.lanes import Lane, planned_minutes
from perfgate.ci.site import (
    HOSTED_RUNNER,
    Site,
    common_context,
)
from perfgate.ci.templating import Raw, quoted
from perfgate.config import (
    AdmissionMode,
    AdmissionPolicy,
    Bucket,
    Config,
    ConfirmMode,
)

#: Labels GitHub provides itself; anything else in a bucket's runner is a self-hosted label.
GITHUB_HOSTED_LABELS = frozenset(
    {
        "ubuntu-latest",
        "ubuntu-24.04",
        "ubuntu-22.04",
        "ubuntu-24.04-arm",
        "ubuntu-22.04-arm",
        "windows-latest",
        "windows-2025",
        "windows-2022",
        "macos-latest",
        "macos-15",
        "macos-14",
        "macos-13",
        "self-hosted",
        "linux",
        "windows",
        "macos",
        "x64",
        "arm64",
    }
)


# -- pure decisions ---------------------------------------------------------------------


def sampling_minutes(
    bucket: Bucket, confirm: ConfirmMode, admission: AdmissionPolicy | None = None
) -> float:
    """The longest a bucket's samples may take: each may use its timeout on every attempt.

    Against the window: the repeats, and confirmation samples up to max_repeats or the
    budget (paired confirmation falls back to them without a merge base). Paired: two
    samples a pair up to max_pairs or the pair budget. Admission control: its wait and its
    re-measured samples.
    """
    one = (bucket.retries + 1) * bucket.timeout_minutes
    worst = bucket.most_samples(confirm) * one
    if confirm is not ConfirmMode.OFF and bucket.repeat_budget_minutes is not None:
        # No confirmation sample starts after the budget; the last may start just before it.
        worst = min(worst, max(bucket.repeats * one, bucket.repeat_budget_minutes + one))
    if confirm is ConfirmMode.PAIRED:
        pairs = 2 * bucket.max_pairs * one
        if bucket.pair_budget_minutes is not None:
            pairs = min(pairs, bucket.pair_budget_minutes + 2 * one)
        worst += pairs
    if admission is not None and admission.mode is not AdmissionMode.OFF:
        worst += admission.remeasure * one + admission.wait_seconds / 60.0
    return worst


def lane_timeout_minutes(lane: Lane, config: Config, warm: Collection[str] = ()) -> int:
    """A lane job's ``timeout-minutes``, >= 30: its setup margin, and every launch it may
    start, each allowed its timeout (a push to a protected branch plans the most samples).

    Under a run budget that is the planned launches (with a cold cache's warm-up), the
    longest admission waits, the lane's share of the budget and one launch that overruns
    its expected time; without one, every launch its buckets' counts allow.
    """
    buckets = [bucket.as_pushed(config.alerts) for bucket in lane.buckets]
    share = lane.budget_minutes if lane.budget_minutes is not None else config.gate.budget_minutes
    if share is None:
        worst = sum(sampling_minutes(b, config.gate.confirm, config.admission) for b in buckets)
    else:
        planned = sum(
            planned_minutes(replace(b, launch_minutes=b.timeout_minutes), config.admission, warm)
            for b in buckets
        )
        worst = planned + share + max(b.timeout_minutes for b in buckets)
    return max(30, math.ceil(worst) + 15)


def resolves_image(config: Config) -> bool:
    """True when the bench resolves an image per era (R11). With ``image.per_commit`` each
    checkout runs in its own commit's image instead, which the bench awaits itself."""
    return config.image is not None and config.image.per_commit is None


def gate_jobs() -> list[dict[str, Any]]:
    """The two gate jobs: read-only for pull requests (and dispatch), posting for trusted events.

    Permissions cannot depend on the event, and a pull request's run executes the
    pull request's code, so it never holds a write token (R12): it writes its report
    and uploads it, and the trusted ``workflow_run`` consumer posts it. ``!cancelled()``
    rather than ``always()``: a crashed bucket is still judged, but a superseded run
    posts nothing.
    """
    trusted = trusted_event_condition()
    common = "!cancelled() && needs.config.outputs.run == 'true'"
    return [
        {
            "id": Raw("gate"),
            "name": "gate",
            "condition": quoted(f"{common} && !({trusted})"),
            "post": "false",
            "writes_statuses": False,
            "why": Raw(
                "# Pull requests run their own code here: read-only; perfgate-comment.yml posts."
            ),
        },
        {
            "id": Raw("gate-trusted"),
            "name": "gate (post)",
            "condition": quoted(f"{common} && ({trusted})"),
            "post": "true",
            "writes_statuses": True,
            "why": Raw("# Pushes and merge groups post their statuses directly."),
        },
    ]


# -- context builders -------------------------------------------------------------------


def gate_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the perf gate workflow (config, bench matrix, gate, publish)."""
    gate = site.config.gate
    return {
        **common_context(site),
        "target_branches": list(gate.target_branches),
        "protected_branches": list(gate.protected_branches),
        "concurrency_group": quoted(
            concurrency_group("perfgate", coalesce_pushes=site.config.coalesce_pushes)
        ),
        "coalesce_pushes": site.config.coalesce_pushes,
        "config_condition": quoted(config_condition()),
        "publish_condition": quoted(
            "!cancelled() && github.event_name == 'push' && "
            "needs.config.outputs.run == 'true' "
            f"&& ({branch_condition(gate.protected_branches)})"
        ),
        # The upstream bench job checks out with lfs: true: *.usd and *.pt are LFS-tracked.
        "lfs": site.lfs,
        "publish_timeout": publish_timeout(gate.baseline.publish_deadline_minutes),
        # Only a config with an image block has an image to resolve (R11).
        "resolve_image": resolves_image(site.config),
        # A bench job that confirms suspicious runs reads the baseline window (R5), and a
        # paired one checks out the merge base: both need the whole history.
        "confirm": gate.confirm is not ConfirmMode.OFF,
        # A driver that plans its launch from the checkout (the isaaclab driver: CLI flavour,
        # task ids, presets) is planned in the hosted config job first, so a launch that
        # cannot start fails there in seconds instead of on a GPU runner.
        "plan_checkout": any(b.driver == "isaaclab" for b in site.config.buckets),
        "gate_jobs": gate_jobs(),
        # Post-merge alerts read what publish appended: a protected push only (R18).
        "alert_condition": quoted(
            "!cancelled() && needs.config.outputs.run == 'true' && "
            # A publish that exits 2 (a bucket failed, R8) still landed the healthy samples.
            "(needs.publish.result == 'success' || needs.publish.result == 'failure') && "
            "github.event_name == 'push' && "
            f"({branch_condition(gate.protected_branches)})"
        ),
        "report": {
            # After every publish that ran: one that exits 2 because a bucket failed (R8)
            # still landed the healthy samples the site draws.
            "condition": quoted(
                "!cancelled() && needs.config.outputs.run == 'true' && "
                "(needs.publish.result == 'success' || needs.publish.result == 'failure')"
            ),
            # Rendered as the action input's string, and decides whether a deploy job exists.
            "pages": "true" if site.config.report.pages else "false",
        },
    }


def publish_timeout(deadline_minutes: float) -> int:
    """The publish job's timeout: past the retry deadline, so it keeps what did not land."""
    # Checkout with full history, setup and the pending-samples download come first.
    return math.ceil(deadline_minutes) + 15


def seed_jobs(config: Config) -> list[dict[str, Any]]:
    """The seed workflow's two jobs: a read-only dry run, and the run that writes baselines.

    Permissions cannot depend on an input, so the write scope lives on the job that
    only runs when ``dry-run`` is false. Seeding benchmarks, so it runs on the first
    bucket's runner; the dry run only plans, on a hosted runner.
    """
    return [
        {
            "id": Raw("plan"),
            "name": "seed (dry run)",
            "condition": Raw("inputs.dry-run"),
            "runner": HOSTED_RUNNER,
            "timeout": 15,
            "contents": Raw("read"),
            "why": Raw("# a dry run only prints the plan"),
            "resolve_image": False,
        },
        {
            "id": Raw("seed"),
            "name": "seed",
            "condition": quoted("${{ !inputs.dry-run }}"),
            "runner": list(config.buckets[0].runner),
            "timeout": 360,
            "contents": Raw("write"),
            "why": Raw("# push the seeded samples to the baseline branch"),
            # Seeding benchmarks like bench does, so it needs the same image (R11).
            "resolve_image": resolves_image(config),
        },
    ]


def seed_image_target(config: Config) -> Raw:
    """The branch the seed job resolves its image for: the samples' target branch.

    Mirrors ``perfgate seed``'s own default: ``--target``, else ``--branch``, else the
    first target branch of perfgate.yaml.
    """
    first = expr_string(config.gate.target_branches[0])
    return quoted(f"${{{{ inputs.target || inputs.branch || {first} }}}}")


def seed_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the seed workflow."""
    return {
        **common_context(site),
        "seed_jobs": seed_jobs(site.config),
        "image_target": seed_image_target(site.config),
    }


def bisect_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the bisect workflow."""
    return {
        **common_context(site),
        "bucket_ids": list(site.config.bucket_ids()),
        # Bisecting benchmarks like bench does, so it needs the same image (R11).
        "resolve_image": resolves_image(site.config),
        "image_target": site.config.gate.target_branches[0],
    }


def era_seed_timeout_minutes(bucket: Bucket, runs: int) -> int:
    """A reseed job's ``timeout-minutes``: every run's repeats with every attempt, plus setup."""
    return max(30, math.ceil(runs * sampling_minutes(bucket, ConfirmMode.OFF)) + 15)


def era_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the image era workflow: roll (build, push, record) -> seed -> verify (R11).

    The roll job holds the one write scope it needs and, by name, only the registry
    secrets of ``image.roll.secrets`` (R12); the seed rows are static like the bench
    matrix, and each seeds at most ``min_samples`` samples of its bucket.
    """
    config = site.config
    roll = config.image.roll if config.image else None
    samples = config.gate.baseline.min_samples
    planned = "contains(fromJSON(needs.roll.outputs.reseed-plan).bucket_ids, matrix.bucket)"
    return {
        **common_context(site),
        "protected_branches": list(config.gate.protected_branches),
        "roll": {
            # Without image.roll the job never builds: it records a bootstrap or says
            # the era is known (a new era fails there, naming image.roll).
            "runner": list(roll.runner) if roll else HOSTED_RUNNER,
            "timeout": roll.timeout_minutes if roll else 30,
            # Names match ^[A-Za-z_][A-Za-z0-9_]*$ (schema): safe inside the expression.
            "secrets": [
                (name, quoted(f"${{{{ secrets.{name} }}}}"))
                for name in (roll.secrets if roll else ())
            ],
        },
        "seed_matrix": [
            {
                "bucket": bucket.id,
                "runner": list(bucket.runner),
                "timeout": era_seed_timeout_minutes(bucket, samples),
            }
            for bucket in config.buckets
        ],
        "planned": quoted(planned),
    }


def qualify_pools(config: Config) -> list[dict[str, Any]]:
    """One allocation job per runner pool of the config, each on its pool's labels.

    Runner labels stay static (reviewable, checked by actionlint, never chosen by run-time
    output); ``qualify --plan`` says which pool the selected buckets use, and only that
    pool's job runs its allocations.
    """
    pools = config.runner_pools()
    return [
        {
            "job": Raw("allocation" if len(pools) == 1 else f"allocation-{number}"),
            "condition": quoted(f"needs.plan.outputs.pool == '{number}'"),
            "runner": list(runner),
        }
        for number, runner in enumerate(pools, start=1)
    ]


def qualify_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the runner-pool qualification workflow: plan, allocations, qualify (R15)."""
    pools = qualify_pools(site.config)
    return {
        **common_context(site),
        "pools": pools,
        "pool_jobs": Raw("[" + ", ".join(["plan", *(str(p["job"]) for p in pools)]) + "]"),
        "resolve_image": resolves_image(site.config),
    }


#: Conclusions of a perfgate run whose report is worth posting: it finished (a BLOCK or a
#: HARD_FAILURE fails the run, R8). A cancelled run was superseded; a skipped one judged nothing.
REPORTED_CONCLUSIONS = ("success", "failure")


def comment_workflow_context(site: Site) -> dict[str, Any]:
    """Context of the trusted ``workflow_run`` consumer that posts pull request reports."""
    condition = " || ".join(
        f"github.event.workflow_run.conclusion == {expr_string(c)}" for c in REPORTED_CONCLUSIONS
    )
    return {**common_context(site), "report_condition": quoted(condition)}


def ci_workflow_context(site: Site) -> dict[str, Any]:
    """Context of this repository's own CI workflow."""
    return {
        **common_context(site),
        "concurrency_group": quoted(concurrency_group("ci")),
        "protected_branches": list(site.config.gate.protected_branches),
    }


def actionlint_context(site: Site) -> dict[str, Any]:
    """Context of the actionlint configuration: the runner labels GitHub does not provide
    (self-hosted), for actionlint's runner-label check."""
    image = site.config.image
    labels = {label for bucket in site.config.buckets for label in bucket.runner}
    labels |= set(image.roll.runner) if image and image.roll else set()
    return {**common_context(site), "labels": sorted(labels - GITHUB_HOSTED_LABELS)}


_ACTIONS = (
    "setup",
    "resolve-image",
    "bench",
    "gate",
    "publish-baseline",
    "alert",
    "seed",
    "report",
    "bisect",
    "qualify-bench",
    "qualify",
)


def targets(site: Site) -> list[tuple[str, str, dict[str, Any]]]:
    """(template, output path, context) for every file of ``site``."""
    common = common_context(site)
    # A warm bucket's job restores its cache from the actions cache (keys: `cache-key`).
    bench = {**common, "warm_cache": bool(site.warm_buckets)}
    items = [_action(name, bench if name == "bench" else common) for name in _ACTIONS]
    items += [
        _workflow("perfgate", gate_workflow_context(site)),
        _workflow("perfgate-comment", comment_workflow_context(site)),
        _workflow("perfgate-seed", seed_workflow_context(site)),
        _workflow("perfgate-bisect", bisect_workflow_context(site)),
        _workflow("perfgate-qualify", qualify_workflow_context(site)),
        ("actionlint.yaml.j2", ".github/actionlint.yaml", actionlint_context(site)),
    ]
    if resolves_image(site.config):
        # Only a config with an image per era has an era to roll (R11).
        items.append(_workflow("perfgate-era", era_workflow_context(site)))
    if site.self_ci:
        items.append(_workflow("ci", ci_workflow_context(site)))
    return items


def _action(name: str, context: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(template, output path, context) of the composite action ``name``."""
    return f"actions/{name}/action.yml.j2", f"actions/{name}/action.yml", context


def _workflow(name: str, context: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(template, output path, context) of the workflow ``name``."""
    return f"workflows/{name}.yml.j2", f".github/workflows/{name}.yml", context
