"""The runner-model file: what a writer renders a reader gets back exactly, and only
while it describes the live segment it was fitted with."""

from __future__ import annotations

import math
import random

from perfgate.baselines.runner_file import (
    fit_models,
    kept_models,
    parse_runner_file,
    render_runner_file,
)
from perfgate.config import Direction
from perfgate.judge.runner_offsets import StoredRun, fit_runners

BLOB = "a" * 40
DIGEST, OTHER = "0123456789abcdef", "fedcba9876543210"


def entries(count: int, digest: str = DIGEST, seed: int = 1):  # type: ignore[no-untyped-def]
    """Index entries of ``count`` runs of two samples on four runners, oldest first; every
    tenth run fell 6 % as a whole."""
    rng = random.Random(seed)
    found = []
    for run in range(count):
        level = 100.0 * (1.0 + 0.02 * (run % 4 - 1.5)) * (0.94 if run % 10 == 3 else 1.0)
        for _ in range(2):
            value = level * math.exp(0.004 * rng.gauss(0, 1))
            found.append((f"c{run:03d}", f"t{run:03d}", digest, repr(value), f"=r{run % 4}", "-"))
    return found


def test_a_rendered_model_reads_back_exactly() -> None:
    models = fit_models(reversed(entries(60)), {DIGEST: Direction.HIGHER}, 50)
    model = models[DIGEST]
    assert model.corrects and model.excursions is not None and model.excursions.count >= 1
    text = render_runner_file(BLOB, 50, models)
    assert parse_runner_file(text.encode(), BLOB, 50) == models


def test_the_fit_takes_the_nearest_runs_as_the_gate_would() -> None:
    stored = entries(60) + entries(5, digest=OTHER)
    fitted = fit_models(reversed(stored), {DIGEST: Direction.HIGHER}, 40)[DIGEST]
    runs = [
        StoredRun(
            runner=f"r{run % 4}",
            values=tuple(float(e[3]) for e in stored if e[0] == f"c{run:03d}" and e[2] == DIGEST)[
                ::-1
            ],
        )
        for run in range(59, 19, -1)
    ]
    assert fitted == fit_runners(runs)
    assert fitted.runs == 40


def test_a_file_of_another_segment_or_depth_gives_no_model() -> None:
    text = render_runner_file(
        BLOB, 50, fit_models(reversed(entries(30)), {DIGEST: Direction.LOWER}, 50)
    )
    assert parse_runner_file(text, "b" * 40, 50) == {}
    assert parse_runner_file(text, BLOB, 200) == {}
    assert parse_runner_file(None, BLOB, 50) == {}
    assert parse_runner_file(b"perfgate-runners 2 " + BLOB.encode() + b" 50\n", BLOB, 50) == {}


def test_a_digest_whose_model_was_edited_is_left_out_alone() -> None:
    models = fit_models(reversed(entries(30) + entries(30, digest=OTHER, seed=2)),
                        {DIGEST: Direction.HIGHER, OTHER: Direction.HIGHER}, 50)  # fmt: skip
    text = render_runner_file(BLOB, 50, models)
    edits = {'"tau":': '"tau":1e9,"x":', '"runs":': '"runs":-1,"x":',
             '"direction":"higher"': '"direction":"up"',
             '"excursions":': '"excursions":[1,2,[0.2,-0.1]],"x":',
             '"offsets":': '"offsets":{"r0":["0.01",0.0,3]},"x":'}  # fmt: skip
    for edit, replacement in edits.items():
        lines = text.splitlines(keepends=True)
        edited = "".join(line.replace(edit, replacement) if line.startswith(OTHER) else line
                         for line in lines)  # fmt: skip
        assert parse_runner_file(edited, BLOB, 50) == {DIGEST: models[DIGEST]}, edit
    nan = text.replace('"tau":', '"tau":NaN,"x":')
    assert parse_runner_file(nan, BLOB, 50) == {}


def test_models_are_kept_while_their_lines_are_live_and_replaced_when_refitted() -> None:
    old = fit_models(reversed(entries(30) + entries(30, digest=OTHER)),
                     {DIGEST: Direction.HIGHER, OTHER: Direction.HIGHER}, 50)  # fmt: skip
    new = fit_models(reversed(entries(31)), {DIGEST: Direction.HIGHER}, 50)
    assert kept_models(old, entries(31) + entries(1, digest=OTHER), new) == {
        DIGEST: new[DIGEST],
        OTHER: old[OTHER],
    }
    assert kept_models(old, entries(31), new) == {DIGEST: new[DIGEST]}
