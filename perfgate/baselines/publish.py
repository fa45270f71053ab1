"""Which results may become baselines, and appending them to the store (R3, R9).

No trusted sample is ever dropped: when a publish cannot land its samples before the
deadline (or the server refuses the push), it writes them to ``pending-samples.ndjson``
in the report directory and fails with exit 3 saying so. The workflow uploads that file;
a later publish given it with ``--pending`` lands it, skipping by sample id whatever is
stored already, so ingesting a file twice never duplicates a sample.

Every line that can land passes one set of checks, :func:`sample_check`: a publish's own
samples, a pending file's (an earlier run's artifact, or one left in the report
directory) alike. A file says nothing about who wrote it; the checks hold each line to
what a protected push of this perfgate.yaml could have measured.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from perfgate.baselines.ledger import LEDGER_DIR, record_of
from perfgate.baselines.reading import fetch_tip
from perfgate.baselines.samples import Sample, sample_path, samples_from_result
from perfgate.baselines.seed.plan import is_ancestor
from perfgate.baselines.store import BaselineStore
from perfgate.config import PRIMARY, Config
from perfgate.context import RunContext
from perfgate.errors import GateMalfunction, GitError, PerfgateError, UsageError
from perfgate.identity import stable_hash
from perfgate.result import Result
from perfgate.run.launch import benchmark_identity, launch_identity
from perfgate.util.console import say

# Why a sample may not be published (None when it may).
SampleCheck = Callable[[Sample], str | None]

PENDING_FILE = "pending-samples.ndjson"
#: The trusted source of the samples a protected branch's push run publishes.
PUSHED_SOURCE = "protected_branch"


class PublishIncomplete(GateMalfunction):
    """Samples could not land on the baseline branch; they were kept in a pending file."""


def publishable(results: Sequence[Result]) -> tuple[list[Result], list[str]]:
    """Healthy results whose every figure is positive, and why each other one is left out.

    A further metric the run did not report (an optional one) stores nothing; one it did
    report must be as sound as the primary.
    """
    keep, skipped = [], []
    for result in results:
        figures = [
            figure
            for name, reading in result.all_metrics.items()
            if name == PRIMARY or reading.value is not None
            for figure in (reading.value, *reading.sample_values())
        ]
        if not result.health.healthy:
            skipped.append(f"{result.bucket.id}: unhealthy run, not a baseline")
        elif any(v is None or not math.isfinite(v) or v <= 0 for v in figures):
            skipped.append(f"{result.bucket.id}: no positive finite figure, not a baseline")
        elif not result.metric.sample_values(result.set_aside):
            skipped.append(
                f"{result.bucket.id}: every sample was taken on an unfit machine (admission "
                "control set them aside), not a baseline"
            )
        else:
            keep.append(result)
    return keep, skipped


def refuse_untrusted_run(config: Config, run: RunContext) -> None:
    """Only a push to a protected branch publishes (R9): anything else is a usage error
    (exit 4) saying what to do locally."""
    if not config.gate.is_protected_push(run.event, run.branch):
        protected = ", ".join(config.gate.protected_branches)
        raise UsageError(
            f"refusing to publish: baselines are written only by pushes to protected branches "
            f"({protected}); this run is a {run.event!r} event on {run.branch!r}. Locally, use "
            "`nox -s bench -- --record` to keep samples on your local baseline branch"
        )


def refuse_untrusted_results(config: Config, results: Sequence[Result]) -> None:
    """Every artifact is of a bucket ``config`` declares and was produced by a protected
    push, or nothing is written: store paths come only from declared buckets (R9, R14)."""
    known = set(config.bucket_ids())
    unknown = [r.bucket.id for r in results if r.bucket.id not in known]
    if unknown:
        raise UsageError(
            f"refusing to publish artifacts for buckets not in {config.path}: "
            f"{', '.join(sorted(set(unknown)))}; publish only the results of this config's "
            "bench jobs (nothing was written)"
        )
    foreign = [
        r.bucket.id
        for r in results
        if not config.gate.is_protected_push(r.source.event, r.source.branch)
    ]
    if foreign:
        raise UsageError(
            "refusing to publish artifacts not produced by a protected push: " + ", ".join(foreign)
        )


def on_branch_tips(store: BaselineStore, remote: str) -> Callable[[str, str], bool]:
    """Whether a commit is on a branch as ``remote`` has it now (each branch fetched once):
    what an earlier run must show before its pending samples are gathered. A commit or
    branch that cannot be read is not on it."""
    tips: dict[str, str | None] = {}

    def on_branch(commit: str, branch: str) -> bool:
        try:
            if branch not in tips:
                tips[branch] = fetch_tip(store.repo, branch, remote)
            tip = tips[branch]
            return tip is not None and is_ancestor(store.repo, commit, tip)
        except (GitError, GateMalfunction):
            return False

    return on_branch


def sample_check(config: Config) -> SampleCheck:
    """The checks every sample passes before it is published under ``config`` (R9, R14).

    Its bucket is one perfgate.yaml declares, its branch and target branch are protected,
    its launch and benchmark hashes and baseline epoch are those of the bucket's (and its
    metric's) current experiment, its figure is positive and finite, and its hardware,
    task and backend are plain names a store path can hold.
    """
    buckets = {bucket.id: bucket for bucket in config.buckets}
    launches = {bucket.id: stable_hash(launch_identity(bucket)) for bucket in config.buckets}

    @functools.cache
    def experiment(bucket_id: str, name: str) -> tuple[str, str] | None:
        # A benchmark a selection matches is a metric the bucket declares (R5).
        bucket = buckets[bucket_id].selecting([name])
        metric = bucket.metric_named(name)
        if metric is None:
            return None
        return launches[bucket_id], stable_hash(benchmark_identity(bucket, metric))

    protected = config.gate.is_protected

    def problem(sample: Sample) -> str | None:
        bucket = buckets.get(f"{sample.task}/{sample.backend_key}")
        if bucket is None:
            return f"a sample for a bucket not in {config.path}"
        if not protected(sample.target_branch):
            return f"a sample for the unprotected branch {sample.target_branch!r}"
        if sample.branch is not None and not protected(sample.branch):
            return f"a sample measured on the unprotected branch {sample.branch!r}"
        expected = experiment(bucket.id, sample.metric)
        if expected is None:
            return f"a sample of the metric {sample.metric!r}, which {bucket.id} does not declare"
        if (sample.launch_hash, sample.benchmark_hash) != expected:
            return (
                f"a sample of another experiment than {bucket.id} in {config.path} (its launch "
                "or benchmark hash differs)"
            )
        if sample.baseline_epoch != bucket.baseline_epoch:
            return (
                f"a sample of baseline epoch {sample.baseline_epoch}, not {bucket.baseline_epoch}"
            )
        if not (math.isfinite(sample.value) and sample.value > 0):
            return f"a sample whose figure {sample.value!r} is not positive and finite"
        try:
            sample_path(sample.hardware, sample.task, sample.backend_key)
        except GateMalfunction:
            return "a sample whose hardware, task or backend is not a plain name"
        return None

    return problem


def pending_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """The pending-sample files named (directories searched), and a note per missing path.

    A missing path is a note, not a failure: failing here would keep this publish's own
    samples from landing.
    """
    found: list[Path] = []
    notes: list[str] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("pending-samples*.ndjson"))
        elif path.is_file():
            found.append(path)
        else:
            notes.append(f"{path}: no pending-samples file or directory there, nothing to land")
    return found, notes


def read_pending(
    files: Iterable[Path], check: SampleCheck | None
) -> tuple[list[Sample], list[str]]:
    """Samples of pending files, and a note per line skipped (unreadable, or refused by
    ``check``; every readable line is kept without one)."""
    samples, notes = [], []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                sample = Sample.from_line(line)
            except ValueError as exc:
                notes.append(f"{file}:{number}: not a sample, skipped ({exc})")
                continue
            refusal = check(sample) if check is not None else None
            if refusal:
                notes.append(f"{file}:{number}: {refusal}, refused")
            else:
                samples.append(sample)
    return samples, notes


def write_pending(path: Path, samples: Sequence[Sample]) -> None:
    """Keep ``samples`` in ``path``, once each, atomically (what it held, record_samples read
    and checked first: a line it refused is not kept again)."""
    kept: dict[str, str] = {}
    for sample in samples:
        kept.setdefault(sample.sample_id, sample.to_line())
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".ndjson.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.writelines(f"{line}\n" for line in kept.values())
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)


def record_samples(
    store: BaselineStore,
    results: Sequence[Result],
    trusted_source: str,
    message: str,
    *,
    carried: Sequence[Sample] = (),
    pending: Path | None = None,
    check: SampleCheck | None = None,
) -> int:
    """Append the publishable results (and ``carried`` samples) to the store; say each refusal.

    What every result cost goes to the ledger in the same commit, a refused one's too (its
    runner billed it). Returns how many results were refused. With ``check``, a result any
    of whose samples it refuses is refused whole, and so is each line of a pending file it
    refuses. With ``pending``, samples that cannot land are kept there and PublishIncomplete
    (exit 3) says where; once they land, the file goes.
    """
    keep, refused = publishable(results)
    # Every sample of every run, one line each (the window groups them by run).
    fresh = []
    for result in keep:
        own = samples_from_result(result, trusted_source=trusted_source)
        problem = next((p for p in map(check, own) if p), None) if check else None
        if problem:
            refused.append(f"{result.bucket.id}: {problem}, not a baseline")
        else:
            fresh += own
    for line in refused:
        say(f"refused {line}")
    if pending is not None and pending.exists():
        # What an earlier attempt of this publish kept (or a file someone left there): it
        # goes with this append, each line checked as any other.
        kept, notes = read_pending([pending], check)
        carried = [*carried, *kept]
        for note in notes:
            say(note)
    samples = list({s.sample_id: s for s in [*fresh, *carried]}.values())
    spend = [record for record in map(record_of, results) if record is not None]
    if not samples and not spend:
        say("nothing to record")
        return len(refused)
    if carried:
        say(f"{len(carried)} pending sample(s) from earlier publishes ride along")
    try:
        outcome = store.append(samples, message, spend)
    except PerfgateError as exc:
        if not samples:
            # Only cost lines were to land: losing them fails nothing (each run's
            # verdict.json still says what it cost).
            say(f"what the runs cost did not land on {store.branch}: {exc}")
            return len(refused)
        if pending is None:
            raise
        write_pending(pending, samples)
        raise PublishIncomplete(
            f"{len(samples)} sample(s) did not land on {store.branch}: {exc}. They are kept in "
            f"{pending}; upload that file, and a later publish given it with --pending lands "
            "them (samples stored already are skipped by id)"
        ) from None
    for warning in store.warnings:
        say(warning)
    if pending is not None:
        pending.unlink(missing_ok=True)  # everything it held was in this append
    landed = f" at {outcome.commit[:12]}" if outcome.commit else ""
    say(
        f"recorded {outcome.added} sample(s) on {store.branch}"
        f"{f' ({outcome.already_present} already present)' if outcome.already_present else ''}"
        f"{landed}"
    )
    if outcome.spend_added:
        say(f"recorded what {outcome.spend_added} bucket run(s) cost ({LEDGER_DIR}/ on "
            f"{store.branch}; perfgate spend sums it)")  # fmt: skip
    return len(refused)
