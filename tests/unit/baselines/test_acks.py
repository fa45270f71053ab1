"""Accepted changes: what a line holds, whom it covers, and the known shift it makes (R18)."""

from __future__ import annotations

import pytest

from perfgate.baselines.acks import (
    EVERY_BUCKET,
    REASON_LIMIT,
    AcceptedLevel,
    Acknowledgement,
    acknowledgement,
    kept_runs,
)
from perfgate.config import Direction
from perfgate.errors import UsageError
from perfgate.judge.policies import CalibratedPolicy, ReferencePolicy
from perfgate.judge.rule import decide
from perfgate.judge.verdicts import Reason, Verdict
from perfgate.judge.window import analyse_window

C = "c" * 40


def ack(bucket: str = "cartpole/numpy", metric: str | None = None) -> Acknowledgement:
    return acknowledgement(
        bucket=bucket, metric=metric, commit=C, reason="exact solver", by="ada", source="accept"
    )


def test_a_line_round_trips_and_its_id_names_what_was_accepted() -> None:
    first = ack()
    again = Acknowledgement.from_line(first.to_line())
    assert again == first
    other = acknowledgement(bucket="cartpole/numpy", commit=C, reason="another reason",
                            by="bob", source="issue-label")  # fmt: skip
    assert other.ack_id == first.ack_id  # the same change, whoever accepted it


@pytest.mark.parametrize(
    "line",
    ['"x"', '{"bucket": 1}', '{"bucket":"b","commit":"abc","reason":"r","by":"b",'
     '"source":"accept","recorded_at":"t"}'],
    ids=["not-an-object", "bad-type", "short-commit"],
)  # fmt: skip
def test_a_line_that_is_not_an_acceptance_is_refused(line: str) -> None:
    with pytest.raises((ValueError, TypeError)):
        Acknowledgement.from_line(line)


def test_a_reason_is_one_plain_bounded_line_and_never_empty() -> None:
    made = acknowledgement(bucket="b/x", commit=C, reason="a\nb\x1b[31m " + "z" * 900,
                           by="ada", source="accept")  # fmt: skip
    assert "\n" not in made.reason and "\x1b" not in made.reason
    assert len(made.reason) == REASON_LIMIT
    with pytest.raises(UsageError, match="needs a reason"):
        acknowledgement(bucket="b/x", commit=C, reason=" \n ", by="ada", source="accept")


def test_whom_an_acceptance_covers() -> None:
    assert ack().applies_to("cartpole/numpy", "primary")
    assert ack().applies_to("cartpole/numpy", "startup_s")  # every metric of the bucket
    assert not ack().applies_to("pendulum/numpy", "primary")
    assert not ack(metric="startup_s").applies_to("cartpole/numpy", "primary")
    assert ack(bucket=EVERY_BUCKET).applies_to("pendulum/numpy", "primary")


def test_kept_runs_counts_the_nearest_runs_at_the_accepted_level() -> None:
    level = AcceptedLevel(ack=ack(), after=frozenset({"n1", "n2", "n3"}))
    # Nearest first: three runs at or after the accepted commit, then older ones.
    assert kept_runs([level], "cartpole/numpy", "primary", ["n1", "n2", "n3", "o1"]) == 3
    assert kept_runs([level], "cartpole/numpy", "primary", ["o1", "o2"]) == 0
    assert kept_runs([level], "pendulum/numpy", "primary", ["n1"]) is None
    newer = AcceptedLevel(ack=ack(), after=frozenset({"n1"}))
    assert kept_runs([level, newer], "cartpole/numpy", "primary", ["n1", "n2", "o1"]) == 1


RUNS = [[94.1, 93.9], [94.0, 94.2], [93.8, 94.1], [100.1, 99.8], [100.2, 99.9],
        [99.7, 100.3], [100.0, 100.1], [99.9, 100.2]]  # fmt: skip


def test_a_known_shift_starts_the_window_at_the_accepted_change() -> None:
    model = analyse_window(RUNS, policy=CalibratedPolicy(), known_shift=3)
    assert model.shift is not None and model.shift.accepted and model.shift.kept_runs == 3
    decision = decide(RUNS, [94.0, 94.1, 93.9], policy=CalibratedPolicy(), known_shift=3)
    assert decision.verdict is Verdict.PASS
    assert 93.5 < (decision.baseline or 0) < 94.5


def test_no_run_at_the_accepted_level_yet_cannot_judge() -> None:
    decision = decide(RUNS[3:], [94.0, 94.1, 93.9], policy=CalibratedPolicy(), known_shift=0)
    assert decision.verdict is Verdict.INCONCLUSIVE
    assert decision.reasons[0] is Reason.SHIFT_SETTLING
    assert "accepted change" in decision.detail


def test_the_reference_rule_keeps_the_accepted_runs_alone() -> None:
    kept = decide(RUNS, [94.0], policy=ReferencePolicy(), direction=Direction.HIGHER,
                  known_shift=3)  # fmt: skip
    assert kept.window_samples == 6 and kept.reasons[0] is Reason.ROLLING_WINDOW
