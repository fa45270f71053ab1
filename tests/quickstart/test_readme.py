"""The README's quick start, run as a new user runs it: a fresh clone, a fresh virtualenv.

Every command of the ```console blocks under "## Quick start" runs in order, in a new
virtual environment holding only what those commands install, against a copy of this
checkout committed to a fresh git repository (as a clone would be). `nox -s unit` is the
one command left out: this test is itself run by a nox session, and the suite it would
start already runs in `.ci/run`. Then the maintainer loop that the README's invoke
commands promise: an edited rendered file fails `invoke check-workflows` with a diff,
and `invoke render-workflows` restores a clean tree.

Needs the network to install from the Python package index; run it with
`nox -s quickstart` (`.ci/run` does).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.quickstart

SKIPPED = {"nox -s unit"}  # see the module docstring


def quick_start_commands(readme: str) -> list[str]:
    """The commands of every console block in the README's Quick start section, in order."""
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```console\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def _clone(dest: Path) -> Path:
    """This checkout's files (tracked and new, not ignored), committed to a new repository."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*identity, "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return dest


def _environment(venv: Path) -> dict[str, str]:
    """A shell as a new user has it: the venv first on PATH, nothing of this test's Python."""
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "NOX", "PYTHON"))
    }
    keep.pop("GITHUB_ACTIONS", None)
    return {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{keep['PATH']}"}


def test_the_quick_start_section_holds_the_main_commands() -> None:
    commands = quick_start_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands[0].startswith("python -m pip install nox")
    for needed in ("nox -s bench", "nox -s unit", "invoke check-workflows"):
        assert needed in commands


def test_readme_quick_start_runs_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    repo = _clone(tmp_path / "perfgate")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = _environment(venv)

    def sh(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            shlex.split(command), cwd=repo, env=env, capture_output=True, text=True,
            timeout=900, check=False,
        )  # fmt: skip

    for command in quick_start_commands((repo / "README.md").read_text(encoding="utf-8")):
        if command in SKIPPED:
            continue
        done = sh(command)
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout}\n{done.stderr}"
        # nox's search for uv is no news to a new user (issue 28).
        assert "uv binary not found" not in done.stdout + done.stderr
        if command == "nox -s bench":
            assert "cartpole/numpy" in done.stdout
    # bench and render (under invoke check-workflows) installed perfgate once, together.
    assert sorted(p.name for p in (repo / ".nox").iterdir() if (p / "bin").is_dir()) == [
        "perfgate-run"
    ]

    # The maintainer loop: drift is caught with a diff, and a render restores a clean tree.
    action = repo / "actions" / "bench" / "action.yml"
    action.write_text(action.read_text().replace("retention-days: 7", "retention-days: 90"))
    checked = sh("invoke check-workflows")
    assert checked.returncode == 1
    assert "+        retention-days: 7" in checked.stdout
    assert "invoke render-workflows" in checked.stderr
    assert sh("invoke render-workflows").returncode == 0
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert status.stdout == ""
