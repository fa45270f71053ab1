"""What perfgate.yaml may hold, checked once so no later step meets bad input (R14).

Values no later step can take (non-finite numbers, control characters, workflow
expressions), names that must be safe as branches, paths, images and placeholders, and
the checks across fields of the gate, qualification, image and matrix blocks. A bucket
entry's own checks run as it is expanded (``expand``).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from perfgate.config.bucket import argv_of
from perfgate.config.image import IMAGE_PLACEHOLDERS, PER_COMMIT_PLACEHOLDERS, ROLL_PLACEHOLDERS
from perfgate.config.messages import fail, kind, short
from perfgate.config.policy import AlertsSpec, GatePolicy, OraclePolicy, QualifyPolicy
from perfgate.util.yamlfile import KeyPath, YamlDocument, format_key_path

#: GitHub runs at most 256 jobs from one matrix; the bench job has one per bucket.
MAX_BUCKETS = 256

# An exact version, or a git URL ending in a full commit SHA; nothing before or after.
_PINNED_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*\s*===?\s*[A-Za-z0-9.+!_-]+"
    r"|[A-Za-z0-9][A-Za-z0-9._-]*\s*@\s*git\+https://[^\s@]+@[0-9a-f]{40}"
)


# Branch names (git's rules, minus what GitHub's filter syntax gives a meaning: + ? [ ] !).
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_BRANCH = 255


def branch_problem(value: str, *, pattern: bool) -> str | None:
    """Why ``value`` is no usable branch name (or, with ``pattern``, prefix glob); else None.

    A pattern is a branch name, optionally ending in ``*`` or ``**`` (every branch under a
    prefix): the one glob both git's ``fnmatch`` and a workflow ``if:`` can express.
    """
    name = value
    if pattern:
        name = value.removesuffix("**") if value.endswith("**") else value.removesuffix("*")
        if not name and value in ("*", "**"):
            return None
    glob = " optionally ending in '*' or '**'" if pattern else ""
    if len(value) > MAX_BRANCH:
        return f"is {len(value)} characters long; git allows at most {MAX_BRANCH}"
    if not _BRANCH.fullmatch(name):
        return (
            f"is not a branch name{' pattern' if pattern else ''}: use letters, digits, "
            f"'.', '_', '-' and '/'{glob}, starting with a letter, digit or '_'"
        )
    parts = name.split("/")
    last = parts[-1] if not (pattern and name.endswith("/")) else parts[-2]
    if (
        ".." in name
        or "//" in name
        or any(part.startswith(".") for part in parts)
        or last.endswith((".lock", "."))
        or (name.endswith("/") and not pattern)
    ):
        return (
            "is not a valid git branch name (no '..', '//', component starting with '.', "
            "or ending in '/', '.' or '.lock')"
        )
    return None


def path_problem(value: str, *, what: str) -> str | None:
    """Why ``value`` is no path (or glob) relative to the repository root; else None."""
    if value.startswith(("/", "./")) or value in (".", ".."):
        return (
            f"{what} must be relative to the repository root, without a leading '/' or './' "
            f"(write {value.lstrip('./') or 'dir/**'!r})"
        )
    *inner, last = value.split("/")  # a trailing '/' (everything below) leaves last empty
    if "\\" in value or last in (".", "..") or any(p in ("", ".", "..") for p in inner):
        return f"{what} must name a path inside the repository: no '..', '.', '//' or '\\'"
    return None


# An image reference as docker reads one (the distribution project's grammar): a name of
# lower-case path components, optionally behind a registry host[:port], then an optional
# :tag and @digest. Nothing else reaches docker as an image, so no value can read as an
# option or carry a space or a line break.
_IMAGE_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_HOST = (
    r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
    r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
_IMAGE_NAME = re.compile(
    rf"(?:{_IMAGE_HOST}/)?{_IMAGE_PATH_COMPONENT}(?:/{_IMAGE_PATH_COMPONENT})*", re.ASCII
)
_IMAGE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
_IMAGE_DIGEST = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}", re.ASCII
)
_IMAGE_NAME_MAX = 255


def image_reference_problem(value: str) -> str | None:
    """Why ``value`` is no image reference (``[host[:port]/]name[:tag][@digest]``); else None."""
    rest, _, digest = value.partition("@")
    # A ':' after the last '/' starts the tag; one before it is a registry's port.
    name, colon, tag = rest.rpartition(":") if ":" in rest.rpartition("/")[2] else (rest, "", "")
    if not _IMAGE_NAME.fullmatch(name):
        return (
            "is not an image reference: write [registry[:port]/]name[:tag][@sha256:digest], "
            "the name in lower-case letters, digits and '.', '_', '-' between them (never "
            "'-' first, no spaces)"
        )
    if len(name) > _IMAGE_NAME_MAX:
        return f"is not an image reference: its name is over {_IMAGE_NAME_MAX} characters"
    if colon and not _IMAGE_TAG.fullmatch(tag):
        return "is not an image reference: a tag is 1-128 letters, digits, '_', '.' or '-'"
    if "@" in value and not _IMAGE_DIGEST.fullmatch(digest):
        return "is not an image reference: a digest is algorithm:hex, such as sha256:<64 hex>"
    return None


def placeholder_problem(template: str, allowed: Iterable[str]) -> str | None:
    """Why ``template`` cannot be filled with ``allowed`` placeholders; else None."""
    known = sorted(allowed) if isinstance(allowed, frozenset | set) else list(allowed)
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in
                  string.Formatter().parse(template) if name is not None]  # fmt: skip
    except ValueError as exc:
        return f"has an unbalanced brace ({exc}); write {{{{ and }}}} for a literal brace"
    for name, spec, conversion in fields:
        if name not in known or spec or conversion:
            return (
                f"placeholder {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is unknown; use one of "
                + ", ".join("{" + k + "}" for k in known)
            )
    return None


# -- values that no later step can handle (R14) ------------------------------------------

# C0/C1 controls and the Unicode line and paragraph separators: nothing that ends a line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Program arguments may be multi-line scripts (python -c ...); only NUL cannot be passed.
_ARGV_KEYS = frozenset({"argv", "extra_args", "executable", "probe", "docker"})
MAX_TEXT = 4096


def _walk(value: Any, key_path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
    """Every key (as its path) and every value of a YAML document, depth first, no recursion."""
    stack: list[tuple[KeyPath, Any]] = [(key_path, value)]
    while stack:
        here, item = stack.pop()
        yield here, item
        if isinstance(item, dict):
            stack.extend(((*here, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            indexed = list(enumerate(item))
            stack.extend(((*here, index), child) for index, child in reversed(indexed))


def check_values(document: YamlDocument) -> None:
    """Refuse what no later step can take: non-finite numbers, odd keys, unsafe text."""
    for key_path, value in _walk(document.data, ()):
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    fail(
                        document,
                        key_path,
                        f"key {key!r} is {kind(key)}; keys are names, so quote it",
                    )
                _check_text(document, (*key_path, key), key, is_key=True)
        elif isinstance(value, float) and not math.isfinite(value):
            fail(
                document,
                key_path,
                f"{value} is not a finite number; write an ordinary number (no .nan or .inf)",
            )
        elif isinstance(value, str):
            _check_text(document, key_path, value, is_key=False)


def _check_text(document: YamlDocument, key_path: KeyPath, text: str, *, is_key: bool) -> None:
    what = "key" if is_key else "value"
    if "${{" in text:
        fail(
            document,
            key_path,
            f"{what} {short(text)} contains '${{{{', which GitHub would evaluate as an "
            "expression in a rendered workflow; remove it (perfgate's placeholders are {name})",
        )
    argv = any(part in _ARGV_KEYS for part in key_path if isinstance(part, str))
    control = re.search(r"\x00", text) if argv else _CONTROL.search(text)
    if control:
        fail(
            document,
            key_path,
            f"{what} {short(text)} contains the control character "
            f"U+{ord(control.group()):04X}; names, branches, labels and paths are one line "
            "of printable text",
        )
    if len(text) > MAX_TEXT and not argv:
        fail(
            document,
            key_path,
            f"{what} is {len(text)} characters long; at most {MAX_TEXT} are allowed",
        )


def check_bucket_count(document: YamlDocument, count: int) -> None:
    """At most MAX_BUCKETS buckets: the bench job has one GitHub matrix job per bucket."""
    if count > MAX_BUCKETS:
        fail(
            document,
            ("buckets",),
            f"{count} buckets, over GitHub's limit of {MAX_BUCKETS} jobs in one matrix; "
            "split the matrix into several configs or drop buckets",
        )


def check_unique_id(
    document: YamlDocument, seen: dict[str, KeyPath], bucket_id: str, here: KeyPath
) -> None:
    """Each task/backend pair is declared once; ``seen`` records where each id was first."""
    if bucket_id in seen:
        first = seen[bucket_id]
        line = document.lines.get(first)
        fail(
            document,
            here,
            f"duplicate bucket id {bucket_id!r} (first declared at "
            f"{format_key_path(first)}{f', line {line}' if line else ''}); "
            "each task/backend pair may appear once, so remove one of them",
        )
    seen[bucket_id] = here


def check_matrix(document: YamlDocument, count: int) -> None:
    """The expanded matrix has at least one bucket and fits one GitHub matrix."""
    if not count:
        fail(document, ("buckets",), "the matrix is empty; declare at least one bucket")
    check_bucket_count(document, count)


def check_gate_block(document: YamlDocument, raw: Mapping[str, Any]) -> None:
    """What the ``gate`` block says before it is read: a calibration file inside the tree,
    and a confirmation threshold no smaller than the minimum drop."""
    calibration = raw.get("calibration")
    if calibration is not None:
        # Relative to perfgate.yaml's directory, which is the repository root of a
        # rendered site; nothing outside the tree is read.
        problem = path_problem(calibration, what="gate.calibration")
        if problem:
            fail(document, ("gate", "calibration"), problem)
    confirm_drop = raw.get("confirm_drop_pct")
    minimum = raw.get("oracle", {}).get("min_drop_pct", OraclePolicy.min_drop_pct)
    if confirm_drop is not None and confirm_drop < minimum:
        fail(
            document,
            ("gate", "confirm_drop_pct"),
            f"confirm_drop_pct ({confirm_drop:g}) is under oracle.min_drop_pct "
            f"({minimum:g}): a drop too small to BLOCK cannot be worth "
            "confirming; raise it to at least the minimum",
        )


def check_gate(document: YamlDocument, gate: GatePolicy) -> None:
    """The gate's fields agree with each other, and its branches and remote are usable."""
    for low, high in (("min_samples", "max_samples"), ("min_runs", "max_runs")):
        if getattr(gate.baseline, low) > getattr(gate.baseline, high):
            fail(
                document,
                ("gate", "baseline", low),
                f"{low} ({getattr(gate.baseline, low)}) exceeds {high} "
                f"({getattr(gate.baseline, high)}); raise {high} or lower {low}",
            )
    if gate.oracle.k_warn > gate.oracle.k_block:
        fail(
            document,
            ("gate", "oracle", "k_warn"),
            f"k_warn ({gate.oracle.k_warn:g}) exceeds k_block ({gate.oracle.k_block:g}), which "
            "would put the block line inside the warn line; make k_block >= k_warn",
        )
    for key in ("target_branches", "protected_branches"):
        for index, value in enumerate(getattr(gate, key)):
            if problem := branch_problem(value, pattern=True):
                fail(document, ("gate", key, index), f"{value!r} {problem}")
    if problem := branch_problem(gate.baseline.branch, pattern=False):
        fail(document, ("gate", "baseline", "branch"), f"{gate.baseline.branch!r} {problem}")
    if not _NAME.fullmatch(gate.baseline.remote):
        # A remote starting with '-' would reach git as an option.
        fail(
            document,
            ("gate", "baseline", "remote"),
            f"{gate.baseline.remote!r} is not a git remote name; use letters, digits, '.', "
            "'_' and '-', starting with a letter or digit (e.g. origin)",
        )


