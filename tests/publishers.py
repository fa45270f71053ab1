"""Concurrent publishers against a bare origin: each its own clone and process (R9).

Shared by the store's integration test and ``nox -s perf``. Every publisher appends
samples for several buckets plus one sample all of them carry; afterwards the origin must
hold every sample exactly once.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baselines.publish import PUSHED_SOURCE
from perfgate.baselines.samples import Sample, samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.util.git import git
from tests.factories import make_result, of_experiment, with_metric
from tests.git_support import commit_all, empty_origin
from tests.paths import ROOT

# One publisher: the configured default policy, never a test-only retry budget.
PUBLISHER = """
import json, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from perfgate.baselines.store import BaselineStore, PushRetryPolicy, Sample
from perfgate.config import BaselinePolicy
repo, samples_file = Path(sys.argv[1]), Path(sys.argv[2])
samples = [Sample.from_line(line) for line in samples_file.read_text().splitlines()]
deadline = BaselinePolicy().publish_deadline_minutes * 60
store = BaselineStore(repo, branch="perf-baselines", remote="origin",
                      retry=PushRetryPolicy(deadline_s=deadline))
outcome = store.append(samples, "publish")
print(json.dumps({{"added": outcome.added, "present": outcome.already_present}}))
"""


@dataclass(frozen=True, kw_only=True)
class Burst:
    """What a burst of publishers left on the origin."""

    exit_codes: tuple[int, ...]
    wall_s: float
    expected: int
    lost: int
    duplicated: int


def origin_with_history(root: Path, commits: int = 5) -> tuple[Path, list[str]]:
    """A bare origin whose main has ``commits`` empty commits; their shas, oldest first."""
    origin, seed = empty_origin(root, clone="seed")
    shas = [commit_all(seed, f"c{index}") for index in range(commits)]
    git("push", "-q", "origin", "main", cwd=seed)
    return origin, shas


def burst_samples(index: int, buckets: int, commits: list[str], trial: str) -> list[Sample]:
    """Publisher ``index``'s samples: one per bucket, and the one every publisher carries."""
    template = make_result("t0/numpy", 100.0)
    samples = []
    for bucket in range(buckets):
        result = make_result(
            f"t{bucket}/numpy",
            100.0 + index + bucket / 100,
            commit=commits[index % len(commits)],
            run_id=f"{trial}-{index}-{bucket}",
        )
        samples.append(samples_from_result(result, trusted_source="burst")[0])
    shared = replace(template, ci=replace(template.ci, run_id=f"{trial}-shared"))
    samples.append(samples_from_result(shared, trusted_source="burst")[0])
    return samples


def run_burst(
    origin: Path,
    work: Path,
    *,
    publishers: int,
    buckets: int,
    commits: list[str],
    concurrent: bool = True,
    timeout_s: float = 600.0,
) -> Burst:
    """Clone once per publisher, then run them all at once (or one after another)."""
    work.mkdir(parents=True, exist_ok=True)
    script = work / "publish.py"
    script.write_text(PUBLISHER.format(root=str(ROOT)), encoding="utf-8")
    jobs, expected = [], set()
    for index in range(publishers):
        clone = work / f"publisher-{index}"
        git("clone", "-q", str(origin), str(clone))
        samples = burst_samples(index, buckets, commits, work.name)
        expected |= {s.sample_id for s in samples}
        lines = work / f"samples-{index}.ndjson"
        lines.write_text("".join(f"{s.to_line()}\n" for s in samples), encoding="utf-8")
        jobs.append([sys.executable, str(script), str(clone), str(lines)])
    began = time.perf_counter()
    if concurrent:
        running = [subprocess.Popen(job, stdout=subprocess.DEVNULL) for job in jobs]
        codes = tuple(process.wait(timeout=timeout_s) for process in running)
    else:
        codes = tuple(
            subprocess.run(job, stdout=subprocess.DEVNULL, timeout=timeout_s).returncode
            for job in jobs
        )
    wall = time.perf_counter() - began
    stored = stored_ids(origin, work / "reader", buckets)
    return Burst(
        exit_codes=codes,
        wall_s=wall,
        expected=len(expected),
        lost=len(expected - set(stored)),
        duplicated=len(stored) - len(set(stored)),
    )


def stored_ids(origin: Path, reader: Path, buckets: int) -> list[str]:
    """Every sample id on the origin's baseline branch for the burst's buckets, repeats kept."""
    if not reader.exists():
        git("clone", "-q", str(origin), str(reader))
    store = BaselineStore(reader, branch="perf-baselines", remote="origin")
    tip = store.refresh()
    if tip is None:
        return []
    paths = [f"samples/cpu-test/t{bucket}/numpy.ndjson" for bucket in range(buckets)]
    found = store.read(paths, tip)
    return [sample.sample_id for samples in found.values() for sample in samples]


def store_push_run(repo: Path, commit: str, *, source: str = PUSHED_SOURCE) -> None:
    """A run of every bucket of ``repo``'s perfgate.yaml at ``commit``, two samples of each
    metric it declares, appended to its local baseline branch as ``source`` (a push run's
    publish by default) appends them."""
    from perfgate.config import load_config

    config = load_config(repo / "perfgate.yaml")
    store = BaselineStore(repo, branch=config.gate.baseline.branch, remote=None)
    samples = []
    for bucket in config.buckets:
        result = of_experiment(make_result(bucket.id, samples=(100.0, 101.0), commit=commit),
                               config)  # fmt: skip
        for metric in bucket.metrics:
            result = with_metric(result, metric.name, (1.0, 1.1), direction=metric.direction,
                                 path=metric.path, unit=metric.unit)  # fmt: skip
        samples += samples_from_result(result, trusted_source=source)
    store.append(samples, f"publish {commit[:7]}")
