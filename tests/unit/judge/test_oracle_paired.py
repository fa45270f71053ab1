"""How a verdict is reached under admission control and paired confirmation (pure oracle)."""

from __future__ import annotations

import random
from dataclasses import replace

from perfgate.config import ConfirmMode
from perfgate.judge.judgement import Judgement, Method
from perfgate.judge.oracle import judge
from perfgate.judge.paired import PairedPolicy
from perfgate.judge.policies import CalibratedPolicy
from perfgate.judge.runner_offsets import WindowRunners
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.result import (
    AdmissionStatus,
    CiInfo,
    FailurePhase,
    PairedRecord,
    PairedSample,
    PairedSide,
    PairedStatus,
    PairedStop,
    Result,
    SampleAdmission,
    Sampling,
    SamplingStop,
)
from tests.factories import make_result, primary_check

# Twenty runs of two samples, 1 % apart around 1000.
WINDOW = [[1000.0 + (i % 5 - 2) * 4, 1000.0 - (i % 3 - 1) * 5] for i in range(20)]
POLICY = CalibratedPolicy(initial_repeats=2, max_repeats=10)
THROTTLED = "GPU throttled: HW slowdown"


def record(base: list[float], head: list[float], **changes: object) -> PairedRecord:
    """A measured comparison: base and head pairs in the A B, B A order."""
    samples = []
    for pair, (b, h) in enumerate(zip(base, head, strict=True)):
        for side, value in ((PairedSide.BASE, b), (PairedSide.HEAD, h)):
            samples.append(
                PairedSample(sample_index=len(samples), pair=pair, side=side, value=value)
            )
    fields: dict[str, object] = {
        "status": PairedStatus.MEASURED, "base_commit": "e" * 40, "max_pairs": 16,
        "samples": tuple(samples), "stopped": PairedStop.SETTLED, "wall_s": 90.0,
        **changes,
    }  # fmt: skip
    return PairedRecord(**fields)  # type: ignore[arg-type]


def verdict_of(result: Result, confirm: ConfirmMode = ConfirmMode.PAIRED) -> Judgement:
    check = primary_check(WINDOW, policy=POLICY, paired_policy=PairedPolicy())
    return judge(result, [check], confirm=confirm)


def admission(*statuses: AdmissionStatus) -> tuple[SampleAdmission, ...]:
    return tuple(
        SampleAdmission(
            sample_index=index,
            status=status,
            reasons=(THROTTLED,) if status is AdmissionStatus.CONTAMINATED else (),
        )
        for index, status in enumerate(statuses)
    )


SLOW = (900.0, 901.0, 899.0)  # 10 % under the window: a BLOCK against it
SAME = (1000.0, 1001.0, 999.0)
RUNNER = [100.0, 101.0, 99.0, 100.5, 99.5]  # one runner's base figures


def test_paired_evidence_decides_in_the_windows_place() -> None:
    # The window says BLOCK; on the same runner base and head are the same: PASS.
    cleared = make_result(samples=SLOW, paired=record(RUNNER, RUNNER))
    judgement = verdict_of(cleared)
    assert judgement.verdict is Verdict.PASS
    assert judgement.reasons[0] is Reason.WINDOW_SUSPECT
    assert Reason.NOT_CONFIRMED in judgement.reasons
    assert judgement.confirmation is not None
    assert (judgement.confirmation.method, judgement.confirmation.minutes) == (Method.PAIRED, 0.0)
    # The window would pass; on the same runner the head is 10 % slower: BLOCK.
    slower = [v * 0.9 for v in RUNNER]
    caught = verdict_of(make_result(samples=SAME, paired=record(RUNNER, slower)))
    assert caught.verdict is Verdict.BLOCK and Reason.PAIRED_REGRESSION in caught.reasons
    assert caught.paired is not None and caught.paired.effect_text().startswith("\u221210.0 %")


def test_a_window_block_without_pairs_is_not_confirmed_under_paired() -> None:
    slow = make_result(samples=SLOW)
    assert verdict_of(slow, ConfirmMode.REPEAT).verdict is Verdict.BLOCK
    judgement = verdict_of(slow)
    assert (judgement.verdict, judgement.reasons[0]) == (Verdict.INCONCLUSIVE, Reason.UNPAIRED)


