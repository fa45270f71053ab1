"""The whole-bill suite's accounting: what a merged pull request is charged, and when a
coalesced push is measured."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baselines.ledger import summarise
from perfgate.cli.spend import document
from tests.factories import make_spend, make_spend_record
from tests.perf import bill, economics

CONFIG = economics.load_config(economics.EXAMPLE_CONFIG)
OFFSETS = economics.Pool(kind="offsets", cv=0.01)
SETUP = economics.setup_minutes(CONFIG)
LAUNCHES = sum(b.launch_minutes or 10.0 for b in CONFIG.buckets)


def upstream() -> bill.Case:
    return next(c for c in bill.cases(CONFIG) if c.upstream)


def test_upstreams_merged_pr_is_two_runs_of_a_launch_a_bucket_and_a_job_a_bucket() -> None:
    tally = bill.live(CONFIG, upstream(), OFFSETS, 11, 0.0, SETUP)
    assert len(tally.merged) == bill.MERGES
    one_run = 9 * SETUP + LAUNCHES  # the 145 L40S-minutes the upstream gate's reviewers quote
    assert one_run == pytest.approx(economics.UPSTREAM_PR_MINUTES, abs=1.0)
    # Throttled samples admission control measures again add a few per cent, no more.
    for minutes in (tally.pr_minutes / bill.MERGES, tally.push_minutes / bill.MERGES):
        assert one_run <= minutes <= one_run * 1.1
    assert sum(tally.merged) == pytest.approx(tally.pr_minutes + tally.push_minutes)


def test_one_job_pays_its_setup_once_and_a_push_its_samples() -> None:
    case = bill.Case(name="one job, push 2", lanes=1, push_samples=2)
    tally = bill.live(CONFIG, case, OFFSETS, 11, 0.0, SETUP)
    push = tally.push_minutes / bill.MERGES
    assert SETUP + 2 * LAUNCHES <= push <= (SETUP + 2 * LAUNCHES) * 1.1


def test_coalesced_pushes_measure_fewer_pushes_when_runs_outlast_the_gap_between_merges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = bill.Case(name="push 2", lanes=1, push_samples=2)
    every = bill.live(CONFIG, case, OFFSETS, 11, 0.0, SETUP)
    coalesced = bill.live(CONFIG, replace(case, coalesce=True), OFFSETS, 11, 0.0, SETUP)
    # A push run of the nine buckets twice takes about 200 minutes; merges come 100 apart.
    assert coalesced.push_minutes < 0.8 * every.push_minutes
    # Merges far apart (the gaps are random: one in fifty still falls inside a run): about
    # every push is measured, coalesced or not.
    monkeypatch.setattr(bill, "MERGE_GAP", 10_000.0)
    apart = bill.live(CONFIG, replace(case, coalesce=True), OFFSETS, 11, 0.0, SETUP)
    assert apart.push_minutes >= 0.9 * every.push_minutes


def test_every_alert_on_unchanged_code_counts_once_at_the_push_that_raised_it() -> None:
    # A life with no drop: every episode the watchers hold is a false alert, the ones
    # raised in the history included, and every push each bucket took is a bucket-push.
    # The alert lines are loosened so that the life raises several.
    loose = replace(CONFIG.alerts, false_alert_rate=0.02, rank_rate=0.05, leave_one_out_rate=0.05)
    config = replace(CONFIG, alerts=loose)
    states = economics.Pool(kind="states", cv=0.02)
    case = bill._case(config, "as it ships")
    life = bill.Life(config, case, states, 7_700_001, 0.0, SETUP)
    tally = life.run()
    raised = sum(len(watcher.episodes) for watcher in life.watchers)
    assert raised > 1
    assert tally.false_alerts == raised
    assert tally.pushes == sum(len(watcher.runs) for watcher in life.watchers)


def test_the_alert_rule_is_the_one_the_config_sets() -> None:
    config = replace(CONFIG, alerts=replace(CONFIG.alerts, confirm_runs=5))
    life = bill.Life(config, bill._case(config, "as it ships"), OFFSETS, 11, 0.0, SETUP)
    assert {watcher.policy.confirm_runs for watcher in life.watchers} == {5}


def test_the_bill_prices_launches_and_setup_as_a_ledger_measured_them(tmp_path: Path) -> None:
    first = CONFIG.buckets[0].id
    measured = summarise(
        [make_spend_record("1.1", first, "2026-12-01", make_spend(setup_s=480.0, launch_s=900.0))]
    )
    path = tmp_path / "spend.json"
    path.write_text(json.dumps(document(measured, branch="perf-baselines", tip=None)))
    recorded = bill.Recorded.read(str(path))
    config = recorded.example()
    assert config.buckets[0].launch_minutes == pytest.approx(15.0)
    assert config.buckets[1:] == CONFIG.buckets[1:], "a bucket not measured keeps its own"
    assert recorded.setup(config) == pytest.approx(8.0)
    said = recorded.said(config, recorded.setup(config))
    assert "S = 8.00 min a job, measured" in said and "launches measured for 1 of 9" in said
    # Without a ledger, both are what the example declares, and the header says so.
    assumed = bill.Recorded.read(None)
    assert assumed.example().buckets == CONFIG.buckets
    assert "assumed" in assumed.said(CONFIG, assumed.setup(CONFIG))


def test_a_spend_file_that_is_not_a_spend_document_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "spend.json"
    path.write_text('{"launch_minutes": ["a"]}')
    with pytest.raises(SystemExit, match="not a `perfgate spend --json` document"):
        bill.Recorded.read(str(path))
    with pytest.raises(SystemExit, match=r"missing\.json"):
        bill.Recorded.read(str(tmp_path / "missing.json"))


def test_what_a_pull_request_takes_never_moves_a_push_runs_draws() -> None:
    """Each bucket's run draws its noise from a stream of its own, so two rules compare
    life by life: confirming or not at PR time leaves every push's samples as they were."""
    shipped = next(c for c in bill.cases(CONFIG) if c.name == "as it ships")
    lives = [
        bill.Life(CONFIG, case, economics.Pool(kind="states", cv=0.02), 11, 0.0, SETUP)
        for case in (shipped, replace(shipped, confirm=False))
    ]
    tallies = [life.run() for life in lives]
    assert tallies[0].pr_minutes > tallies[1].pr_minutes  # the PR runs did differ
    confirming, not_confirming = ([run.values for run in life.history[0]] for life in lives)
    assert confirming == not_confirming and len(confirming) >= 20


