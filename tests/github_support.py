"""Builders shared by the GitHub-surface tests: a config, result artifacts, GateReports."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfgate.config import Bucket, Config, load_config
from perfgate.judge.gate import GateReport, ReportContext, build_report
from perfgate.result import BucketRef, FailurePhase, Result
from tests import factories

HEAD_SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
HOSTILE = (
    "<img src=x onerror=alert(1)> @org/team [link](javascript:alert(1)) | `rm -rf` "
    "<!-- perfgate-verdict --> ```\n## injected\n</details><script>x</script>"
)

# Ten runs of two samples around 1000 (the calibrated rule's window).
RUNS = [[1005.0, 992.0], [1009.0, 998.0], [987.0, 1003.0], [1012.0, 1001.0],
        [994.0, 999.0], [1006.0, 989.0], [997.0, 1014.0], [1002.0, 991.0],
        [988.0, 1007.0], [1010.0, 996.0]]  # fmt: skip

CONFIG_TEXT = """\
version: 1
gate:
  mode: {mode}
  confirm: repeat   # these reports exercise the window rule's verdicts on every surface
  target_branches: [main]
  protected_branches: [main]
  baseline: {{min_samples: 5, max_samples: 20}}
defaults:
  driver: demo
  runner: [ubuntu-latest]
  timeout_minutes: 2
  metric: {{path: runtime.total_fps.mean, direction: higher, unit: env-steps/s}}
buckets:
  - task: cartpole
    backends: [{{physics: numpy}}, {{physics: python}}]
  - task: pendulum
    backends: [{{physics: numpy}}, {{physics: python}}]
"""


def write_config(directory: Path, mode: str = "advisory") -> Config:
    """A four-bucket demo config written to ``directory`` and loaded."""
    path = directory / "perfgate.yaml"
    path.write_text(CONFIG_TEXT.format(mode=mode), encoding="utf-8")
    return load_config(path)


def make_result(
    bucket: Bucket,
    value: float | None,
    *,
    exit_code: int = 0,
    phase: FailurePhase | None = None,
    error: str | None = None,
    log_tail: str = "",
    samples: tuple[float, ...] = (),
) -> Result:
    """A result artifact for ``bucket`` as a pull request's bench job would write it."""
    result = factories.make_result(
        "placeholder/numpy",
        value,
        samples=samples,
        exit_code=exit_code,
        phase=phase,
        error=error,
        commit=HEAD_SHA,
        branch="feature",
        event="pull_request",
        run_id="99",
        log_tail=log_tail,
    )
    return dataclasses.replace(
        result,
        # Built from the Bucket itself, so hostile task names survive unsplit.
        bucket=BucketRef.of(bucket),
        source=dataclasses.replace(
            result.source, pr_number=7, head_sha=HEAD_SHA, repository="acme/sim"
        ),
    )


WINDOW = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]


def mixed_report(directory: Path, *, mode: str = "advisory", hostile: bool = False) -> GateReport:
    """PASS, BLOCK, HARD_FAILURE and one bucket that did not report.

    With ``hostile`` the failing bucket's name and error text carry markdown, HTML and
    mentions, as a malicious pull request could make them.
    """
    config = write_config(directory, mode)
    passing, blocked, failed, missing = config.buckets
    error = "Traceback: boom"
    if hostile:
        failed = dataclasses.replace(failed, task=HOSTILE)
        error = HOSTILE
    results = [
        make_result(passing, 1001.0),
        make_result(blocked, 700.0, samples=(700.0, 701.0, 699.0)),
        make_result(
            failed, None, exit_code=1, phase=FailurePhase.RUNTIME, error=error, log_tail=error
        ),
    ]
    windows = {b.id: WINDOW for b in (passing, blocked)}
    return build_report(
        config=config,
        expected=(passing, blocked, failed, missing),
        results=results,
        windows=factories.windows_of(windows),
        context=ReportContext(
            notes=[HOSTILE] if hostile else [], baseline_tip="f" * 40, base_commit="e" * 40
        ),
    )


def passing_report(directory: Path, *, mode: str = "advisory") -> GateReport:
    """Every bucket reported and passed."""
    config = write_config(directory, mode)
    results = [make_result(b, 1000.0) for b in config.buckets]
    return build_report(
        config=config,
        expected=config.buckets,
        results=results,
        windows=factories.windows_of({b.id: WINDOW for b in config.buckets}),
    )


def new_verdicts_report(directory: Path, *, mode: str = "advisory") -> GateReport:
    """PASS, IMPROVED, INCONCLUSIVE and BLOCK from the calibrated rule, every bucket reported.

    The window: ten runs of two samples around 1000, 1 % apart. IMPROVED is 10 % faster;
    INCONCLUSIVE is 7 % slower on only two samples (a BLOCK needs three).
    """
    config = write_config(directory, mode)
    passing, improved, unsure, blocked = config.buckets
    results = [
        make_result(passing, 1000.0, samples=(1001.0, 998.0)),
        make_result(improved, 1100.0, samples=(1100.0, 1102.0)),
        make_result(unsure, 930.0, samples=(930.0, 931.0)),
        make_result(blocked, 930.0, samples=(930.0, 931.0, 929.0)),
    ]
    return build_report(
        config=config,
        expected=config.buckets,
        results=results,
        windows=factories.windows_of({b.id: RUNS for b in config.buckets}),
    )
