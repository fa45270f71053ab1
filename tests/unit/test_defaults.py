"""Every default is stated once: no two dataclasses of perfgate declare a default of the same
name with a literal number, unless the name means different things in them (listed below).

A setting perfgate.yaml can change has its default in ``perfgate.config``; a judge policy
built from it takes the config's default (``OraclePolicy.k_warn``), not a copy of its value.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.paths import ROOT

PACKAGE = ROOT / "perfgate"

#: Names declared with a literal default in several classes because they mean different
#: things there: the classes, and why.
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "allocations": (
        frozenset({"QualifyPolicy", "BucketNoise"}),
        "the allocations a qualification takes; the allocations a calibration was measured on",
    ),
    "samples": (
        frozenset({"QualifyPolicy", "BucketNoise"}),
        "the samples a qualification takes of each allocation; those a calibration holds",
    ),
    "attempts": (
        frozenset({"Sample", "ApiRetryPolicy"}),
        "the attempts a stored sample took; the tries a GitHub API call may take",
    ),
    "confidence": (
        frozenset({"AlertsSpec", "CalibratedPolicy"}),
        "the interval a post-merge alert reports (alerts.confidence); the interval a pull "
        "request's verdict reports, which perfgate.yaml does not set",
    ),
    "rank_rate": (
        frozenset({"AlertsSpec", "CalibratedPolicy"}),
        "the alert rule's rank line, per bucket-push (alerts.rank_rate); the window rule's, "
        "per bucket run, which perfgate.yaml does not set",
    ),
    "min_runs": (
        frozenset({"BaselinePolicy", "AlertsSpec"}),
        "the runs a pull request's window needs; the runs an alert's level needs",
    ),
    "max_pairs": (
        frozenset({"Bucket", "PairedRecord"}),
        "a bucket's limit on pairs; a result's record of the limit it ran with (0: no pairs)",
    ),
    "launches": (
        frozenset({"PairedSample", "SpendLine"}),
        "the launches behind one paired figure; launches counted on a bill",
    ),
    "runs": (
        frozenset({"RunnerModel", "RunHistory"}),
        "counts of runs in a fitted model and a window's history, from none",
    ),
    "wall_s": (
        frozenset({"PairedSample", "PairedRecord", "SampleReading"}),
        "measured durations of records, from none",
    ),
}


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id == "dataclass":
            return True
    return False


def _literal_number(value: ast.expr | None) -> bool:
    """A number written out: ``3``, ``-1.5``, or ``field(default=0.1)``."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, int | float)
        and not isinstance(value.value, bool)
    )


def literal_defaults(root: Path) -> dict[str, dict[str, str]]:
    """Field name -> {class: where} for each dataclass field under ``root`` whose default
    is a number written out."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or not _is_dataclass(node):
                continue
            for statement in node.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and _literal_number(statement.value)
                ):
                    where = f"{path.relative_to(root.parent)}:{statement.lineno}"
                    found[statement.target.id][node.name] = where
    return found


def test_no_default_is_declared_in_two_places() -> None:
    """A number is the default of a name in one class; another class that needs the same
    default refers to it (and the allow-list names only the classes it still needs)."""
    found = literal_defaults(PACKAGE)
    repeated = {
        name: classes
        for name, classes in found.items()
        if len(classes) > 1 and frozenset(classes) != ALLOWED.get(name, (frozenset(),))[0]
    }
    assert not repeated, (
        "defaults declared in several classes (refer to one instead): "
        + "; ".join(
            f"{name} in " + ", ".join(f"{c} ({w})" for c, w in sorted(classes.items()))
            for name, classes in sorted(repeated.items())
        )
    )
    stale = {name for name, (classes, _) in ALLOWED.items() if set(found.get(name, {})) != classes}
    assert not stale, f"allow-list entries that no longer match the code: {sorted(stale)}"


def test_the_scan_finds_a_default_declared_twice(tmp_path: Path) -> None:
    """The scan sees literal defaults (negative ones and field(default=...) too), and not a
    default that refers to another class's."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text(
        "from dataclasses import dataclass, field\n"
        "@dataclass(frozen=True)\nclass Spec:\n    min_samples: int = 5\n    shift: float = -1.0\n"
        "@dataclass\nclass Policy:\n    min_samples: int = Spec.min_samples\n"
        "    shift: float = field(default=-1.0)\n    name: str = 'x'\n    on: bool = True\n",
        encoding="utf-8",
    )
    found = literal_defaults(package)
    assert set(found["min_samples"]) == {"Spec"}
    assert set(found["shift"]) == {"Spec", "Policy"}
    assert "name" not in found and "on" not in found
