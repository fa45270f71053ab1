"""A push to a protected branch measures ``alerts.push_repeats`` samples (6 unless set) and
a pull request the bucket's repeats; ``push_repeats: 1`` leaves a push at the bucket's
repeats: real ``python -m perfgate bench`` processes on the demo matrix, in GitHub's
environment (R9, R18).

GitHub itself cannot run here: its environment variables and event payload file are what
the bench reads, so they are set as a runner sets them; the origin is a real bare repo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.config import load_config
from perfgate.result import read_result
from tests.git_support import MakeClone
from tests.paths import ROOT

BUCKET = "cartpole/numpy"


def bench(clone: Path, sha: str, event: str, ref: str, payload: dict[str, Any]) -> Path:
    """One bucket job as the workflow runs it: bench --bucket ID --out DIR, on GitHub."""
    event_path = clone.parent / f"{event}.json"
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    out = clone.parent / f"results-{event}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update({
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REF": ref,
        "GITHUB_SHA": sha,
        "GITHUB_REPOSITORY": "org/repo",
        "GITHUB_RUN_ID": "77",
        "GITHUB_RUN_ATTEMPT": "1",
    })  # fmt: skip
    args = [sys.executable, "-m", "perfgate", "bench", "--bucket", BUCKET, "--out", str(out),
            "--quiet", "--work-dir", str(clone.parent / f"work-{event}")]  # fmt: skip
    done = subprocess.run(args, cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out / "cartpole__numpy.json"


PUSH = {"ref": "refs/heads/main"}


def demo_config(push_repeats: int | None) -> str:
    """The demo's perfgate.yaml, with ``alerts.push_repeats`` set when given."""
    demo = (ROOT / "perfgate.yaml").read_text(encoding="utf-8")
    assert "\nalerts:" not in demo  # the demo leaves the alerts block to its defaults
    return demo if push_repeats is None else demo + f"alerts:\n  push_repeats: {push_repeats}\n"


@pytest.mark.slow  # real benchmark processes and git
def test_with_push_repeats_set_a_protected_push_takes_them_and_a_pull_request_its_repeats(
    origin_clone: MakeClone,
) -> None:
    push_repeats = 5
    made = origin_clone(files={"perfgate.yaml": demo_config(push_repeats)})
    config = load_config(made.path / "perfgate.yaml")
    assert config.alerts.push_repeats == push_repeats
    (bucket,) = (b for b in config.buckets if b.id == BUCKET)
    assert push_repeats > bucket.repeats  # else the two runs could not differ

    pushed = read_result(bench(made.path, made.head, "push", "refs/heads/main", PUSH))
    assert (pushed.source.event, pushed.source.branch) == ("push", "main")
    assert pushed.sampling is not None
    assert pushed.sampling.repeats == push_repeats
    assert pushed.sampling.max_repeats >= push_repeats
    assert len(pushed.metric.sample_values()) == push_repeats  # no window yet: nothing more

    head = {"ref": "fix", "sha": made.head, "repo": {"full_name": "org/repo"}}
    pull = {"number": 5, "base": {"ref": "main"}, "head": head}
    proposed = read_result(
        bench(made.path, made.head, "pull_request", "refs/pull/5/merge", {"pull_request": pull})
    )
    assert proposed.source.event == "pull_request"
    assert proposed.sampling is not None
    assert proposed.sampling.repeats == bucket.repeats
    # No window to confirm against on a fresh baseline branch: the planned repeats only.
    assert len(proposed.metric.sample_values()) == bucket.repeats


@pytest.mark.slow  # real benchmark processes and git
@pytest.mark.parametrize(("push_repeats", "taken"), [(None, 6), (1, None)], ids=["unset", "one"])
def test_a_protected_push_takes_six_samples_unless_push_repeats_says_otherwise(
    origin_clone: MakeClone, push_repeats: int | None, taken: int | None
) -> None:
    made = origin_clone(files={"perfgate.yaml": demo_config(push_repeats)})
    config = load_config(made.path / "perfgate.yaml")
    (bucket,) = (b for b in config.buckets if b.id == BUCKET)
    assert bucket.repeats < 6  # else the default could change nothing
    expected = bucket.repeats if taken is None else taken

    pushed = read_result(bench(made.path, made.head, "push", "refs/heads/main", PUSH))
    assert (pushed.source.event, pushed.source.branch) == ("push", "main")
    assert pushed.sampling is not None
    assert pushed.sampling.repeats == expected
    assert pushed.sampling.max_repeats == max(bucket.max_repeats, expected)
    assert len(pushed.metric.sample_values()) == expected
