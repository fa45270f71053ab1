"""A static read of an Isaac Lab checkout: the flags its benchmark parses, the task ids its
``source/`` registers and the preset names it declares, each with what the read could not see.

Nothing is imported or run: the hosted pre-flight (``validate --checkout``) reads a pull
request's checkout before any GPU minute is spent. What the read sees for certain may fail a
launch; what it cannot see (an id computed in a loop, flags added under computed names) is
reported as such and never fails one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# Test packages are not imported by `import isaaclab_tasks`: what they register or declare
# never runs. (Helpers are looked for there too: older benchmark code lived in isaaclab.test.)
_TEST_DIRS = frozenset({"test", "tests"})
# The names a helper that receives the parser is looked for in, and how deep.
_HELPER_ROOTS = ("source", "scripts")
_HELPER_DEPTH = 4


@dataclass(frozen=True, kw_only=True)
class ParserFlags:
    """The option strings a benchmark's argparse parser defines, as far as the read sees."""

    defined: frozenset[str]
    # Why a flag missing from ``defined`` may still be parsed; None when the read is sure.
    unread: str | None = None


@dataclass(frozen=True, kw_only=True)
class Sources:
    """What the checkout's ``source/`` declares: registered task ids and preset names."""

    task_ids: frozenset[str]
    preset_names: frozenset[str]
    # f-string ids: (pattern, the id as written, file:line); each may register ids the read
    # cannot spell out.
    id_patterns: tuple[tuple[str, str, str], ...] = ()
    # gym.register calls whose id the read cannot see at all: (the id as written, file:line).
    opaque_ids: tuple[tuple[str, str], ...] = ()
    # The strings spelt in the files holding those calls: the ids a helper is handed.
    beside_opaque: frozenset[str] = frozenset()


def unread_ids(calls: Sequence[tuple[str, str]]) -> str:
    """``through gym.register(id=X) at a.py:5, b.py:9 and 2 more`` per spelling of the id."""
    by_id: dict[str, list[str]] = {}
    for written, where in calls:
        by_id.setdefault(written, []).append(where)
    parts = []
    for written, places in by_id.items():
        more = f" and {len(places) - 2} more" if len(places) > 2 else ""
        parts.append(f"through gym.register(id={written}) at {', '.join(places[:2])}{more}")
    return "; ".join(parts)


def _where(path: Path, root: Path, node: ast.AST) -> str:
    relative = path.relative_to(root) if path.is_relative_to(root) else path
    return f"{relative}:{getattr(node, 'lineno', '?')}"


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (SyntaxError, ValueError):
        return None


def python_files(root: Path, skip: frozenset[str] = frozenset()) -> Iterator[Path]:
    """The ``.py`` files under ``root`` outside directories named in ``skip``, sorted."""
    for path in sorted(root.rglob("*.py")):
        if not skip.intersection(path.relative_to(root).parts[:-1]):
            yield path


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


# --------------------------------------------------------------------------------------
# argparse flags
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Reading:
    """What one function body (or module) adds to a parser, and whom it hands the parser."""

    flags: frozenset[str]
    computed: tuple[str, ...]
    calls: int
    handed: frozenset[str]


def _parser_names(scope: ast.AST) -> set[str]:
    """Names that hold an ArgumentParser (or a group of one) in ``scope``."""
    names = {"parser"}
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _callee(node.value.func) in ("ArgumentParser", "add_argument_group")
        ):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif (
            isinstance(node, ast.arg)
            and node.annotation is not None
            and ast.unparse(node.annotation).endswith("ArgumentParser")
        ):
            names.add(node.arg)
    return names


def _read_parser(scope: ast.AST, path: Path, root: Path, first_param: str | None) -> _Reading:
    """The literal options ``scope`` adds, where it adds computed ones, and the functions it
    passes a parser to (followed by name: a helper may add the benchmark's flags)."""
    holders = _parser_names(scope) | ({first_param} if first_param else set())
    flags: set[str] = set()
    computed: list[str] = []
    handed: set[str] = set()
    calls = 0
    for node in ast.walk(scope):
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node.func)
        if name == "add_argument":
            calls += 1
            literal = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if len(literal) != len(node.args) or not all(isinstance(v, str) for v in literal):
                computed.append(_where(path, root, node))
            flags.update(v for v in literal if isinstance(v, str))
            continue
        passed = [*node.args, *(k.value for k in node.keywords)]
        if name and any(isinstance(a, ast.Name) and a.id in holders for a in passed):
            handed.add(name)
    return _Reading(
        flags=frozenset(flags), computed=tuple(computed), calls=calls, handed=frozenset(handed)
    )


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _helpers(checkout: Path, names: Iterable[str]) -> Iterator[tuple[Function, Path]]:
    """Every function of the checkout defined under one of ``names``."""
    wanted = set(names)
    markers = tuple(f"def {name}(" for name in wanted)
    for top in _HELPER_ROOTS:
        if not (checkout / top).is_dir():
            continue
        for path in python_files(checkout / top):
            text = path.read_text(encoding="utf-8", errors="replace")
            if not any(marker in text for marker in markers):
                continue
            tree = _parse(path)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, Function) and node.name in wanted:
                    yield node, path


def _quoted_flags(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"""["'](--\w+)["']""", text))


