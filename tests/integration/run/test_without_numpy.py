"""numpy is the demo's extra, not perfgate's: everything else runs without it.

The subprocess hides numpy from the import system (there is no numpy-free virtualenv
here to run in), then runs perfgate's real command line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

WITHOUT_NUMPY = """
import sys
class HideNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, HideNumpy())
from perfgate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _perfgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_NUMPY, *args],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_config_verbs_and_the_demo_driver_without_numpy(tmp_path: Path) -> None:
    config = str(ROOT / "perfgate.yaml")
    assert _perfgate("validate", "--config", config, cwd=tmp_path).returncode == 0
    assert _perfgate("matrix", "--json", "--config", config, cwd=tmp_path).returncode == 0
    bench = _perfgate(
        "bench", "--config", config, "--bucket", "cartpole/numpy", "--no-judge",
        "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"), cwd=tmp_path,
    )  # fmt: skip
    assert bench.returncode == 4, bench.stderr
    assert "Traceback" not in bench.stderr
    assert "the demo driver needs numpy" in bench.stderr
    assert "pip install 'perfgate[demo]'" in bench.stderr
