"""Which runs and artifacts may publish at all, decided before anything is written (R9, R14)."""

from __future__ import annotations

import pytest

from perfgate.baselines.publish import refuse_untrusted_results, refuse_untrusted_run
from perfgate.config import Config, load_config
from perfgate.context import RunContext
from perfgate.errors import UsageError
from tests.factories import make_result
from tests.paths import FIXTURES


def config() -> Config:
    """Four demo buckets; main is the protected branch (the default)."""
    return load_config(FIXTURES / "qualify.yaml")


def test_a_push_to_a_protected_branch_may_publish() -> None:
    refuse_untrusted_run(config(), RunContext(commit="c" * 40, branch="main",
                                              target_branch="main", event="push"))  # fmt: skip
    refuse_untrusted_results(config(), [make_result("cartpole/numpy")])


@pytest.mark.parametrize(
    ("event", "branch"), [("pull_request", "main"), ("push", "feature"), ("seed", "main")]
)
def test_any_other_run_is_refused_saying_what_to_do_locally(event: str, branch: str) -> None:
    run = RunContext(commit="c" * 40, branch=branch, target_branch="main", event=event)
    with pytest.raises(UsageError, match="baselines are written only by pushes to protected"):
        refuse_untrusted_run(config(), run)
    with pytest.raises(UsageError, match="nox -s bench -- --record"):
        refuse_untrusted_run(config(), run)


def test_an_artifact_of_an_undeclared_bucket_is_refused_by_name() -> None:
    results = [make_result("cartpole/numpy"), make_result("rogue/numpy")]
    with pytest.raises(UsageError, match=r"buckets not in \S*qualify\.yaml: rogue/numpy;"):
        refuse_untrusted_results(config(), results)


@pytest.mark.parametrize(("event", "branch"), [("pull_request", "main"), ("push", "feature")])
def test_an_artifact_not_from_a_protected_push_is_refused_by_name(event: str, branch: str) -> None:
    results = [make_result("cartpole/numpy"), make_result("pendulum/python", event=event,
                                                          branch=branch)]  # fmt: skip
    with pytest.raises(UsageError, match=r"not produced by a protected push: pendulum/python$"):
        refuse_untrusted_results(config(), results)
