"""A cache the container's user cannot write, prepared by a perfgate that may not fix it.

perfgate runs here as an unprivileged user (``setpriv``), as a CI runner's service user
does, over a cache a container running as another user left behind: a real chmod is
refused, so the launch must stop before it starts instead of letting Warp fail inside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import ROOT

NOBODY = 65534
PREPARE = """
import sys
from pathlib import Path
from perfgate.config import ContainerSpec
from perfgate.run.container import prepare, resolve
from perfgate.run.drivers.isaaclab import CONTAINER
from perfgate.run.execution import AttemptDirs, EnvironmentProblem

root = Path(sys.argv[1])
dirs = AttemptDirs(number=1, output_dir=root / "out", cache_dir=root / "cache")
try:
    prepare(resolve(ContainerSpec(), CONTAINER), checkout=root / "checkout", dirs=dirs)
except EnvironmentProblem as exc:
    print(exc)
    sys.exit(5)
"""

pytestmark = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run perfgate as another user",
)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user may enter (pytest's own tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="perfgate-cache-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def prepare_as_nobody(root: Path) -> subprocess.CompletedProcess[str]:
    for path in (root / "out", root / "cache", root / "checkout"):
        path.mkdir(exist_ok=True)
        os.chown(path, NOBODY, NOBODY)
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", PREPARE, str(root)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False, timeout=60,
    )  # fmt: skip


def test_a_cache_directory_left_by_another_user_stops_the_launch_naming_it(
    shared: Path,
) -> None:
    stale = shared / "cache" / "warp"
    stale.mkdir(parents=True)
    stale.chmod(0o755)  # root's, from a container that ran as root

    done = prepare_as_nobody(shared)

    assert done.returncode == 5, done.stdout + done.stderr
    assert f"cannot write {stale} in the bucket's cache (owned by uid 0, mode 755)" in done.stdout
    assert f"delete {shared / 'cache'}" in done.stdout


def test_a_cache_perfgate_can_open_up_is_opened_and_the_launch_goes_on(shared: Path) -> None:
    (shared / "cache" / "warp").mkdir(parents=True)
    os.chown(shared / "cache" / "warp", NOBODY, NOBODY)
    (shared / "cache" / "warp").chmod(0o755)

    done = prepare_as_nobody(shared)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (shared / "cache" / "warp").stat().st_mode & 0o777 == 0o777