def test_a_jobs_buckets_are_measured_on_one_machine_and_a_job_a_bucket_on_its_own() -> None:
    as_it_ships = next(c for c in bill.cases(CONFIG) if c.name == "as it ships")
    one_job = bill.Life(CONFIG, as_it_ships, OFFSETS, 11, 0.0, SETUP)
    a_job_a_bucket = bill.Life(CONFIG, upstream(), OFFSETS, 11, 0.0, SETUP)
    nine = range(len(CONFIG.buckets))
    for index in range(bill.BURN_IN, bill.BURN_IN + 20):
        shared = {one_job.machine(b, index, "pr")[0] for b in nine}
        assert len(shared) == 1
        # Each bucket's offset on the job's machine is its own: one machine, nine factors.
        assert len({one_job.machine(b, index, "pr")[1] for b in nine}) == 9
    runners = {a_job_a_bucket.machine(b, index, "pr")[0] for b in nine for index in range(20)}
    assert len(runners) > 1


def _lives(levels: list[float]) -> bill.Tally:
    """A tally of one life a level, each of its merges costing that level and a tenth more
    every fifth merge (a push run charged to it)."""
    merged = [level * (1.1 if m % 5 == 0 else 1.0) for level in levels for m in range(bill.MERGES)]
    return bill.Tally(merged=merged)


def test_the_95th_percentiles_interval_resamples_whole_lives() -> None:
    same = _lives([300.0] * 20)
    assert same.p95_interval() == pytest.approx((same.p95(), same.p95()))
    assert _lives([300.0]).p95_interval() is None  # one life cannot tell how lives vary
    spread = _lives([250.0 + 10.0 * k for k in range(20)])
    interval = spread.p95_interval()
    assert interval is not None
    low, high = interval
    assert low < spread.p95() < high
    assert high - low > 10.0
    # Fewer lives pin the percentile down less.
    few = _lives([250.0 + 40.0 * k for k in range(5)]).p95_interval()
    assert few is not None and few[1] - few[0] > high - low


