"""An untrusted verdict.json read for display: a figure, count, list or verdict that is not
what it claims reads as absent (or as the most severe verdict), and text is made inert."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfgate.judge.verdicts import Verdict

# Untrusted text (bucket ids, reasons, a fork's verdict.json) is made inert in one pass, so
# an escape is never escaped again, with the escapes Markdown itself defines: a backslash
# before punctuation that could start markup, entities for HTML. An underscore inside a
# word is never emphasis, so ``physx_rtx_renderer`` stays as it is. ``@`` gets a zero-width
# space so no mention or team ping survives (GitHub resolves mentions after decoding).
_MARKUP = re.compile(r"[\\`*\[\]|~#!&<>@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "@&#8203;"}
_AUTOLINK = re.compile(r"(?i)(://|\bwww\.)")


def md_text(text: str) -> str:
    """Make untrusted text inert inside a markdown table cell (no markup, links, HTML, mentions)."""
    inert = _MARKUP.sub(
        lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), " ".join(text.split())
    )
    return _AUTOLINK.sub(lambda m: f"{m.group(1)[0]}&#8203;{m.group(1)[1:]}", inert)


def json_count(value: object) -> int:
    """A count from verdict.json; anything that is not a non-negative integer is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def json_mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def json_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def json_texts(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def json_verdict(label: object) -> Verdict:
    """A verdict label from verdict.json; an unknown one is the most severe."""
    if isinstance(label, str) and label in Verdict.__members__:
        return Verdict[label]
    return Verdict.HARD_FAILURE
