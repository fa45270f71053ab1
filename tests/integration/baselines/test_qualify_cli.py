"""`perfgate qualify` end to end: real demo bench runs as allocations, the report files,
the exit codes, the calibration the gate then reads (R8, R10, R15).

Each allocation is one `python -m perfgate bench --samples K` process with its own run
label and runner name (RUNNER_NAME), as a laptop simulates a runner pool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.result import read_result
from perfgate.util.git import git
from tests.factories import make_result
from tests.git_support import commit_all

CONFIG = """\
version: 1
gate:
  oracle: {noise_floor_pct: 1.0}
qualify: {allocations: 3, samples: 2, min_runners: 3}
defaults: {driver: demo, num_envs: 64, steps: 40, warmup_steps: 5, retries: 0}
buckets:
  - task: cartpole
    backends: [{physics: numpy}, {physics: python}]
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository holding only perfgate.yaml; cwd; no GitHub environment."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "perfgate.yaml").write_text(CONFIG, encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=repo)
    commit_all(repo, "config")
    monkeypatch.chdir(repo)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "PERFGATE_RUN_LABEL"):
        monkeypatch.delenv(name, raising=False)
    return repo


def bench(repo: Path, label: str, runner: str, *, via_env: bool = False) -> None:
    """One allocation: a bench process taking its samples, as a runner job runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["RUNNER_NAME"] = runner
    args = [sys.executable, "-m", "perfgate", "bench", "--bucket", "cartpole/numpy",
            "--samples", "2", "--no-judge", "--quiet", "--out", f"results/{label}"]  # fmt: skip
    if via_env:
        env["PERFGATE_RUN_LABEL"] = label
    else:
        args += ["--run-label", label]
    subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True, timeout=120)


def test_demo_allocations_qualify_end_to_end(checkout: Path) -> None:
    for number, runner in enumerate(["laptop-a", "laptop-b", "laptop-c"], start=1):
        bench(checkout, f"alloc-{number}", runner, via_env=number == 3)
    artifact = read_result(checkout / "results/alloc-3/cartpole__numpy.json")
    assert (artifact.ci.run_label, artifact.ci.runner_name) == ("alloc-3", "laptop-c")
    # Exactly the samples asked for, never more to confirm: the same design everywhere.
    assert [s.sample_index for s in artifact.metric.samples] == [0, 1]
    assert artifact.sampling is not None and artifact.sampling.stopped.value == "planned"
    assert artifact.sampling.max_repeats == 2  # no room to confirm: the design is fixed
    # R10: every allocation got its own cache root, keyed by its run label.
    caches = sorted(p.name for p in (checkout / ".perfgate/work/cache").iterdir())
    assert caches == ["local-1-alloc-1", "local-1-alloc-2", "local-1-alloc-3"]

    code = cli.main(["qualify", "--results", "results", "--bucket", "cartpole/numpy"])
    assert code == 0
    report = json.loads(Path(".perfgate/qualify/qualification.json").read_text("utf-8"))
    assert report["schema_version"] == 1
    assert report["policy"]["allocations"] == 3 and report["policy"]["samples"] == 2
    (bucket,) = report["buckets"]
    # The evidence is complete; whether the demo's noise is small enough is its own matter.
    assert bucket["coverage"] == []
    assert bucket["verdict"] in ("STABLE_ENOUGH_TO_GATE", "UNSTABLE_DO_NOT_GATE")
    assert [r["runner"] for r in bucket["runners"]] == ["laptop-a", "laptop-b", "laptop-c"]
    assert [[s["index"] for s in a["samples"]] for a in bucket["allocations"]] == [[0, 1]] * 3
    markdown = Path(".perfgate/qualify/qualification.md").read_text("utf-8")
    assert markdown.startswith("# Runner-pool stability qualification\n\n## ")
    assert "Runner allocation evidence" in markdown
    ready = cli.main(["qualify", "--results", "results", "--bucket", "cartpole/numpy",
                      "--require-ready"])  # fmt: skip
    assert ready == (0 if bucket["verdict"] == "STABLE_ENOUGH_TO_GATE" else 1)
    # Qualification never writes baselines.
    assert git("branch", "--list", "perf-baselines", cwd=checkout).strip() == ""


def write_pool(root: Path, *, values: dict[str, float], runners: dict[str, str]) -> None:
    """A constructed pool for cartpole/numpy: one artifact of 2 samples per allocation."""
    from perfgate.result import CiInfo, write_result

    for label, runner in runners.items():
        result = make_result(
            "cartpole/numpy",
            samples=[values[label] * 1.003, values[label] * 0.997],
            ci=CiInfo(run_id="77", run_attempt="1", runner_name=runner, run_label=label),
        )
        write_result(result, root / label)


def test_exit_codes_and_the_calibration_the_gate_reads(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runners = {"a1": "r1", "a2": "r2", "a3": "r3"}
    write_pool(Path("stable"), values={"a1": 1000, "a2": 1004, "a3": 998}, runners=runners)
    args = ["qualify", "--results", "stable", "--bucket", "cartpole/numpy"]
    assert cli.main([*args, "--require-ready", "--write-calibration", "ci/noise.json"]) == 0
    assert "STABLE_ENOUGH_TO_GATE" in capsys.readouterr().out
    calibration = json.loads(Path("ci/noise.json").read_text("utf-8"))
    assert [e["bucket"] for e in calibration["buckets"]] == ["cartpole/numpy"]
    # The gate reads it once perfgate.yaml points at it (validate checks the file too).
    Path("perfgate.yaml").write_text(
        CONFIG.replace("gate:\n", "gate:\n  calibration: ci/noise.json\n"), encoding="utf-8"
    )
    assert cli.main(["validate"]) == 0
    assert "ci/noise.json: ok, 1 calibrated bucket(s)" in capsys.readouterr().out

    # One runner 8 % off: UNSTABLE; --require-ready exits 1 and nothing is calibrated.
    write_pool(Path("offset"), values={"a1": 1000, "a2": 1004, "a3": 920}, runners=runners)
    before = Path("ci/noise.json").read_text("utf-8")
    code = cli.main(["qualify", "--results", "offset", "--bucket", "cartpole/numpy",
                     "--require-ready", "--write-calibration", "ci/noise.json"])  # fmt: skip
    assert code == 1
    out = capsys.readouterr()
    assert "runner r3: median -7." in out.out and "runners to drain: r3" in out.out
    assert Path("ci/noise.json").read_text("utf-8") == before

    # Usage and configuration errors exit 4; no artifacts at all exits 3.
    assert cli.main(["qualify", "--results", "stable", "--backend", "newton"]) == 4
    assert "unknown backend key newton" in capsys.readouterr().err
    assert cli.main(["qualify", "--results", "stable", "--samples", "1"]) == 4
    assert cli.main(["qualify", "--results", "stable", "--allocations", "2"]) == 4
    assert cli.main(["qualify"]) == 4
    assert cli.main(["bench", "--run-label", "a/b", "--bucket", "cartpole/numpy"]) == 4
    assert "run label 'a/b'" in capsys.readouterr().err
    # A fixed design or room to confirm, not both.
    with pytest.raises(SystemExit) as usage:
        cli.main(["bench", "--samples", "3", "--repeats", "2"])
    assert usage.value.code == 4 and "not allowed with argument" in capsys.readouterr().err
    assert cli.main(["bench", "--samples", "0", "--bucket", "cartpole/numpy"]) == 4
    Path("empty").mkdir()
    assert cli.main(["qualify", "--results", "empty"]) == 3
    assert cli.main(["qualify", "--results", "nowhere"]) == 3


def test_the_plan_checks_the_scope_and_gives_the_matrix(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert cli.main(["qualify", "--plan", "--backend", "numpy", "--allocations", "4"]) == 0
    assert "4 allocation(s) x 2 sample(s) x 1 bucket(s) = 8 runs" in capsys.readouterr().out
    lines = dict(line.split("=", 1) for line in output.read_text("utf-8").splitlines())
    assert json.loads(lines["allocations"]) == ["1", "2", "3", "4"]
    assert lines["pool"] == "1"  # the config's first (and only) runner pool
    # 2 samples x 10 minutes (the default timeout, no retries) + 15 minutes of setup
    assert (lines["samples"], lines["timeout"]) == ("2", "35")
    # A typo in an allowlist stops the run before any runner time is spent.
    assert cli.main(["qualify", "--plan", "--backend", "numpyy"]) == 4


def test_qualify_says_when_no_recorded_machine_recurs(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Twelve recorded runs on twelve runner names never seen again: the pool qualifies on
    its allocations, and the report says the runner model will have nothing to learn."""
    from dataclasses import replace

    from perfgate.baselines.publish import record_samples
    from perfgate.baselines.store import BaselineStore
    from perfgate.result import CiInfo

    sha = git("rev-parse", "HEAD", cwd=checkout).strip()
    runs = [
        replace(make_result("cartpole/numpy", commit=sha, samples=[1000.0 + k, 1001.0 + k]),
                ci=CiInfo(run_id=f"run-{k}", run_attempt="1", runner_name=f"arc-{k:04x}"))
        for k in range(12)
    ]  # fmt: skip
    record_samples(BaselineStore(checkout, branch="perf-baselines"), runs, "protected_branch",
                   "record")  # fmt: skip
    write_pool(Path("stable"), values={"a1": 1000, "a2": 1004, "a3": 998},
               runners={"a1": "r1", "a2": "r2", "a3": "r3"})  # fmt: skip
    assert cli.main(["qualify", "--results", "stable", "--bucket", "cartpole/numpy"]) == 0
    out = capsys.readouterr().out
    assert "no machine recurs among the newest recorded runs of cartpole/numpy" in out
    assert "set gate.runner_identity: gpu" in out
