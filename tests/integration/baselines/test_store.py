"""The baseline store on real git repositories with a bare repository as origin (R4, R9)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.store import (
    BaselineStore,
    Sample,
    WindowKey,
    merge_base,
    sample_path,
    samples_from_result,
)
from perfgate.git import git
from tests.factories import make_result
from tests.paths import ROOT

pytestmark = pytest.mark.integration

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip


def commit(repo: Path, message: str) -> str:
    git("commit", "--allow-empty", "-q", "-m", message, cwd=repo, env=IDENTITY)
    return git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.fixture
def origin_and_clone(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A bare origin and a clone whose main has five commits c0..c4."""
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone))
    git("checkout", "-q", "-b", "main", cwd=clone)
    shas = [commit(clone, f"c{i}") for i in range(5)]
    git("push", "-q", "origin", "main", cwd=clone)
    return origin, clone, shas


def result_at(sha: str, value: float, **kwargs):  # type: ignore[no-untyped-def]
    kwargs.setdefault("run_id", f"run-{sha[:7]}-{value}")
    return make_result("cartpole/numpy", value, commit=sha, **kwargs)


def key_for(**overrides) -> WindowKey:  # type: ignore[no-untyped-def]
    return WindowKey.for_result(make_result("cartpole/numpy", 1.0, **overrides))


def store_of(clone: Path, remote: str | None = "origin") -> BaselineStore:
    return BaselineStore(clone, branch="perf-baselines", remote=remote, push_retries=3)


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
    assert [s.commit for s in found.samples] == [shas[4], shas[3], shas[2]]
    # Judging an older commit: later commits are not its ancestors.
    assert [s.commit for s in window(store, shas[1]).samples] == [shas[1], shas[0]]


def test_a_sample_from_an_unmerged_branch_is_excluded_by_ancestry(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    git("checkout", "-q", "-b", "feature", shas[2], cwd=clone)
    side = commit(clone, "unmerged work")
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


def test_a_corrupt_line_is_skipped_with_a_warning_naming_file_and_line(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    store = store_of(clone)
    good = samples_from_result(result_at(shas[1], 7.0), trusted_source="t")[0]
    store.append([good], "one")
    path = sample_path("cpu-test", "cartpole", "numpy")

    def corrupt(tree: Path) -> bool:
        file = tree / path
        file.write_text(file.read_text() + '{"launch_hash":"' + "a" * 16 + '", broken\n')
        return True

    from perfgate.baselines.store import commit_to_branch

    commit_to_branch(clone, "perf-baselines", "origin", corrupt, "corrupt", 1, paths=[path])
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
    sha = commit(repo, "only")
    store = store_of(repo, remote=None)
    store.append([samples_from_result(result_at(sha, 5.0), trusted_source="local")[0]], "local")
    assert git("rev-parse", "perf-baselines", cwd=repo).strip()
    assert window(store, sha).values == (5.0,)
    assert git("branch", "--show-current", cwd=repo).strip() == "main"


def test_merge_base_of_a_pull_request_is_where_it_meets_the_target(origin_and_clone) -> None:  # type: ignore[no-untyped-def]
    _, clone, shas = origin_and_clone
    git("checkout", "-q", "-b", "pr", shas[2], cwd=clone)
    commit(clone, "pr work")
    git("fetch", "-q", "origin", cwd=clone)
    assert merge_base(clone, "main", "origin") == shas[2]


PUBLISHER = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from perfgate.config import BaselinePolicy
from perfgate.baselines.store import BaselineStore, Sample
import json
repo, branch, index = Path(sys.argv[1]), "perf-baselines", int(sys.argv[2])
samples = [Sample.from_json(json.loads(line)) for line in sys.argv[3].splitlines()]
retries = BaselinePolicy().push_retries  # the configured default, not a test-only budget
BaselineStore(repo, branch=branch, remote="origin", push_retries=retries).append(samples, "p")
"""


def test_eight_concurrent_publishers_lose_nothing(origin_and_clone, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    origin, clone, shas = origin_and_clone
    root = str(ROOT)
    script = tmp_path / "publish.py"
    script.write_text(PUBLISHER.format(root=root), encoding="utf-8")
    processes, expected = [], set()
    for index in range(8):
        repo = tmp_path / f"publisher-{index}"
        git("clone", "-q", str(origin), str(repo))
        samples = [
            samples_from_result(
                result_at(shas[index % 5], 100.0 + index * 10 + k, run_id=f"r{index}-{k}"),
                trusted_source="test",
            )[0]
            for k in range(3)
        ]
        # Every publisher also carries one sample shared by all: it must land exactly once.
        shared = samples_from_result(result_at(shas[0], 1.0, run_id="shared"), trusted_source="t")[
            0
        ]
        samples.append(shared)
        expected |= {s.sample_id for s in samples}
        lines = "\n".join(s.to_line() for s in samples)
        processes.append(
            subprocess.Popen([sys.executable, str(script), str(repo), str(index), lines])
        )
    assert [p.wait(timeout=120) for p in processes] == [0] * 8
    git("fetch", "-q", "origin", cwd=clone)
    content = git("show", f"origin/perf-baselines:{sample_path('cpu-test', 'cartpole', 'numpy')}",
                  cwd=clone)  # fmt: skip
    ids = [json.loads(line)["sample_id"] for line in content.splitlines()]
    assert len(ids) == len(set(ids)) == len(expected) == 8 * 3 + 1
    assert set(ids) == expected


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
    origin_and_clone, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import perfgate.baselines.store as store_module

    monkeypatch.setattr(store_module, "SEGMENT_LINES", 4)
    monkeypatch.setattr(store_module, "RECENT_HORIZON", 2)
    _, clone, shas = origin_and_clone
    store = store_of(clone)
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
    assert len(archived) == 2
    # Every sample once, whether live or archived; a repeat of an archived sample is skipped.
    again = store.append(samples[:2], "again")
    assert (again.added, again.already_present) == (0, 2)
    read = store.read([sample_path("cpu-test", "cartpole", "numpy")], tip)
    values = [s.value for s in next(iter(read.values()))]
    assert sorted(values) == [100.0 + i for i in range(11)]
    # The window reaches into the archive when the live file cannot fill it.
    found = window(store, shas[4], max_samples=11)
    assert len(found.samples) == 11
    assert found.samples[0].commit == shas[4]


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
    from perfgate.baselines.store import commit_to_branch

    _, clone, shas = origin_and_clone
    good = samples_from_result(result_at(shas[1], 7.0), trusted_source="t")[0]
    path = good.path
    bad_lines = [good.to_line().replace('"value":7.0', value) for value in
                 ('"value":"123"', '"value":null', '"value":true', '"value":-1')]  # fmt: skip

    def plant(tree: Path) -> bool:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text("\n".join([good.to_line(), *bad_lines]) + "\n")
        return True

    commit_to_branch(clone, "perf-baselines", "origin", plant, "plant", 1, paths=[path])
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
    assert {s.commit for s in found.samples} == {shas[3]}
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
