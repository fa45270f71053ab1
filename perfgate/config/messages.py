"""How a problem in perfgate.yaml is said: one line naming file, line and key path, and
jsonschema's errors turned into words that say what to write instead."""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from perfgate.errors import ConfigError
from perfgate.util import jsonfile
from perfgate.util.yamlfile import KeyPath, YamlDocument, format_key_path

if TYPE_CHECKING:
    import jsonschema


def fail(document: YamlDocument, key_path: KeyPath, message: str) -> NoReturn:
    """Raise the ConfigError that names where ``key_path`` is written and what is wrong."""
    # One line always: a caller (or CI log grep) sees the whole problem on it.
    text = f"{document.where(key_path)}: {format_key_path(key_path)}: {message}"
    raise ConfigError(" ".join(text.split()))


def check_schema(document: YamlDocument) -> None:
    """Refuse a document the schema refuses, naming its shallowest problem in words."""
    if jsonfile.conforms("perfgate", document.data):
        return  # jsonschema, which names each problem, is for a config the schema refuses
    errors = sorted(
        (e for e in jsonfile.validator("perfgate").iter_errors(document.data) if not _spurious(e)),
        key=_error_rank,
    )
    if not errors:
        return
    error = errors[0]
    key_path: KeyPath = tuple(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        extra = _unknown_keys(error)
        fail(
            document,
            (*key_path, extra[0]) if extra else key_path,
            f"unknown key {', '.join(repr(k) for k in extra)}; "
            f"allowed keys: {', '.join(sorted(_allowed_keys(_error_schema(error))))}",
        )
    fail(document, key_path, describe(error))


def _unknown_keys(error: jsonschema.ValidationError) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    allowed = _allowed_keys(_error_schema(error))
    return sorted(str(key) for key in instance if key not in allowed)


def _spurious(error: jsonschema.ValidationError) -> bool:
    # A key whose value is invalid counts as "unevaluated" too; its own error says more.
    return error.validator == "unevaluatedProperties" and not _unknown_keys(error)


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}


_PATTERN_HINTS = {
    "^[a-z0-9][a-z0-9_]*$": "lower-case letters, digits and underscores (e.g. physx, rtx_renderer)",
    "^[A-Za-z0-9][A-Za-z0-9._-]*$": "letters, digits, '.', '_' and '-' (no '/' or spaces)",
    "^[A-Za-z0-9_]+(\\.[A-Za-z0-9_]+)*$": "a dotted path such as runtime.total_fps.mean",
    "^[a-z0-9*?_\\[\\]-]+$": "a hardware slug pattern such as l40s or cpu-*",
    "^/[A-Za-z0-9._/-]*$": "an absolute container path of letters, digits, '.', '_', '-', '/'",
    "^[A-Za-z0-9]": "a value starting with a letter or digit (never '-', which is an option)",
    "^[A-Za-z0-9_][A-Za-z0-9_.:-]*$": "host, a user name, or uid:gid",
    '^[A-Za-z0-9"][A-Za-z0-9=,:"_.-]*$': "all, a count, or device=0,1",
    "^[A-Za-z_][A-Za-z0-9_]*$": "an environment variable name such as HF_TOKEN",
}


def describe(error: jsonschema.ValidationError) -> str:
    """A schema violation in words that say what to write instead."""
    value = short(error.instance)
    expected: Any = error.validator_value
    match error.validator:
        case "type":
            names = [expected] if isinstance(expected, str) else list(expected)
            wanted = " or ".join(_TYPE_NAMES.get(name, name) for name in names)
            if error.instance is None:
                return f"is empty; expected {wanted}"
            return f"{value} is {kind(error.instance)}; expected {wanted}"
        case "enum":
            # A boolean in an enum is YAML's reading of a bare word (off), not a choice to offer.
            choices = ", ".join(str(c) for c in expected if not isinstance(c, bool))
            return f"{value} is not allowed; use one of: {choices}"
        case "const":
            return f"{value} is not supported; use {expected!r}"
        case "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            return f"missing required key {missing!r}"
        case "minItems":
            return f"{value} needs at least {expected} item(s)"
        case "minLength":
            return "must not be empty"
        case "maxLength":
            return f"{value} is {len(str(error.instance))} characters long; use at most {expected}"
        case "maxItems":
            return f"has too many items; at most {expected} are allowed"
        case "minimum" | "exclusiveMinimum" | "maximum" | "exclusiveMaximum":
            relation = {
                "minimum": ">=",
                "exclusiveMinimum": ">",
                "maximum": "<=",
                "exclusiveMaximum": "<",
            }[str(error.validator)]
            return f"{value} is out of range; use a value {relation} {expected}"
        case "pattern":
            hint = _PATTERN_HINTS.get(str(expected), f"the pattern {expected}")
            return f"{value} is not allowed; use {hint}"
    return str(error.message)


def kind(value: Any) -> str:
    """What sort of YAML value ``value`` is, in words ("a list", "empty")."""
    if isinstance(value, bool):
        return "a boolean"
    for python_type, name in ((dict, "object"), (list, "array"), (str, "string"), (int, "integer")):
        if isinstance(value, python_type):
            return _TYPE_NAMES[name]
    if isinstance(value, float):
        return _TYPE_NAMES["number"]
    return "empty" if value is None else f"a {type(value).__name__}"


def short(value: Any) -> str:
    """``value``'s repr, cut to keep a message on one readable line."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = 40
    short.maxdict = short.maxlist = 3
    return short.repr(value)


def _error_schema(error: jsonschema.ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def _error_rank(error: jsonschema.ValidationError) -> tuple[int, int]:
    # The shallowest error first: a wrong type at the top explains the ones below it.
    return (len(error.absolute_path), 0 if error.validator != "required" else 1)


def _allowed_keys(schema: Mapping[str, Any]) -> set[str]:
    keys = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        ref = part.get("$ref", "")
        if ref.startswith("#/$defs/"):
            definitions = jsonfile.schema("perfgate")["$defs"]
            keys |= _allowed_keys(definitions[ref.removeprefix("#/$defs/")])
    return keys
