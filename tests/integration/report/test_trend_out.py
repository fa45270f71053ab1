"""``report --out`` replaces only an earlier trend site, and never through a link (R14)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.util.git import git
from tests.git_support import commit_all
from tests.paths import ROOT


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the demo config and no baseline branch yet (an empty site)."""
    path = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(path))
    shutil.copyfile(ROOT / "perfgate.yaml", path / "perfgate.yaml")
    commit_all(path, "init")
    return path


def report(repo: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "report", "--out", str(out)],
        cwd=repo, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_out_as_a_link_to_an_earlier_site_is_refused_cleanly(repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert report(repo, site).returncode == 0
    link = tmp_path / "link"
    link.symlink_to(site)
    done = report(repo, link)
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr and "symbolic link" in done.stderr
    assert (site / "index.html").is_file() and link.is_symlink()


def test_a_marker_that_is_a_link_never_lets_a_directory_be_deleted(
    repo: Path, tmp_path: Path
) -> None:
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work", encoding="utf-8")
    (precious / ".perfgate-trend").symlink_to(precious / "thesis.tex")
    done = report(repo, precious)
    assert done.returncode == 4, done.stderr
    assert "holds other files" in done.stderr
    assert (precious / "thesis.tex").read_text(encoding="utf-8") == "years of work"
