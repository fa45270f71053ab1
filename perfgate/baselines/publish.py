"""Which results may become baselines, and appending them to the store (R3, R9)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.baselines.store import BaselineStore, samples_from_result
from perfgate.console import say
from perfgate.result import Result


def publishable(results: Sequence[Result]) -> tuple[list[Result], list[str]]:
    """Healthy results with a positive figure, and why each other one is left out."""
    keep, skipped = [], []
    for result in results:
        value = result.metric.value
        figures = [value, *result.metric.sample_values()]
        if not result.health.healthy:
            skipped.append(f"{result.bucket.id}: unhealthy run, not a baseline")
        elif any(v is None or not math.isfinite(v) or v <= 0 for v in figures):
            skipped.append(f"{result.bucket.id}: no positive finite figure, not a baseline")
        else:
            keep.append(result)
    return keep, skipped


def record_samples(
    store: BaselineStore, results: Sequence[Result], trusted_source: str, message: str
) -> int:
    """Append the publishable results to the store; say each refusal; return how many."""
    keep, refused = publishable(results)
    for line in refused:
        say(f"refused {line}")
    if not keep:
        say("nothing to record")
        return len(refused)
    # Every sample of every run: the window keeps them grouped by run.
    samples = [s for r in keep for s in samples_from_result(r, trusted_source=trusted_source)]
    outcome = store.append(samples, message)
    say(
        f"recorded {outcome.added} sample(s) on {store.branch}"
        f"{f' ({outcome.already_present} already present)' if outcome.already_present else ''}"
        f"{f' at {outcome.commit[:12]}' if outcome.commit else ''}"
    )
    return len(refused)
