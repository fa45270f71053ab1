"""pyproject.toml declares what perfgate needs, once: the build backend that reads its
license, every distribution the package imports, and dependency groups that are used."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from types import ModuleType
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import ROOT

PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(texts: list[Any]) -> list[Requirement]:
    """The requirement strings of a list, leaving out ``{include-group = ...}`` entries."""
    return [Requirement(text) for text in texts if isinstance(text, str)]


def test_the_spdx_license_string_has_a_backend_that_reads_it_and_a_license_file() -> None:
    """``license = "Apache-2.0"`` (an SPDX expression, PEP 639) needs setuptools 77."""
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    setuptools = next(
        r for r in _requirements(PYPROJECT["build-system"]["requires"]) if r.name == "setuptools"
    )
    assert not setuptools.specifier.contains("76.1"), setuptools
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice


def _imported_top_level_modules() -> set[str]:
    found = set()
    for path in (ROOT / "perfgate").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"perfgate", "__future__"}


def test_every_distribution_the_package_imports_is_declared() -> None:
    """A module perfgate imports comes from a distribution it depends on (or an extra of
    it), never one that merely arrives with another dependency."""
    project = PYPROJECT["project"]
    declared = {canonicalize_name(r.name) for r in _requirements(project["dependencies"])}
    for extra in project["optional-dependencies"].values():
        declared |= {canonicalize_name(r.name) for r in _requirements(extra)}
    providers = importlib.metadata.packages_distributions()
    undeclared = {
        module: providers.get(module, ["(not installed)"])
        for module in sorted(_imported_top_level_modules())
        if not declared & {canonicalize_name(name) for name in providers.get(module, [])}
    }
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_every_dependency_group_is_installed_by_a_session(noxfile: ModuleType) -> None:
    groups = PYPROJECT["dependency-groups"]
    installed = {g for env in vars(noxfile).values() if isinstance(env, noxfile.Environment)
                 for g in env.groups}  # fmt: skip
    included = {
        entry["include-group"]
        for entries in groups.values()
        for entry in entries
        if isinstance(entry, dict)
    }
    assert set(groups) - installed - included == set()


def test_no_requirement_is_listed_in_two_dependency_groups() -> None:
    """Groups that share tools include one group of them (``{include-group = ...}``), so
    a pin is written once."""
    seen: dict[str, str] = {}
    twice = []
    for group, entries in PYPROJECT["dependency-groups"].items():
        for requirement in _requirements(entries):
            name = canonicalize_name(requirement.name)
            if name in seen:
                twice.append(f"{requirement.name} in {seen[name]} and {group}")
            seen.setdefault(name, group)
    assert not twice
