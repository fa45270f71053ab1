"""Stale-image evidence (R7): a missing symbol alone never excuses a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.result import StaleImage
from perfgate.run.staleness import (
    DEFAULT_PIN_FILES,
    assess,
    installed_version,
    missing_symbol,
    pinned_version,
    required_pin,
    same_version,
)

WARP_IMPORT = """Traceback (most recent call last):
  File "/workspace/isaaclab/source/isaaclab/isaaclab/sim/utils.py", line 3, in <module>
    from warp.tile import tile_matmul
ImportError: cannot import name 'tile_matmul' from 'warp.tile' (/usr/lib/warp/tile.py)
"""


@pytest.mark.parametrize(
    ("log", "package", "symbol"),
    [
        (WARP_IMPORT, "warp", "tile_matmul"),
        ("ModuleNotFoundError: No module named 'mujoco_warp._src'\n", "mujoco_warp",
         "mujoco_warp._src"),
        ("AttributeError: module 'newton.solvers' has no attribute 'SolverMuJoCo'\n", "newton",
         "SolverMuJoCo"),
    ],
)  # fmt: skip
def test_missing_symbol_crashes_name_symbol_and_top_package(
    log: str, package: str, symbol: str
) -> None:
    found = missing_symbol(log)
    assert found is not None
    assert (found.package, found.symbol) == (package, symbol)


def test_the_last_crash_in_the_log_is_the_one_that_counts() -> None:
    log = "AttributeError: module 'torch' has no attribute 'x'\n(recovered)\n" + WARP_IMPORT
    found = missing_symbol(log)
    assert found is not None and found.package == "warp"


def test_circular_imports_and_other_errors_are_not_missing_symbols() -> None:
    log = "ImportError: cannot import name 'a' from partially initialized module 'pkg'\n"
    assert missing_symbol(log) is None
    assert missing_symbol("RuntimeError: CUDA error: out of memory\n") is None


def test_installed_version_prefers_the_bundle_then_the_log() -> None:
    log = "Warp 1.8.1 initialized:\n   CUDA Toolkit 12.8, Driver 12.9\n"
    assert installed_version("warp", {"warp": "1.9.0"}, log) == "1.9.0"
    assert installed_version("warp", {}, log) == "1.8.1"
    assert installed_version("warp", {}, "warp-lang==1.7.2\nnumpy==1.26.4\n") == "1.7.2"
    assert installed_version("newton", {}, "Newton version: 0.2.1\n") == "0.2.1"
    assert installed_version("mujoco_warp", {"mjwarp": "3.10.0.1"}, "") == "3.10.0.1"
    assert installed_version("warp", {}, "no versions here\n") is None


def checkout_with(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


PYPROJECT = """
[project]
name = "isaaclab-dev"
dependencies = [
  "numpy>=2",
  "pytetwild==0.2.3 ; platform_machine in 'x86_64 AMD64'",
  "warp-lang==1.15.0.dev20260626",
  "rl-games @ git+https://github.com/isaac-sim/rl_games.git@python3.11",
]
[project.optional-dependencies]
isaacsim = ["isaacsim[all,extscache]==6.0.0.1"]
[tool.uv]
override-dependencies = ["mujoco-warp==3.10.0.1"]
"""


def test_pins_come_from_pyproject_sections_with_extras_and_markers(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    pins = {
        package: pinned_version(checkout, package, DEFAULT_PIN_FILES)
        for package in ("warp", "isaacsim", "mujoco_warp", "pytetwild", "numpy", "rl_games")
    }
    exact = {package: pin.exact if pin else None for package, pin in pins.items()}
    assert exact == {
        "warp": "1.15.0.dev20260626",
        "isaacsim": "6.0.0.1",
        "mujoco_warp": "3.10.0.1",
        "pytetwild": "0.2.3",
        "numpy": None,  # a range is not a pin
        "rl_games": None,  # a URL names no version
    }


def test_pins_come_from_requirements_and_setup_py(tmp_path: Path) -> None:
    checkout = checkout_with(
        tmp_path,
        {
            "requirements.txt": "# pinned\n-r base.txt\nnewton==0.2.0  # physics\n",
            "source/isaaclab/setup.py": 'INSTALL_REQUIRES = ["torch==2.7.0", "onnx>=1.18"]\n',
        },
    )
    newton = pinned_version(checkout, "newton", DEFAULT_PIN_FILES)
    torch = pinned_version(checkout, "torch", DEFAULT_PIN_FILES)
    assert newton is not None and newton.exact == "0.2.0"
    assert torch is not None and torch.exact == "2.7.0"


def test_pins_in_every_form_pip_accepts(tmp_path: Path) -> None:
    """Parenthesised specifiers, hashes and wildcards read as pip reads them (packaging)."""
    checkout = checkout_with(
        tmp_path,
        {
            "requirements.txt": "newton (==0.2.0)\n"
            "warp-lang==1.9.0 --hash=sha256:" + "0" * 64 + "\n"
            "torch==2.7.*\n",
        },
    )
    newton = pinned_version(checkout, "newton", DEFAULT_PIN_FILES)
    warp = pinned_version(checkout, "warp", DEFAULT_PIN_FILES)
    assert newton is not None and newton.exact == "0.2.0"
    assert warp is not None and warp.exact == "1.9.0"
    assert pinned_version(checkout, "torch", DEFAULT_PIN_FILES) is None  # a wildcard is a range


def test_crash_with_differing_installed_and_pinned_versions_is_excused(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    stale = assess(WARP_IMPORT, {"warp": "1.14.0"}, checkout, DEFAULT_PIN_FILES)
    assert stale == StaleImage(
        package="warp", symbol="tile_matmul", installed="1.14.0", pinned="1.15.0.dev20260626"
    )


def test_matching_versions_mean_the_change_itself_broke_the_import(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    assert assess(WARP_IMPORT, {"warp": "1.15.0.dev20260626"}, checkout, DEFAULT_PIN_FILES) is None


def test_no_installed_version_is_no_evidence(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    assert assess(WARP_IMPORT, {}, checkout, DEFAULT_PIN_FILES) is None


def test_no_pin_is_no_evidence(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    assert assess(WARP_IMPORT, {"warp": "1.0.0"}, checkout, DEFAULT_PIN_FILES) is None


def test_a_crash_without_a_missing_symbol_is_no_evidence(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    log = "RuntimeError: simulation diverged\n"
    assert assess(log, {"warp": "1.0.0"}, checkout, DEFAULT_PIN_FILES) is None


@pytest.mark.parametrize(
    ("installed", "pinned", "same"),
    [
        ("1.9.0", "1.9.0", True),
        ("1.9", "1.9.0", True),
        ("2.7.0+cu128", "2.7.0", True),  # the pin does not name a build
        ("0.5.2+head.abc", "0.5.2+head.f62", False),  # both name one: they must agree
        ("1.8.1", "1.9.0", False),
        ("1.15.0.dev20260626", "1.15.0.dev20260701", False),
        # PEP 440 equality, not text: leading zeros and a "v" prefix are the same release,
        # a pre-release is not the release.
        ("1.09", "1.9", True),
        ("v1.9.0", "1.9.0", True),
        ("1.9.0rc1", "1.9.0", False),
    ],
)
def test_version_comparison(installed: str, pinned: str, same: bool) -> None:
    assert same_version(installed, pinned) is same


def test_cache_key_pin_resolves_exact_pins_and_declared_ranges(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, {"pyproject.toml": PYPROJECT})
    assert required_pin(checkout, "pyproject.toml", "warp-lang") == "1.15.0.dev20260626"
    assert required_pin(checkout, "pyproject.toml", "numpy") == ">=2"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, r"pyproject\.toml: not found"),
        ({"pyproject.toml": '[project]\nname = "x"\n'}, "declares no requirement for 'warp-lang'"),
        ({"pyproject.toml": "[project\n"}, "cannot read pinned versions"),
        ({"pyproject.toml": '[project]\ndependencies = ["warp-lang"]\n'}, "no version specifier"),
    ],
)
def test_cache_key_pin_fails_loudly_naming_the_file(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    checkout = checkout_with(tmp_path, files)
    with pytest.raises(ConfigError, match=message) as raised:
        required_pin(checkout, "pyproject.toml", "warp-lang")
    assert str(tmp_path / "pyproject.toml") in str(raised.value)
