"""Stale-image evidence (docs/design.md R7) and pinned versions read from a checkout.

A crash is excused as a stale CI image only when all three are known and disagree:

1. the missing symbol and its top-level package, from the crash (``ImportError: cannot
   import name X from P``, ``ModuleNotFoundError: No module named P``, ``AttributeError:
   module P has no attribute X``);
2. the version of that package installed in the image, from the run's own report (the
   RuntimeBundle's ``versions``) or a version line in the log (``Warp 1.9.0 initialized``,
   ``warp-lang==1.9.0``, ``warp version: 1.9.0``);
3. the version the checkout pins exactly (``==``) in pyproject.toml or requirements files.

A missing symbol alone is not evidence: the change under test may call an API that does not
exist in any version. Pinned versions that feed a cache or era key must resolve: they raise
ConfigError naming the file rather than degrade to a constant.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from perfgate.errors import ConfigError
from perfgate.result import StaleImage

DEFAULT_PIN_FILES = (
    "pyproject.toml",
    "requirements.txt",
    "requirements/*.txt",
    "tools/**/requirements*.txt",
    "source/*/pyproject.toml",
    "source/*/setup.py",
)

# Import names whose distributions are spelled differently.
DISTRIBUTIONS: Mapping[str, tuple[str, ...]] = {
    "warp": ("warp-lang",),
    "pxr": ("usd-core", "usd-exchange"),
    "mujoco_warp": ("mujoco-warp",),
    "newton": ("newton",),
    "isaacsim": ("isaacsim",),
    "torch": ("torch",),
    "cv2": ("opencv-python", "opencv-python-headless"),
    "yaml": ("pyyaml",),
}
# RuntimeBundle ``versions`` keys whose names differ from the import name.
BUNDLE_KEYS: Mapping[str, tuple[str, ...]] = {
    "mujoco_warp": ("mjwarp",),
    "pxr": ("usd_core",),
}

_CRASHES = (
    re.compile(r"ImportError: cannot import name '(?P<symbol>[\w.]+)' from '(?P<module>[\w.]+)'"),
    re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'"),
    re.compile(r"AttributeError: module '(?P<module>[\w.]+)' has no attribute '(?P<symbol>\w+)'"),
)


@dataclass(frozen=True, kw_only=True)
class MissingSymbol:
    """What a crash could not find: a symbol (or a module) and its top-level package."""

    package: str
    symbol: str
    module: str


@dataclass(frozen=True, kw_only=True)
class Pin:
    """A requirement as a checkout file declares it."""

    name: str
    spec: str
    file: Path

    @property
    def exact(self) -> str | None:
        """The version of an ``==`` (or ``===``) pin; None for ranges, wildcards and bare names."""
        specifiers = list(SpecifierSet(self.spec))
        if len(specifiers) != 1 or specifiers[0].operator not in ("==", "==="):
            return None
        version = specifiers[0].version
        return None if version.endswith(".*") else version


def distributions(package: str) -> tuple[str, ...]:
    """Distribution names that may provide import package ``package``, normalized."""
    return tuple(canonicalize_name(d) for d in (*DISTRIBUTIONS.get(package, ()), package))


def missing_symbol(log: str) -> MissingSymbol | None:
    """The last missing-symbol crash in ``log`` (the one that ended the run), if any."""
    found: tuple[int, MissingSymbol] | None = None
    for pattern in _CRASHES:
        for match in pattern.finditer(log):
            module = match["module"]
            symbol = match.groupdict().get("symbol") or module
            candidate = MissingSymbol(package=module.split(".")[0], symbol=symbol, module=module)
            if found is None or match.start() > found[0]:
                found = (match.start(), candidate)
    return found[1] if found else None


def installed_version(package: str, versions: Mapping[str, str], log: str) -> str | None:
    """The image's version of ``package``: the run's own report first, then the log."""
    for key in (package, *BUNDLE_KEYS.get(package, ())):
        if versions.get(key):
            return versions[key]
    names = {package, *distributions(package)}
    alternatives = "|".join(re.escape(n).replace(r"\-", "[-_.]") for n in sorted(names))
    patterns = (
        rf"^\s*(?:{alternatives})\s*==\s*(?P<v>[\w.+!-]+)\s*$",
        rf"\b(?:{alternatives})\s+v?(?P<v>\d[\w.+!-]*)\s+initialized",
        rf"\b(?:{alternatives})\s+version\s*[:=]?\s*v?(?P<v>\d[\w.+!-]*)",
    )
    for pattern in patterns:
        matches = list(re.finditer(pattern, log, flags=re.IGNORECASE | re.MULTILINE))
        if matches:
            return matches[-1]["v"].rstrip(".,")
    return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _pyproject_requirements(path: Path) -> Iterator[str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read pinned versions: {exc}") from None
    uv = data.get("tool", {}).get("uv", {})
    project = data.get("project", {})
    # uv overrides replace every other requirement, so they are the effective pin.
    for section in (
        uv.get("override-dependencies", []),
        uv.get("constraint-dependencies", []),
        project.get("dependencies", []),
        project.get("optional-dependencies", {}),
        data.get("dependency-groups", {}),
    ):
        yield from _strings(section)


def _requirements_lines(path: Path) -> Iterator[str]:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            yield line


def _setup_py_strings(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def requirements_in(path: Path) -> list[Pin]:
    """Every requirement string declared in one file (pyproject, requirements, setup.py)."""
    if path.name == "pyproject.toml":
        texts: Iterable[str] = _pyproject_requirements(path)
    elif path.name == "setup.py":
        texts = _setup_py_strings(path)
    else:
        texts = _requirements_lines(path)
    pins = []
    for text in texts:
        try:
            # pip options (--hash, -r) and trailing comments are not part of a requirement.
            requirement = Requirement(text.split(" #", 1)[0].split(" --", 1)[0].strip())
        except InvalidRequirement:
            continue  # a string of setup.py, or a line pip options own
        if requirement.url is None:  # a direct URL names no version
            name, spec = canonicalize_name(requirement.name), str(requirement.specifier)
            pins.append(Pin(name=name, spec=spec, file=path))
    return pins


def pinned_version(checkout: Path, package: str, pin_files: Iterable[str]) -> Pin | None:
    """The first exact pin of ``package`` (an import name) in ``pin_files`` under ``checkout``."""
    wanted = set(distributions(package))
    for pattern in pin_files:
        for path in sorted(checkout.glob(pattern)):
            if not path.is_file():
                continue
            for pin in requirements_in(path):
                if pin.name in wanted and pin.exact is not None:
                    return pin
    return None


def required_pin(
    checkout: Path,
    file: str,
    package: str,
    *,
    needed_by: str = "the image era key",
    fix: str = "image.pins in perfgate.yaml",
) -> str:
    """A cache/era-key input: the declared version of ``package`` in ``file``, or ConfigError.

    An exact pin gives its version; a range gives the range as declared (it still changes when
    the declaration does). A missing file, an unreadable file or an undeclared package fails:
    a key that silently stopped following the pin would reuse what another version built.
    ``needed_by`` and ``fix`` say, in the error, what needs the pin and where it is declared.
    """
    path = checkout / file
    if not path.is_file():
        raise ConfigError(
            f"{path}: not found; {needed_by} reads the {package} pin from it "
            f"(fix {fix} or restore the file)"
        )
    wanted = canonicalize_name(package)
    declared = [pin for pin in requirements_in(path) if pin.name == wanted]
    if not declared:
        raise ConfigError(
            f"{path}: declares no requirement for {package!r}; {needed_by} needs it "
            f"(pin it there, or fix {fix})"
        )
    pin = next((p for p in declared if p.exact), declared[0])
    if pin.exact:
        return pin.exact
    if not pin.spec:
        raise ConfigError(f"{path}: {package!r} has no version specifier; {needed_by} needs one")
    return pin.spec


def same_version(installed: str, pinned: str) -> bool:
    """Equal versions (PEP 440); a local segment (``+cu128``) counts only when both carry one."""
    try:
        a, b = Version(installed.strip()), Version(pinned.strip())
    except InvalidVersion:
        return installed.strip().lower() == pinned.strip().lower()
    both_local = a.local is not None and b.local is not None
    return a == b if both_local else Version(a.public) == Version(b.public)


def assess(
    log: str, versions: Mapping[str, str], checkout: Path, pin_files: Iterable[str]
) -> StaleImage | None:
    """Evidence that a crash came from a stale image, or None when any part is missing."""
    missing = missing_symbol(log)
    if missing is None:
        return None
    installed = installed_version(missing.package, versions, log)
    if installed is None:
        return None
    try:
        pin = pinned_version(checkout, missing.package, pin_files)
    except ConfigError:
        return None  # an unreadable pin file is no evidence either way
    if pin is None or pin.exact is None or same_version(installed, pin.exact):
        return None
    return StaleImage(
        package=missing.package, symbol=missing.symbol, installed=installed, pinned=pin.exact
    )
