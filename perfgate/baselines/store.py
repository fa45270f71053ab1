"""The baseline store: append-only NDJSON samples on a git branch (R4, R9).

Layout on the branch: ``samples/<hardware>/<task>/<backend>.ndjson`` and its archived
segments, dedup list and indexes (see :mod:`perfgate.baselines.segments`). Reads come
straight from git objects (no checkout, :mod:`~perfgate.baselines.windows`). Writes build
the new commit from a temporary index holding only the files they touch, then push with
fetch-reapply-retry until a deadline (:mod:`~perfgate.baselines.pushing`), so concurrent
publishers lose nothing.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baselines.ledger import LEDGER_DIR, SpendRecord, appended
from perfgate.baselines.pushing import (
    PushRetryPolicy,
    build_commit,
    parked_batches,
    write_branch,
)
from perfgate.baselines.reading import (
    ancestry_ids,
    fetch_tip,
    list_archives,
    object_format,
    stream_blobs,
)
from perfgate.baselines.runner_file import (
    fit_models,
    kept_models,
    parse_runner_file,
    render_runner_file,
    runners_path,
    wanted_digests,
)
from perfgate.baselines.samples import Sample, Window, WindowKey
from perfgate.baselines.segments import (
    RECENT_HORIZON,
    SEGMENT_LINES,
    BucketFiles,
    BucketUpdate,
    Entry,
    append_to_bucket,
    archive_dir,
    blob_id,
    decode,
    encode,
    ids_path,
    index_path,
    is_archive,
    line_entry,
    parse_index,
    segment_lines,
    stored_ids,
)
from perfgate.baselines.windows import FittedDepth, K, Outcome, WindowDepth, choose_windows
from perfgate.config import BaselinePolicy, Config
from perfgate.errors import GateMalfunction
from perfgate.util.git import git, resolve, time_left, try_git

__all__ = ["NEAR_ANCESTRY", "AppendOutcome", "BaselineStore", "open_store"]

# Commits of the merge base's history walked first: windows of buckets that run on one
# push in a hundred still fill from them (the rest walk it all).
NEAR_ANCESTRY = 2_000


@dataclass(frozen=True, kw_only=True)
class AppendOutcome:
    """What an append did."""

    added: int
    already_present: int
    commit: str | None
    spend_added: int


@dataclass(frozen=True, kw_only=True)
class _Edited:
    """What one edit of the work tree did: counts for the caller's own samples."""

    added: int
    present: int
    changed: bool
    spend_added: int


