"""Invoke tasks for maintainers: rendering workflows and composite actions from templates."""

from __future__ import annotations

import sys

from invoke import task
from invoke.context import Context
from invoke.exceptions import Exit

from perfgate.ci.render import RENDER_TASK, REPOSITORY_SITES


def _render(c: Context, check: bool, config: str | None, out: str | None) -> None:
    sites = [(config or "perfgate.yaml", out or ".")] if config or out else REPOSITORY_SITES
    failed = False
    for config, out in sites:
        flag = " --check" if check else ""
        result = c.run(
            f"{sys.executable} -m perfgate render --config {config} --out {out}{flag}", warn=True
        )
        failed = failed or result is None or not result.ok
    if failed:
        raise Exit(
            f"rendered files are stale; run `{RENDER_TASK}` and commit the result"
            if check
            else "rendering failed",
            code=1,
        )


SITE_HELP = {
    "config": "render this perfgate.yaml only (default: this repository and the Isaac Lab example)",
    "out": "repository root to render into (default: . for --config)",
}


@task(name="render-workflows", help=SITE_HELP)
def render_workflows(c: Context, config: str | None = None, out: str | None = None) -> None:
    """Render .github/workflows, actions/ and examples/isaaclab from templates/."""
    _render(c, check=False, config=config, out=out)


@task(name="check-workflows", help=SITE_HELP)
def check_workflows(c: Context, config: str | None = None, out: str | None = None) -> None:
    """Re-render in memory and fail with a unified diff when any generated file is stale."""
    _render(c, check=True, config=config, out=out)
