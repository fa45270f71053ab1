"""Load YAML into plain data while remembering the line of every key path.

A configuration is small, so hostile ones are refused early and cheaply (R14): the file
size before it is read, the nesting depth and the node count *after alias expansion*
while the event stream is scanned, before a single node is built. An alias bomb ("billion
laughs") or a 20 MB matrix therefore costs milliseconds, not gigabytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfgate.errors import ConfigError

KeyPath = tuple[str | int, ...]

# perfgate.yaml files are a few kilobytes; GitHub's 256-job matrix fits well within these.
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 100_000

# What YAML itself refuses in a file (tab, newline and carriage return are fine).
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# libyaml's parser when PyYAML has it (it usually does): the same events, far faster.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, kw_only=True)
class YamlDocument:
    """Parsed YAML data plus the 1-based source line of each key path."""

    path: Path
    data: Any
    lines: dict[KeyPath, int]

    def where(self, key_path: KeyPath) -> str:
        """``file:line`` for the deepest known ancestor of ``key_path``."""
        for depth in range(len(key_path), -1, -1):
            line = self.lines.get(key_path[:depth])
            if line is not None:
                return f"{self.path}:{line}"
        return str(self.path)


def format_key_path(key_path: KeyPath) -> str:
    """Render ``("buckets", 0, "task")`` as ``buckets[0].task``."""
    text = ""
    for part in key_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def _read_text(path: Path, max_bytes: int) -> str:
    """The file's text; its size is checked before (and while) it is read."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ConfigError(
                f"{path}: {size} bytes, over the {max_bytes}-byte limit for a configuration; "
                "a perfgate.yaml is a few kilobytes, so check you passed the right file"
            )
        with path.open("rb") as handle:
            # read() is bounded too: a FIFO or a growing file reports no honest size.
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found; pass --config PATH to name another") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise ConfigError(f"{path}: over the {max_bytes}-byte limit for a configuration")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte {exc.start}); save the file as UTF-8"
        ) from None
    control = _RAW_CONTROL.search(text)
    if control:
        line = text.count("\n", 0, control.start()) + 1
        raise ConfigError(
            f"{path}:{line}: the control character U+{ord(control.group()):04X} is not "
            "allowed in YAML text; remove it"
        )
    return text


def _check_shape(text: str, path: Path) -> None:
    """Refuse deep nesting and alias expansion beyond the limits, from events alone."""
    depth = 0
    anchored: dict[str, int] = {}
    # One entry per open collection: [expanded nodes so far, its anchor].
    open_collections: list[list[Any]] = [[0, None]]
    for event in yaml.parse(text, Loader=_LOADER):
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"{path}:{line}: nested more than {MAX_DEPTH} levels deep; "
                    "perfgate.yaml needs fewer than ten"
                )
            open_collections.append([1, event.anchor])
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            size, anchor = open_collections.pop()
        elif isinstance(event, yaml.AliasEvent):
            size, anchor = anchored.get(str(event.anchor), 1), None
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = 1, event.anchor
        else:
            continue
        if anchor is not None:
            anchored[anchor] = size
        open_collections[-1][0] += size
        if open_collections[-1][0] > MAX_NODES:
            raise ConfigError(
                f"{path}:{line}: more than {MAX_NODES} values once aliases are expanded; "
                "a configuration this large is a mistake or an alias bomb"
            )


def load_yaml(path: Path, *, max_bytes: int = MAX_BYTES) -> YamlDocument:
    """Parse ``path``; syntax errors, duplicate keys and oversized input raise ConfigError."""
    text = _read_text(path, max_bytes)
    try:
        _check_shape(text, path)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        # libyaml reports some errors (a NUL byte, say) without a position.
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    lines: dict[KeyPath, int] = {}
    # One constructor for every scalar of the document (a loader each cost more than the
    # parse of a large matrix).
    loader = yaml.SafeLoader("")
    try:
        data = None if node is None else _convert(node, (), lines, path, loader)
    finally:
        loader.dispose()
    return YamlDocument(path=path, data=data, lines=lines)


_PLAIN_TAGS: dict[type[yaml.Node], str] = {
    yaml.MappingNode: "tag:yaml.org,2002:map",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
}


def _convert(
    node: yaml.Node,
    key_path: KeyPath,
    lines: dict[KeyPath, int],
    path: Path,
    loader: yaml.SafeLoader,
) -> Any:
    lines[key_path] = node.start_mark.line + 1
    plain = _PLAIN_TAGS.get(type(node))
    if plain is not None and node.tag != plain:
        # ``!!python/object/apply:...``, ``!!set``, ``!!omap``: nothing perfgate.yaml needs.
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: {format_key_path(key_path)}: the YAML tag "
            f"{node.tag!r} is not allowed; use plain strings, numbers, lists and mappings"
        )
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError(
                    f"{path}:{key_node.start_mark.line + 1}: {format_key_path(key_path)}: "
                    "a key must be a plain name, not a list or mapping"
                )
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConfigError(
                    f"{path}:{key_node.start_mark.line + 1}: {format_key_path(key_path)}: "
                    "YAML merge keys ('<<') are not supported; put shared settings under "
                    "'defaults'"
                )
            key = _scalar(key_node, path, loader)
            if key in result:
                raise ConfigError(
                    f"{path}:{key_node.start_mark.line + 1}: "
                    f"{format_key_path((*key_path, key))}: duplicate key (first at line "
                    f"{lines[(*key_path, key)]}); keep one of them"
                )
            result[key] = _convert(value_node, (*key_path, key), lines, path, loader)
            lines[(*key_path, key)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _convert(item, (*key_path, i), lines, path, loader) for i, item in enumerate(node.value)
        ]
    return _scalar(node, path, loader)


def _scalar(node: yaml.Node, path: Path, loader: yaml.SafeLoader) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except yaml.MarkedYAMLError as exc:
        # For example a ``!!python/object`` tag, which the safe loader refuses.
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: not allowed in YAML here: "
            f"{' '.join(str(exc.problem).split())}; use plain strings, numbers, lists and mappings"
        ) from None