def check_qualify(document: YamlDocument, policy: QualifyPolicy) -> None:
    """A pool can qualify: its allocations can land on ``min_runners`` runners (R15)."""
    if policy.min_runners > policy.allocations:
        fail(
            document,
            ("qualify", "min_runners"),
            f"min_runners ({policy.min_runners}) exceeds allocations ({policy.allocations}): "
            "each allocation lands on one runner, so the pool could never qualify; raise "
            "allocations or lower min_runners",
        )


def check_alerts(document: YamlDocument, alerts: AlertsSpec) -> None:
    """A level can be fitted: min_level_runs <= min_runs <= window_runs (R18)."""
    for low, high in (("min_level_runs", "min_runs"), ("min_runs", "window_runs")):
        if getattr(alerts, low) > getattr(alerts, high):
            fail(
                document,
                ("alerts", low),
                f"{low} ({getattr(alerts, low)}) exceeds {high} ({getattr(alerts, high)}), so "
                f"no level could ever be fitted and nothing alerted; raise {high} or lower {low}",
            )


def check_perfgate_source(document: YamlDocument, source: str | None) -> None:
    """``workflows.perfgate_source`` pins the perfgate that rendered CI jobs install."""
    if source is not None and not _PINNED_REQUIREMENT.fullmatch(source):
        fail(
            document,
            ("workflows", "perfgate_source"),
            f"{source!r} is not pinned; CI must install a fixed perfgate: use "
            "'perfgate==X.Y.Z' or 'perfgate @ git+https://HOST/OWNER/perfgate@<40-hex commit>'",
        )


