"""What a warm cache saves a launch in the stand-in CI image, cold and warm side by side (R16).

Runs buckets of the Isaac Lab example through perfgate's bench in the stand-in image
(tests/fixtures/isaaclab_standin.py, tests/fixtures/fake_docker.py; root, unshare and
chroot needed), alternating a cold run (``cache: cold``: every launch compiles from an
empty cache) with a warm one (the driver's default: a cold cache is filled by one
unmeasured warm-up launch, then every sample starts warm). It prints, per bucket, the
median launch wall time and ``startup_s`` (Kit launch + scene build + first step) of cold
and warm samples, and their ratio.

The stand-in compiles nothing: a cold launch sleeps ``--compile-s`` per compile (Warp
kernels; the RTX shader database for an RTX camera), what a GPU spends minutes on. The
figures therefore show that perfgate reuses the cache (a warm launch skips the compile
and its cost leaves startup_s), not how long Isaac Lab's compiles take.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.config import ConfirmMode, load_config  # noqa: E402
from perfgate.context import RunContext  # noqa: E402
from perfgate.result import Hardware, Result  # noqa: E402
from perfgate.run.bench import run_bucket  # noqa: E402
from perfgate.run.launch import BenchSettings  # noqa: E402
from perfgate.run.sampling import SamplingPlan  # noqa: E402
from tests.fixtures import fake_docker  # noqa: E402
from tests.fixtures import isaaclab_standin as standin  # noqa: E402

EXAMPLE = ROOT / "examples" / "isaaclab" / "perfgate.yaml"
BUCKETS = (
    "Isaac-Cartpole-Direct/physx",
    "IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct/physx_rtx_renderer",
)
IMAGE = "nvcr.io/nvidian/isaac-lab:standin"


def _config(work: Path, cache: str) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["defaults"]["cache"] = cache
    # The stand-in's compile time reaches the container by name, as any variable would.
    data["defaults"]["container"]["env"] = ["ISAACLAB_STANDIN_COMPILE_S"]
    path = work / f"{cache}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _launches(result: Result) -> list[tuple[str, float]]:
    """(cache state, wall seconds) of every measured launch, warm-ups aside."""
    return [(a.cache.value if a.cache else "?", a.wall_s) for a in result.timings.attempts
            if not a.warmup]  # fmt: skip


def main() -> int:
    """Measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="cold/warm runs each (default 5)")
    parser.add_argument("--compile-s", type=float, default=2.0, help="seconds per compile")
    parser.add_argument("--samples", type=int, default=2, help="samples per run (default 2)")
    args = parser.parse_args()
    missing = standin.image_missing()
    if missing is not None:
        print(f"warm_cache: skipped, the stand-in image needs {missing}")
        return 0
    with tempfile.TemporaryDirectory(prefix="perfgate-warm-cache-") as scratch:
        work = Path(scratch)
        image = standin.write_image(work / "image")
        state = work / "docker-state"
        fake_docker.register_image(state, IMAGE, image)
        docker_bin = work / "bin"
        docker_bin.mkdir()
        (docker_bin / "docker").write_text(
            f'#!/bin/sh\nexec {sys.executable} {ROOT / "tests/fixtures/fake_docker.py"} "$@"\n'
        )
        (docker_bin / "docker").chmod(0o755)
        os.environ.update(
            PATH=f"{docker_bin}:{os.environ['PATH']}",
            FAKE_DOCKER_STATE=str(state),
            PERFGATE_IMAGE=IMAGE,
            ISAACLAB_STANDIN_COMPILE_S=str(args.compile_s),
        )
        checkout = standin.write_checkout(work / "checkout")
        configs = {mode: load_config(_config(work, mode)) for mode in ("cold", "warm")}
        context = RunContext(commit=None, branch=None, target_branch="develop", event="local")
        launches: dict[tuple[str, str], list[float]] = {}
        startup: dict[tuple[str, str], list[float]] = {}
        for round_ in range(args.rounds):
            for mode in ("cold", "warm"):  # side by side, alternating
                for bucket in (b for b in configs[mode].buckets if b.id in BUCKETS):
                    settings = BenchSettings(
                        checkout=checkout,
                        # A fresh work root per run: the warm run starts from an empty
                        # cache (one warm-up launch), as a first CI run does.
                        work_root=work / f"{mode}-{round_}",
                        out_dir=work / "results",
                        hardware=Hardware(slug="standin"),
                        context=context,
                    )
                    plan = SamplingPlan(
                        confirm=ConfirmMode.OFF, repeats=args.samples, max_repeats=args.samples
                    )
                    result = run_bucket(bucket, settings, plan=plan)
                    assert result.health.healthy, (bucket.id, result.log_tail)
                    for state_, wall in _launches(result):
                        launches.setdefault((bucket.id, state_), []).append(wall)
                    values = [s.value for s in result.metrics["startup_s"].samples]
                    startup.setdefault((bucket.id, mode), []).extend(values)
    print(f"stand-in compile: {args.compile_s:g} s each; {args.rounds} cold and {args.rounds} "
          f"warm runs of {args.samples} sample(s), alternating\n")  # fmt: skip
    width = max(len(b) for b in BUCKETS)
    header = f"{'bucket':<{width}} {'launch cold':>11} {'warm':>7} {'ratio':>6}"
    print(header + f" {'startup_s cold':>15} {'warm':>7} {'ratio':>6}")
    for bucket_id in BUCKETS:
        cold = statistics.median(launches[(bucket_id, "cold")])
        warm = statistics.median(launches[(bucket_id, "warm")])
        s_cold = statistics.median(startup[(bucket_id, "cold")])
        s_warm = statistics.median(startup[(bucket_id, "warm")])
        print(f"{bucket_id:<{width}} {cold:>10.2f}s {warm:>6.2f}s {warm / cold:>6.2f}"
              f" {s_cold:>14.2f}s {s_warm:>6.2f}s {s_warm / s_cold:>6.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
