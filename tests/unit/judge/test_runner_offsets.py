"""Runner-aware windows: offsets learned from a bucket's history, and whole-run falls."""

from __future__ import annotations

import math
import random

from perfgate.judge.budget import uncleared
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.runner_offsets import StoredRun, WindowRunners, fit_runners, window_view
from perfgate.judge.verdicts import Reason, Verdict

# Eight runners whose offsets stay put, as qualification measures them on a real pool.
OFFSETS = {f"runner-{k}": off for k, off in enumerate((-4.5, -3.0, -1.5, -0.5, 0.5, 1.5, 3.0,
                                                       4.5))}  # fmt: skip
POLICY = CalibratedPolicy(initial_repeats=2, max_repeats=10)


def history(runs: int, *, seed: int = 7, cv: float = 0.01, falls: dict[int, float] | None = None,
            rare: str | None = None) -> list[StoredRun]:  # fmt: skip
    """Nearest-first runs of unchanged code at level 100, two samples each, on a random
    runner of the pool; ``falls`` (run index -> %) sit that much lower with every sample;
    ``rare`` ran only the two nearest runs."""
    rng = random.Random(seed)
    names = [n for n in OFFSETS if n != rare]
    out = []
    for index in range(runs):
        runner = rare if rare is not None and index < 2 else rng.choice(names)
        level = 100.0 * (1 + OFFSETS[runner] / 100) * (1 - (falls or {}).get(index, 0.0) / 100)
        values = tuple(level * math.exp(cv * rng.gauss(0, 1)) for _ in range(2))
        out.append(StoredRun(runner=runner, values=values))
    return out


def test_each_runners_offset_is_learned_from_its_history() -> None:
    fitted = fit_runners(history(200))
    assert fitted.corrects
    for name, true in OFFSETS.items():
        assert abs(fitted.offset_pct(name) - true) < 0.7, name
    assert 2.0 < fitted.tau * 100 < 4.5  # the offsets' spread: about 3 %


def test_a_runner_seen_twice_moves_little_and_one_never_seen_not_at_all() -> None:
    fitted = fit_runners(history(200, rare="runner-0"))
    rare, known = fitted.offset("runner-0"), fitted.offset("runner-7")
    assert rare.runs == 2 and abs(fitted.offset_pct("runner-0")) < abs(OFFSETS["runner-0"])
    assert rare.var > known.var
    new = fitted.offset("a-runner-that-just-joined")
    assert (new.g, new.var) == (0.0, fitted.tau**2)  # judged as the pool's typical runner


def test_a_slow_runners_unchanged_run_is_cleared_once_its_offset_is_taken_out() -> None:
    past = history(200)
    runs = [list(r.values) for r in past]
    runners = WindowRunners(names=tuple(r.runner for r in past))
    slow = [95.6, 95.4]  # runner-0 (-4.5 %) on unchanged code
    plain = window_view(runs, None, "runner-0", policy=POLICY)
    aware = window_view(runs, runners, "runner-0", policy=POLICY)
    assert plain.fitted is None and aware.fitted is not None
    before = plain.decide(slow, POLICY, final=True)
    after = aware.decide(slow, POLICY, final=True)
    assert uncleared(before, 5.0)  # the pool's spread leaves a 5 % drop possible
    assert not uncleared(after, 5.0) and after.verdict is Verdict.PASS
    assert after.drop_bound_pct is not None and before.drop_bound_pct is not None
    assert after.drop_bound_pct < before.drop_bound_pct - 2.0


def test_a_run_no_deeper_than_a_whole_run_fall_of_unchanged_code_is_not_blocked() -> None:
    # Five runs of unchanged code fell 8 % as a whole (a slower machine state).
    falls = {index: 8.0 for index in (25, 60, 95, 130, 170)}
    past = history(200, falls=falls)
    runs, runners = (
        [list(r.values) for r in past],
        WindowRunners(names=tuple(r.runner for r in past)),
    )
    fallen = [100.0 * (1 + OFFSETS["runner-4"] / 100) * 0.92 * f for f in (1.0, 0.999, 1.001)]
    view = window_view(runs, runners, "runner-4", policy=POLICY)
    assert view.model.history.excursions >= 3
    decision = view.decide(fallen, POLICY, final=True)
    assert (decision.verdict, decision.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.RUN_STATE)
    assert "fell as a whole" in decision.detail
    # Where no run ever fell so far, the same run is a regression.
    clean = history(200)
    view = window_view([list(r.values) for r in clean],
                       WindowRunners(names=tuple(r.runner for r in clean)), "runner-4",
                       policy=POLICY)  # fmt: skip
    assert view.decide(fallen, POLICY, final=True).verdict is Verdict.BLOCK


def test_runs_without_runner_names_are_judged_as_measured() -> None:
    past = history(60)
    runs = [list(r.values) for r in past]
    fitted = fit_runners([StoredRun(runner=None, values=r.values) for r in past])
    assert not fitted.corrects and fitted.offset(None).g == 0.0
    view = window_view(runs, WindowRunners(names=(None,) * len(runs)), None, policy=POLICY)
    assert view.fitted is not None and not view.fitted.corrects
    assert view.decide([100.0, 100.2], POLICY, final=True).verdict is Verdict.PASS


def test_a_model_fitted_when_the_runs_were_stored_judges_the_window_alone_as_the_history_does() -> (
    None
):
    past = history(200, falls={40: 8.0, 120: 8.0})
    runs, names = [list(r.values) for r in past], tuple(r.runner for r in past)
    learned = window_view(runs, WindowRunners(names=names), "runner-0", policy=POLICY)
    fitted = fit_runners(past)
    stored = window_view(runs[: POLICY.max_runs],
                         WindowRunners(names=names[: POLICY.max_runs], fitted=fitted),
                         "runner-0", policy=POLICY)  # fmt: skip
    assert stored.fitted is fitted and learned.fitted == fitted
    assert stored.model == learned.model
    for values in ([95.6, 95.4], [90.0, 90.3], [100.0, 100.1]):
        assert stored.decide(values, POLICY, final=True) == learned.decide(
            values, POLICY, final=True
        )


def test_frequent_run_states_are_not_taken_for_runner_offsets() -> None:
    """Eight runners with no offset at all; 30 % of runs sit 7 % lower as a whole.

    A runner that happened to land in the slow state more often looks slower, by about
    what the states' spread explains: the noise figure the offsets are shrunk against
    must include the states, or they become corrections that are not there (up to 3.1 %
    on these seeds before). What remains is what 25 runs a runner can tell: a runner's
    mean moves by about 0.6 % with how many of its runs sat in the slower state.
    """
    worst = 0.0
    for seed in range(12):
        rng = random.Random(seed)
        history = []
        for _ in range(200):
            state = 0.93 if rng.random() < 0.3 else 1.0
            values = tuple(100.0 * state * math.exp(rng.gauss(0, 0.01)) for _ in range(6))
            history.append(StoredRun(runner=f"r{rng.randrange(8)}", values=values))
        model = fit_runners(history)
        worst = max([worst, *(abs(model.offset_pct(f"r{k}")) for k in range(8))])
    assert worst < 1.0
