"""The demo driver measures the checkout's own benchmark code when the checkout is perfgate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.cli import main

# A stand-in perfgate source tree whose demo reports a fixed figure, as a replayed commit
# with different benchmark code would.
FAKE_DEMO = """
import argparse, json, pathlib
p = argparse.ArgumentParser()
for name in ("--task", "--physics", "--output-path"):
    p.add_argument(name)
for name in ("--num-envs", "--steps", "--warmup-steps", "--seed"):
    p.add_argument(name, type=int)
a = p.parse_args()
print("perfgate-demo: environments ready")
print("perfgate-demo: stepping")
out = pathlib.Path(a.output_path)
out.mkdir(parents=True, exist_ok=True)
bundle = {
    "run": {"task": a.task, "num_envs": a.num_envs, "seed": a.seed,
            "config": {"physics_backend": a.physics}},
    "extra": {"num_steps": a.steps, "warmup_steps": a.warmup_steps},
    "versions": {}, "hardware": {},
    "runtime": {"total_fps": {"mean": 12345.0, "std": 1.0, "peak": 12400.0}},
}
(out / f"benchmark_runtime_{a.task}.json").write_text(json.dumps(bundle))
"""


# Today's layout, and the flat one of commits from before the stage folders (seeding and
# bisect replay those).
@pytest.mark.parametrize("layout", ["perfgate/run/demo.py", "perfgate/demo.py"])
def test_a_perfgate_checkout_runs_its_own_demo(tmp_path: Path, monkeypatch, layout: str) -> None:  # type: ignore[no-untyped-def]
    checkout = tmp_path / "checkout"
    demo = checkout / layout
    demo.parent.mkdir(parents=True)
    for package in {demo.parent, checkout / "perfgate"}:
        (package / "__init__.py").write_text("")
    demo.write_text(FAKE_DEMO)
    (checkout / "perfgate.yaml").write_text(
        "version: 1\nbuckets:\n  - task: cartpole\n    backends: [{physics: numpy}]\n"
    )
    monkeypatch.chdir(checkout)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out = tmp_path / "out"
    assert main(["bench", "--no-judge", "--out", str(out), "--work-dir", str(tmp_path / "w")]) == 0
    artifact = json.loads((out / "cartpole__numpy.json").read_text())
    assert artifact["health"]["phase"] is None
    assert artifact["metric"]["value"] == 12345.0
