"""Pending samples read back for the next publish: a line no store path can hold is skipped."""

from __future__ import annotations

import json
from pathlib import Path

from perfgate.baselines.publish import read_pending
from perfgate.baselines.samples import samples_from_result
from tests.factories import make_result


def test_a_pending_line_naming_no_plain_hardware_is_skipped_not_published(
    tmp_path: Path,
) -> None:
    """Published, it would fail at its store path on every later publish, and be kept again."""
    (good,) = samples_from_result(make_result(samples=(100.0,)), trusted_source="protected_branch")
    bad = json.loads(good.to_line()) | {"hardware": "../outside", "sample_id": "other"}
    deep = "[" * 100_000 + "]" * 100_000  # json.loads gives up (RecursionError)
    pending = tmp_path / "pending-samples.ndjson"
    pending.write_text(f"{good.to_line()}\n{json.dumps(bad)}\n{deep}\n", encoding="utf-8")
    samples, notes = read_pending([pending], None)
    assert samples == [good]
    assert len(notes) == 2
    assert "pending-samples.ndjson:2: not a sample, skipped" in notes[0]
    assert "hardware '../outside' is not a plain name" in notes[0]
    assert "pending-samples.ndjson:3: not a sample, skipped (RecursionError" in notes[1]
