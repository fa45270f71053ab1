"""A small INI-style parser: sections, ``key = value`` lines and comments."""

from __future__ import annotations


def tokenize(text: str) -> list[tuple[str, str, str]]:
    """Each meaningful line as ``(kind, name, value)``: a section or a key."""
    tokens = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            tokens.append(("section", line[1:-1].strip(), ""))
        else:
            key, _, value = line.partition("=")
            tokens.append(("key", key.strip(), value.strip()))
    return tokens


def parse(text: str) -> dict[str, dict[str, str]]:
    """Sections of ``text`` and their keys; keys before any section go under ``""``."""
    sections: dict[str, dict[str, str]] = {"": {}}
    current = sections[""]
    for kind, name, value in tokenize(text):
        if kind == "section":
            current = sections.setdefault(name, {})
        else:
            current[name] = value
    return sections


def dump(sections: dict[str, dict[str, str]]) -> str:
    """``sections`` written back as text that :func:`parse` reads the same."""
    lines = [f"{key} = {value}" for key, value in sections.get("", {}).items()]
    for name, keys in sections.items():
        if name:
            lines.append(f"[{name}]")
            lines += [f"{key} = {value}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"