def test_a_95th_percentile_whose_interval_holds_the_bound_is_not_decided() -> None:
    at_bound = _lives([340.0 + 4.0 * k for k in range(20)])  # p95 about 1.5 x 290
    target = bill._p95_target("states 2%", at_bound, at_bound.p95())
    interval = at_bound.p95_interval()
    assert interval is not None
    assert interval[0] / bill.UPSTREAM_MERGED <= 1.5 <= interval[1] / bill.UPSTREAM_MERGED
    assert not target.decided and "95 % interval over lives" in target.detail
    under = _lives([250.0] * 20)
    target = bill._p95_target("states 2%", under, under.p95() + 10.0)  # add-ons carried
    assert target.met and target.decided
    assert f"x{(under.p95() + 10.0) / bill.UPSTREAM_MERGED:.2f}" in target.detail
    one = _lives([250.0])
    assert not bill._p95_target("states 2%", one, one.p95()).decided


def test_the_alert_target_names_each_late_bucket_and_how_little_every_one_rests_on() -> None:
    tally = bill.Tally(delays={0.05: [3, 8, bill.NEVER, 2]})
    assert bill._every(tally, 6).startswith("2 of 4 (at push 8, never); share alerted >= ")
    all_in = bill.Tally(delays={0.05: [3] * 17})
    # 17 of 17 cannot rule out that one bucket in seven is late.
    assert bill._every(all_in, 6) == "17 of 17; share alerted >= 86 % at 95 %"


def test_each_alert_is_timed_from_its_regressions_merge_to_the_end_of_the_run_naming_it() -> None:
    life = bill.Life(CONFIG, bill._case(CONFIG, "as it ships"), OFFSETS, 12, 0.10, SETUP)
    tally = life.run()
    delays = [d for d in tally.delays[0.10] if d != bill.NEVER]
    hours = tally.hours[0.10]
    assert delays and len(hours) == len(delays)
    # At the earliest, the end of the regression's own push run, which starts at its merge.
    assert min(hours) >= (SETUP + 2 * LAUNCHES) / 60
    # A bucket alerted at a later measured push is alerted later on the clock.
    assert [h for _, h in sorted(zip(delays, hours, strict=True))] == sorted(hours)


def test_the_alert_target_says_what_its_bound_in_pushes_means_on_the_clock() -> None:
    tally = bill.Tally(delays={0.05: [1, 2, 4]}, hours={0.05: [3.2, 6.6, 14.0]})
    assert bill._every(tally, 6).endswith("; alerted 7 h after the merge (median), at most 14 h")
    assert bill._hours(tally) == {"median": 6.6, "longest": 14.0}


def test_merges_in_working_hours_find_the_push_slot_idle_each_morning() -> None:
    # The same lives with the nights between working days: the first merge of each day
    # starts a push run of its own, so more push runs are paid than back to back.
    case = bill._case(CONFIG, "as it ships")
    assert replace(case, name="as it ships, working days", working_days=True) in bill.cases(CONFIG)
    for seed in (11, 12):
        back_to_back = bill.live(CONFIG, case, OFFSETS, seed, 0.0, SETUP)
        days = bill.live(CONFIG, replace(case, working_days=True), OFFSETS, seed, 0.0, SETUP)
        assert days.push_minutes > 1.05 * back_to_back.push_minutes


def test_held_out_pools_run_the_shipped_case_beside_upstream_and_before_and_are_judged() -> None:
    # The pools no choice of this suite was made on: what the shipped example gives up
    # there is judged by the same targets, not left to the closing note.
    assert {kind for kind, _ in bill.HELD_OUT} == {"throttled", "runstates"}
    assert not set(bill.HELD_OUT) & set(bill.POOLS)
    run = {(kind, cv) for kind, cv, *_ in bill._tasks(2, 0, bill.Recorded())}
    assert run == set(bill.POOLS) | set(bill.HELD_OUT)
    assert {upstream().name, "before: a job a bucket, push 6", "as it ships"} == set(
        bill.HELD_OUT_CASES
    )
    assert set(bill.HELD_OUT_CASES) <= {c.name for c in bill.cases(CONFIG)}
    kind, cv = bill.HELD_OUT[0]
    lives = bill._work((kind, cv, 1, 0, bill.Recorded()))
    assert set(lives) == set(bill.HELD_OUT_CASES)
    pool = economics.Pool(kind=kind, cv=cv).name
    targets = bill._targets(CONFIG, {pool: lives}, SETUP, None)  # type: ignore[arg-type]
    names = [t.name for t in targets]
    assert f"bill {pool}: 10 % drops BLOCKed at PR time >= 99 %" in names
    assert f"bill {pool}: a merged relevant PR, mean <= 1.0 x upstream's 290" in names
    assert not any("working days" in name for name in names)
