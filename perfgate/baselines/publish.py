"""Which results may become baselines, and appending them to the store (R3, R9).

No trusted sample is ever dropped: when a publish cannot land its samples before the
deadline (or the server refuses the push), it writes them to ``pending-samples.ndjson``
in the report directory and fails with exit 3 saying so. The workflow uploads that file;
a later publish given it with ``--pending`` lands it, skipping by sample id whatever is
stored already, so ingesting a file twice never duplicates a sample.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from perfgate.baselines.pushing import PushDeadline
from perfgate.baselines.store import BaselineStore, Sample, samples_from_result
from perfgate.config import PRIMARY
from perfgate.console import say
from perfgate.errors import GateMalfunction, PerfgateError
from perfgate.result import Result

PENDING_FILE = "pending-samples.ndjson"


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
    files: Iterable[Path], accept: Callable[[Sample], str | None]
) -> tuple[list[Sample], list[str]]:
    """Samples of pending files, and a note per line skipped (unreadable, or refused).

    ``accept`` says why a sample may not be published here (None when it may).
    """
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
            refusal = accept(sample)
            if refusal:
                notes.append(f"{file}:{number}: {refusal}, skipped")
            else:
                samples.append(sample)
    return samples, notes


def write_pending(path: Path, samples: Sequence[Sample]) -> None:
    """Keep ``samples`` in ``path`` (with what it held already), once each, atomically."""
    kept: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                kept.setdefault(Sample.from_line(line).sample_id, line)
            except ValueError:
                continue
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
) -> int:
    """Append the publishable results (and ``carried`` samples) to the store; say each refusal.

    Returns how many results were refused. With ``pending``, samples that cannot land are
    kept there and PublishIncomplete (exit 3) says where; once they land, the file goes.
    """
    keep, refused = publishable(results)
    for line in refused:
        say(f"refused {line}")
    if pending is not None and pending.exists():
        # What an earlier attempt of this publish kept: it goes with this append.
        kept, notes = read_pending([pending], lambda _: None)
        carried = [*carried, *kept]
        for note in notes:
            say(note)
    # Every sample of every run, one line each (the window groups them by run).
    fresh = [s for r in keep for s in samples_from_result(r, trusted_source=trusted_source)]
    samples = list({s.sample_id: s for s in [*fresh, *carried]}.values())
    if not samples:
        say("nothing to record")
        return len(refused)
    if carried:
        say(f"{len(carried)} pending sample(s) from earlier publishes ride along")
    try:
        outcome = store.append(samples, message)
    except PerfgateError as exc:
        if pending is None:
            raise
        write_pending(pending, samples)
        raise PublishIncomplete(
            f"{len(samples)} sample(s) did not land on {store.branch}: {exc}. They are kept in "
            f"{pending}{' too' if isinstance(exc, PushDeadline) and exc.parked else ''}; upload "
            "that file, and a later publish given it with --pending lands them (samples stored "
            "already are skipped by id)"
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
    return len(refused)
