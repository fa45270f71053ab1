"""Load YAML into plain data while remembering the line of every key path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfgate.errors import ConfigError

KeyPath = tuple[str | int, ...]


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


def load_yaml(path: Path) -> YamlDocument:
    """Parse ``path``; syntax errors and duplicate keys raise ConfigError with a line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found; pass --config PATH to name another") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8"
        ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {exc.problem}") from None
    lines: dict[KeyPath, int] = {}
    data = None if node is None else _convert(node, (), lines, path)
    return YamlDocument(path=path, data=data, lines=lines)


def _convert(node: yaml.Node, key_path: KeyPath, lines: dict[KeyPath, int], path: Path) -> Any:
    lines[key_path] = node.start_mark.line + 1
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
            key = _scalar(key_node, path)
            if key in result:
                raise ConfigError(
                    f"{path}:{key_node.start_mark.line + 1}: "
                    f"{format_key_path((*key_path, key))}: duplicate key (first at line "
                    f"{lines[(*key_path, key)]}); keep one of them"
                )
            result[key] = _convert(value_node, (*key_path, key), lines, path)
            lines[(*key_path, key)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*key_path, i), lines, path) for i, item in enumerate(node.value)]
    return _scalar(node, path)


def _scalar(node: yaml.Node, path: Path) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    except yaml.MarkedYAMLError as exc:
        # For example a ``!!python/object`` tag, which the safe loader refuses.
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: not allowed in YAML here: "
            f"{' '.join(str(exc.problem).split())}; use plain strings, numbers, lists and mappings"
        ) from None
    finally:
        loader.dispose()
