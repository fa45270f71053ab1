"""Runner models fitted as samples land (``<backend>.runners``), read back by the gate in
place of the history: real git, a bare origin, the store's own write path."""

from __future__ import annotations

import math
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfgate.baselines.pushing import PushRetryPolicy, commit_to_branch
from perfgate.baselines.runner_file import parse_runner_file, runners_path
from perfgate.baselines.samples import WindowKey, samples_from_result
from perfgate.baselines.store import BaselineStore
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.runner_offsets import StoredRun, fit_runners, window_view
from perfgate.result import CiInfo
from perfgate.util.git import git
from tests.factories import make_result
from tests.publishers import origin_with_history

OFFSETS = (0.96, 0.99, 1.01, 1.04)  # four runners, 8 % apart
HISTORY = 30  # runs the models are fitted over: more than the live segment holds
WINDOW = (10, 5)  # (samples, runs) of a window read with its model
POLICY = CalibratedPolicy(max_runs=WINDOW[1], history_runs=HISTORY)


def pushes(shas: list[str], seed: int = 3):  # type: ignore[no-untyped-def]
    """One run of two samples per pushed commit, in push order, on rotating runners."""
    rng = random.Random(seed)
    began = datetime(2026, 1, 1, tzinfo=UTC)
    for index, sha in enumerate(shas):
        runner = index % len(OFFSETS)
        values = [100.0 * OFFSETS[runner] * math.exp(0.005 * rng.gauss(0, 1)) for _ in range(2)]
        result = make_result("cartpole/numpy", commit=sha, samples=values, run_id=f"run-{index}",
                             ci=CiInfo(run_id=f"run-{index}", run_attempt="1",
                                       runner_name=f"gpu runner {runner}"))  # fmt: skip
        yield samples_from_result(
            result, trusted_source="t", timestamp=began + timedelta(hours=index)
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """48 pushes that each published a run, in segments of 16 lines (so archived)."""
    root = tmp_path_factory.mktemp("pushes")
    _, shas = origin_with_history(root, commits=48)
    store = writer(root / "seed")
    for samples in pushes(shas):
        store.append(samples, "publish")
    return root, shas


@pytest.fixture
def published(built: tuple[Path, list[str]], tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the built origin and clone of its own, for a test that writes to it."""
    root, shas = built
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    git("remote", "set-url", "origin", str(tmp_path / "origin.git"), cwd=tmp_path / "seed")
    return tmp_path / "seed", shas


def writer(clone: Path) -> BaselineStore:
    return BaselineStore(clone, branch="perf-baselines", remote="origin", segment_lines=16,
                         history_runs=HISTORY)  # fmt: skip


KEY = WindowKey.for_result(make_result("cartpole/numpy", 1.0))


def read(clone: Path, base: str, *, fitted: bool):  # type: ignore[no-untyped-def]
    store = writer(clone)
    depth = {"fitted": WINDOW} if fitted else {}
    found = store.windows({"b": KEY}, tip=store.refresh(), base=base, max_samples=2 * HISTORY,
                          max_runs=HISTORY, **depth)  # fmt: skip
    return found["b"]


def test_each_publish_fits_the_model_the_history_would_give(published) -> None:  # type: ignore[no-untyped-def]
    clone, shas = published
    tip = git("rev-parse", "origin/perf-baselines", cwd=clone).strip()
    archives = git("ls-tree", "--name-only", tip, "samples/cpu-test/cartpole/numpy/", cwd=clone)
    assert len(archives.split()) >= 8  # the history reaches far into the archives
    history = read(clone, shas[-1], fitted=False)
    assert history.fitted is None and len(history.runs()) == HISTORY
    window = read(clone, shas[-1], fitted=True)
    # Only the window is read, and its model is the one the history gives.
    assert len(window.runs()) == WINDOW[1] and window.entries == history.entries[: 2 * WINDOW[1]]
    runs = zip(history.runners().names, history.runs(), strict=True)
    assert window.fitted == fit_runners([StoredRun(runner=r, values=v) for r, v in runs])
    assert window.fitted is not None and window.fitted.corrects
    learned = window_view(history.runs(), history.runners(), "gpu runner 0", policy=POLICY)
    stored = window_view(window.runs(), window.runners(), "gpu runner 0", policy=POLICY)
    assert stored.model == learned.model
    slow = [95.9, 96.1]  # the slowest runner, unchanged code
    assert stored.decide(slow, POLICY, final=True) == learned.decide(slow, POLICY, final=True)


def test_samples_an_older_writer_appended_send_the_gate_back_to_the_history(published) -> None:  # type: ignore[no-untyped-def]
    clone, shas = published
    late = next(iter(pushes([shas[-1]], seed=9)))[0]

    def older_writer(tree: Path) -> bool:
        live = tree / late.path
        live.write_text(live.read_text() + late.to_line() + "\n")
        return True

    commit_to_branch(clone, "perf-baselines", "origin", older_writer, "old", PushRetryPolicy(),
                     [late.path])  # fmt: skip
    window = read(clone, shas[-1], fitted=True)
    assert window.fitted is None and len(window.runs()) == HISTORY
    # The next publish fits it again, with the older writer's run in it.
    writer(clone).append(next(iter(pushes([shas[-2]], seed=11))), "publish")
    again = read(clone, shas[-1], fitted=True)
    assert again.fitted is not None and len(again.runs()) == WINDOW[1]


def test_a_model_edited_by_hand_is_not_trusted(published) -> None:  # type: ignore[no-untyped-def]
    clone, shas = published
    path = runners_path(KEY.path)

    def edit(tree: Path) -> bool:
        text = (tree / path).read_text()
        (tree / path).write_text(text.replace('"tau":', '"tau":7.5e3,"was":'))
        return True

    commit_to_branch(clone, "perf-baselines", "origin", edit, "edit", PushRetryPolicy(), [path])
    tip = git("rev-parse", "origin/perf-baselines", cwd=clone).strip()
    live = git("rev-parse", f"{tip}:{KEY.path}", cwd=clone).strip()
    text = git("show", f"{tip}:{path}", cwd=clone)
    assert parse_runner_file(text, live, HISTORY) == {}
    window = read(clone, shas[-1], fitted=True)
    assert window.fitted is None and len(window.runs()) == HISTORY


def test_a_reader_of_another_depth_learns_from_the_history(published) -> None:  # type: ignore[no-untyped-def]
    clone, shas = published
    store = BaselineStore(clone, branch="perf-baselines", remote="origin", history_runs=HISTORY + 1)
    found = store.windows({"b": KEY}, tip=store.refresh(), base=shas[-1], max_samples=100,
                          max_runs=HISTORY + 1, fitted=WINDOW)  # fmt: skip
    assert found["b"].fitted is None and len(found["b"].runs()) == HISTORY + 1
