"""Store hygiene (R3, R14): no silent damage, nothing non-finite, no path outside the tree."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.evaluate import evaluate
from perfgate.baselines.pushing import PushRetryPolicy, commit_to_branch
from perfgate.baselines.reading import stream_blobs
from perfgate.baselines.samples import sample_path, samples_from_result
from perfgate.config import Config, load_config
from perfgate.errors import GateMalfunction
from perfgate.util.git import git
from tests.git_support import commit_all
from tests.integration.baselines import test_store
from tests.integration.baselines.test_store import result_at, store_of, window

# The same bare origin and a clone whose main has five commits.
origin_and_clone = test_store.origin_and_clone


def plant(clone: Path, path: str, text: str) -> None:
    """Write ``text`` as the whole file ``path`` on the baseline branch, pushed to origin."""

    def write(tree: Path) -> bool:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text, encoding="utf-8")
        return True

    commit_to_branch(clone, "perf-baselines", "origin", write, "plant", PushRetryPolicy(), [path])


def test_garbage_and_a_truncated_last_line_each_warn_with_file_and_line(
    origin_and_clone,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    _, clone, shas = origin_and_clone
    good = [
        samples_from_result(result_at(shas[i], 100.0 + i), trusted_source="t")[0] for i in range(3)
    ]
    path = good[0].path
    truncated = good[2].to_line()[:40]  # a writer killed mid-line; no launch hash in what is left
    lines = [good[0].to_line(), "this is not json at all", good[1].to_line(), truncated]
    plant(clone, path, "\n".join(lines))  # and no final newline
    reader = store_of(clone)
    assert window(reader, shas[4]).values == (101.0, 100.0)
    assert reader.skipped_lines == 2
    assert [w.split(": ", 1)[0] for w in reader.warnings] == [
        f"perf-baselines:{path}:2",
        f"perf-baselines:{path}:4",
    ]


def one_bucket_config(directory: Path) -> Config:
    """A perfgate.yaml of the one bucket the planted store holds, loaded."""
    path = directory / "perfgate.yaml"
    path.write_text(
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n",
        encoding="utf-8",
    )
    return load_config(path)


def test_the_report_shows_how_many_lines_were_skipped(
    origin_and_clone,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    _, clone, shas = origin_and_clone
    good = samples_from_result(result_at(shas[1], 100.0), trusted_source="t")[0]
    plant(clone, good.path, "\n".join([good.to_line(), "garbage", "{}", "more garbage"]) + "\n")
    config = one_bucket_config(tmp_path)
    monkeypatch.chdir(clone)
    report = evaluate(config, config.buckets, [result_at(shas[4], 100.0)], store_of(clone))
    assert report.notes[0].startswith("3 corrupt baseline line(s) skipped on perf-baselines")
    assert sum(f"{good.path}:" in note for note in report.notes) == 3


def test_a_directory_where_a_segment_was_expected_reads_as_absent_and_the_rest_read_on(
    origin_and_clone,  # type: ignore[no-untyped-def]
) -> None:
    _, clone, shas = origin_and_clone
    good = [samples_from_result(result_at(shas[i], 10.0 + i), trusted_source="t")[0]
            for i in range(2)]  # fmt: skip
    # Sorted before the good segment, so its answer comes first in git's stream.
    directory = good[0].path.replace("/cartpole/", "/acrobot/")
    plant(clone, f"{directory}/stray.ndjson", good[1].to_line() + "\n")
    plant(clone, good[0].path, "\n".join(s.to_line() for s in good) + "\n")
    reader = store_of(clone)
    tip = reader.refresh()
    assert tip is not None
    read = reader.read([directory, good[0].path], tip)
    assert read[directory] == []
    assert [s.value for s in read[good[0].path]] == [10.0, 11.0]
    assert reader.warnings == []


def test_blobs_after_a_tree_in_the_stream_read_as_stored(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo))
    texts = {"a.ndjson": "first\n", "b.ndjson": "", "c.ndjson": "third\nline\n"}
    for name, text in {**texts, "dir/inner.ndjson": "inside\n"}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    tip = commit_all(repo, "files")
    specs = [f"{tip}:dir", f"{tip}:a.ndjson", f"{tip}:none", f"{tip}:b.ndjson", f"{tip}:dir",
             f"{tip}:c.ndjson"]  # fmt: skip
    data = [blob.data for blob in stream_blobs(repo, specs)]
    assert data == [None, b"first\n", None, b"", None, b"third\nline\n"]


def test_reading_a_store_again_reports_each_corrupt_line_once(
    origin_and_clone,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """A local judged bench reads windows to confirm, then the gate reads them again from
    the same store: each corrupt line is counted and listed once."""
    _, clone, shas = origin_and_clone
    good = samples_from_result(result_at(shas[1], 100.0), trusted_source="t")[0]
    plant(clone, good.path, "\n".join([good.to_line(), "garbage", "more garbage"]) + "\n")
    store = store_of(clone)
    tip = store.refresh()
    assert tip is not None
    for _ in range(2):
        assert window(store, shas[4]).values == (100.0,)
        assert [s.value for s in store.read([good.path], tip)[good.path]] == [100.0]
    assert store.skipped_lines == 2
    assert [w.split(": ", 1)[0] for w in store.warnings] == [
        f"perf-baselines:{good.path}:2",
        f"perf-baselines:{good.path}:3",
    ]
    config = one_bucket_config(tmp_path)
    monkeypatch.chdir(clone)
    report = evaluate(config, config.buckets, [result_at(shas[4], 100.0)], store)
    assert report.notes[0].startswith("2 corrupt baseline line(s) skipped on perf-baselines")
    assert sum(f"{good.path}:" in note for note in report.notes) == 2


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 0.0])
def test_the_store_refuses_to_write_a_figure_that_is_not_positive_and_finite(
    origin_and_clone,
    value: float,  # type: ignore[no-untyped-def]
) -> None:
    _, clone, shas = origin_and_clone
    sample = samples_from_result(result_at(shas[1], 100.0), trusted_source="t")[0]
    with pytest.raises(GateMalfunction, match="refusing to store the figure"):
        store_of(clone).append([replace(sample, value=value)], "bad")
    assert git("ls-remote", "origin", "perf-baselines", cwd=clone) == ""


@pytest.mark.parametrize(
    ("hardware", "task", "backend"),
    [("cpu", "../../../x", "numpy"), ("..", "t", "b"), ("cpu\n", "t", "b"), ("/abs", "t", "b")],
)
def test_a_store_path_never_leaves_the_store_tree(hardware: str, task: str, backend: str) -> None:
    with pytest.raises(GateMalfunction, match="refusing a baseline path"):
        sample_path(hardware, task, backend)
