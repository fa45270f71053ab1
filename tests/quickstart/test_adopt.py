"""docs/adopt.md, run as a new user of another project runs it.

The commands of its "Five commands" block run in order on a fresh git repository holding
a copy of examples/pytest-benchmark, in a new virtual environment. The one substitution:
perfgate is installed from this checkout instead of the documented git URL, which this
machine cannot reach. Needs the package index (pytest-benchmark); `nox -s quickstart`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.quickstart

DOC = ROOT / "docs" / "adopt.md"
EXAMPLE = ROOT / "examples" / "pytest-benchmark"
DOCUMENTED_SOURCE = "'perfgate @ git+https://github.com/OWNER/perfgate@COMMIT'"


def adoption_commands(text: str) -> list[str]:
    """The commands of the console block under '## Five commands'."""
    section = text.split("\n## Five commands\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```console\n(.*?)```", section, flags=re.S)
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_adopting_takes_at_most_five_commands_from_install_to_rendered_workflows() -> None:
    commands = adoption_commands(DOC.read_text(encoding="utf-8"))
    assert len(commands) <= 5
    assert DOCUMENTED_SOURCE in commands[0]
    assert commands[-1] == "python -m perfgate render"


def test_the_adoption_page_runs_on_a_fresh_copy_of_the_example(tmp_path: Path) -> None:
    project = tmp_path / "tinyparse"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".perfgate", "*.egg-info"))
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*identity, "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "NOX"))}
    keep = {k: v for k, v in keep.items() if not k.startswith(("PYTHON", "GITHUB_"))}
    env = {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{keep['PATH']}"}

    outputs = {}
    for command in adoption_commands(DOC.read_text(encoding="utf-8")):
        run = command.replace(DOCUMENTED_SOURCE, shlex.quote(str(ROOT)))
        done = subprocess.run(
            shlex.split(run), cwd=project, env=env, capture_output=True, text=True,
            timeout=900, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout}\n{done.stderr}"
        outputs[command] = done.stdout + done.stderr

    assert "perfgate.yaml: ok, 1 buckets" in outputs["python -m perfgate validate"]
    judged = outputs["python -m perfgate bench"]
    # Judged against the seeded window, every metric of the bucket, none without a baseline.
    assert re.search(r"tinyparse/cpython +(PASS|WARN|INCONCLUSIVE) ", judged), judged
    assert "NO_BASELINE" not in judged and "round_trip" in judged
    workflow = (project / ".github" / "workflows" / "perfgate.yml").read_text(encoding="utf-8")
    assert "run: python -m pip install -e '.[bench]'" in workflow
    assert (project / "actions" / "bench" / "action.yml").is_file()
    # The rendered tree is what the drift check expects: render --check agrees.
    check = subprocess.run(
        ["python", "-m", "perfgate", "render", "--check"], cwd=project, env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