class BaselineStore:
    """The baseline branch of one repository, optionally mirrored on a remote."""

    def __init__(
        self,
        repo: Path,
        *,
        branch: str,
        remote: str | None = None,
        retry: PushRetryPolicy | None = None,
        segment_lines: int = SEGMENT_LINES,
        horizon: int = RECENT_HORIZON,
        history_runs: int = BaselinePolicy.history_runs,
    ) -> None:
        self.repo = repo
        self.branch = branch
        self.remote = remote
        self.retry = retry or PushRetryPolicy()
        self.segment_lines = segment_lines
        self.horizon = horizon
        # Runs of history each bucket's runner models are fitted over as samples land
        # (``gate.baseline.history_runs``); 0 fits none.
        self.history_runs = history_runs
        # Each warning once, in the order first met: one store serves several reads (a
        # local bench's confirmer, then its gate), and a line read again is the same line.
        self._warnings: dict[str, None] = {}
        # The warnings that name a corrupt line skipped (by its branch, file and line).
        self._skipped: set[str] = set()

    @property
    def warnings(self) -> list[str]:
        """What the reads and writes so far found worth saying, each once."""
        return list(self._warnings)

    @property
    def skipped_lines(self) -> int:
        """How many distinct corrupt lines the reads so far skipped (each has a warning)."""
        return len(self._skipped)

    def _warn(self, warning: str, *, skipped: bool = False) -> None:
        self._warnings.setdefault(warning)
        if skipped:
            self._skipped.add(warning)

    @functools.cached_property
    def object_format(self) -> str:
        """The repository's hash algorithm, which segment indexes name blobs with."""
        return object_format(self.repo)

    @property
    def ref(self) -> str:
        """The ref reads come from: the remote-tracking ref, or the local branch."""
        if self.remote:
            return f"refs/remotes/{self.remote}/{self.branch}"
        return f"refs/heads/{self.branch}"

    def refresh(self) -> str | None:
        """Fetch the branch (when remote) and return its tip, or None when it does not exist."""
        if self.remote:
            # The remote's answer, never a stale remote-tracking ref of a deleted branch.
            return fetch_tip(self.repo, self.branch, self.remote)
        return resolve(self.repo, self.ref)

    def read(self, paths: Iterable[str], tip: str) -> dict[str, list[Sample]]:
        """All samples of each live path at ``tip``, archived segments included, oldest first."""
        wanted = sorted(set(paths))
        archives = list_archives(self.repo, tip)
        files = {p: [*reversed(archives.get(archive_dir(p), [])), p] for p in wanted}
        order = [f for fs in files.values() for f in fs]
        blobs = stream_blobs(self.repo, [f"{tip}:{f}" for f in order])
        found = {f: self._parse(f, blob.data or b"") for f, blob in zip(order, blobs, strict=True)}
        return {path: [s for file in files[path] for s in found[file]] for path in wanted}

    def spend(self, tip: str) -> list[SpendRecord]:
        """Every ledger line at ``tip`` (:mod:`~perfgate.baselines.ledger`); a corrupt one is
        skipped with a warning."""
        listing = git("ls-tree", "-r", "--name-only", tip, "--", f"{LEDGER_DIR}/", cwd=self.repo)
        files = sorted(name for name in listing.splitlines() if name.endswith(".ndjson"))
        records = []
        for file, blob in zip(files, stream_blobs(self.repo, [f"{tip}:{f}" for f in files]),
                              strict=True):  # fmt: skip
            text = (blob.data or b"").decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    records.append(SpendRecord.from_line(line))
                except ValueError as exc:
                    self._warn(f"{self.branch}:{file}:{number}: {exc}; skipped", skipped=True)
        return records

    def windows(
        self,
        keys: Mapping[K, WindowKey],
        *,
        tip: str | None,
        base: str | None,
        max_samples: int,
        max_runs: int | None = None,
        fitted: tuple[int, int] | None = None,
    ) -> dict[K, Window]:
        """Each window, keyed as ``keys`` (bucket, or bucket and metric), at ``tip``: at most
        ``max_samples`` samples, of at most ``max_runs`` runs when given. ``fitted``
        (samples, runs): what a window whose runner model the branch holds (fitted over this
        store's ``history_runs``) reads instead: the window alone, with its model."""
        if tip is None or base is None:
            return {bucket: Window(entries=()) for bucket in keys}
        fitted_depth = None
        if fitted is not None and self.history_runs > 0:
            fitted_depth = FittedDepth(*fitted, self.history_runs)
        depth = WindowDepth(
            samples=max_samples, runs=max_runs, horizon=self.horizon, fitted=fitted_depth
        )

        def choose(
            wanted: Mapping[K, WindowKey], distance: dict[bytes, int], complete: bool
        ) -> Outcome[K]:
            return choose_windows(self.repo, tip, wanted, distance, depth, label=self.branch,
                                  complete=complete)  # fmt: skip

        # The nearest commits settle almost every window: only a bucket they cannot settle
        # walks the whole history, so a long one costs the gate nothing.
        near = ancestry_ids(self.repo, base, limit=NEAR_ANCESTRY)
        outcome = choose(keys, near, complete=len(near) < NEAR_ANCESTRY)
        if outcome.unsettled:
            unsettled = {k: keys[k] for k in outcome.unsettled}
            again = choose(unsettled, ancestry_ids(self.repo, base), complete=True)
            outcome = Outcome(windows=outcome.windows | again.windows,
                              warned=outcome.warned | again.warned)  # fmt: skip
        for warning in outcome.warnings:
            self._warn(warning, skipped=True)
        return outcome.windows

    def _parse(self, path: str, data: bytes) -> list[Sample]:
        samples = []
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                samples.append(Sample.from_line(line))
            except ValueError as exc:
                self._warn(
                    f"{self.branch}:{path}:{number}: corrupt baseline line skipped ({exc})",
                    skipped=True,
                )
        return samples

    def append(
        self, samples: Sequence[Sample], message: str, spend: Sequence[SpendRecord] = ()
    ) -> AppendOutcome:
        """Append samples not already present (by sample_id) before the retry deadline, and
        in the same commit the ``spend`` lines not already in the ledger (by run and bucket).

        With a remote they land by fetch, rebuild and push until the deadline; locally the
        branch ref moves if nobody else moved it (:func:`~perfgate.baselines.pushing.write_branch`).
        """
        for sample in samples:
            if not math.isfinite(sample.value) or sample.value <= 0:
                # R3: nothing non-finite (or no forward progress) is ever stored.
                raise GateMalfunction(
                    f"{sample.path}: refusing to store the figure {sample.value!r}; "
                    "only positive finite figures are baselines"
                )

        edited: list[_Edited] = []

        def build(base: str | None) -> str | None:
            def edit(tree: Path) -> bool:
                edited[:] = [self._edit(tree, base, samples, spend)]
                return edited[0].changed

            touched = self._touched(samples) + sorted({r.path for r in spend})
            return build_commit(self.repo, base, edit, message, touched)

        deadline = time.monotonic() + self.retry.deadline_s
        parked = (
            parked_batches(self.repo, self.branch, self.remote, time_left(deadline))
            if self.remote
            else []
        )
        commit = write_branch(self.repo, self.branch, self.remote, build, self.retry,
                              doing="landing samples on", deadline=deadline)  # fmt: skip
        for warning in parked:
            self._warn(warning)
        return AppendOutcome(added=edited[0].added, already_present=edited[0].present,
                             commit=commit, spend_added=edited[0].spend_added)  # fmt: skip

    @staticmethod
    def _touched(samples: Sequence[Sample]) -> list[str]:
        """Every file an append of ``samples`` may write, besides new archives."""
        paths = {s.path for s in samples}
        beside = (ids_path, index_path, runners_path)
        return sorted([*paths, *(name(path) for path in paths for name in beside)])

    def _edit(
        self,
        tree: Path,
        base: str | None,
        samples: Sequence[Sample],
        spend: Sequence[SpendRecord] = (),
    ) -> _Edited:
        """Append ``samples`` and ``spend`` in the work tree, counting what was new and what
        was stored."""
        by_path: dict[str, list[Sample]] = {}
        for sample in samples:
            by_path.setdefault(sample.path, []).append(sample)
        archives = self._archive_names(base, list(by_path)) if base else {}
        added = present = 0
        changed = False
        for path, new in by_path.items():
            stored = BucketFiles(
                live=_read(tree / path) or "",
                index=_read(tree / index_path(path)),
                ids=_read(tree / ids_path(path)) or "",
                archives=tuple(archives.get(archive_dir(path), ())),
            )
            before = stored_ids(stored)
            for sample_id in dict.fromkeys(s.sample_id for s in new):
                present += sample_id in before
                added += sample_id not in before
            update = append_to_bucket(
                path,
                stored,
                new,
                object_format=self.object_format,
                segment_lines_max=self.segment_lines,
            )
            changed = changed or update.added > 0
            files = dict(update.files)
            if update.added and self.history_runs > 0:
                files[runners_path(path)] = self._runner_file(tree, base, path, stored, update, new)
            for name, text in files.items():
                _write(tree / name, text)
        present += len(samples) - len({s.sample_id for s in samples})  # repeats in the input
        spend_added = 0
        for path in sorted({r.path for r in spend}):
            mine = [r for r in spend if r.path == path]
            text, new_lines = appended(_read(tree / path) or "", mine)
            if new_lines:
                _write(tree / path, text)
                spend_added += new_lines
        return _Edited(added=added, present=present, changed=changed or spend_added > 0,
                       spend_added=spend_added)  # fmt: skip

    def _runner_file(
        self,
        tree: Path,
        base: str | None,
        path: str,
        stored: BucketFiles,
        update: BucketUpdate,
        new: Sequence[Sample],
    ) -> str:
        """The bucket's runner models after ``update``: those of the digests it appended
        refitted over their nearest runs, reading archives only while the lines written
        hold too few; the others kept while their lines are still in the live segment."""
        live = update.files.get(path)
        assert live is not None  # an append that added samples always writes its live segment
        previous = parse_runner_file(
            _read(tree / runners_path(path)),
            blob_id(encode(stored.live), self.object_format),
            self.history_runs,
        )
        older = self._archived_entries(base, path, stored.archives) if base else iter(())
        newest_first = itertools.chain(
            reversed(update.entries), itertools.chain.from_iterable(older)
        )
        refitted = fit_models(newest_first, wanted_digests(new), self.history_runs)
        models = kept_models(previous, update.entries, refitted)
        return render_runner_file(blob_id(encode(live), self.object_format), self.history_runs,
                                  models)  # fmt: skip

    def _archived_entries(
        self, base: str, path: str, names: Sequence[str]
    ) -> Iterator[list[Entry | None]]:
        """The entries of each archived segment of ``path`` at ``base``, the newest first,
        read one segment at a time as they are asked for."""
        for leaf in sorted(names, reverse=True):
            segment = f"{archive_dir(path)}/{leaf}"
            specs = [f"{base}:{segment}", f"{base}:{index_path(segment)}"]
            data, index = (blob.data or b"" for blob in stream_blobs(self.repo, specs))
            entries = parse_index(decode(index), data, self.object_format) if index else None
            if entries is None:
                entries = [line_entry(line) for line in segment_lines(decode(data))]
            yield entries[::-1]

    def _archive_names(self, base: str, live_paths: Sequence[str]) -> dict[str, list[str]]:
        """The archived segment names of each bucket at ``base`` (one ``ls-tree``)."""
        dirs = [f"{archive_dir(path)}/" for path in live_paths]
        listing = git("ls-tree", "--name-only", base, "--", *dirs, cwd=self.repo)
        found: dict[str, list[str]] = {}
        for name in listing.splitlines():
            directory, _, leaf = name.rpartition("/")
            if is_archive(leaf):
                found.setdefault(directory, []).append(leaf)
        return found


def _read(path: Path) -> str | None:
    # Bytes as stored (no newline translation), so an index can be checked against them.
    return decode(path.read_bytes()) if path.exists() else None


def _write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(text))


def open_store(config: Config, *, local: bool) -> BaselineStore | None:
    """The baseline store of the current repository; None outside a git repository.

    ``local`` reads and writes the local branch only; otherwise the configured
    remote is used when this repository has it.
    """
    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        return None
    baseline = config.gate.baseline
    remote = None if local else baseline.remote
    if remote is not None and try_git("remote", "get-url", remote, cwd=Path(top)) is None:
        remote = None
    return BaselineStore(
        Path(top),
        branch=baseline.branch,
        remote=remote,
        retry=PushRetryPolicy(deadline_s=baseline.publish_deadline_minutes * 60),
        history_runs=baseline.history_runs,
    )
