"""Bench end to end with real subprocesses: the command driver, execution, the artifact."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate import cli
from perfgate.config import Bucket, ConfirmMode, load_config
from perfgate.context import RunContext
from perfgate.errors import ConfigError
from perfgate.result import (
    CiInfo,
    FailurePhase,
    Hardware,
    Result,
    SamplingStop,
    read_result,
    validate_result,
    write_result,
)
from perfgate.run.bench import run_bucket
from perfgate.run.launch import THREAD_VARIABLES, BenchSettings
from perfgate.run.logs import LOG_TAIL_BYTES
from perfgate.run.sampling import SamplingPlan
from tests.paths import FIXTURES

FAKE = FIXTURES / "fake_benchmark.py"
READY, STEPPING = "fake-bench: ready", "fake-bench: stepping"
HARDWARE = Hardware(slug="cpu-test", cpu_name="Test CPU")
CONTEXT = RunContext(
    commit="0123456789abcdef0123456789abcdef01234567",
    branch="feature",
    target_branch="main",
    event="local",
    ci=CiInfo(run_id="4242", run_attempt="3"),
)


def fake_bucket(
    tmp_path: Path,
    mode: str,
    *,
    retries: int = 0,
    timeout_minutes: float = 1.0,
    output: str = "{output_dir}/result.json",
    writes_to: str | None = None,
    **settings: Any,
) -> Bucket:
    """A command-driver bucket that runs fake_benchmark.py in ``mode`` from perfgate.yaml.

    One sample per run unless ``settings`` (more bucket settings) say otherwise.
    """
    document: dict[str, Any] = {
        "version": 1,
        "defaults": {
            "driver": "command",
            "retries": retries,
            "timeout_minutes": timeout_minutes,
            "repeats": 1,
            **settings,
            "metric": {"path": "results.throughput.mean", "direction": "higher", "unit": "it/s"},
        },
        "buckets": [
            {
                "task": "fake",
                "backends": [{"physics": "cpu"}],
                "command": {
                    "argv": [
                        sys.executable,
                        str(FAKE),
                        mode,
                        writes_to or output,
                        str(tmp_path / "state"),
                    ],
                    "output": output,
                    "markers": {"init_done": READY, "stepping": STEPPING},
                },
            }
        ],
    }
    path = tmp_path / "perfgate.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    (bucket,) = load_config(path).buckets
    return bucket


def run(
    tmp_path: Path,
    bucket: Bucket,
    confirm: Callable[[Bucket, Result], bool] | None = None,
    messages: list[str] | None = None,
) -> Result:
    """Run the bucket with the tmp dir as checkout and return its result."""
    settings = BenchSettings(
        checkout=tmp_path,
        work_root=tmp_path / "work",
        out_dir=tmp_path / "results",
        hardware=HARDWARE,
        context=CONTEXT,
        say=(messages if messages is not None else []).append,
    )
    plan = SamplingPlan.for_bucket(bucket, ConfirmMode.REPEAT if confirm else ConfirmMode.OFF)
    return run_bucket(bucket, settings, plan=plan, confirm=confirm)


def sample_dir(tmp_path: Path, index: int = 0) -> Path:
    """Where sample ``index`` of the fake bucket keeps its attempts."""
    return tmp_path / "work" / "runs" / "fake__cpu" / f"sample-{index}"


def artifact(result: Result, out_dir: Path) -> dict[str, Any]:
    """Write the artifact, check it against the shipped schema and that it reads back."""
    path = write_result(result, out_dir)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert validate_result(data) == []
    assert read_result(path) == result
    return data


def test_success_reports_the_figure_its_spread_and_a_healthy_run(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "ok"))
    data = artifact(result, tmp_path / "results")
    assert data["metric"] == {
        "path": "results.throughput.mean",
        "direction": "higher",
        "unit": "it/s",
        "value": 1234.5,
        "std": 1.5,
        "min": 1231.5,
        "max": 1237.5,
        "figures": {},  # the command driver records no further figures
        # The command driver's launches start from an empty cache each (R16: recorded).
        "samples": [
            {
                "sample_index": 0,
                "value": 1234.5,
                "wall_s": data["metric"]["samples"][0]["wall_s"],
                "cache": "cold",
            }
        ],
    }
    assert data["health"]["exit_code"] == 0
    assert data["health"]["phase"] is None
    assert (data["health"]["attempts"], data["health"]["retried"]) == (1, False)
    assert data["bucket"]["id"] == "fake/cpu"
    assert data["source"]["commit"] == CONTEXT.commit
    assert data["source"]["target_branch"] == "main"
    assert data["ci"]["run_id"] == "4242"
    assert STEPPING in data["log_tail"]


@pytest.mark.parametrize(
    ("mode", "phase", "exit_code"),
    [
        ("init_crash", FailurePhase.INIT, 1),
        ("runtime_crash", FailurePhase.RUNTIME, 1),
        ("oom", FailurePhase.OOM, 137),
    ],
)
def test_a_crash_is_classified_by_how_far_the_run_got(
    tmp_path: Path, mode: str, phase: FailurePhase, exit_code: int
) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, mode, retries=1))
    data = artifact(result, tmp_path / "results")
    assert result.health.phase is phase
    assert result.health.exit_code == exit_code
    assert result.metric.value is None
    # What can be flaky is retried once, and both attempts are on record.
    assert (result.health.attempts, result.health.retried) == (2, True)
    assert result.health.not_retried is None
    assert [a["phase"] for a in data["timings"]["attempts"]] == [phase.value, phase.value]


@pytest.mark.parametrize(
    ("mode", "phase", "raised"),
    [
        ("import_crash", FailurePhase.IMPORT, "ModuleNotFoundError at fake_benchmark.py:"),
        ("key_error", FailurePhase.INIT, "KeyError at fake_benchmark.py:"),
    ],
)
def test_a_crash_that_repeats_identically_is_not_retried_and_says_why(
    tmp_path: Path, mode: str, phase: FailurePhase, raised: str
) -> None:
    """The same exception at the same place before any measurement: a retry repeats it."""
    messages: list[str] = []
    result = run(tmp_path, fake_bucket(tmp_path, mode, retries=2), messages=messages)
    data = artifact(result, tmp_path / "results")
    assert result.health.phase is phase
    assert (result.health.attempts, result.health.retried) == (1, False)
    assert (tmp_path / "state" / "attempts").read_text() == "1"  # it ran once
    reason = result.health.not_retried or ""
    assert reason.startswith(f"not retried: {raised}") and "before any measurement" in reason
    assert data["health"]["not_retried"] == reason
    (notice,) = messages
    assert notice.startswith("fake/cpu: attempt 1 of 3 failed (") and notice.endswith(reason)
    assert "\n" not in notice  # one line


def test_import_crash_keeps_the_traceback_in_the_log_tail(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "import_crash"))
    assert "ModuleNotFoundError" in result.log_tail
    assert "perfgate_fixture_module_that_does_not_exist" in result.log_tail


def _running(pid: int) -> bool:
    # A killed orphan may linger as a zombie when PID 1 does not reap; that is dead too.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _alive(pid: int) -> bool:
    """True when ``pid`` is still running a while after SIGKILL was sent (delivery is async)."""
    for _ in range(100):
        if not _running(pid):
            return False
        time.sleep(0.05)
    return True


def test_hang_past_the_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "hang", timeout_minutes=0.02))
    artifact(result, tmp_path / "results")
    assert result.health.phase is FailurePhase.HANG
    assert result.health.timed_out is True
    assert result.metric.value is None
    assert "timeout" in result.log_tail
    grandchild = int((tmp_path / "state" / "grandchild.pid").read_text())
    assert not _alive(grandchild), "a child of the hung benchmark survived the timeout"


def test_a_background_child_does_not_outlive_a_successful_run(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "straggler"))
    assert result.health.healthy
    assert result.metric.value == 7.0
    grandchild = int((tmp_path / "state" / "grandchild.pid").read_text())
    assert not _alive(grandchild), "a straggler could write into the next attempt's outputs"


def test_invalid_json_output_is_an_output_failure(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "invalid_json", retries=1))
    artifact(result, tmp_path / "results")
    assert result.health.exit_code == 0
    assert result.health.phase is FailurePhase.OUTPUT
    assert result.health.error is not None and "not valid JSON" in result.health.error
    assert result.metric.value is None
    # An unreadable output is a failed attempt, so it was retried.
    assert result.health.attempts == 2


def test_missing_metric_is_an_output_failure_naming_the_path(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "missing_metric"))
    artifact(result, tmp_path / "results")
    assert result.health.phase is FailurePhase.OUTPUT
    assert result.health.error is not None
    assert "results.throughput.mean" in result.health.error
    assert result.metric.value is None
    assert not result.health.healthy


def test_no_output_file_at_all_is_an_output_failure(tmp_path: Path) -> None:
    # The program writes where its argv says; the bucket reads a path nothing writes.
    bucket = fake_bucket(
        tmp_path,
        "ok",
        output="{output_dir}/never-written.json",
        writes_to="{output_dir}/x.json",
    )
    result = run(tmp_path, bucket)
    artifact(result, tmp_path / "results")
    assert result.health.exit_code == 0
    assert result.health.phase is FailurePhase.OUTPUT
    assert result.health.error is not None and "never-written.json" in result.health.error


@pytest.mark.parametrize(("mode", "value"), [("zero_metric", 0.0), ("negative_metric", -5.0)])
def test_non_positive_metric_is_recorded_as_is_for_the_oracle(
    tmp_path: Path, mode: str, value: float
) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, mode))
    artifact(result, tmp_path / "results")
    assert result.metric.value == value
    assert result.health.exit_code == 0


def test_retry_never_reports_the_stale_output_of_the_failed_attempt(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "stale_then_nothing", retries=1))
    artifact(result, tmp_path / "results")
    assert result.health.attempts == 2
    assert result.metric.value is None, "the retry reported attempt 1's figure"
    assert result.health.phase is FailurePhase.OUTPUT
    attempt_1 = sample_dir(tmp_path) / "attempt-1" / "output"
    assert not attempt_1.exists(), "the failed attempt's output survived the retry"


def test_retry_reports_its_own_new_figure(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "stale_then_new", retries=1))
    artifact(result, tmp_path / "results")
    assert result.metric.value == 111.0
    assert result.health.healthy
    assert (result.health.attempts, result.health.retried) == (2, True)
    assert [a.exit_code for a in result.timings.attempts] == [1, 0]


def test_stale_output_under_a_glob_is_removed_before_the_retry(tmp_path: Path) -> None:
    bucket = fake_bucket(tmp_path, "stale_then_nothing", retries=1, output="{output_dir}/*.json")
    # argv writes to the literal path "<output dir>/*.json", which the glob matches.
    result = run(tmp_path, bucket)
    assert result.metric.value is None
    assert result.health.phase is FailurePhase.OUTPUT


@pytest.mark.parametrize(
    "output", [".", "..", "./", "../victim/*", "out/result.json", "{output_dir}/../x.json"]
)
def test_an_output_outside_the_attempt_directory_is_refused_and_nothing_is_deleted(
    tmp_path: Path, output: str
) -> None:
    """Outputs are cleaned before each attempt: only the attempt's own directory may hold them."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious", encoding="utf-8")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    with pytest.raises(ConfigError, match=r"command\.output: .* outside the attempt's output"):
        fake_bucket(checkout, "ok", output=output, writes_to="{output_dir}/result.json")
    assert (victim / "keep.txt").read_text(encoding="utf-8") == "precious"