def test_no_merge_base_to_measure_falls_back_to_repeats() -> None:
    unavailable = PairedRecord(
        status=PairedStatus.UNAVAILABLE, reason="not a git checkout, so there is no merge base"
    )
    sampling = Sampling(
        confirm="paired", repeats=2, max_repeats=10, stopped=SamplingStop.SETTLED,
        confirming_samples=1, confirmation_s=30.0,
    )  # fmt: skip
    judgement = verdict_of(make_result(samples=SLOW, paired=unavailable, sampling=sampling))
    assert judgement.verdict is Verdict.BLOCK
    assert Reason.PAIRED_UNAVAILABLE in judgement.reasons
    assert judgement.confirmation is not None
    assert judgement.confirmation.method is Method.REPEATS
    assert judgement.confirmation.note.startswith("not a git checkout")
    assert judgement.confirmation.minutes == 0.5


def test_set_aside_samples_never_support_a_block() -> None:
    # Three slow samples, two of them on a throttled GPU: one cannot block alone.
    mixed = make_result(
        samples=SLOW,
        admission=admission(AdmissionStatus.CONTAMINATED, AdmissionStatus.ADMITTED,
                            AdmissionStatus.CONTAMINATED),
    )  # fmt: skip
    judgement = verdict_of(mixed, ConfirmMode.REPEAT)
    assert judgement.verdict is Verdict.INCONCLUSIVE
    assert Reason.CONTAMINATED in judgement.reasons
    assert any(THROTTLED in detail for detail in judgement.details())
    assert judgement.value == 901.0  # the figure is the kept sample's
    # Every sample set aside: nothing to judge, never a block.
    aside = make_result(samples=SLOW, admission=admission(*[AdmissionStatus.CONTAMINATED] * 3))
    assert verdict_of(aside, ConfirmMode.REPEAT).verdict is Verdict.INCONCLUSIVE
    # Set aside but the clean samples are fine and the rest would not have blocked: a note.
    calm = make_result(
        samples=SAME,
        admission=admission(AdmissionStatus.ADMITTED, AdmissionStatus.CONTAMINATED,
                            AdmissionStatus.ADMITTED),
    )  # fmt: skip
    judgement = verdict_of(calm, ConfirmMode.REPEAT)
    assert judgement.verdict is Verdict.PASS and Reason.CONTAMINATED in judgement.reasons


def test_flagged_samples_are_kept() -> None:
    flagged = make_result(samples=SLOW, admission=admission(*[AdmissionStatus.FLAGGED] * 3))
    assert verdict_of(flagged, ConfirmMode.REPEAT).verdict is Verdict.BLOCK


def test_set_aside_pairs_are_left_out_and_named() -> None:
    base, head = RUNNER, [v * 0.9 for v in RUNNER]
    evidence = record(base, head)
    # The base sample of pair 1 was on a throttled GPU (and slow): that pair is left out.
    throttled = SampleAdmission(sample_index=3, status=AdmissionStatus.CONTAMINATED,
                                reasons=(THROTTLED,))  # fmt: skip
    samples = list(evidence.samples)
    samples[3] = PairedSample(sample_index=3, pair=1, side=PairedSide.BASE, value=50.0,
                              admission=throttled)  # fmt: skip
    judgement = verdict_of(
        make_result(samples=SAME, paired=record(base, head, samples=tuple(samples)))
    )
    assert judgement.paired is not None and judgement.paired.pairs == 4
    assert judgement.verdict is Verdict.BLOCK
    assert any("1 paired sample(s) set aside (GPU throttled" in d for d in judgement.details())


