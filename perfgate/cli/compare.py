"""Compare two runs bucket by bucket: two results directories, two commits' baselines, or
two commits measured here, alternately (--measure).

For each bucket both sides measured, it shows both figures, the change with its interval
(the JSON adds the ratio B/A, 1 + the change) and whether B is significantly better,
worse, the same, or unclear, judged with the gate's own statistics (the calibrated rule's
estimators, false-alarm rate and minimum drop from perfgate.yaml). A side is a results
directory (as `bench --out` writes) or, when no such directory exists, a commit whose
samples are on the baseline branch (every sample of that commit on this hardware, of its
most-sampled experiment).

Two sets measured at different times also measured the machine in between: compare says
when they do not overlap in time, and when their artifacts (admission control's records,
the hardware) show that the machine moved, it makes no call and refuses
--fail-on-regression. --measure takes A and B as commits ("." is the working tree) and
measures them alternately on this machine (A B, B A, ...), as the bench's paired A/B does,
so the machine's state is in both sides and the pairs' ratios carry the change alone.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.cli.common import (
    DEFAULT_WORK,
    Verbs,
    add_baseline_source,
    add_config,
    add_json,
    add_selection,
    add_verb,
    baseline_is_local,
    human,
    print_json,
    repo_top,
    selected,
)
from perfgate.config import PRIMARY, Bucket, Config, load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.store import BaselineStore
    from perfgate.judge.compare import Comparison, SetState
    from perfgate.judge.policies import CalibratedPolicy
    from perfgate.run.commits import Measured

MARKERS = {"better": "+ better", "worse": "- worse", "same": "= same", "unclear": "? unclear",
           "not comparable": "! not comparable"}  # fmt: skip
#: Pairs --measure takes of each bucket by default: enough for the paired test to call a
#: change of a few percent on a quiet machine (5 is the least that can make a call).
DEFAULT_PAIRS = 6


def register(verbs: Verbs) -> None:
    """``compare``."""
    compare = add_verb(
        verbs,
        "compare",
        help="compare two runs bucket by bucket (results directories, baseline commits, or "
        "two commits measured alternately)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate compare --measure main .                 # main against the working tree",
            "perfgate compare .perfgate/before .perfgate/after",
            "perfgate compare 1a2b3c4 5d6e7f8 --fail-on-regression",
        ),
        exits={
            ExitCode.OK: "compared (with --fail-on-regression: no bucket is worse)",
            ExitCode.BLOCK: "with --fail-on-regression: some bucket is worse",
            ExitCode.USAGE: "bad arguments, or --fail-on-regression on sets between which "
            "the machine moved",
        },
    )
    compare.add_argument("a", metavar="A", help="the reference: a results directory or a commit")
    compare.add_argument(
        "b",
        metavar="B",
        help="the candidate: a results directory or a commit ('.' with --measure: "
        "the working tree)",
    )
    add_config(compare)
    add_selection(compare, "compare")
    compare.add_argument("--hardware", metavar="SLUG", help="for commits (default: this machine's)")
    add_baseline_source(compare)
    compare.add_argument(
        "--measure",
        action="store_true",
        help="measure commits A and B here, alternately (A B, B A, ...), instead of reading "
        "results",
    )
    compare.add_argument(
        "--pairs",
        type=int,
        default=DEFAULT_PAIRS,
        metavar="N",
        help="with --measure: A/B pairs per bucket (default: %(default)s)",
    )
    compare.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK / "compare",
        help="with --measure: worktrees, logs and caches (default: %(default)s)",
    )
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any bucket is worse"
    )
    add_json(compare, "the comparison")


@dataclass(frozen=True, kw_only=True)
class Side:
    """One side of the comparison: per bucket id, its samples and where they ran."""

    label: str
    samples: dict[str, tuple[float, ...]]
    hardware: dict[str, str]
    # What the side's artifacts say about the machine (None: no artifacts, e.g. a commit).
    state: SetState | None = None


def _from_results(directory: Path, buckets: dict[str, Bucket]) -> Side:
    from perfgate.artifacts import load_results
    from perfgate.judge.compare import SetState
    from perfgate.judge.gate import latest_per_bucket

    results = latest_per_bucket(load_results(directory).results)
    samples, hardware, used = {}, {}, []
    for bucket_id, result in results.items():
        # Samples admission control set aside are no measurement of the code (R5).
        values = result.metric.sample_values(result.set_aside)
        if bucket_id in buckets and result.health.healthy and values:
            samples[bucket_id] = values
            hardware[bucket_id] = result.hardware.slug
            used.append(result)
    return Side(label=str(directory), samples=samples, hardware=hardware, state=SetState.of(used))


def _from_commit(ref: str, store: BaselineStore, buckets: dict[str, Bucket], slug: str) -> Side:
    from perfgate.baselines.samples import sample_path
    from perfgate.util.git import resolve

    commit = resolve(store.repo, ref)
    if commit is None:
        raise UsageError(
            f"{ref!r} is neither a results directory nor a commit of this repository; "
            "pass a directory `bench --out` wrote, or a commit (fetch it first)"
        )
    tip = store.refresh()
    if tip is None:
        raise UsageError(f"no baseline branch {store.branch} to read {ref!r} from")
    paths = {sample_path(slug, b.task, b.backend_key): b.id for b in buckets.values()}
    samples = {}
    for path, stored in store.read(paths, tip).items():
        # The primary metric: a bucket's other metrics have lines of their own.
        mine = [s for s in stored if s.commit == commit and s.metric == PRIMARY]
        if not mine:
            continue
        # One experiment only: the identity most of this commit's samples carry.
        key, _ = Counter(s.window_digest for s in mine).most_common(1)[0]
        samples[paths[path]] = tuple(s.value for s in mine if s.window_digest == key)
    return Side(label=f"{commit[:12]}", samples=samples, hardware=dict.fromkeys(samples, slug))


def _side(text: str, args: argparse.Namespace, config: Config, buckets: dict[str, Bucket]) -> Side:
    path = Path(text)
    if path.is_dir():
        return _from_results(path, buckets)
    from perfgate.baselines.store import open_store
    from perfgate.run import hardware

    store = open_store(config, local=baseline_is_local(args))
    if store is None:
        raise UsageError(f"{text!r} is not a directory, and no git repository holds commits here")
    return _from_commit(text, store, buckets, args.hardware or hardware.detect().slug)


def _policy(bucket: Bucket, config: Config, hardware: str) -> CalibratedPolicy:
    """The calibrated rule's settings for the bucket (gate.policy: reference lends its minimum
    drop and noise floor to it: compare always judges with the calibrated estimators)."""
    from perfgate.judge.bucket_policy import policy_for
    from perfgate.judge.policies import CalibratedPolicy

    policy = policy_for(bucket, config.gate, hardware)
    if isinstance(policy, CalibratedPolicy):
        return policy
    return CalibratedPolicy(
        min_drop_pct=policy.min_drop_pct, noise_floor_pct=policy.noise_floor_pct
    )


def _row(bucket: Bucket, found: Comparison, machines: Sequence[str]) -> dict[str, Any]:
    return {
        "bucket": bucket.id,
        "a": found.a,
        "b": found.b,
        "unit": bucket.metric.unit,
        "direction": bucket.metric.direction.value,
        "ratio": found.ratio,
        "change_pct": found.change_pct,
        "interval_pct": list(found.interval_pct) if found.interval_pct else None,
        "change": found.change.value,
        "samples": list(found.samples),
        "hardware": list(machines),
        "detail": found.detail,
    }


def run(args: argparse.Namespace) -> int:
    """Compare two runs bucket by bucket; exit 1 on a regression with --fail-on-regression."""
    from perfgate.judge.compare import Change, compare, compare_pairs, machine_moved, time_apart

    config = load_config(args.config)
    buckets = {b.id: b for b in selected(config, args)}
    found: list[tuple[Bucket, Comparison, tuple[str, str]]] = []
    warnings: list[str] = []
    moved: list[str] = []
    if args.measure:
        measured = _measure(args, config, buckets)
        labels, only = (measured.a, measured.b), sorted(set(buckets) - set(measured.pairs))
        warnings += measured.notes
        for bucket_id, pairs in measured.pairs.items():
            bucket = buckets[bucket_id]
            policy = _policy(bucket, config, measured.hardware)
            comparison = compare_pairs(pairs, direction=bucket.metric.direction, policy=policy)
            found.append((bucket, comparison, (measured.hardware, measured.hardware)))
    else:
        a, b = _side(args.a, args, config, buckets), _side(args.b, args, config, buckets)
        labels = (a.label, b.label)
        only = sorted((set(a.samples) ^ set(b.samples)) & set(buckets))
        if a.state is not None and b.state is not None:
            apart = time_apart(a.state, b.state)
            warnings += [apart] if apart else []
            moved = machine_moved(a.state, b.state)
        for bucket_id, bucket in buckets.items():
            if bucket_id not in a.samples or bucket_id not in b.samples:
                continue
            comparison = compare(
                a.samples[bucket_id], b.samples[bucket_id],
                direction=bucket.metric.direction,
                policy=_policy(bucket, config, b.hardware[bucket_id]),
            )  # fmt: skip
            if moved and comparison.change in (Change.WORSE, Change.BETTER):
                # The machine moved: the difference is the machine's as much as the code's.
                comparison = replace(
                    comparison,
                    change=Change.UNCLEAR,
                    detail=f"{comparison.detail}, but the machine moved between A and B",
                )
            found.append((bucket, comparison, (a.hardware[bucket_id], b.hardware[bucket_id])))
    return _report(args, labels, found, only, warnings, moved)


def _report(
    args: argparse.Namespace,
    labels: tuple[str, str],
    found: Sequence[tuple[Bucket, Comparison, tuple[str, str]]],
    only: Sequence[str],
    warnings: Sequence[str],
    moved: Sequence[str],
) -> int:
    """The table, what the reader must know about it, and the exit code."""
    from perfgate.judge.goodness import effect_text
    from perfgate.util.console import annotate, format_figure, render_table, say

    out = human(args)
    table = [
        [
            bucket.id, format_figure(c.a), format_figure(c.b), bucket.metric.unit,
            effect_text(c.change_pct, c.interval_pct),
            MARKERS[c.change.value], " vs ".join(sorted(set(machines))),
        ]
        for bucket, c, machines in found
    ]  # fmt: skip
    how = "measured alternately here" if args.measure else "as recorded"
    # B/A is 1 + the change: the JSON keeps it, the table keeps to 100 columns.
    headers = ["bucket", "A", "B", "unit", "change", "call", "hardware"]
    print(f"A: {labels[0]}\nB: {labels[1]}\n({how})\n\n{render_table(headers, table)}", file=out)
    for bucket_id in only:
        say(f"{bucket_id}: measured on one side only, not compared")
    for warning in warnings:
        annotate("warning", warning, stream=out)
    if moved:
        annotate(
            "warning",
            "the machine moved between A and B (" + "; ".join(moved) + "): no bucket is "
            "called better or worse; measure both here, alternately: perfgate compare "
            "--measure A_COMMIT B_COMMIT",
            stream=out,
        )
    if not found:
        raise UsageError(
            f"no bucket has healthy samples on both sides ({labels[0]}, {labels[1]}); check "
            "the directories, the commits, or --bucket/--tag/--hardware"
        )
    rows = [_row(bucket, c, machines) for bucket, c, machines in found]
    if args.json:
        print_json(
            {"a": labels[0], "b": labels[1], "measured": bool(args.measure), "rows": rows,
             "only_one_side": list(only), "warnings": list(warnings), "machine_moved": list(moved)}
        )  # fmt: skip
    if args.fail_on_regression and moved:
        raise UsageError(
            "refusing --fail-on-regression: the machine moved between A and B ("
            + "; ".join(moved)
            + "); measure both on one machine, alternately: perfgate compare --measure A B"
        )
    worse = [row["bucket"] for row in rows if row["change"] == "worse"]
    if worse and args.fail_on_regression:
        say(f"worse: {', '.join(worse)}")
        return ExitCode.BLOCK
    return ExitCode.OK


def _measure(args: argparse.Namespace, config: Config, buckets: dict[str, Bucket]) -> Measured:
    """Commits A and B, checked out side by side, measured alternately bucket by bucket."""
    from perfgate.run.commits import measure_commits
    from perfgate.util.console import say

    if not 1 <= args.pairs <= 100:
        raise UsageError(f"--pairs {args.pairs}: take between 1 and 100 pairs")
    return measure_commits(
        repo_top(), args.a, args.b, config=config, buckets=buckets, pairs=args.pairs,
        work=args.work_dir.resolve(), say=say,
    )  # fmt: skip
