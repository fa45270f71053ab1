"""One destination tree (a :class:`Site`) and what every file rendered for it shares (R13)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate import __version__
from perfgate.ci.expressions import RUN_LABEL, expr_string
from perfgate.ci.templating import Raw, quoted
from perfgate.config import ActionRef, Config
from perfgate.result import PENDING_ARTIFACT

#: Artifact names shared by the bench, gate and comment templates.
RESULT_ARTIFACT_PREFIX = "perfgate-result-"
REPORT_ARTIFACT = "perfgate-report"
TREND_ARTIFACT = "perfgate-trend"
BISECT_ARTIFACT = "perfgate-bisect"
ALERTS_ARTIFACT = "perfgate-alerts"
#: The qualification workflow's artifacts: results and logs per allocation, one report.
QUALIFY_RESULT_PREFIX = "perfgate-qualify-result-"
QUALIFY_LOG_PREFIX = "perfgate-qualify-log-"
QUALIFY_REPORT_ARTIFACT = "perfgate-qualification"
HOSTED_RUNNER = "ubuntu-latest"
PYTHON_VERSION = "3.11"


@dataclass(frozen=True, kw_only=True)
class Site:
    """One destination tree: a config, where it is rendered, and what is included."""

    config: Config
    out: Path
    config_ref: str
    self_ci: bool = False
    # What the buckets' drivers need of the bench job (ci reads only the config, so the
    # caller says): buckets whose caches stay warm across runs (R16), and Git LFS content.
    warm_buckets: frozenset[str] = frozenset()
    lfs: bool = False

    @property
    def command(self) -> str:
        """The ``python -m perfgate render`` call that regenerates this site."""
        return (
            f"python -m perfgate render --config {self.config.path.as_posix()} "
            f"--out {self.out.as_posix()}"
        )


def perfgate_source(site: Site) -> str:
    """What the setup action installs: perfgate's own checkout, else a pinned requirement.

    Another repository's checkout is the project under test, not perfgate, so it
    installs the pinned ``workflows.perfgate_source`` (default: this perfgate version).
    """
    if site.self_ci:
        return "."
    return site.config.perfgate_source or f"perfgate=={__version__}"


SESSION_VERBS = (
    "alert",
    "bench",
    "bisect",
    "post-bisect",
    "gate",
    "publish",
    "report",
    "qualify",
    "resolve-image",
    "roll-era",
    "seed",
    "verify-baselines",
)


def report_requirement(site: Site) -> str:
    """What the report action installs for the charts: perfgate with its ``report`` extra.

    Empty in perfgate's own tree, whose ``report`` session installs the extra itself.
    """
    if site.self_ci:
        return ""
    name, rest = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(.*)", perfgate_source(site)).groups()  # type: ignore[union-attr]
    return f"{name}[report]{rest}"


def perfgate_commands(site: Site) -> dict[str, Raw]:
    """How an action calls each verb: perfgate's own Nox sessions in its own repository.

    In perfgate's tree the same ``nox -s VERB`` a developer runs locally runs in CI;
    another repository has no perfgate noxfile, so it calls the installed package,
    which is what each session wraps.
    """
    # Raw: constants of ours, printed into shell unquoted.
    if site.self_ci:
        return {verb: Raw(f"python -m nox -s {verb} --") for verb in SESSION_VERBS}
    return {verb: Raw(f"python -m perfgate {verb}") for verb in SESSION_VERBS}


#: Where workflows find the composite actions, by ``workflows.action_ref``.
ACTIONS_PATHS = {ActionRef.SELF: Raw("$/actions"), ActionRef.LOCAL: Raw("./actions")}


def common_context(site: Site) -> dict[str, Any]:
    """What every file of ``site`` is rendered with: paths, commands, artifact names."""
    return {
        "actions_path": ACTIONS_PATHS[site.config.action_ref],
        "perfgate_source": perfgate_source(site),
        # Raw: each argument shell-quoted, printed into a run step (no ${{ }} expansion).
        "benchmark_install": Raw(shlex.join(site.config.benchmark_install)),
        "cli": perfgate_commands(site),
        "config_ref": site.config_ref,
        "python_version": PYTHON_VERSION,
        "hosted_runner": HOSTED_RUNNER,
        "result_artifact_glob": RESULT_ARTIFACT_PREFIX + "*",
        "report_artifact": REPORT_ARTIFACT,
        "trend_artifact": TREND_ARTIFACT,
        "bisect_artifact": BISECT_ARTIFACT,
        "alerts_artifact": ALERTS_ARTIFACT,
        "report_requirement": report_requirement(site),
        "pending_artifact": PENDING_ARTIFACT,
        # Names of one allocation's artifacts: the prefix and the action's run-label input.
        "qualify_result_name": quoted(QUALIFY_RESULT_PREFIX + "${{ inputs.run-label }}"),
        "qualify_log_name": quoted(QUALIFY_LOG_PREFIX + "${{ inputs.run-label }}"),
        "qualify_result_glob": QUALIFY_RESULT_PREFIX + "*",
        "qualify_report_artifact": QUALIFY_REPORT_ARTIFACT,
        "has_run_label": quoted(
            "${{ contains(github.event.pull_request.labels.*.name, "
            f"{expr_string(RUN_LABEL)}) }}}}"
        ),
    }
