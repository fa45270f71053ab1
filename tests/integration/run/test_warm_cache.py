"""A warm cache across samples (R16): warm-up when cold, emptied for a retry, real processes.

The benchmark here is a few lines of Python run as a real subprocess: it says whether its
cache (PERFGATE_CACHE_DIR) held what an earlier launch compiled, fills it, and can be told
to fail. What is tested is execution.run_with_retry's handling of the cache around it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfgate.config import PhaseMarkers
from perfgate.result import CacheState, FailurePhase
from perfgate.run.execution import (
    AttemptDirs,
    AttemptRecord,
    Invocation,
    ProcessOutcome,
    Retries,
    Watch,
    run_with_retry,
)
from perfgate.run.layout import WARM_MARK, SampleLayout, WarmCache

BENCHMARK = """
import json, os, pathlib, sys
cache = pathlib.Path(os.environ["PERFGATE_CACHE_DIR"])
kernels = cache / "kernels.bin"
found = kernels.is_file()
kernels.write_text("compiled")
failed = pathlib.Path.cwd() / "failed-once"
if os.environ.get("FAIL") and not failed.exists():
    failed.write_text("")
    sys.exit(os.environ["FAIL"])
pathlib.Path(sys.argv[1], "out.json").write_text(json.dumps({"found": found}))
"""
MARKERS = PhaseMarkers(environment={"no interpreter": "link it"})


def run(
    tmp_path: Path, warm: WarmCache, *, fail: str = "", retries: int = 1, sample: int = 0
) -> list[AttemptRecord[dict[str, bool] | None]]:
    script = tmp_path / "bench.py"
    script.write_text(BENCHMARK, encoding="utf-8")

    def plan(dirs: AttemptDirs) -> Invocation:
        return Invocation(
            argv=(sys.executable, str(script), str(dirs.output_dir)),
            cwd=tmp_path,
            env={"FAIL": fail},
        )

    def read(dirs: AttemptDirs, outcome: ProcessOutcome) -> dict[str, bool] | None:
        out = dirs.output_dir / "out.json"
        return json.loads(out.read_text()) if out.is_file() else None

    records = run_with_retry(
        plan=plan,
        read=read,
        succeeded=lambda outcome, reading: outcome.phase is None and reading is not None,
        watch=Watch(timeout_s=60, markers=MARKERS),
        retry=Retries(retries=retries),
        layout=SampleLayout(work_root=tmp_path, run_key="local", stem="b", index=sample, warm=warm),
    )
    return records


def test_a_cold_cache_gets_one_unmeasured_warm_up_and_later_samples_start_warm(
    tmp_path: Path,
) -> None:
    warm = WarmCache(path=tmp_path / "warm")
    first = run(tmp_path, warm)
    assert [(r.warmup, r.cache) for r in first] == [
        (True, CacheState.COLD),
        (False, CacheState.WARM),
    ]
    # The measured launch found what the warm-up compiled.
    assert first[-1].reading == {"found": True}
    assert not list((tmp_path / "runs").rglob("warmup/output/out.json"))  # never measured
    second = run(tmp_path, warm, sample=1)
    assert [(r.warmup, r.cache) for r in second] == [(False, CacheState.WARM)]
    assert second[0].reading == {"found": True}


def test_a_retry_starts_from_an_emptied_cache(tmp_path: Path) -> None:
    warm = WarmCache(path=tmp_path / "warm")
    run(tmp_path, warm)
    assert (warm.path / WARM_MARK).is_file()
    records = run(tmp_path, warm, fail="flaky launch", sample=1)
    assert [(r.number, r.warmup, r.cache, r.outcome.phase) for r in records] == [
        (1, False, CacheState.WARM, FailurePhase.RUNTIME),
        # The failed attempt may have poisoned the cache: the retry warms up an empty one.
        (2, True, CacheState.COLD, None),
        (2, False, CacheState.WARM, None),
    ]
    assert records[1].reading == {"found": False}


def test_an_environment_failure_is_not_retried_and_says_why(tmp_path: Path) -> None:
    records = run(tmp_path, WarmCache(path=tmp_path / "warm"), fail="no interpreter")
    assert [r.outcome.phase for r in records] == [FailurePhase.ENVIRONMENT]
    assert records[0].outcome.fix == "link it"
    assert records[0].not_retried == "not retried: link it"
