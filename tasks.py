"""Invoke tasks for maintainers: rendering workflows and composite actions from templates.

Each task runs the matching Nox session, which installs what rendering needs, so the
tasks work in the quick start's environment (``pip install nox invoke``).
"""

from __future__ import annotations

import shlex
import sys

from invoke import task
from invoke.context import Context
from invoke.exceptions import Exit

RENDER_TASK = "invoke render-workflows"
# perfgate's exit codes (docs/design.md R8), which the render session passes on: only
# --check's 1 means stale files; 3 (a malfunction) and 4 (a config error) keep their meaning.
STALE = 1
MALFUNCTION = 3


def _render(c: Context, check: bool, config: str | None, out: str | None) -> None:
    site = [*(["--config", config] if config else []), *(["--out", out] if out else [])]
    args = [sys.executable, "-m", "nox", "-s", "render", "--", *site]
    result = c.run(shlex.join([*args, "--check"] if check else args), warn=True)
    code = result.exited if result is not None else MALFUNCTION
    if code == 0:
        return
    if check and code == STALE:
        raise Exit(f"rendered files are stale; run `{RENDER_TASK}` and commit the result", code)
    raise Exit(f"rendering failed (exit {code}); the error above says why", code)


SITE_HELP = {
    "config": "render this perfgate.yaml only (default: this repository and its two examples)",
    "out": "repository root to render into (default: . for --config)",
}


@task(name="render-workflows", help=SITE_HELP)
def render_workflows(c: Context, config: str | None = None, out: str | None = None) -> None:
    """Render .github/workflows, actions/ and the examples' from perfgate/ci/templates/."""
    _render(c, check=False, config=config, out=out)


@task(name="check-workflows", help=SITE_HELP)
def check_workflows(c: Context, config: str | None = None, out: str | None = None) -> None:
    """Re-render in memory and fail with a unified diff when any generated file is stale."""
    _render(c, check=True, config=config, out=out)
