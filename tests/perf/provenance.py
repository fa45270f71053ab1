"""What a benchmark measured: perfgate's commit and the machine, printed beside its figures.

Figures from a shared machine mean little without the load they were taken under, and
figures quoted in the README and docs/ mean little without the code they were taken from.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from perfgate.cli.report import usable_cpus
from perfgate.run.hardware import cpu_name


def commit(root: Path) -> str:
    """The commit of perfgate measured, saying so when its sources differ from it."""
    head = _git(root, "rev-parse", "--short=12", "HEAD") or "an unknown commit"
    changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--", "perfgate", "tests")
    return f"{head} with uncommitted changes" if changed else head


def machine() -> str:
    """CPU model and usable CPUs, memory, system, Python and git versions."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    git = (_git(Path.cwd(), "--version") or "git ?").removeprefix("git version ")
    return (
        f"{cpu_name() or platform.machine()}, {usable_cpus()} CPUs, {memory:.0f} GiB, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"git {git}"
    )


def load() -> str:
    """The load averages over 1, 5 and 15 minutes: how busy the machine was besides."""
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def _git(root: Path, *args: str) -> str | None:
    found = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return found.stdout.strip() if found.returncode == 0 else None
