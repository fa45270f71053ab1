"""Invoke tasks for maintainers: rendering workflows and composite actions from templates."""

from __future__ import annotations

import sys

from invoke import task
from invoke.context import Context
from invoke.exceptions import Exit

from perfgate.render import RENDER_TASK, REPOSITORY_SITES


def _render(c: Context, check: bool) -> None:
    failed = False
    for config, out in REPOSITORY_SITES:
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


@task(name="render-workflows")
def render_workflows(c: Context) -> None:
    """Render .github/workflows, actions/ and examples/isaaclab from templates/."""
    _render(c, check=False)


@task(name="check-workflows")
def check_workflows(c: Context) -> None:
    """Re-render in memory and fail with a unified diff when any generated file is stale."""
    _render(c, check=True)
