"""Whether the machines named on the baseline branch recur.

The runner model (``judge.runner_offsets``) learns a machine's offset from the runs it measured
before, so it learns nothing where every run names a machine never seen again: runner
names are ephemeral (one per job) and ``gate.runner_identity: runner`` is in force.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.baselines.samples import sample_path
from perfgate.baselines.store import BaselineStore
from perfgate.baselines.verify import hardware_partitions
from perfgate.config import PRIMARY, Bucket, RunnerIdentity
from perfgate.util.console import listing

#: The newest runs looked at, and how many must name a machine before non-recurrence says
#: anything: ten unique names of ten runs on a pool of ten runners is not yet a pattern.
RECENT_RUNS = 20
MIN_NAMED_RUNS = 10


def never_recurs(run_machines: Sequence[str | None]) -> bool:
    """True when enough runs name their machine and none names one another run named."""
    named = [machine for machine in run_machines if machine]
    return len(named) >= MIN_NAMED_RUNS and len(set(named)) == len(named)


def unrecurring_buckets(store: BaselineStore, buckets: Sequence[Bucket]) -> list[str]:
    """Bucket ids (with their hardware) whose newest recorded runs never share a machine."""
    tip = store.refresh()
    if tip is None:
        return []
    found = []
    for hardware in hardware_partitions(store.repo, tip):
        paths = {sample_path(hardware, b.task, b.backend_key): b for b in buckets}
        for path, samples in store.read(paths, tip).items():
            runs: dict[tuple[str, str], str | None] = {}
            for sample in samples:
                if sample.metric == PRIMARY:
                    runs[(sample.commit, sample.timestamp)] = sample.ci_runner_name
            if never_recurs(list(runs.values())[-RECENT_RUNS:]):
                found.append(f"{paths[path].id} ({hardware})")
    return found


def recurrence_note(
    store: BaselineStore | None, buckets: Sequence[Bucket], identity: RunnerIdentity
) -> str | None:
    """What to say when the recorded runs' machines never recur; None when they do."""
    unrecurring = unrecurring_buckets(store, buckets) if store is not None else []
    if not unrecurring:
        return None
    fix = (
        "set gate.runner_identity: gpu to name machines by their GPUs"
        if identity is RunnerIdentity.RUNNER
        else "the GPUs named differ from run to run too: check that the pool's machines "
        "keep their GPUs"
    )
    return (
        f"no machine recurs among the newest recorded runs of {listing(unrecurring)}: each "
        "names a machine no other run names, so runner names look ephemeral and the runner "
        f"model has no machine's earlier runs to learn its offset from; {fix}"
    )
