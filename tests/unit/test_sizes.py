"""The package stays readable in pieces: no module over 500 lines unless its docstring says
why ("... 500 lines ..."), no function over 100 lines, none taking more than 8 parameters.

A dataclass's generated constructor is not a function here; ``self`` and ``cls`` are not
parameters a reader has to hold.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.paths import ROOT

PACKAGE = ROOT / "perfgate"
MODULE_LINES = 500
FUNCTION_LINES = 100
PARAMETERS = 8


def _modules() -> Iterator[tuple[Path, ast.Module, int]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        yield path.relative_to(ROOT), ast.parse(text), text.count("\n")


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = function.args
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(named) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (bool(named) and named[0].arg in ("self", "cls"))


def test_a_module_over_500_lines_says_why() -> None:
    unexplained = [
        f"{path} ({lines} lines)"
        for path, tree, lines in _modules()
        if lines > MODULE_LINES and "500 lines" not in (ast.get_docstring(tree) or "")
    ]
    assert unexplained == []


def test_no_function_is_over_100_lines() -> None:
    long = [
        f"{path}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
        for path, tree, _ in _modules()
        for f in _functions(tree)
        if f.end_lineno is not None and f.end_lineno - f.lineno + 1 > FUNCTION_LINES
    ]
    assert long == []


def test_no_function_takes_more_than_8_parameters() -> None:
    wide = [
        f"{path}:{f.lineno} {f.name} ({_parameters(f)} parameters)"
        for path, tree, _ in _modules()
        for f in _functions(tree)
        if _parameters(f) > PARAMETERS
    ]
    assert wide == []
