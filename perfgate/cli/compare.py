"""Compare two runs bucket by bucket: two results directories, or two commits' baselines.

For each bucket both sides measured, it shows both figures, the ratio B/A, the change with
its interval and whether B is significantly better, worse, the same, or unclear, judged
with the gate's own statistics (the calibrated rule's estimators, false-alarm rate and
minimum drop from perfgate.yaml). A side is a results directory (as `bench --out` writes)
or, when no such directory exists, a commit whose samples are on the baseline branch
(every sample of that commit on this hardware, of its most-sampled experiment).
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.cli.common import (
    Verbs,
    add_baseline_source,
    add_config,
    add_json,
    add_selection,
    add_verb,
    baseline_is_local,
    human,
    print_json,
    selected,
)
from perfgate.config import PRIMARY, Bucket, Config, Direction, load_config
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.baselines.store import BaselineStore
    from perfgate.judge.compare import Comparison

MARKERS = {"better": "+ better", "worse": "- worse", "same": "= same", "unclear": "? unclear",
           "not comparable": "! not comparable"}  # fmt: skip


def register(verbs: Verbs) -> None:
    """``compare``."""
    compare = add_verb(
        verbs,
        "compare",
        help="compare two runs bucket by bucket (results directories or baseline commits)",
        description=__doc__,
        handler=run,
        examples=(
            "perfgate compare before/ after/",
            "perfgate compare 1a2b3c4 5d6e7f8 --fail-on-regression",
            "perfgate compare .perfgate/results-main .perfgate/results --json",
        ),
        exits={ExitCode.BLOCK: "with --fail-on-regression: some bucket is worse"},
    )
    compare.add_argument("a", metavar="A", help="the reference: a results directory or a commit")
    compare.add_argument("b", metavar="B", help="the candidate: a results directory or a commit")
    add_config(compare)
    add_selection(compare, "compare")
    compare.add_argument("--hardware", metavar="SLUG", help="for commits (default: this machine's)")
    add_baseline_source(compare)
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


def _from_results(directory: Path, buckets: dict[str, Bucket]) -> Side:
    from perfgate.judge.gate import latest_per_bucket, load_results

    results = latest_per_bucket(load_results(directory).results)
    samples, hardware = {}, {}
    for bucket_id, result in results.items():
        values = result.metric.sample_values()
        if bucket_id in buckets and result.health.healthy and values:
            samples[bucket_id] = values
            hardware[bucket_id] = result.hardware.slug
    return Side(label=str(directory), samples=samples, hardware=hardware)


def _from_commit(ref: str, store: BaselineStore, buckets: dict[str, Bucket], slug: str) -> Side:
    from perfgate.baselines.reading import resolve
    from perfgate.baselines.samples import sample_path

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


def _row(bucket: Bucket, a: Side, b: Side, found: Comparison) -> dict[str, Any]:
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
        "hardware": [a.hardware[bucket.id], b.hardware[bucket.id]],
        "detail": found.detail,
    }


def run(args: argparse.Namespace) -> int:
    """Compare two runs bucket by bucket; exit 1 on a regression with --fail-on-regression."""
    from perfgate.console import format_figure, render_table, say
    from perfgate.judge.compare import compare
    from perfgate.judge.oracle import policy_for
    from perfgate.judge.stats import CalibratedPolicy, effect_text

    config = load_config(args.config)
    buckets = {b.id: b for b in selected(config, args)}
    a, b = _side(args.a, args, config, buckets), _side(args.b, args, config, buckets)
    rows, table = [], []
    for bucket_id, bucket in buckets.items():
        if bucket_id not in a.samples or bucket_id not in b.samples:
            continue
        policy = policy_for(bucket, config.gate, b.hardware[bucket_id])
        if not isinstance(policy, CalibratedPolicy):  # gate.policy: reference
            policy = CalibratedPolicy(
                min_drop_pct=policy.min_block_regression_pct, noise_floor_pct=policy.noise_floor_pct
            )
        found = compare(
            a.samples[bucket_id], b.samples[bucket_id],
            direction=Direction(bucket.metric.direction), policy=policy,
        )  # fmt: skip
        rows.append(_row(bucket, a, b, found))
        machines = {a.hardware[bucket_id], b.hardware[bucket_id]}
        table.append([
            bucket_id, format_figure(found.a), format_figure(found.b), bucket.metric.unit,
            "—" if found.ratio is None else f"{found.ratio:.3f}",
            effect_text(found.change_pct, found.interval_pct),
            MARKERS[found.change.value], " vs ".join(sorted(machines)),
        ])  # fmt: skip
    only = sorted((set(a.samples) ^ set(b.samples)) & set(buckets))
    out = human(args)
    headers = ["bucket", "A", "B", "unit", "B/A", "change", "", "hardware"]
    print(f"A: {a.label}\nB: {b.label}\n\n{render_table(headers, table)}", file=out)
    for bucket_id in only:
        say(f"{bucket_id}: measured on one side only, not compared")
    if not rows:
        raise UsageError(
            f"no bucket has healthy samples on both sides ({a.label}, {b.label}); check the "
            "directories, the commits, or --bucket/--tag/--hardware"
        )
    worse = [row["bucket"] for row in rows if row["change"] == "worse"]
    if args.json:
        print_json({"a": a.label, "b": b.label, "rows": rows, "only_one_side": only})
    if worse and args.fail_on_regression:
        say(f"worse: {', '.join(worse)}")
        return ExitCode.BLOCK
    return ExitCode.OK
