"""Synthetic baseline stores for ``nox -s perf``, built as publishes build them, and cached.

A store has B buckets with H samples each, one per publish, on a main branch of H
commits (publish k measured commit k). The samples pass through the store's own write
path: the first H - P publishes are laid out by ``append_to_bucket`` (the function every
append runs) and imported in one commit, since rewriting megabyte segments H times would
take hours to build; the last P publishes are real appends, one commit each, as a
publisher makes them. ``git gc`` then repacks a copy as hosting does. What the gate reads
(the tip's segments, indexes and the main history) is exactly what those publishes leave.

Stores are cached under ``--cache`` keyed by their parameters and by the source of the
write path, so a rerun reuses them and a format change rebuilds them.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baselines.pushing import PushRetryPolicy
from perfgate.baselines.runner_file import RUNNERS_VERSION
from perfgate.baselines.samples import SAMPLE_SCHEMA_VERSION, Sample, samples_from_result
from perfgate.baselines.segments import (
    INDEX_FIELDS,
    INDEX_VERSION,
    SEGMENT_LINES,
    BucketFiles,
    append_to_bucket,
)
from perfgate.baselines.store import BaselineStore
from perfgate.result import write_result
from tests.factories import make_result

HARDWARE = "cpu-test"
EPOCH = 1_700_000_000
# Bump when the way stores are built changes; a layout change bumps INDEX_VERSION.
BUILDER = 1


@dataclass(frozen=True, kw_only=True)
class StoreSpec:
    """What a store holds: buckets x samples per bucket, the last ``publishes`` appended."""

    buckets: int
    history: int
    publishes: int

    @property
    def key(self) -> str:
        """The cache key: the parameters, and the versions of the builder and the layout."""
        layout = (f"i{INDEX_VERSION}.{INDEX_FIELDS}-r{RUNNERS_VERSION}-s{SEGMENT_LINES}"
                  f"-f{SAMPLE_SCHEMA_VERSION}")  # fmt: skip
        return f"b{self.buckets}-h{self.history}-p{self.publishes}-v{BUILDER}-{layout}"

    def bucket_ids(self) -> list[str]:
        """``t0000/numpy``, ``t0000/python``, ``t0001/numpy``, ..."""
        tasks = [f"t{i:04d}" for i in range((self.buckets + 1) // 2)]
        return [f"{t}/{b}" for t in tasks for b in ("numpy", "python")][: self.buckets]


@dataclass(frozen=True, kw_only=True)
class Built:
    """A cached store: the repository as built, and a copy after ``git gc``."""

    spec: StoreSpec
    as_built: Path
    after_gc: Path

    def live_specs(self, repo: Path) -> list[str]:
        """``perf-baselines:<live segment>`` of every bucket: what a raw read reads."""
        return [
            f"perf-baselines:samples/{HARDWARE}/{bucket}.ndjson"
            for bucket in self.spec.bucket_ids()
        ]


Say = Callable[[str], None]


def cached_store(spec: StoreSpec, cache: Path, say: Say) -> Built:
    """The store for ``spec``, built into ``cache`` unless it is there already."""
    home = cache / spec.key
    built = Built(spec=spec, as_built=home / "as-built", after_gc=home / "after-gc")
    if (home / "done").exists():
        say(f"store {spec.key}: cached")
        _inputs(built)
        return built
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    began = time.perf_counter()
    _build(spec, built.as_built, say)
    say(f"store {spec.key}: git gc on a copy (as hosting repacks)")
    shutil.copytree(built.as_built, built.after_gc, symlinks=True, copy_function=_link)
    _git(built.after_gc, "gc", "--quiet")
    _inputs(built)
    (home / "done").write_text(f"{time.perf_counter() - began:.0f} s\n")
    say(f"store {spec.key}: built in {time.perf_counter() - began:.0f} s")
    return built


def _link(source: str, target: str) -> None:
    """Hard-link (git never rewrites an object file in place), copy what git rewrites."""
    if "/objects/" in source:
        Path(target).hardlink_to(source)
    else:
        shutil.copy2(source, target)


def _build(spec: StoreSpec, repo: Path, say: Say) -> None:
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    say(f"store {spec.key}: main history of {spec.history} commits")
    commits = _main_history(repo, spec.history)
    bulk = spec.history - spec.publishes
    say(f"store {spec.key}: {bulk} publishes x {spec.buckets} buckets through the write path")
    stream = [b"commit refs/heads/perf-baselines\n",
              b"committer perfgate <p@x> 1700000000 +0000\ndata 5\nbulk\n"]  # fmt: skip
    for number, bucket in enumerate(spec.bucket_ids(), 1):
        update = append_to_bucket(
            _live(bucket), BucketFiles(), [_sample(bucket, k, commits) for k in range(bulk)]
        )
        for path, text in update.files.items():
            if text is not None:
                data = text.encode()
                stream.append(
                    b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
                )
        if number % max(1, spec.buckets // 10) == 0:
            say(f"store {spec.key}:   {number}/{spec.buckets} buckets")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(stream), check=True)
    store = BaselineStore(repo, branch="perf-baselines", retry=PushRetryPolicy(deadline_s=60))
    for k in range(bulk, spec.history):
        began = time.perf_counter()
        store.append([_sample(b, k, commits) for b in spec.bucket_ids()], f"publish {k}")
        took = time.perf_counter() - began
        say(f"store {spec.key}:   publish {k + 1}/{spec.history} ({took:.1f} s)")
    _git(repo, "checkout", "-q", "main")


def _inputs(built: Built) -> None:
    """The gate's inputs beside each copy: perfgate.yaml and a pull request's artifacts.

    Written on every use, not cached: they follow the config and artifact formats of the
    perfgate under test, and take a second to write.
    """
    head = subprocess.run(["git", "rev-parse", "main"], cwd=built.as_built, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    for repo in (built.as_built, built.after_gc):
        _config(repo, built.spec)
        results = repo / "results"
        shutil.rmtree(results, ignore_errors=True)
        for bucket in built.spec.bucket_ids():
            write_result(make_result(bucket, 99.5, commit=head, event="pull_request"), results)


def _main_history(repo: Path, count: int) -> list[str]:
    """``count`` linear commits on main (one per publish); their ids, oldest first."""
    stream = []
    for index in range(count):
        message = f"c{index}".encode()
        stream.append(b"commit refs/heads/main\nmark :%d\n" % (index + 1))
        stream.append(b"committer t <t@x> %d +0000\n" % (EPOCH + index))
        stream.append(b"data %d\n%s\n" % (len(message), message))
    marks = repo / ".git" / "perf-marks"
    subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"],
                   cwd=repo, input=b"".join(stream), check=True)  # fmt: skip
    found = dict(line.split() for line in marks.read_text().splitlines())
    return [found[f":{index + 1}"] for index in range(count)]


_TEMPLATES: dict[str, Sample] = {}


def _sample(bucket: str, k: int, commits: list[str]) -> Sample:
    """Publish ``k``'s sample of ``bucket``: commit k of main, a figure that varies a little."""
    template = _TEMPLATES.get(bucket)
    if template is None:
        template = samples_from_result(make_result(bucket, 100.0), trusted_source="perf")[0]
        _TEMPLATES[bucket] = template
    return replace(
        template,
        sample_id=hashlib.sha256(f"{bucket}/{k}".encode()).hexdigest()[:24],
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(EPOCH + 3600 * k)),
        value=100.0 + (k % 7) * 0.3,
        commit=commits[k],
        ci_run_id=str(k),
    )


def _live(bucket: str) -> str:
    task, backend = bucket.split("/")
    return f"samples/{HARDWARE}/{task}/{backend}.ndjson"


def _config(repo: Path, spec: StoreSpec) -> None:
    tasks = sorted({bucket.split("/")[0] for bucket in spec.bucket_ids()})
    lines = [
        "version: 1",
        "gate: {mode: advisory}",
        "defaults: {driver: command, command: {argv: ['true'], output: '{output_dir}/o.json'}}",
        "buckets:",
        *(f"  - {{task: {t}, backends: [{{physics: numpy}}, {{physics: python}}]}}" for t in tasks),
    ]
    (repo / "perfgate.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True)
