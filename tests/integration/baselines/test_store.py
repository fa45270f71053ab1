"""The baseline store on real git repositories with a bare repository as origin (R4, R9)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfgate.baselines import store as store_module
from perfgate.baselines import windows as windows_module
from perfgate.baselines.pushing import PushRetryPolicy, commit_to_branch
from perfgate.baselines.reading import ancestry, ancestry_ids
from perfgate.baselines.samples import (
    Sample,
    Window,
    WindowKey,
    sample_path,
    samples_from_result,
    select_window,
)
from perfgate.baselines.store import BaselineStore
from perfgate.config import PRIMARY
from perfgate.util.git import git, merge_base
from tests.factories import make_result, with_metric
from tests.git_support import IDENTITY, commit_all, empty_origin
from tests.publishers import origin_with_history, run_burst

LIVE_PATH = "samples/cpu-test/cartpole/numpy.ndjson"


@pytest.fixture
def origin_and_clone(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A bare origin and a clone whose main has five commits c0..c4."""
    origin, clone = empty_origin(tmp_path)
    shas = [commit_all(clone, f"c{i}") for i in range(5)]
    git("push", "-q", "origin", "main", cwd=clone)
    return origin, clone, shas


def result_at(sha: str, value: float, **kwargs):  # type: ignore[no-untyped-def]
    kwargs.setdefault("run_id", f"run-{sha[:7]}-{value}")
    return make_result("cartpole/numpy", value, commit=sha, **kwargs)


def key_for(**overrides) -> WindowKey:  # type: ignore[no-untyped-def]
    return WindowKey.for_result(make_result("cartpole/numpy", 1.0, **overrides))


def store_of(clone: Path, remote: str | None = "origin") -> BaselineStore:
    return BaselineStore(clone, branch="perf-baselines", remote=remote)


def window(store: BaselineStore, base: str, max_samples: int = 20, **key):  # type: ignore[no-untyped-def]
    tip = store.refresh()
    found = store.windows({"b": key_for(**key)}, tip=tip, base=base, max_samples=max_samples)
    return found["b"]


