"""Find the first commit where a bucket regressed (dry run unless --execute).

Replays commits between --good and --bad (on --bad's first-parent line) in throwaway
worktrees, each with that commit's own benchmark, as seed does; each step is one run of
the bucket with --repeats samples (more while the rule finds it suspicious, as the bench
confirms), judged by the gate's rule against the runs of the commits found GOOD and
labelled GOOD, BAD or SKIP with the oracle's bisect labels (crashes outside init and
runtime are SKIP). The dry run prints the plan and a bound on
runner time. Every step is saved in --state, so an interrupted bisection resumes;
worktrees are removed even on Ctrl-C or SIGTERM. Prints the first bad commit with the
figures on both sides and writes --out.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import DEFAULT_WORK, EXIT_MEANINGS, Verbs, add_verb, repo_top
from perfgate.config import DEFAULT_CONFIG, load_config
from perfgate.errors import ExitCode
from perfgate.util import jsonfile
from perfgate.util.console import format_figure, render_table, say

if TYPE_CHECKING:
    from perfgate.baselines.bisect import BisectPlan, BisectState, Outcome


def register(verbs: Verbs) -> None:
    """``bisect``."""
    bisect = add_verb(
        verbs,
        "bisect",
        help="find the first commit where a bucket regressed (dry run unless --execute)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate bisect --bucket cartpole/numpy --good v1.2 --bad main      # the plan",
            "perfgate bisect --bucket cartpole/numpy --good v1.2 --bad main --execute",
        ),
        exits={
            ExitCode.HARD_FAILURE: "no first bad commit could be named (--bad is no "
            "regression against --good, or skipped commits hide it; see --out)",
            ExitCode.MALFUNCTION: EXIT_MEANINGS[ExitCode.MALFUNCTION],
        },
    )
    bisect.add_argument("--bucket", required=True, metavar="ID", help="the bucket that regressed")
    bisect.add_argument("--good", required=True, metavar="SHA", help="a commit before it")
    bisect.add_argument("--bad", required=True, metavar="SHA", help="a commit that has it")
    bisect.add_argument(
        "--metric", metavar="PATH", help="the metric to judge (default: the bucket's)"
    )
    bisect.add_argument(
        "--repeats",
        type=int,
        default=3,
        metavar="K",
        help="samples per step, judged together as one run's, so one noisy sample cannot "
        "mislead it (default: %(default)s; --good takes enough such runs to fill a window)",
    )
    bisect.add_argument("--execute", action="store_true", help="run the bisection")
    bisect.add_argument(
        "--config",
        type=Path,
        default=None,
        help="judge every commit with this perfgate.yaml (default: each commit's own, and "
        "./perfgate.yaml for the verdict rule)",
    )
    bisect.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK / "bisect",
        help="worktrees, logs and results (default: %(default)s)",
    )
    bisect.add_argument(
        "--state",
        type=Path,
        default=Path(".perfgate/bisect/state.json"),
        help="the steps so far; the same bisection resumes from it (default: %(default)s)",
    )
    bisect.add_argument(
        "--out",
        type=Path,
        default=Path(".perfgate/bisect/bisect.json"),
        help="the result (default: %(default)s)",
    )


def plan_text(plan: BisectPlan) -> str:
    """What the bisection replays and the most it can cost."""
    from perfgate.baselines.seed.plan import format_minutes

    plain, retried = plan.runner_minutes()
    return (
        f"bisect {plan.bucket.id} ({plan.metric}) on {plan.hardware}: "
        f"good {plan.good[:12]}, bad {plan.bad[:12]}, {len(plan.candidates)} commit(s) after "
        f"good up to bad.\nAt most {plan.max_steps} steps without skips: good x "
        f"{plan.good_runs} runs, then one run per step, {plan.repeats} sample(s) each "
        f"(up to {plan.max_repeats} when suspicious): {plan.max_samples} benchmark runs.\n"
        f"Runner time: at most {format_minutes(plain)} by the bucket's timeout "
        f"({format_minutes(retried)} if every run needed its retries)."
    )


def steps_table(plan: BisectPlan, state: BisectState) -> str:
    """One row per measured commit, in history order."""
    order = {c: i for i, c in enumerate((plan.good, *plan.candidates))}
    rows = [
        [
            step.commit[:12],
            str(order.get(step.commit, "?")),
            step.label.value,
            step.verdict,
            format_figure(step.figure),
            ", ".join(format_figure(v) for v in step.figures),
            step.detail,
        ]
        for step in sorted(state.steps.values(), key=lambda s: order.get(s.commit, -1))
    ]
    return render_table(["commit", "#", "label", "verdict", "figure", "repeats", "why"], rows)


def conclusion(plan: BisectPlan, state: BisectState, outcome: Outcome) -> tuple[str, bool]:
    """The closing lines, and whether a first bad commit was named."""
    if outcome.why:
        return outcome.why, False
    good = state.steps[outcome.last_good]
    if outcome.skipped:
        names = ", ".join(c[:12] for c in (*outcome.skipped, outcome.first_bad or ""))
        return (f"the first bad commit is one of {names}: the commits before "
                f"{(outcome.first_bad or '')[:12]} were skipped"), False  # fmt: skip
    bad = state.steps[outcome.first_bad or ""]
    change = ""
    if good.figure and bad.figure:
        change = f" ({(bad.figure - good.figure) / good.figure * 100:+.1f}%)"
    return (
        f"first bad commit: {bad.commit}\n"
        f"  {bad.commit[:12]}: {format_figure(bad.figure)} {plan.bucket.metric.unit}{change}, "
        f"{bad.verdict}: {bad.detail}\n"
        f"  last good {good.commit[:12]}: {format_figure(good.figure)} "
        f"{plan.bucket.metric.unit}"
    ), True


def run(args: argparse.Namespace) -> int:
    """Plan, and with --execute replay and judge until the first bad commit is named."""
    from perfgate import context
    from perfgate.baselines.bisect import (
        BISECT_SCHEMA_VERSION,
        BisectOptions,
        BisectState,
        bisect_json,
        plan_bisect,
    )
    from perfgate.baselines.bisect_replay import ReplaySettings, run_bisect
    from perfgate.run import hardware

    repo = repo_top()
    options = BisectOptions(
        bucket=args.bucket,
        good=args.good,
        bad=args.bad,
        metric=args.metric,
        repeats=args.repeats,
        execute=args.execute,
        work_dir=args.work_dir.resolve(),
        state=args.state,
        out=args.out,
        config=args.config,
    )
    current = load_config(args.config or DEFAULT_CONFIG)
    machine = hardware.detect()
    plan = plan_bisect(repo, options, current, machine.slug)
    print(plan_text(plan))
    key = {"schema": BISECT_SCHEMA_VERSION, "bucket": plan.bucket.id, "good": plan.good,
           "bad": plan.bad, "repeats": plan.repeats, "hardware": plan.hardware,
           "metric": plan.metric, "config": str(args.config) if args.config else None}  # fmt: skip
    state = BisectState.load(options.state, key)
    if state.steps:
        say(f"resuming: {len(state.steps)} step(s) already measured in {options.state}")
    if not options.execute:
        print("dry run: nothing was run; add --execute to bisect")
        return ExitCode.OK
    settings = ReplaySettings(
        repo=repo,
        hardware=machine,
        context=context.detect(os.environ, cwd=repo),
        image=current.image,
    )
    try:
        outcome = run_bisect(plan, state, settings, options, current, log=say)
    finally:
        if state.steps:
            print(steps_table(plan, state))
    text, found = conclusion(plan, state, outcome)
    print(text)
    jsonfile.write(options.out, bisect_json(plan, state, outcome))
    say(f"bisect result in {options.out}; steps in {options.state}")
    return ExitCode.OK if found else ExitCode.HARD_FAILURE
