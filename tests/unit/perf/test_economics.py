"""The runner economics suite's stored history: as taken by default, N samples on request."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from perfgate.judge.runner_offsets import StoredRun
from tests.perf import economics
from tests.perf.economics import NEW, Machine, Pool, run_example, run_series, stored_run

STATES = Pool(kind="states", cv=0.02)


def test_a_stored_run_is_the_run_as_taken_unless_more_samples_are_asked_for() -> None:
    kept = [100.0, 101.0]
    machine = Machine(np.random.default_rng(1), 1.0, Pool(kind="offsets", cv=0.01))
    for stored in (None, NEW.repeats, 1):
        run = stored_run(NEW, kept, runner="r", machine=machine, head=100.0, stored_samples=stored)
        assert run == StoredRun(runner="r", values=(100.0, 101.0))
    assert machine.taken == 0  # no launch drawn: the series' noise is untouched
    run = stored_run(NEW, kept, runner="r", machine=machine, head=100.0, stored_samples=6)
    assert run.values[:2] == (100.0, 101.0)
    assert machine.taken >= 4 and len(run.values) == 6  # this seed admits all four
    # A run confirmation already took further is kept whole, never topped up past it.
    confirmed = [100.0] * 8
    run = stored_run(NEW, confirmed, runner="r", machine=machine, head=100.0, stored_samples=6)
    assert run.values == tuple(confirmed)


def test_the_default_history_is_unchanged_digit_for_digit() -> None:
    default = run_series(STATES, 7, 0.05, 10.0)
    assert run_series(STATES, 7, 0.05, 10.0, stored_samples=NEW.repeats) == default
    # The example ships with repeats: 1 (its "as it was" took 2): a 1 asks for no more.
    cases = economics.examples(economics.load_config(economics.EXAMPLE_CONFIG))
    assert run_example(STATES, 7, cases, 5.7, 1) == run_example(STATES, 7, cases, 5.7)


def test_stored_samples_sets_the_size_of_every_run_the_window_is_built_of(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: dict[int | None, list[int]] = {}
    real_look = economics.look

    def spy(
        strategy: economics.Strategy, history: Sequence[StoredRun], runner: str
    ) -> economics.WindowView:
        # A spy, not a double: it records the window's run sizes and returns the real look.
        sizes.setdefault(stored, []).extend(len(r.values) for r in history)
        return real_look(strategy, history, runner)

    monkeypatch.setattr(economics, "look", spy)
    for stored in (None, 6):
        run_series(STATES, 7, 0.05, 10.0, strategies=(NEW,), stored_samples=stored)
    assert max(sizes[None]) <= NEW.max_repeats and min(sizes[None]) <= NEW.repeats
    # Runs admission control could not fill may hold fewer; none is left at the repeats.
    assert min(sizes[6]) >= 4 and sum(s >= 6 for s in sizes[6]) / len(sizes[6]) > 0.9
    assert sum(sizes[6]) > 2.5 * sum(sizes[None])


def test_a_seed_offset_draws_other_series_and_none_leaves_the_default_set() -> None:
    # A held-out check (--seed-offset) must see other pools' draws, the same mix of drops.
    drop = economics.DROPS[7 % len(economics.DROPS)]
    task = ("states", 0.02, 7, 0, 10.0, None)
    default = run_series(STATES, 9_100_003 + 7, drop, 10.0, strategies=economics.STRATEGIES)
    assert economics._series_work(task) == default
    assert economics._series_work(("states", 0.02, 7, 7919, 10.0, None)) != default