def test_nearest_commits_come_first_and_the_window_is_capped(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    samples = [samples_from_result(result_at(sha, 100.0 + i), trusted_source="test")[0]
               for i, sha in enumerate(shas)]  # fmt: skip
    store.append(samples, "seed")
    found = window(store, shas[-1], max_samples=3)
    assert [s.commit for s in found.entries] == [shas[4], shas[3], shas[2]]
    # Judging an older commit: later commits are not its ancestors.
    assert [s.commit for s in window(store, shas[1]).entries] == [shas[1], shas[0]]


def test_a_sample_from_an_unmerged_branch_is_excluded_by_ancestry(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    git("checkout", "-q", "-b", "feature", shas[2], cwd=clone)
    side = commit_all(clone, "unmerged work")
    git("checkout", "-q", "main", cwd=clone)
    store = store_of(clone)
    store.append(
        [samples_from_result(result_at(side, 50.0), trusted_source="test")[0],
         samples_from_result(result_at(shas[3], 100.0), trusted_source="test")[0]],
        "mixed",
    )  # fmt: skip
    assert window(store, shas[4]).values == (100.0,)


def test_hash_epoch_and_target_mismatches_are_excluded(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    store.append(
        [
            samples_from_result(result_at(shas[0], 1.0, launch_hash="f" * 16), trusted_source="t")[
                0
            ],
            samples_from_result(result_at(shas[1], 2.0, epoch=2), trusted_source="t")[0],
            samples_from_result(
                result_at(shas[2], 3.0, target_branch="develop"), trusted_source="t"
            )[0],
            samples_from_result(result_at(shas[3], 4.0), trusted_source="t")[0],
        ],
        "mixed",
    )
    assert window(store, shas[4]).values == (4.0,)
    assert window(store, shas[4], epoch=2).values == (2.0,)


def append_a_corrupt_line(clone: Path) -> str:
    """A line that is no sample appended to the live segment on the baseline branch (as a
    hand edit would); the segment's path."""
    path = sample_path("cpu-test", "cartpole", "numpy")

    def corrupt(tree: Path) -> bool:
        file = tree / path
        file.write_text(file.read_text() + '{"launch_hash":"' + "a" * 16 + '", broken\n')
        return True

    commit_to_branch(
        clone, "perf-baselines", "origin", corrupt, "corrupt", PushRetryPolicy(), [path]
    )
    return path


def test_a_corrupt_line_is_skipped_with_a_warning_naming_file_and_line(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    good = samples_from_result(result_at(shas[1], 7.0), trusted_source="t")[0]
    store.append([good], "one")
    path = append_a_corrupt_line(clone)
    reader = store_of(clone)
    assert window(reader, shas[4]).values == (7.0,)
    assert any(f"{path}:2" in warning for warning in reader.warnings)


def test_a_retried_publish_never_duplicates(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    sample = samples_from_result(result_at(shas[4], 9.0), trusted_source="t")[0]
    first = store.append([sample], "first")
    again = store.append([sample], "again")
    assert (first.added, again.added, again.already_present) == (1, 0, 1)
    assert again.commit is None
    assert window(store, shas[4]).values == (9.0,)


def test_a_local_only_branch_works_without_a_remote(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    sha = commit_all(repo, "only")
    store = store_of(repo, remote=None)
    store.append([samples_from_result(result_at(sha, 5.0), trusted_source="local")[0]], "local")
    assert git("rev-parse", "perf-baselines", cwd=repo).strip()
    assert window(store, sha).values == (5.0,)
    assert git("branch", "--show-current", cwd=repo).strip() == "main"


def test_merge_base_of_a_pull_request_is_where_it_meets_the_target(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    git("checkout", "-q", "-b", "pr", shas[2], cwd=clone)
    commit_all(clone, "pr work")
    git("fetch", "-q", "origin", cwd=clone)
    assert merge_base(clone, "main", "origin") == shas[2]


def test_concurrent_publishers_lose_nothing_and_duplicate_nothing(tmp_path: Path) -> None:
    """Publishers racing for one origin, each its own clone and process, 4 buckets each:
    every sample lands exactly once (the burst of 32, and its time, is `nox -s perf`'s)."""
    origin, shas = origin_with_history(tmp_path)
    burst = run_burst(origin, tmp_path / "work", publishers=6, buckets=4, commits=shas)
    assert burst.exit_codes == (0,) * 6, burst
    assert (burst.lost, burst.duplicated) == (0, 0), burst
    assert burst.expected == 6 * 4 + 1


def test_sample_ids_are_stable_for_the_same_run(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, _, shas = origin_and_clone
    result = result_at(shas[0], 3.0)
    first = samples_from_result(result, trusted_source="t")[0]
    later = samples_from_result(result, trusted_source="t")[0]
    assert first.sample_id == later.sample_id
    other = samples_from_result(replace(result, ci=replace(result.ci, run_attempt="2")),
                               trusted_source="t")[0]  # fmt: skip
    assert other.sample_id != first.sample_id
    assert Sample.from_json(json.loads(first.to_line())) == first


def test_full_segments_move_to_the_archive_and_stay_readable_and_deduplicated(
    origin_and_clone,
) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = BaselineStore(
        clone, branch="perf-baselines", remote="origin", segment_lines=4, horizon=2
    )
    samples = [
        samples_from_result(
            result_at(shas[i % 5], 100.0 + i, run_id=f"seg-{i}"), trusted_source="t"
        )[0]
        for i in range(11)
    ]
    for chunk in (samples[:3], samples[3:6], samples[6:9], samples[9:]):
        store.append(chunk, "chunk")
    tip = store.refresh()
    assert tip is not None
    archived = git("ls-tree", "-r", "--name-only", tip, "samples/cpu-test/cartpole/numpy/",
                   cwd=clone).split()  # fmt: skip
    # Full segments of exactly four lines, each with its index; the newest lines stay live.
    assert [Path(name).name for name in archived] == [
        "000000004.idx",
        "000000004.ndjson",
        "000000008.idx",
        "000000008.ndjson",
    ]
    # Every sample once, whether live or archived; a repeat of an archived sample is skipped.
    again = store.append(samples[:2], "again")
    assert (again.added, again.already_present) == (0, 2)
    read = store.read([sample_path("cpu-test", "cartpole", "numpy")], tip)
    values = [s.value for s in next(iter(read.values()))]
    assert sorted(values) == [100.0 + i for i in range(11)]
    # The window reaches into the archive when the live file cannot fill it.
    found = window(store, shas[4], max_samples=11)
    assert len(found.entries) == 11
    assert found.entries[0].commit == shas[4]


def test_a_shallow_clone_is_a_malfunction_not_a_silent_no_baseline(
    origin_and_clone, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from perfgate.errors import GateMalfunction

    origin, clone, shas = origin_and_clone
    store_of(clone).append(
        [samples_from_result(result_at(shas[0], 1.0), trusted_source="t")[0]], "s"
    )
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    store = store_of(shallow)
    with pytest.raises(GateMalfunction, match="fetch-depth: 0"):
        window(store, shas[-1])


def test_a_line_of_the_wrong_shape_is_skipped_not_crashing_the_statistics(origin_and_clone) -> None:  # type: ignore[no-untyped-def]

    _, clone, shas = origin_and_clone
    good = samples_from_result(result_at(shas[1], 7.0), trusted_source="t")[0]
    path = good.path
    bad_lines = [good.to_line().replace('"value":7.0', value) for value in
                 ('"value":"123"', '"value":null', '"value":true', '"value":-1')]  # fmt: skip

    def plant(tree: Path) -> bool:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text("\n".join([good.to_line(), *bad_lines]) + "\n")
        return True

    commit_to_branch(clone, "perf-baselines", "origin", plant, "plant", PushRetryPolicy(), [path])
    reader = store_of(clone)
    assert window(reader, shas[4]).values == (7.0,)
    assert len(reader.warnings) == 4
    assert all(f"{path}:" in warning for warning in reader.warnings)


def test_nearest_commits_win_even_when_farther_samples_were_appended_later(
    origin_and_clone,
) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    near = [samples_from_result(result_at(shas[3], 100.0, run_id=f"n{i}"), trusted_source="t")[0]
            for i in range(20)]  # fmt: skip
    # A later seed of an old commit appends many more, farther samples after them.
    far = [samples_from_result(result_at(shas[0], 50.0, run_id=f"f{i}"), trusted_source="seed")[0]
           for i in range(300)]  # fmt: skip
    store.append(near, "near")
    store.append(far, "far")
    found = window(store, shas[4], max_samples=20)
    assert {s.commit for s in found.entries} == {shas[3]}
    assert found.values == (100.0,) * 20


def test_a_baseline_branch_deleted_on_the_remote_is_not_read_from_a_stale_ref(
    origin_and_clone, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    origin, clone, shas = origin_and_clone
    store_of(clone).append(
        [samples_from_result(result_at(shas[0], 1.0), trusted_source="t")[0]], "s"
    )
    reader = tmp_path / "reader"
    git("clone", "-q", str(origin), str(reader))
    assert store_of(reader).refresh() is not None
    git("push", "-q", "origin", "--delete", "perf-baselines", cwd=clone)
    assert store_of(reader).refresh() is None


def test_an_index_left_behind_by_an_older_writer_is_not_trusted(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    store.append([samples_from_result(result_at(shas[i], 100.0 + i), trusted_source="t")[0]
                  for i in range(3)], "indexed")  # fmt: skip
    # An older perfgate appends the nearest sample of all to the segment, not to its index.
    nearest = samples_from_result(result_at(shas[4], 50.0), trusted_source="old")[0]
    path = nearest.path

    def older_writer(tree: Path) -> bool:
        live = tree / path
        live.write_text(live.read_text() + nearest.to_line() + "\n")
        return True

    commit_to_branch(
        clone, "perf-baselines", "origin", older_writer, "old", PushRetryPolicy(), [path]
    )
    assert window(store_of(clone), shas[4]).values == (50.0, 102.0, 101.0, 100.0)
    # The next append rebuilds the index from the lines.
    store.append([samples_from_result(result_at(shas[3], 70.0), trusted_source="t")[0]], "again")
    assert window(store_of(clone), shas[4]).values == (50.0, 70.0, 102.0, 101.0, 100.0)


def random_samples(shas: list[str], side: str, count: int, seed: int) -> list[Sample]:
    """Runs over ancestors and an unmerged commit, three experiments, clock ties included:
    one to three samples each, of the primary and of a second metric."""
    chooser = random.Random(seed)
    found = []
    for index in range(count):
        result = result_at(
            chooser.choice([*shas, side]),
            float(index + 1),
            run_id=f"random-{index}",
            target_branch=chooser.choice(["main", "main", "develop"]),
            epoch=chooser.choice([1, 1, 2]),
            samples=[float(index + 1) + k / 10 for k in range(chooser.randint(1, 3))],
        )
        result = with_metric(result, "startup_s", [1.0] * len(result.metric.samples))
        stamp = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=chooser.randrange(40))
        found += samples_from_result(result, trusted_source="t", timestamp=stamp)
    return found


def random_store(clone: Path, shas: list[str], seed: int) -> BaselineStore:
    """A store of :func:`random_samples` (an unmerged side commit among them), appended in
    chunks into segments of 16 lines, so windows read archives."""
    git("checkout", "-q", "-b", "side", shas[1], cwd=clone)
    side = commit_all(clone, "unmerged")
    git("checkout", "-q", "main", cwd=clone)
    store = BaselineStore(clone, branch="perf-baselines", remote="origin", segment_lines=16,
                          horizon=20)  # fmt: skip
    everything = random_samples(shas, side, 45, seed)
    for start in range(0, len(everything), 13):
        store.append(everything[start : start + 13], "chunk")
    return store


def experiment_keys() -> dict[str, WindowKey]:
    """A window key per target branch, baseline epoch and metric of :func:`random_samples`."""
    return {
        f"{target}-{epoch}-{name}": WindowKey.for_result(
            with_metric(make_result(target_branch=target, epoch=epoch), "startup_s", [1.0]), name
        )
        for target in ("main", "develop")
        for epoch in (1, 2)
        for name in (PRIMARY, "startup_s")
    }


def nearest_runs(window: Window, max_runs: int | None) -> Window:
    """The window cut to its nearest ``max_runs`` runs (commit and timestamp)."""
    runs = dict.fromkeys((e.commit, e.timestamp) for e in window.entries)
    kept = set(list(runs)[:max_runs])
    return Window(entries=tuple(e for e in window.entries if (e.commit, e.timestamp) in kept))


@pytest.mark.parametrize(("max_samples", "max_runs"), [(6, None), (6, 2)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windows_from_indexes_equal_windows_from_lines(  # type: ignore[no-untyped-def]
    origin_and_clone, seed, max_samples, max_runs
) -> None:
    _, clone, shas = origin_and_clone
    store = random_store(clone, shas, seed)
    keys = experiment_keys()
    tip = store.refresh()
    chosen = {"max_samples": max_samples, "max_runs": max_runs}
    indexed = store.windows(keys, tip=tip, base=shas[4], **chosen)
    archived = git("ls-tree", "-r", "--name-only", tip, "samples/", cwd=clone).split()
    assert sum(name.endswith(".idx") for name in archived) >= 5

    def drop_indexes(tree: Path) -> bool:
        for name in archived:
            if name.endswith(".idx"):
                (tree / name).unlink()
        return True

    # The layout an older perfgate leaves: the same lines, no index anywhere.
    commit_to_branch(clone, "perf-baselines", "origin", drop_indexes, "drop", PushRetryPolicy())
    reader = store_of(clone)
    scanned = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=20).windows(
        keys, tip=reader.refresh(), base=shas[4], **chosen
    )
    assert scanned == indexed
    if max_runs is None:
        assert any(len(found.entries) == max_samples for found in indexed.values())
    else:
        # Some window is cut by its runs before it holds max_samples samples.
        assert any(len(w.runs()) == max_runs and len(w.entries) < max_samples
                   for w in indexed.values())  # fmt: skip
    # With every sample inside the horizon, both are the plain definition of R4.
    whole = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=1000)
    tip = whole.refresh()
    assert tip is not None
    all_samples = next(iter(whole.read([LIVE_PATH], tip).values()))
    distance = ancestry(clone, shas[4])
    exact = whole.windows(keys, tip=tip, base=shas[4], **chosen)
    for name, key in keys.items():
        plain = select_window(all_samples, key, distance, max_samples)
        assert exact[name] == nearest_runs(plain, max_runs)


def rewrite_indexes(clone: Path, tip: str, edit: Callable[[list[str]], list[str]]) -> None:
    """Commit every index of the branch with its lines (head, entries, records) edited."""
    names = [n for n in git("ls-tree", "-r", "--name-only", tip, "samples/", cwd=clone).split()
             if n.endswith(".idx")]  # fmt: skip

    def rewrite(tree: Path) -> bool:
        for name in names:
            lines = (tree / name).read_text().splitlines()
            (tree / name).write_text("".join(f"{line}\n" for line in edit(lines)))
        return True

    assert names
    commit_to_branch(clone, "perf-baselines", "origin", rewrite, "rewrite", PushRetryPolicy())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windows_from_index_records_equal_windows_ranked_from_every_line(  # type: ignore[no-untyped-def]
    origin_and_clone, seed, monkeypatch
) -> None:
    _, clone, shas = origin_and_clone
    store = random_store(clone, shas, seed)
    keys = experiment_keys()
    chosen = {"max_samples": 6, "max_runs": 2}

    def read() -> dict[str, Window]:
        reader = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=20)
        return reader.windows(keys, tip=reader.refresh(), base=shas[4], **chosen)

    probed = read()
    assert any(w.entries for w in probed.values())
    # Probing stops after the nearest commit, or at once: the other lines are ranked.
    for probes in (1, 0):
        monkeypatch.setattr(windows_module, "PROBES", probes)
        assert read() == probed
    monkeypatch.undo()
    tip = store.refresh()
    assert tip is not None
    # Records that point at no line are not trusted: the index's lines are ranked.
    rewrite_indexes(
        clone,
        tip,
        lambda lines: [*lines[:-1], re.sub(r"(.{23}).{9}", r"\g<1>000000000", lines[-1])],
    )
    assert read() == probed
    # An index written before records (version 2) is ranked the same.
    rewrite_indexes(clone, tip, lambda lines: [lines[0].replace(" 3 ", " 2 ", 1), *lines[1:-1]])
    assert read() == probed
    # Records cut short: the index is not trusted at all and the segment's lines are read.
    rewrite_indexes(
        clone, tip, lambda lines: [lines[0].replace(" 2 ", " 3 ", 1), *lines[1:], "0" * 31]
    )
    assert read() == probed


def test_a_walk_of_the_nearest_commits_is_the_start_of_the_whole_walk(tmp_path: Path) -> None:
    """``ancestry_ids(limit=k)`` is the whole walk's first k commits, merges included, so a
    partial walk ranks what it reached as the whole one does."""
    _, clone = empty_origin(tmp_path)
    for i in range(3):
        commit_all(clone, f"m{i}")
    git("checkout", "-q", "-b", "topic", cwd=clone)
    for i in range(3):
        commit_all(clone, f"t{i}")
    git("checkout", "-q", "main", cwd=clone)
    for i in range(2):
        commit_all(clone, f"n{i}")
    git("merge", "-q", "--no-ff", "-m", "merge topic", "topic", cwd=clone, env=IDENTITY)
    commit_all(clone, "after")
    whole = list(ancestry_ids(clone, "main"))
    assert len(whole) == 10
    for limit in range(1, 12):
        assert list(ancestry_ids(clone, "main", limit=limit)) == whole[:limit]


def test_only_a_window_the_nearest_commits_cannot_settle_walks_the_whole_history(
    origin_and_clone, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    store.append([samples_from_result(result_at(sha, 100.0 + i), trusted_source="t")[0]
                  for i, sha in enumerate(shas)], "one a commit")  # fmt: skip
    walks: list[int | None] = []
    real_walk = store_module.ancestry_ids

    def spy(repo: Path, base: str, limit: int | None = None) -> dict[bytes, int]:
        # A spy, not a double: it records the walk asked for and returns the real one.
        walks.append(limit)
        return real_walk(repo, base, limit)

    monkeypatch.setattr(store_module, "ancestry_ids", spy)
    monkeypatch.setattr(store_module, "NEAR_ANCESTRY", 2)
    # Two samples: both within the two nearest commits, nothing else can come nearer.
    assert window(store, shas[4], max_samples=2).values == (104.0, 103.0)
    assert walks == [2]
    # Four: the two walked commits cannot fill it, so the whole history is walked.
    walks.clear()
    assert window(store, shas[4], max_samples=4).values == (104.0, 103.0, 102.0, 101.0)
    assert walks == [2, None]


@pytest.mark.parametrize("near", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(1, 9))
def test_windows_from_a_partial_walk_equal_those_of_the_whole_walk(  # type: ignore[no-untyped-def]
    origin_and_clone, monkeypatch: pytest.MonkeyPatch, seed: int, near: int
) -> None:
    _, clone, shas = origin_and_clone
    random_store(clone, shas, seed)
    append_a_corrupt_line(clone)
    keys = experiment_keys()

    def read() -> tuple[dict[str, Window], list[str]]:
        reader = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=20)
        found = reader.windows(keys, tip=reader.refresh(), base=shas[4], max_samples=6,
                               max_runs=2)  # fmt: skip
        return found, reader.warnings

    whole, warned = read()
    assert warned  # the corrupt line is reported
    monkeypatch.setattr(store_module, "NEAR_ANCESTRY", near)
    assert read() == (whole, warned)


def test_commits_past_a_partial_walk_are_never_taken_for_one_run(
    origin_and_clone, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Three older commits seeded with one timestamp are three runs, walked or not: taken
    for one, the window would read an archive the whole walk never reads, and settle on
    other runs than the whole walk's."""
    _, clone, shas = origin_and_clone
    writer = BaselineStore(clone, branch="perf-baselines", remote="origin", segment_lines=40)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def at(sha: str, minute: int, run: str, epoch: int = 1) -> Sample:
        result = result_at(sha, 100.0 + minute, run_id=run, epoch=epoch)
        return samples_from_result(result, trusted_source="t",
                                   timestamp=start + timedelta(minutes=minute))[0]  # fmt: skip

    filler = iter(range(1000))
    # Archived once the next append passes 40 lines: two runs of the parent commit.
    writer.append(
        [
            at(shas[3], 1, "a"),
            at(shas[3], 2, "b"),
            *(at(shas[0], 3, f"x{next(filler)}", epoch=2) for _ in range(38)),
        ],
        "old",
    )
    # The live segment: the base's own run, then three older commits seeded at one time.
    writer.append([at(shas[4], 10, "c"), *(at(sha, 20, f"s{i}") for i, sha in
                                           enumerate(shas[:3])),
                   *(at(shas[0], 30, f"y{next(filler)}", epoch=2) for _ in range(30))],
                  "seeded")  # fmt: skip

    def read() -> Window:
        reader = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=1)
        tip = reader.refresh()
        return reader.windows({"b": key_for()}, tip=tip, base=shas[4], max_samples=50,
                              max_runs=3)["b"]  # fmt: skip

    whole = read()
    assert [e.commit for e in whole.entries] == [shas[4], shas[2], shas[1]]
    monkeypatch.setattr(store_module, "NEAR_ANCESTRY", 2)
    assert read() == whole


def test_a_window_that_ever_held_a_commit_past_the_walk_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit the walk did not reach (here an unmerged one of five samples) may lengthen
    the window while segments are read, and so what is read: the window is read again with
    the whole walk, even when it ends with walked commits only."""
    _, clone = empty_origin(tmp_path)
    shas = [commit_all(clone, f"c{i}") for i in range(5)]
    git("push", "-q", "origin", "main", cwd=clone)
    git("checkout", "-q", "-b", "side", shas[1], cwd=clone)
    side = commit_all(clone, "unmerged")
    git("checkout", "-q", "main", cwd=clone)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    made = iter(range(1000))

    def at(
        sha: str, value: float, minute: int, count: int = 1, target: str = "main"
    ) -> list[Sample]:
        samples = [value + k / 100 for k in range(count)] if count > 1 else ()
        result = make_result("cartpole/numpy", value, commit=sha, run_id=f"r{next(made)}",
                             target_branch=target, samples=samples)  # fmt: skip
        return samples_from_result(result, trusted_source="t",
                                   timestamp=start + timedelta(minutes=minute))  # fmt: skip

    lines = at(shas[3], 30.0, 1)  # archived: the parent commit
    lines += [s for i in range(29) for s in at(shas[0], 1.0 + i, 2 + i, target="develop")]
    lines += at(shas[4], 40.0, 100)  # live: the base,
    lines += at(side, 50.0, 200, count=5)  # a commit that is no ancestor, looked up first,
    lines += at(shas[0], 10.0, 101)  # and an old one
    lines += [s for i in range(15) for s in at(shas[0], 1.0 + i, 300 + i, target="develop")]
    writer = BaselineStore(clone, branch="perf-baselines", remote="origin", segment_lines=30,
                           horizon=20)  # fmt: skip
    writer.append(lines, "all")

    def read() -> tuple[tuple[float, ...], list[str]]:
        reader = BaselineStore(clone, branch="perf-baselines", remote="origin", horizon=20)
        found = reader.windows({"b": key_for()}, tip=reader.refresh(), base=shas[4],
                               max_samples=6, max_runs=2)  # fmt: skip
        return found["b"].values, reader.warnings

    whole = read()
    assert whole == ((40.0, 10.0), [])  # the live segment settles it: the archive is not read
    monkeypatch.setattr(store_module, "NEAR_ANCESTRY", 2)
    assert read() == whole


@pytest.mark.parametrize("name", ["notes/with space.txt", "notes/naïve é.txt", "notes/a\tb.txt"])
def test_a_path_with_spaces_or_non_ascii_is_edited_where_it_is(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    commit_all(repo, "only")
    seen = []

    def add_line(tree: Path) -> bool:
        file = tree / name
        seen.append(file.read_text(encoding="utf-8") if file.exists() else None)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text((seen[-1] or "") + f"line {len(seen)}\n", encoding="utf-8")
        return True

    for message in ("first", "second"):
        commit_to_branch(repo, "side", None, add_line, message, PushRetryPolicy(), [name])
    assert seen == [None, "line 1\n"]
    assert git("show", f"side:{name}", cwd=repo) == "line 1\nline 2\n"
