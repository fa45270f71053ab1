"""The Jinja environment rendered files are laid out with, and the one way a value is printed.

Every value a template prints goes through :func:`yaml_value`, which emits a quoted YAML
scalar with GitHub's expression opener ``${{`` neutralised, so no value from perfgate.yaml
can inject YAML structure, a GitHub expression or shell syntax. Only :class:`Raw` text
built in ``perfgate.ci`` is printed verbatim (R12, R13).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from perfgate.errors import ConfigError, UsageError

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

# Third-party actions are pinned by full commit SHA (R12) in one data file that an update
# bot reads: ci/templates/pins/action.yml.
_PIN_STEP = re.compile(
    r"^\s*- id: (?P<id>\w+)\n\s+uses: (?P<action>[\w.-]+/[\w./-]+)@(?P<sha>\S+)"
    r"(?P<comment>[ \t]+#[^\n]*)?$",
    re.M,
)


def load_pins(path: Path) -> dict[str, Raw]:
    """``{id: "owner/repo@<40-hex sha> # vX"}`` from the pins file; a loose pin is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the action pins ({exc.strerror})") from None
    pins: dict[str, Raw] = {}
    for step in _PIN_STEP.finditer(text):
        if not re.fullmatch(r"[0-9a-f]{40}", step["sha"]):
            raise ConfigError(
                f"{path}: {step['id']}: {step['action']}@{step['sha']} is not pinned by a full "
                "commit SHA (R12); pin it as owner/repo@<40-hex sha> # vX.Y.Z"
            )
        pins[step["id"]] = Raw(f"{step['action']}@{step['sha']}{step['comment'] or ''}")
    if not pins:
        raise ConfigError(f"{path}: no `- id: NAME` / `uses: owner/repo@sha` steps found")
    return pins


class Raw(str):
    """Trusted YAML text built in ``perfgate.ci``; printed verbatim by templates."""

    __slots__ = ()


def quoted(text: str) -> Raw:
    """Expression text built in ``perfgate.ci``, as a double-quoted YAML scalar printed verbatim."""
    return Raw(json.dumps(text, allow_nan=False))


def _neutralise(text: str) -> str:
    # GitHub evaluates ${{ ... }} inside any string of a workflow, quoted or not;
    # the expression ${{ '${{' }} evaluates to the literal two characters.
    return text.replace("${{", "${{ '${{' }}")


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return _neutralise(value)
    if isinstance(value, Mapping):
        return {_neutralise(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def yaml_value(value: Any) -> str:
    """A YAML scalar or flow collection for ``value``; JSON is valid YAML and fully escaped."""
    if isinstance(value, (Raw, jinja2.Undefined)):
        return str(value)  # str() of a StrictUndefined raises, naming the missing variable
    if value is None or isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return json.dumps(_plain(value), ensure_ascii=True, allow_nan=False)
    raise TypeError(f"templates may only print plain data or Raw text, not {type(value).__name__}")


def environment(templates: Path = TEMPLATES_DIR) -> jinja2.Environment:
    """The Jinja environment: StrictUndefined and delimiters that leave ``${{ }}`` alone."""
    if not templates.is_dir():
        raise UsageError(
            f"{templates}: templates directory not found; reinstall perfgate (its package "
            "ships them)"
        )
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        undefined=jinja2.StrictUndefined,
        block_start_string="<%",
        block_end_string="%>",
        variable_start_string="<<",
        variable_end_string=">>",
        comment_start_string="<#",
        comment_end_string="#>",
        finalize=yaml_value,
        # Output is YAML, not HTML: finalize=yaml_value quotes and neutralises every value.
        autoescape=False,  # noqa: S701
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
