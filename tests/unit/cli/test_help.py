"""Each verb's --help says what it is for, shows examples, and lists its exit codes."""

from __future__ import annotations

import argparse
import re

import pytest

from perfgate.cli import build_parser


def _verbs() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("verb", sorted(_verbs()))
def test_every_verb_explains_itself(verb: str) -> None:
    text = _verbs()[verb].format_help()
    _, _, rest = text.partition("\n\n")
    description = rest.split("\n\n", 1)[0]
    assert len(description.split()) >= 6, f"{verb}: no one-paragraph description"
    examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples and all(line.strip().startswith(("perfgate ", "git ")) for line in examples)
    codes = re.findall(r"^  (\d)  \S", text.split("exit codes:\n", 1)[1], flags=re.M)
    assert codes[0] == "0" and "4" in codes, f"{verb}: exit codes {codes}"
    assert codes == sorted(codes)
