"""The worst a CI run may cost, as validate prints it (R17): setup, plan and budget."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfgate.ci.lanes import worst_case
from perfgate.config import AdmissionMode, AdmissionPolicy, AlertsSpec, Config, load_config

CONFIG = """\
version: 1
gate: {budget_minutes: 100}
workflows: {bench_jobs: 2}
defaults:
  driver: command
  runner: [self-hosted, gpu]
  timeout_minutes: 30
  launch_minutes: 10
  setup_minutes: 5
  repeats: 1
  metric: {path: a.b}
buckets:
  - task: t
    backends: [{physics: x}, {physics: y}, {physics: z}]
    command: {argv: [run, "{output_dir}"], output: "{output_dir}/out.json"}
"""


def config(tmp_path: Path) -> Config:
    path = tmp_path / "perfgate.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    loaded = load_config(path)
    return dataclasses.replace(loaded, admission=AdmissionPolicy(mode=AdmissionMode.OFF))


def test_a_runs_worst_case_is_its_jobs_setup_its_planned_launches_and_its_budget(
    tmp_path: Path,
) -> None:
    loaded = config(tmp_path)
    pr = worst_case(loaded, push=False)
    # Two jobs of 5 min setup; three launches of 10 min; the budget whole.
    assert (pr.jobs, pr.setup, pr.planned, pr.extra, pr.capped) == (2, 10.0, 30.0, 100.0, True)
    assert pr.total == 140.0
    # A protected push takes alerts.push_repeats samples of each bucket (6 by default).
    push = worst_case(loaded, push=True)
    assert push.planned == 3 * 6 * 10.0 and push.total == 10.0 + 180.0 + 100.0
    assert worst_case(dataclasses.replace(loaded, alerts=AlertsSpec(push_repeats=1)),
                      push=True).total == pr.total  # fmt: skip
    # A warm cache found cold takes one unmeasured warm-up launch first.
    assert worst_case(loaded, push=False, warm={"t/x"}).planned == 40.0


def test_without_a_run_budget_every_retry_and_confirmation_its_counts_allow_is_counted(
    tmp_path: Path,
) -> None:
    loaded = config(tmp_path)
    open_ended = dataclasses.replace(
        loaded, gate=dataclasses.replace(loaded.gate, budget_minutes=None)
    )
    bill = worst_case(open_ended, push=False)
    assert not bill.capped
    assert bill.extra > 100.0  # far more than the capped run's budget
    assert bill.total == pytest.approx(bill.setup + bill.planned + bill.extra)


def test_runners_with_no_declared_setup_are_named(tmp_path: Path) -> None:
    loaded = config(tmp_path)
    undeclared = dataclasses.replace(
        loaded, buckets=tuple(dataclasses.replace(b, setup_minutes=None) for b in loaded.buckets)
    )
    bill = worst_case(undeclared, push=False)
    assert (bill.setup, bill.unknown_setup) == (0.0, ("self-hosted+gpu",))
