"""perfgate/config/messages.py: a schema error in words that say what to write instead,
short enough to keep the one line that names file, line and key path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.config import load_config
from perfgate.config.messages import describe, fail, kind, short
from perfgate.errors import ConfigError
from perfgate.util import jsonfile
from perfgate.util.yamlfile import load_yaml

BUCKETS = [{"task": "cartpole", "backends": [{"physics": "numpy"}]}]


def words(document: dict[str, Any], validator: str) -> str:
    """The words for the first ``validator`` error the schema finds in ``document``."""
    errors = jsonfile.validator("perfgate").iter_errors(document)
    return describe(next(e for e in errors if e.validator == validator))


def test_a_wrong_type_names_what_was_written_and_what_is_expected() -> None:
    document = {"version": 1, "buckets": [{**BUCKETS[0], "num_envs": "many"}]}
    assert words(document, "type") == "'many' is a string; expected an integer"
    assert words({"version": 1, "gate": None, "buckets": BUCKETS}, "type") == (
        "is empty; expected a mapping"
    )


def test_an_enum_offers_its_choices_but_not_yaml_booleans() -> None:
    document = {"version": 1, "gate": {"mode": "strict"}, "buckets": BUCKETS}
    assert words(document, "enum") == "'strict' is not allowed; use one of: advisory, blocking"
    # confirm allows YAML's reading of a bare `off` (false): never offered as a choice.
    document = {"version": 1, "gate": {"confirm": "twice"}, "buckets": BUCKETS}
    assert words(document, "enum") == ("'twice' is not allowed; use one of: paired, repeat, off")
    document = {"version": 1, "gate": {"runner_identity": "host"}, "buckets": BUCKETS}
    assert words(document, "enum") == "'host' is not allowed; use one of: runner, gpu"


def test_a_pattern_is_explained_by_its_hint_and_a_range_by_its_bound() -> None:
    document = {"version": 1, "buckets": [{"task": "cartpole", "backends": [{"physics": "NumPy"}]}]}
    assert words(document, "pattern") == (
        "'NumPy' is not allowed; use lower-case letters, digits and underscores "
        "(e.g. physx, rtx_renderer)"
    )
    document = {"version": 1, "defaults": {"timeout_minutes": 0}, "buckets": BUCKETS}
    assert words(document, "exclusiveMinimum") == "0 is out of range; use a value > 0"


def test_kind_and_short_name_values_in_a_few_words() -> None:
    assert [kind(v) for v in (True, {}, [], "x", 1, 1.5, None)] == [
        "a boolean",
        "a mapping",
        "a list",
        "a string",
        "an integer",
        "a number",
        "empty",
    ]
    assert len(short("x" * 500)) <= 40
    assert short([1, 2, 3, 4, 5]) == "[1, 2, 3, ...]"


def test_fail_is_one_line_naming_file_line_and_key_path(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text("version: 1\ngate:\n  mode: strict\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        fail(load_yaml(path), ("gate", "mode"), "is wrong;\n  use advisory")
    assert str(raised.value) == f"{path}:3: gate.mode: is wrong; use advisory"


def test_long_bad_values_are_shortened_to_keep_one_readable_line(tmp_path: Path) -> None:
    path = tmp_path / "perfgate.yaml"
    path.write_text(f"version: 1\nbuckets: '{'x' * 500}'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert len(str(raised.value)) < 200
    assert "expected a list" in str(raised.value)
