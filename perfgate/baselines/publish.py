"""Which results may become baselines, and appending them to the store (R3, R9)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.baselines.store import BaselineStore, sample_from_result
from perfgate.console import say
from perfgate.result import Result


def publishable(results: Sequence[Result]) -> tuple[list[Result], list[str]]:
    """Healthy results with a positive figure, and why each other one is left out."""
    keep, skipped = [], []
    for result in results:
        value = result.metric.value
        if not result.health.healthy:
            skipped.append(f"{result.bucket.id}: unhealthy run, not a baseline")
        elif value is None or not math.isfinite(value) or value <= 0:
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
    samples = [sample_from_result(r, trusted_source=trusted_source) for r in keep]
    outcome = store.append(samples, message)
    say(
        f"recorded {outcome.added} sample(s) on {store.branch}"
        f"{f' ({outcome.already_present} already present)' if outcome.already_present else ''}"
        f"{f' at {outcome.commit[:12]}' if outcome.commit else ''}"
    )
    return len(refused)