def test_each_attempt_gets_its_own_exported_cache_dir(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "record_env", retries=1))
    artifact(result, tmp_path / "results")
    assert result.metric.value == 500.0
    seen = [
        json.loads(line)
        for line in (tmp_path / "state" / "env.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(seen) == 2
    caches = [Path(env["PERFGATE_CACHE_DIR"]) for env in seen]
    assert caches[0] != caches[1]
    for number, (cache, env) in enumerate(zip(caches, seen, strict=True), start=1):
        # Derived from run id, run attempt, bucket, sample and attempt (R10).
        assert cache.name == f"attempt-{number}"
        assert "4242-3" in cache.parts
        assert "fake__cpu" in cache.parts
        assert cache.parent.name == "sample-0"
        assert Path(env["WARP_CACHE_PATH"]).is_relative_to(cache)


def test_log_tail_is_bounded_and_keeps_the_end(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "noisy"))
    artifact(result, tmp_path / "results")
    assert result.metric.value == 42.0
    assert len(result.log_tail.encode()) <= LOG_TAIL_BYTES + len("…".encode())
    assert result.log_tail.rstrip().endswith("fake-bench: last line")
    assert "log line 00000" not in result.log_tail
    # The whole log is kept on disk for whoever needs more than the tail.
    full_log = sample_dir(tmp_path) / "attempt-1" / "log.txt"
    assert "log line 00000" in full_log.read_text(encoding="utf-8")


def test_demo_bucket_end_to_end_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Outside GitHub, so the context comes from (absent) local git.
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        "version: 1\n"
        "defaults: {num_envs: 64, steps: 20, warmup_steps: 2, timeout_minutes: 1}\n"
        "buckets:\n"
        "  - task: cartpole\n"
        "    backends: [{physics: numpy}, {physics: python}]\n",
        encoding="utf-8",
    )
    out = tmp_path / "results"
    code = cli.main(
        ["bench", "--config", str(config), "--bucket", "cartpole/numpy", "--out", str(out)]
    )
    assert code == 0
    assert [p.name for p in out.iterdir()] == ["cartpole__numpy.json"]
    data = json.loads((out / "cartpole__numpy.json").read_text(encoding="utf-8"))
    assert validate_result(data) == []
    assert data["health"]["phase"] is None and data["health"]["exit_code"] == 0
    assert data["health"]["config_mismatch"] is None
    assert data["metric"]["value"] > 0
    assert data["metric"]["std"] is not None and data["metric"]["max"] >= data["metric"]["min"]
    assert data["identity"]["launch"]["num_envs"] == 64
    assert data["identity"]["runtime"]["fields"]["versions.numpy"]
    assert data["source"]["event"] == "local"
    assert "cartpole/numpy" in capsys.readouterr().out


