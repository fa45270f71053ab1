"""The package tree reads as the flow (docs/design.md "Layout"): no import runs back up it.

run -> judge -> baselines -> report -> github: the judge is pure and never reads the
store; ci reads only the config; the shared vocabulary at the top imports no stage; cli
may import anything. Every import is read, including those inside functions and under
TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "perfgate"
SHARED = "shared"
# Folders of the shared vocabulary, not stages: one concept grown into several modules.
SHARED_PACKAGES = frozenset({"config", "util"})
# What each stage may import besides itself and the shared vocabulary.
EARLIER: dict[str, set[str]] = {
    SHARED: set(),
    "run": set(),
    "judge": {"run"},
    "baselines": {"run", "judge"},
    "report": {"run", "judge", "baselines"},
    "github": {"run", "judge", "baselines", "report"},
    "ci": set(),
    "cli": {"run", "judge", "baselines", "report", "github", "ci"},
}


def _stage(module: str) -> str:
    """``perfgate.judge.gate`` -> ``judge``; a top-level module (or a shared package's) is
    shared vocabulary."""
    parts = module.split(".")
    if module == "perfgate.__main__":
        return "cli"  # the entry point is the command line's
    if len(parts) > 1 and parts[1] in SHARED_PACKAGES:
        return SHARED
    if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
        return parts[1]
    return SHARED


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every perfgate module (or package attribute) that ``path`` imports, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("perfgate")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "perfgate":
                found += [(node.lineno, f"perfgate.{a.name}") for a in node.names]
            elif node.module.startswith("perfgate."):
                found.append((node.lineno, node.module))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_stage_folder_is_known() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - SHARED_PACKAGES == set(EARLIER) - {SHARED}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_runs_back_up_the_flow(path: Path) -> None:
    stage = _stage(_module_name(path))
    allowed = {SHARED, stage} | EARLIER[stage]
    late = [
        f"line {line}: {name} ({_stage(name)})"
        for line, name in _imports(path)
        if name != "perfgate" and _stage(name) not in allowed
    ]
    assert not late, f"{path.relative_to(ROOT)} ({stage}) imports later stages: {late}"


def test_the_rule_catches_a_backward_import(tmp_path: Path) -> None:
    # The check itself must be able to fail: a run/ module importing judge/ is caught.
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from perfgate.judge.oracle import judge\n")
    names = [name for _, name in _imports(bad)]
    assert names == ["perfgate.judge.oracle"]
    assert _stage(names[0]) not in {SHARED, "run"} | EARLIER["run"]


def test_the_judge_may_not_read_the_store(tmp_path: Path) -> None:
    # The judge is pure: a judge/ module importing baselines/ (the store) is caught.
    bad = tmp_path / "bad.py"
    bad.write_text("from perfgate.baselines.store import BaselineStore\n")
    (name,) = [name for _, name in _imports(bad)]
    assert _stage(name) == "baselines"
    assert _stage(name) not in {SHARED, "judge"} | EARLIER["judge"]