def check_task_aliases(document: YamlDocument, data: Mapping[str, Any]) -> None:
    """A task's aliases are its own other ids: per bucket entry, never another entry's task."""
    if "task_aliases" in data.get("defaults", {}).get("isaaclab", {}):
        fail(
            document,
            ("defaults", "isaaclab", "task_aliases"),
            "task aliases are one task's other ids; declare them on that task's bucket entry",
        )
    tasks = {entry["task"]: index for index, entry in enumerate(data["buckets"])}
    claimed: dict[str, str] = {}
    for index, entry in enumerate(data["buckets"]):
        aliases = entry.get("isaaclab", {}).get("task_aliases", [])
        for position, alias in enumerate(aliases):
            here = ("buckets", index, "isaaclab", "task_aliases", position)
            if alias in tasks:
                owner = f"the task of buckets[{tasks[alias]}]"
                if alias == entry["task"]:
                    owner = "this entry's own task"
                fail(document, here, f"{alias!r} is {owner}; an alias is another id of this task")
            if claimed.setdefault(alias, entry["task"]) != entry["task"]:
                fail(
                    document,
                    here,
                    f"{alias!r} is already an alias of {claimed[alias]!r}; an id names one task",
                )


# -- the image block (R11) ---------------------------------------------------------------


def check_image(document: YamlDocument, raw: Mapping[str, Any]) -> None:
    """The ``image`` block: era key inputs, paths inside the tree, templates that fill to
    image references, and the era roll's templates and secrets (R11, R14)."""
    if raw.get("env_keys") and "env_file" not in raw:
        fail(
            document, ("image", "env_keys"), "env_keys needs env_file, the file they are read from"
        )
    if "per_commit" not in raw and "tags" not in raw:
        fail(
            document,
            ("image",),
            "the image block needs tags (the image per target branch, with era key inputs) "
            "or per_commit (the image your CI builds per commit)",
        )
    if "tags" in raw and not (raw.get("env_keys") or raw.get("files") or raw.get("pins")):
        fail(
            document,
            ("image",),
            "the era key needs inputs: set env_file with env_keys, files, or pins",
        )
    for key in ("env_file", "manifest"):
        problem = path_problem(raw[key], what=key) if key in raw else None
        if problem:
            fail(document, ("image", key), problem)
    for index, name in enumerate(raw.get("files", ())):
        if problem := path_problem(name, what="an image file"):
            fail(document, ("image", "files", index), problem)
    for index, pin in enumerate(raw.get("pins", ())):
        if problem := path_problem(pin["file"], what="a pin file"):
            fail(document, ("image", "pins", index, "file"), problem)
    for pattern, template in raw.get("tags", {}).items():
        if problem := branch_problem(pattern, pattern=True):
            fail(document, ("image", "tags", pattern), f"{pattern!r} {problem}")
        check_image_template(document, ("image", "tags", pattern), template, IMAGE_PLACEHOLDERS)
    if "per_commit" in raw:
        check_image_template(document, ("image", "per_commit"), raw["per_commit"],
                             PER_COMMIT_PLACEHOLDERS)  # fmt: skip
    build = raw.get("build")
    if build:
        check_image_template(document, ("image", "build", "image"), build["image"],
                             IMAGE_PLACEHOLDERS)  # fmt: skip
        for index, arg in enumerate(build["argv"]):
            check_placeholders(document, ("image", "build", "argv", index), arg,
                               IMAGE_PLACEHOLDERS | {"image"})  # fmt: skip
    if "roll" in raw:
        _check_image_roll(document, raw["roll"])


