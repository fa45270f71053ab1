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


def _exit_meanings(verb: str) -> dict[str, str]:
    """The exit codes ``verb``'s --help lists, each with its meaning."""
    text = _verbs()[verb].format_help().split("exit codes:\n", 1)[1]
    return dict(re.findall(r"^  (\d)  (.+)$", text, flags=re.M))


@pytest.mark.parametrize("verb", sorted(_verbs()))
def test_only_the_verbs_that_judge_say_their_exit_0_is_a_verdict(verb: str) -> None:
    """validate, compare, verify-baselines and the rest exit 0 on success, not on a
    PASS- or WARN-level verdict; gate.always_pass changes only what bench and gate exit."""
    ok = _exit_meanings(verb)["0"]
    judges = verb in ("bench", "gate")
    assert ("PASS" in ok) is judges, f"{verb}: {ok}"
    assert ("always_pass" in ok) is judges, f"{verb}: {ok}"


def test_the_verbs_with_an_exit_1_of_their_own_say_when_they_exit_0() -> None:
    assert "valid" in _exit_meanings("validate")["0"]
    assert "--fail-on-regression: no bucket is worse" in _exit_meanings("compare")["0"]
    assert "--require: every bucket READY" in _exit_meanings("verify-baselines")["0"]
    assert "blocking mode" not in " ".join(_exit_meanings("gate").values())