def test_outside_git_record_fails_before_any_benchmark_and_a_bench_says_so_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No git repository, no baseline branch: `--record` fails at once (exit 4) instead of
    after the whole matrix, and a plain bench says before its first run that it compares
    nothing, and does not close by suggesting the `--record` that would fail."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    fake_bucket(tmp_path, "ok")
    args = ["bench", "--config", str(tmp_path / "perfgate.yaml"), "--quiet",
            "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]  # fmt: skip

    assert cli.main([*args, "--record"]) == 4
    err = capsys.readouterr().err
    assert "--record needs a git repository" in err
    assert not (tmp_path / "state").exists()  # the benchmark never started
    assert not (tmp_path / "out").exists()

    assert cli.main(args) == 0
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("perfgate: not in a git repository: no baseline branch"), err
    assert (tmp_path / "out" / "fake__cpu.json").is_file()
    assert "--record" not in err


def test_a_failed_bucket_explains_itself_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The benchmark's own error, its last lines, the log's path, each retry and why; the
    output streams live unless --quiet."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    fake_bucket(tmp_path, "runtime_crash", retries=1)
    args = ["bench", "--config", str(tmp_path / "perfgate.yaml"), "--no-judge",
            "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]  # fmt: skip
    assert cli.main(args) == 2  # unjudged, a failed benchmark is still a HARD_FAILURE (R8)
    err = capsys.readouterr().err
    assert "perfgate: exit 2: 1 bucket(s) failed (fake/cpu)" in err
    assert "  | fake-bench: stepping" in err  # streamed live
    assert (
        "fake/cpu: attempt 1 of 2 failed (runtime, exit 1: "
        "RuntimeError: simulation diverged at step 17); retrying" in err
    )
    assert "cause: RuntimeError: simulation diverged at step 17" in err
    assert "no file matches" not in err.split("cause:", 1)[1].splitlines()[0]
    assert "  | Traceback (most recent call last):" in err.split("last lines of its output:")[1]
    log = sample_dir(tmp_path) / "attempt-2" / "log.txt"
    assert f"full log: {log}" in err
    assert "simulation diverged" in log.read_text()
    artifact = json.loads((tmp_path / "out" / "fake__cpu.json").read_text())
    assert artifact["log_path"] == str(log)

    assert cli.main([*args, "--quiet"]) == 2
    quiet = capsys.readouterr().err
    assert "  | fake-bench: stepping" not in quiet.split("last lines of its output:")[0]
    assert "cause: RuntimeError" in quiet
    # gate.always_pass is the explicit opt-in to a green run whatever happened.
    config = tmp_path / "perfgate.yaml"
    config.write_text(
        config.read_text().replace("version: 1", "version: 1\ngate:\n  always_pass: true")
    )
    assert cli.main([*args, "--quiet"]) == 0
    assert "gate.always_pass keeps the run green" in capsys.readouterr().err


HOSTILE_OUTPUT = (
    "x\r::add-mask::w\n"  # a bare carriage return starts a new line for the runner
    "::set-output name=verdict::PASS\n"
    "progress 10%\rprogress ##[add-mask]v\n"  # the legacy form is read anywhere in a line
    "done\r\n"
)


def test_benchmark_output_never_reaches_the_runner_as_a_workflow_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Streamed live and quoted when it fails: every line as the runner splits it is inert."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    script = f"import sys; sys.stdout.write({HOSTILE_OUTPUT!r}); sys.exit(1)"
    document = {
        "version": 1,
        "defaults": {"driver": "command", "retries": 0, "timeout_minutes": 1, "repeats": 1,
                     "metric": {"path": "fps", "direction": "higher", "unit": "it/s"}},
        "buckets": [{"task": "fake", "backends": [{"physics": "cpu"}],
                     "command": {"argv": [sys.executable, "-c", script],
                                 "output": "{output_dir}/r.json"}}],
    }  # fmt: skip
    (tmp_path / "perfgate.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    args = ["bench", "--config", str(tmp_path / "perfgate.yaml"), "--no-judge",
            "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]  # fmt: skip
    assert cli.main(args) == 2  # the benchmark failed: a HARD_FAILURE, judged or not
    err = capsys.readouterr().err
    # The runner reads its output line by line, a line ending at \r, \n or \r\n.
    lines = re.split(r"\r\n|\r|\n", err)
    assert not [line for line in lines if line.lstrip().startswith("::")], err
    assert "##[" not in err
    assert "  | : :add-mask::w" in lines  # shown, as a terminal would, but never a command
    assert "  | progress ## [add-mask]v" in lines
    assert "last lines of its output:" in err  # the failure quotes the output too


# -- repeats and confirmation ----------------------------------------------------------


def test_repeats_run_the_benchmark_again_and_keep_every_sample(tmp_path: Path) -> None:
    result = run(tmp_path, fake_bucket(tmp_path, "counting", repeats=3))
    data = artifact(result, tmp_path / "results")
    assert data["metric"]["samples"] == [
        {
            "sample_index": i,
            "value": 101.0 + i,
            "wall_s": pytest.approx(s["wall_s"]),
            "cache": "cold",
        }
        for i, s in enumerate(data["metric"]["samples"])
    ]
    # The figure shown is the median; the spread is the samples'.
    assert (result.metric.value, result.metric.min, result.metric.max) == (102.0, 101.0, 103.0)
    assert result.metric.std == pytest.approx(1.0)
    assert [a.sample_index for a in result.timings.attempts] == [0, 1, 2]
    assert result.sampling is not None and result.sampling.stopped is SamplingStop.PLANNED
    for index in range(3):
        assert (sample_dir(tmp_path, index) / "attempt-1" / "log.txt").is_file()
    caches = [json.loads(line)["PERFGATE_CACHE_DIR"]
              for line in (tmp_path / "state" / "env.jsonl").read_text().splitlines()]  # fmt: skip
    assert len(set(caches)) == 3, "each sample gets its own cache (R10)"


def test_confirmation_takes_samples_while_asked_and_stops_when_settled(tmp_path: Path) -> None:
    asked: list[tuple[float, ...]] = []

    def confirm(bucket: Bucket, so_far: Result) -> bool:
        asked.append(so_far.metric.sample_values())
        return len(asked) < 3

    messages: list[str] = []
    bucket = fake_bucket(tmp_path, "counting", repeats=2, max_repeats=10)
    result = run(tmp_path, bucket, confirm, messages)
    # Asked after the two repeats and after each further sample, until it said no.
    assert asked == [(101.0, 102.0), (101.0, 102.0, 103.0), (101.0, 102.0, 103.0, 104.0)]
    assert result.metric.sample_values() == (101.0, 102.0, 103.0, 104.0)
    assert result.sampling is not None
    assert (result.sampling.stopped, result.sampling.max_repeats) == (SamplingStop.SETTLED, 10)
    assert messages == ["fake/cpu: took 4 samples to confirm (settled)"]


def test_confirmation_stops_at_max_repeats_and_at_the_time_budget(tmp_path: Path) -> None:
    capped = run(tmp_path / "a", fake_bucket(tmp_path / "a", "counting", max_repeats=3),
                 lambda bucket, so_far: True)  # fmt: skip
    assert len(capped.metric.samples) == 3
    assert capped.sampling is not None and capped.sampling.stopped is SamplingStop.MAX_REPEATS
    # A budget already spent after the repeats: no confirmation sample starts.
    spent = fake_bucket(tmp_path / "b", "counting", repeats=2, repeat_budget_minutes=1e-6)
    budget = run(tmp_path / "b", spent, lambda bucket, so_far: True)
    assert len(budget.metric.samples) == 2
    assert budget.sampling is not None and budget.sampling.stopped is SamplingStop.TIME_BUDGET


def test_a_failed_confirmation_sample_fails_the_run(tmp_path: Path) -> None:
    bucket = fake_bucket(tmp_path, "crash_on_third", repeats=2)
    result = run(tmp_path, bucket, lambda bucket, so_far: True)
    assert result.health.phase is FailurePhase.RUNTIME and not result.health.healthy
    assert result.metric.sample_values() == (100.0, 100.0)  # the healthy ones, kept
    assert result.sampling is not None and result.sampling.stopped is SamplingStop.FAILED
    assert result.log_path == str(sample_dir(tmp_path, 2) / "attempt-1" / "log.txt")


def test_threads_cap_numeric_libraries_only_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the machine's own setting
    run(tmp_path / "a", fake_bucket(tmp_path / "a", "counting", threads=2))
    (seen,) = [
        json.loads(line) for line in (tmp_path / "a/state/env.jsonl").read_text().splitlines()
    ]
    assert [seen[name] for name in THREAD_VARIABLES] == ["2"] * 4
    # The command driver leaves the environment's settings alone by default.
    run(tmp_path / "b", fake_bucket(tmp_path / "b", "counting"))
    (seen,) = [
        json.loads(line) for line in (tmp_path / "b/state/env.jsonl").read_text().splitlines()
    ]
    assert [seen[name] for name in THREAD_VARIABLES] == ["7", None, None, None]


class FakePairing:
    """The judge side, scripted: every bucket wants pairs; a shared budget affords one.

    Stands in for judge.confirm.Confirmer and the merge base (the statistics and budget
    arithmetic are tested apart): it records the budget the bench says is left, and under a
    shared budget declines pairs to every bucket after the first. The base is the same
    checkout, so every pair measures the same benchmark twice.
    """

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.lefts: dict[str, float | None] = {}
        self.order_asked: list[str] = []

    def needs_sample(self, bucket: Bucket, result: Result) -> bool:
        return False

    def step(self, bucket: Bucket, result: Result) -> Any:
        from perfgate.run.sampling import Step

        return Step.DONE if result.paired is not None else Step.PAIR

    def pair_plan(self, bucket: Bucket, result: Result, left_minutes: float | None) -> Any:
        from perfgate.run.paired import PairPlan

        granted = len(self.lefts)
        self.lefts[bucket.id] = left_minutes
        if left_minutes is not None and granted:
            return PairPlan(pairs=0, skipped=f"{left_minutes:.3f} min left of the run's budget")
        return PairPlan(pairs=2)

    def order(self, runs: Any) -> list[Bucket]:
        self.order_asked = [bucket.id for bucket, _ in runs]
        return [bucket for bucket, _ in reversed(runs)]

    def base(self, bucket: Bucket, result: Result) -> Any:
        from contextlib import nullcontext

        from perfgate.run.paired import BaseCheckout

        return nullcontext(BaseCheckout(commit="b" * 40, checkout=self.checkout, bucket=bucket))

    def needs_pair(self, bucket: Bucket, result: Result, paired: Any) -> bool:
        return True


def two_buckets(tmp_path: Path) -> list[Bucket]:
    one = fake_bucket(tmp_path / "a", "ok")
    two = fake_bucket(tmp_path / "b", "ok")
    return [one, replace(two, task="other")]


@pytest.mark.parametrize("budget", [None, 60.0])
def test_the_matrix_takes_its_repeats_then_confirms_the_most_suspicious_first(
    tmp_path: Path, budget: float | None
) -> None:
    from perfgate.result import PairedStatus
    from perfgate.run.bench import run_buckets
    from perfgate.run.paired import Confirmation

    buckets = two_buckets(tmp_path)
    pairing = FakePairing(tmp_path)
    settings = BenchSettings(
        checkout=tmp_path, work_root=tmp_path / "work", out_dir=tmp_path / "results",
        hardware=HARDWARE, context=CONTEXT,
    )  # fmt: skip
    confirmation = Confirmation(judge=pairing, bases=pairing.base)
    results = run_buckets(buckets, settings, confirm_mode=ConfirmMode.PAIRED,
                          confirmation=confirmation, budget_minutes=budget)  # fmt: skip
    # Every bucket took its repeats before anything was confirmed; the judge chose the order.
    assert pairing.order_asked == ["fake/cpu", "other/cpu"]
    assert list(pairing.lefts) == ["other/cpu", "fake/cpu"]
    by_id = {r.bucket.id: r for r in results}
    first, second = by_id["other/cpu"], by_id["fake/cpu"]
    assert first.paired is not None and first.paired.status is PairedStatus.MEASURED
    assert len(first.paired.pairs()) == 2
    if budget is None:
        assert pairing.lefts == {"other/cpu": None, "fake/cpu": None}
        assert second.paired is not None and second.paired.status is PairedStatus.MEASURED
    else:
        # What the first confirmation spent is no longer there for the second, which is not
        # started; its artifact says why.
        first_left, second_left = pairing.lefts["other/cpu"], pairing.lefts["fake/cpu"]
        assert first_left is not None and second_left is not None
        assert second_left < first_left <= budget
        assert first.sampling is not None and first.sampling.confirmation_s > 0
        assert second.paired is not None and second.paired.status is PairedStatus.SKIPPED
        assert second.paired.reason.endswith("min left of the run's budget")
    for result in results:  # each artifact was rewritten after its confirmation
        stem = result.bucket.id.replace("/", "__")
        assert read_result(settings.out_dir / f"{stem}.json") == result