def _check_image_roll(document: YamlDocument, raw: Mapping[str, Any]) -> None:
    where: KeyPath = ("image", "roll")
    images: list[tuple[KeyPath, str]] = [
        ((*where, "build", "image"), raw["build"]["image"]),
        *(((*where, "refs", i), ref) for i, ref in enumerate(raw["refs"])),
    ]
    for key_path, template in images:
        check_image_template(document, key_path, template, ROLL_PLACEHOLDERS)
    templates: list[tuple[KeyPath, str, frozenset[str]]] = [
        ((*where, "build", "argv", i), arg, ROLL_PLACEHOLDERS | {"image"})
        for i, arg in enumerate(raw["build"]["argv"])
    ]
    for key in ("tag", "push"):
        templates += [
            ((*where, key, i), arg, ROLL_PLACEHOLDERS | {"image", "ref"})
            for i, arg in enumerate(argv_of(raw.get(key, ())))
        ]
    for key_path, template, known in templates:
        check_placeholders(document, key_path, template, known)
    for index, name in enumerate(raw.get("secrets", ())):
        if name.upper().startswith("GITHUB_"):
            fail(
                document,
                (*where, "secrets", index),
                f"{name!r}: GitHub reserves the GITHUB_ prefix and the job token is passed "
                "already; name only the registry's secrets",
            )


def check_placeholders(
    document: YamlDocument, key_path: KeyPath, template: str, known: Iterable[str]
) -> None:
    """A template's ``{name}`` placeholders must all be known ones (R14)."""
    if problem := placeholder_problem(template, known):
        fail(document, key_path, f"{short(template)} {problem}")


# What an image template's placeholders stand for when it is checked: a branch and an era
# key as a run fills them (a real branch may still make a bad tag: the run checks again).
_IMAGE_EXAMPLE_VALUES = {
    "branch": "main",
    "branch_slug": "main",
    "branch_leaf": "main",
    "era_key": "0123456789abcdef",
    "era_short": "0123456789ab",
    "sha": "0123456789abcdef0123456789abcdef01234567",
    "sha7": "0123456",
}


def check_image_template(
    document: YamlDocument, key_path: KeyPath, template: str, known: Iterable[str]
) -> None:
    """An image template names known placeholders and, filled, an image reference (R14)."""
    check_placeholders(document, key_path, template, known)
    if problem := image_reference_problem(template.format(**_IMAGE_EXAMPLE_VALUES)):
        fail(document, key_path, f"{short(template)} {problem}")