def parser_flags(
    checkout: Path, entry: Path, wanted: Collection[tuple[str, ...]] = ()
) -> ParserFlags:
    """The options the benchmark at ``entry`` parses: its own ``add_argument`` calls, and
    while one of ``wanted`` (each a flag or an era's alternatives) is still missing, those
    of the checkout's functions it hands its parser to (by name, a few levels deep).

    Functions outside the checkout (argparse, Hydra) are not read: in every era the
    runtime benchmark's own flags live in the checkout (entrypoints/runtime.py
    ``_parse_args``; scripts/benchmarks/runtime.py). A file that does not parse, or builds
    no parser the read can see, is read as text (the quoted flags it names), unsure.
    """
    text = entry.read_text(encoding="utf-8", errors="replace")
    tree = _parse(entry)
    if tree is None:
        return ParserFlags(defined=_quoted_flags(text), unread="it does not parse as Python")
    reading = _read_parser(tree, entry, checkout, None)
    flags, computed, calls = set(reading.flags), list(reading.computed), reading.calls
    pending, followed = set(reading.handed), set[str]()
    for _ in range(_HELPER_DEPTH):
        pending -= followed
        if not pending or all(flags.intersection(choices) for choices in wanted):
            break
        followed |= pending
        found = list(_helpers(checkout, pending))
        pending = set()
        for function, path in found:
            params = function.args.posonlyargs + function.args.args
            first = next((a.arg for a in params if a.arg not in ("self", "cls")), None)
            more = _read_parser(function, path, checkout, first)
            flags |= more.flags
            computed += more.computed
            calls += more.calls
            pending |= more.handed
    if not calls:
        unread = "it builds no argparse parser a read can see"
        return ParserFlags(defined=_quoted_flags(text), unread=unread)
    where = list(dict.fromkeys(computed))
    return ParserFlags(
        defined=frozenset(flags),
        unread=f"it adds options under computed names ({', '.join(where[:3])})" if where else None,
    )


# --------------------------------------------------------------------------------------
# Registered task ids and declared presets
# --------------------------------------------------------------------------------------


def _gym_register(func: ast.expr) -> bool:
    # gym.register / gymnasium.register / gymnasium.envs.registration.register
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "register"
        and ast.unparse(func.value).split(".")[0] in ("gym", "gymnasium")
    )


def _id_pattern(node: ast.JoinedStr) -> str:
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(re.escape(value.value))
        else:
            parts.append(".+")
    return "".join(parts)


def _around(tree: ast.Module, text: str, marker: str) -> Iterator[ast.AST]:
    """The nodes of the top-level statements whose lines hold ``marker`` (walking only
    those: a whole module's walk costs more than its parse)."""
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if marker in line]
    for statement in tree.body:
        end = statement.end_lineno or statement.lineno
        if any(statement.lineno <= n <= end for n in lines):
            yield from ast.walk(statement)


def _registrations(
    tree: ast.Module, text: str, path: Path, root: Path
) -> Iterator[tuple[str, str, str, str]]:
    """(kind, value, the id as written, where) of each registration: ``literal`` ids,
    ``pattern`` ids (an f-string) and ``opaque`` ones (a name, a call, ``**kwargs``)."""
    for node in _around(tree, text, "register("):
        if not isinstance(node, ast.Call):
            continue
        # gym.register, or register imported from gymnasium; other registries' register
        # (atexit, a config store) register nothing gym.make finds.
        gym = _gym_register(node.func)
        bare = isinstance(node.func, ast.Name) and node.func.id == "register"
        if not (gym or bare):
            continue
        given = next((k.value for k in node.keywords if k.arg == "id"), None)
        if given is None and gym and node.args:
            given = node.args[0]
        if given is None:
            # A gym.register without an id takes it from **kwargs.
            if gym and any(k.arg is None for k in node.keywords):
                yield "opaque", "", "**kwargs", _where(path, root, node)
            continue
        written, where = ast.unparse(given), _where(path, root, node)
        if isinstance(given, ast.Constant) and isinstance(given.value, str):
            yield "literal", given.value, written, where
        elif isinstance(given, ast.JoinedStr):
            yield "pattern", _id_pattern(given), written, where
        else:
            yield "opaque", "", written, where


def _strings(tree: ast.AST) -> set[str]:
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def preset_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """A preset declared as a PresetCfg field (``name: Cfg = ...``, ``name = ...``) or a
    keyword (``name=...``)."""
    return re.compile(r"\b(" + "|".join(sorted(names)) + r")\b\s*(?::|=(?!=))")


def scan_sources(checkout: Path, preset_names: Iterable[str]) -> Sources | None:
    """Task ids and the given preset names the checkout's ``source/`` declares; None
    without it."""
    root = checkout / "source"
    if not root.is_dir():
        return None
    probed = sorted(set(preset_names))
    declared = preset_pattern(probed)
    task_ids: set[str] = set()
    patterns: list[tuple[str, str, str]] = []
    opaque: list[tuple[str, str]] = []
    beside: set[str] = set()
    presets: set[str] = set()
    for path in python_files(root, _TEST_DIRS):
        text = path.read_text(encoding="utf-8", errors="replace")
        # Plain substring tests first: most files hold neither, and they are ten times faster.
        if "register(" in text and (tree := _parse(path)) is not None:
            for kind, value, written, where in _registrations(tree, text, path, checkout):
                if kind == "literal":
                    task_ids.add(value)
                elif kind == "pattern":
                    patterns.append((value, written, where))
                else:
                    opaque.append((written, where))
                    beside.update(_strings(tree))
        elif "register(" in text:
            opaque.append(("<a file that does not parse>", str(path.relative_to(checkout))))
        if any(name in text for name in probed):
            presets.update(declared.findall(text))
    return Sources(
        task_ids=frozenset(task_ids),
        preset_names=frozenset(presets),
        id_patterns=tuple(patterns),
        opaque_ids=tuple(opaque),
        beside_opaque=frozenset(beside),
    )