def test_a_head_sample_that_fails_during_the_pairs_is_a_hard_failure() -> None:
    evidence = record(RUNNER[:2], RUNNER[:2])
    failed = PairedSample(sample_index=4, pair=2, side=PairedSide.HEAD, value=None,
                          phase=FailurePhase.RUNTIME)  # fmt: skip
    crashed = PairedRecord(
        status=PairedStatus.FAILED, reason="the head sample 4 failed",
        samples=(*evidence.samples, failed), stopped=PairedStop.FAILED,
    )  # fmt: skip
    judgement = verdict_of(make_result(samples=SAME, paired=crashed))
    assert judgement.verdict is Verdict.HARD_FAILURE


def test_pairs_skipped_as_unable_to_decide_leave_the_windows_verdict_standing() -> None:
    skipped = PairedRecord(
        status=PairedStatus.SKIPPED,
        reason="3 pairs cannot confirm a 5 % drop: pair budget 60 min allows 3 pairs at 14 min a "
        "launch; BLOCKing a 5 % drop at 2 % noise needs 6",
    )
    judgement = verdict_of(make_result(samples=SLOW, paired=skipped))
    assert judgement.verdict is Verdict.BLOCK  # not turned into UNPAIRED: it was said why
    signal = next(s for s in judgement.signals if s.reason is Reason.PAIRED_SKIPPED)
    assert "BLOCKing a 5 % drop at 2 % noise needs 6" in signal.detail
    assert "the window's verdict stands" in signal.detail
    assert judgement.confirmation is not None and "needs 6" in judgement.confirmation.note


def test_a_drop_too_small_to_confirm_here_is_left_to_post_merge_alerts() -> None:
    # A 2.5 % slower run: the window cannot rule out a 3 % drop, but rules out 5 % (the drop
    # worth confirming), so nothing is spent and the summary says who watches it.
    slightly = make_result(samples=(975.0, 976.0, 974.0))
    check = primary_check(WINDOW, policy=POLICY, paired_policy=PairedPolicy())
    judgement = judge(slightly, [check], confirm=ConfirmMode.PAIRED, confirm_drop_pct=5.0)
    assert judgement.verdict.level is not Verdict.BLOCK
    note = next(s for s in judgement.signals if s.reason is Reason.POST_MERGE)
    assert note.verdict is Verdict.PASS
    assert (
        "cannot be ruled out at this run's budget; post-merge alerts watch the target branch for it"
        in note.detail
    )
    clear = make_result(samples=SAME)
    check = primary_check(WINDOW, policy=POLICY, paired_policy=PairedPolicy())
    judged = judge(clear, [check], confirm=ConfirmMode.PAIRED, confirm_drop_pct=5.0)
    assert Reason.POST_MERGE not in judged.reasons


def test_the_window_is_put_on_the_runs_runners_terms_and_says_so() -> None:
    # Forty runs on five runners 1.5 % apart, 0.5 % sample noise; this run is on the slowest.
    rng = random.Random(11)
    offsets = {"r-3": 0.97, "r-1": 0.985, "r0": 1.0, "r+1": 1.015, "r+3": 1.03}
    runners = [list(offsets)[(i + 2) % 5] for i in range(40)]  # the nearest run: r0
    window = [[1000.0 * offsets[r] * (1 + rng.gauss(0, 0.005)) for _ in range(2)] for r in runners]
    on_slow = make_result(samples=(970.0, 971.0, 969.0),
                          ci=CiInfo(run_id="1", run_attempt="1", runner_name="r-3"))  # fmt: skip
    policy = replace(POLICY, max_runs=40)
    named = WindowRunners(names=tuple(runners))
    aware = judge(on_slow, [primary_check(window, policy=policy, runners=named)],
                  confirm=ConfirmMode.REPEAT)  # fmt: skip
    plain = judge(on_slow, [primary_check(window, policy=policy)],
                  confirm=ConfirmMode.REPEAT)  # fmt: skip
    assert aware.decision is not None and plain.decision is not None
    assert abs(aware.decision.effect_pct or 0.0) < 0.8  # the slow runner's own level
    assert (plain.decision.effect_pct or 0.0) < -2.0  # against the pool's average
    signal = next(s for s in aware.signals if s.reason is Reason.RUNNER_OFFSET)
    assert signal.detail.startswith("runner-aware window: r-3 runs \u2212")  # a minus sign
