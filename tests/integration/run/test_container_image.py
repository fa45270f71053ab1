"""The Isaac Lab example in (a stand-in of) Isaac Lab's real CI image, head and merge base.

Each test names the upstream file (public repository isaac-sim/IsaacLab) whose behaviour
it stands in for. tests/container_support.py says what the stand-in docker and image are;
the benchmark inside them is tests/fixtures/isaaclab_standin.py. Everything of perfgate's
is real: config, driver, container profile, warm caches, retries, git worktrees.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baselines.confirm import StoreWindows
from perfgate.config import Bucket, Config, ConfirmMode, load_config
from perfgate.context import RunContext
from perfgate.judge.confirm import Confirmer
from perfgate.result import (
    CacheState,
    FailurePhase,
    Hardware,
    PairedRecord,
    PairedSide,
    PairedStatus,
    Result,
    validate_result,
)
from perfgate.run.bench import run_bucket
from perfgate.run.launch import BenchSettings
from perfgate.run.paired import Confirmation, PairPlan, merge_base_checkout
from perfgate.run.sampling import SamplingPlan, Step
from perfgate.util.git import git
from tests import container_support as support
from tests.fixtures import isaaclab_standin as standin
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "isaaclab" / "perfgate.yaml"
CAMERA = "IsaacContrib-Reorient-Cube-Shadow-Camera-Benchmark-Direct"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in CI image (docker/Dockerfile.base's layout), laid out once."""
    support.require_container_standin()
    return standin.write_image(tmp_path_factory.mktemp("image"))


@pytest.fixture
def docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: Path) -> Path:
    """The stand-in docker on PATH with the image registered as the example's resolved one."""
    state = support.docker_on_path(tmp_path, monkeypatch)
    support.register(state, support.IMAGE, image)
    # What resolve-image hands the bench job (perf-smoke-test.yaml pulls it by the same ref).
    monkeypatch.setenv("PERFGATE_IMAGE", support.IMAGE)
    # Nothing of the host's Isaac Lab may help: only what the container profile provides.
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "OMNI_KIT_ACCEPT_EULA", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ISAACLAB_STANDIN_COMPILE_S", "0.05")
    return state


def example(tmp_path: Path, **container: Any) -> Path:
    """The shipped example, its container block overridden by ``container`` (pieces only)."""
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["defaults"]["container"] = {**data["defaults"]["container"], **container}
    path = tmp_path / "perfgate.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def settings(tmp_path: Path, checkout: Path, **more: Any) -> BenchSettings:
    return BenchSettings(
        checkout=checkout,
        work_root=tmp_path / "work",
        out_dir=tmp_path / "results",
        hardware=Hardware(slug="l40s", gpu_name="NVIDIA L40S", gpu_count=1, cpu_name="x"),
        context=RunContext(commit=None, branch="change", target_branch="develop", event="local"),
        **more,
    )


class AlwaysPair(Confirmer):
    """The judge side of ``gate.confirm: paired`` made to measure every bucket once beside
    its merge base: what is tested is that the base runs in the image as the change does."""

    def step(self, bucket: Bucket, result: Result) -> Step:
        return Step.DONE if result.paired is not None else Step.PAIR

    def pair_plan(self, bucket: Bucket, result: Result, left_minutes: float | None) -> PairPlan:
        return PairPlan(pairs=1)

    def needs_pair(self, bucket: Bucket, result: Result, paired: PairedRecord) -> bool:
        return False


def always_pair(
    config: Config, checkout: Path, work_dir: Path, say: Callable[[str], None]
) -> Confirmation:
    """AlwaysPair with no baseline branch, and the merge base of ``checkout``."""
    return Confirmation(
        judge=AlwaysPair(config, StoreWindows(config, None, say=say)),
        bases=lambda bucket, result: merge_base_checkout(
            config, bucket, result, checkout=checkout, work_dir=work_dir, remote=None
        ),
    )


def paired_run(tmp_path: Path, bucket: Bucket, checkout: Path, config: Path) -> Result:
    """One head sample, then one pair with the merge base, as the bench takes them."""
    loaded = load_config(config)
    confirmation = always_pair(loaded, checkout, tmp_path / "work", say=lambda line: None)
    plan = SamplingPlan(confirm=ConfirmMode.PAIRED, repeats=1, max_repeats=1)
    result = run_bucket(bucket, settings(tmp_path, checkout), plan=plan, confirmation=confirmation)
    assert validate_result(result.to_json()) == []
    return result


def bundles(tmp_path: Path, bucket: Bucket, sample: str) -> list[dict[str, Any]]:
    """The RuntimeBundles one sample's launches left (warm-ups leave none)."""
    where = tmp_path / "work" / "runs" / bucket.file_stem / sample
    return [json.loads(p.read_text()) for p in sorted(where.rglob("benchmark_runtime_*.json"))]


def test_nine_buckets_run_healthy_head_and_merge_base_in_the_ci_image(
    tmp_path: Path, docker: Path
) -> None:
    """.github/workflows/perf-smoke-test.yaml's bench job, for the example's nine buckets with
    the driver's default profile: the checkout over /workspace/isaaclab (docker/.env.base),
    run by the image's uid-1000 user, with the merge base measured the same way."""
    repo, base, head = support.change_over_base(tmp_path / "repo", base_cost=1.0, head_cost=1.25)
    config = example(tmp_path)
    for bucket in load_config(config).buckets:
        result = paired_run(tmp_path, bucket, repo, config)
        assert result.health.healthy, (bucket.id, result.log_tail)
        paired = result.paired
        assert paired is not None and paired.status is PairedStatus.MEASURED, (bucket.id, paired)
        assert paired.base_commit == base
        ((base_fps, head_fps),) = paired.pairs()
        # The base's own code ran: its steps cost 1.0 where the change's cost 1.25.
        assert base_fps / head_fps == pytest.approx(1.25, rel=0.03), bucket.id
        # ... and git inside the image names each side's commit (a linked worktree's .git
        # points at a host path: perfgate mounts the repository's git directory read-only).
        (base_run,) = bundles(tmp_path, bucket, "paired-0-base")
        (head_run,) = bundles(tmp_path, bucket, "paired-1-head")
        assert (base_run["versions"]["git_commit"], head_run["versions"]["git_commit"]) == (
            base,
            head,
        )
        # Both sides ran warm: each filled its own cache with one unmeasured launch first.
        assert [s.cache for s in result.metric.samples] == [CacheState.WARM]
    # The link the checkout hides was made in it (git ignores it, as upstream's does).
    assert (repo / "_isaac_sim").readlink() == Path("/isaac-sim")
    assert git("status", "--porcelain", cwd=repo) == ""


def test_outputs_are_written_by_the_images_user(tmp_path: Path, docker: Path) -> None:
    """docker/test/test_dockerfile_nonroot.py: the image runs as isaaclab, uid 1000."""
    checkout = standin.write_checkout(tmp_path / "checkout")
    bucket = load_config(example(tmp_path)).buckets[1]  # Cartpole on Newton
    result = run_bucket(bucket, settings(tmp_path, checkout))
    assert result.health.healthy, result.log_tail
    outputs = list((tmp_path / "work" / "runs").rglob("benchmark_runtime_*.json"))
    assert outputs and {p.stat().st_uid for p in outputs} == {1000}
    kernels = list((tmp_path / "work" / "warm-cache").rglob("wp_*.bin"))
    assert kernels and {p.stat().st_uid for p in kernels} == {1000}


def test_an_rtx_camera_without_a_writable_kit_cache_fails_in_the_environment_once(
    tmp_path: Path, docker: Path
) -> None:
    """perf-smoke-test.yaml: /isaac-sim/kit/cache is root-owned 755 in the image; without a
    writable one the RTX renderer cannot create its shader DB and later crashes with a CUDA
    error that reads as a driver fault. Never retried: it would fail the same way."""
    checkout = standin.write_checkout(tmp_path / "checkout")
    config = load_config(example(tmp_path, caches={"kit": None}))
    by_id = {b.id: b for b in config.buckets}
    rtx = run_bucket(by_id[f"{CAMERA}/physx_rtx_renderer"], settings(tmp_path, checkout))
    assert rtx.health.phase is FailurePhase.ENVIRONMENT
    assert rtx.health.attempts == 1 and not rtx.health.retried  # the example allows a retry
    assert rtx.health.error is not None and "container.caches.kit" in rtx.health.error
    assert "cudaErrorIllegalAddress" in rtx.log_tail  # what used to be filed as a driver fault
    # The Newton renderer needs no shader cache.
    warp = run_bucket(by_id[f"{CAMERA}/physx_newton_renderer"], settings(tmp_path, checkout))
    assert warp.health.healthy, warp.log_tail


@pytest.mark.parametrize(
    ("override", "bucket_id", "fix"),
    [
        # docker/Dockerfile.base makes the link a mounted checkout hides.
        ({"links": {"_isaac_sim": None}}, "Isaac-Cartpole-Direct/newton", "_isaac_sim link"),
        # perf-smoke-test.yaml passes OMNI_KIT_ACCEPT_EULA=yes; Kit (PhysX) asks otherwise.
        (
            {"set_env": {"OMNI_KIT_ACCEPT_EULA": None}},
            "Isaac-Cartpole-Direct/physx",
            "OMNI_KIT_ACCEPT_EULA=yes",
        ),
    ],
    ids=["no-isaac-sim-link", "eula-not-accepted"],
)
def test_an_environment_that_cannot_run_it_is_not_retried_and_names_the_fix(
    tmp_path: Path, docker: Path, override: dict[str, Any], bucket_id: str, fix: str
) -> None:
    checkout = standin.write_checkout(tmp_path / "checkout")
    config = load_config(example(tmp_path, **override))
    bucket = next(b for b in config.buckets if b.id == bucket_id)
    notices: list[str] = []
    result = run_bucket(bucket, settings(tmp_path, checkout, say=notices.append))
    assert result.health.phase is FailurePhase.ENVIRONMENT, result.log_tail
    assert result.health.attempts == 1 and len(result.timings.attempts) == 1
    assert result.health.error is not None and fix in result.health.error
    assert [n for n in notices if "not retried" in n and fix in n], notices


def test_the_merge_base_fetches_lfs_content_as_the_change_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker: Path
) -> None:
    """The upstream bench job checks out with `lfs: true` (*.usd, *.pt are LFS-tracked): the
    merge base's worktree asks Git LFS for its content too. A `git-lfs` stand-in on PATH
    records what it is asked and fills pointers from its store (no LFS server exists here)."""
    repo = standin.write_checkout(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.usd filter=lfs diff=lfs merge=lfs -text\n")
    asset = repo / "source" / "isaaclab_assets" / "robot.usd"
    asset.parent.mkdir(parents=True)
    asset.write_text(fake_git_lfs_pointer("robot"), encoding="utf-8")
    git("init", "-q", "-b", "develop", cwd=repo)
    base = support.commit_all(repo, "isaac lab with an LFS-tracked asset")
    git("checkout", "-q", "-b", "change", cwd=repo)
    (repo / "README.md").write_text("a change\n")
    support.commit_all(repo, "a change")
    calls = install_fake_git_lfs(tmp_path, monkeypatch, objects={"robot": "#usda 1.0\n"})
    config = load_config(example(tmp_path))
    bucket = config.buckets[1]
    plan = SamplingPlan(confirm=ConfirmMode.OFF, repeats=1, max_repeats=1)
    result = run_bucket(bucket, settings(tmp_path, repo), plan=plan)
    merge_base = merge_base_checkout(
        config, bucket, result, checkout=repo, work_dir=tmp_path / "w", remote=None
    )
    with merge_base as checkout:
        assert not isinstance(checkout, str), checkout
        assert checkout.commit == base
        fetched = (checkout.checkout / "source" / "isaaclab_assets" / "robot.usd").read_text()
        (call,) = calls()
        assert call["argv"] == ["pull"] and Path(call["cwd"]) == checkout.checkout
    assert fetched == "#usda 1.0\n"


def fake_git_lfs_pointer(content: str) -> str:
    """A Git LFS pointer file naming ``content`` by the stand-in's object id."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{content}\nsize 1\n"


def install_fake_git_lfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, objects: dict[str, str]
) -> Any:
    """A `git-lfs` on PATH: `git lfs pull` replaces each pointer in the worktree with its
    object from ``objects`` and records the call. No LFS server exists here."""
    bin_dir = tmp_path / "lfs-bin"
    bin_dir.mkdir()
    log = tmp_path / "lfs-calls.jsonl"
    store = tmp_path / "lfs-objects.json"
    store.write_text(json.dumps(objects), encoding="utf-8")
    script = bin_dir / "git-lfs"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, pathlib, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps({{'argv': sys.argv[1:], "
        "'cwd': os.getcwd()}) + '\\n')\n"
        f"objects = json.load(open({str(store)!r}))\n"
        "if sys.argv[1:] == ['pull']:\n"
        "    for path in pathlib.Path('.').rglob('*.usd'):\n"
        "        text = path.read_text()\n"
        "        if text.startswith('version https://git-lfs'):\n"
        "            oid = text.split('oid sha256:')[1].splitlines()[0]\n"
        "            path.write_text(objects[oid])\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def calls() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    return calls


def test_each_side_runs_in_its_own_commits_image_with_no_checkout_over_it(
    tmp_path: Path, docker: Path, image: Path
) -> None:
    """image.per_commit: the image the project's CI built for each commit (perf-smoke-test.yaml
    tags isaac-lab-ci:sha-<sha>), awaited while CI still builds it; no checkout mounted over
    the image's source, whose own _isaac_sim link (Dockerfile.base) is used."""
    repo, base, head = support.change_over_base(tmp_path / "repo", base_cost=1.0, head_cost=1.25)
    for sha, cost, delay in ((base, 1.0, 0.0), (head, 2.0, 2.0)):
        # The head's image carries a step cost of 2.0: only its own source runs, not the
        # checkout's 1.25; it appears two seconds after the bench asks for it.
        source = standin.write_checkout(tmp_path / f"src-{sha[:7]}", step_cost=cost)
        built = standin.write_image(tmp_path / f"image-{sha[:7]}", source=source)
        support.register(docker, f"ci.example/isaac-lab-ci:sha-{sha}", built, after_s=delay)
    data = yaml.safe_load(example(tmp_path).read_text())
    data["image"] = {
        "per_commit": "ci.example/isaac-lab-ci:sha-{sha}",
        "per_commit_wait_minutes": 1,
    }
    config = tmp_path / "per-commit.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    loaded = load_config(config)
    bucket = loaded.buckets[1]
    result = run_bucket(
        bucket,
        settings(tmp_path, repo, image=loaded.image),
        plan=SamplingPlan(confirm=ConfirmMode.PAIRED, repeats=1, max_repeats=1),
        confirmation=always_pair(loaded, repo, tmp_path / "work", say=print),
    )
    assert result.health.healthy, result.log_tail
    assert result.paired is not None and result.paired.status is PairedStatus.MEASURED
    ((base_fps, head_fps),) = result.paired.pairs()
    assert base_fps / head_fps == pytest.approx(2.0, rel=0.03)
    assert not (repo / "_isaac_sim").exists()  # nothing was made in the checkout
    calls = [json.loads(line)[:-1] for line in (docker / "calls.log").read_text().splitlines()]
    runs = [call for call in calls if call[0] == "run"]
    assert len(runs) == 5  # each side's warm-up, the head's sample, the pair
    assert not [arg for run in runs for arg in run if arg.startswith(f"{repo}:")]
    sides = {s.side for s in result.paired.samples}
    assert sides == {PairedSide.BASE, PairedSide.HEAD}


def test_an_image_per_commit_that_never_appears_is_named(tmp_path: Path, docker: Path) -> None:
    repo, _, head = support.change_over_base(tmp_path / "repo", base_cost=1.0, head_cost=1.0)
    data = yaml.safe_load(example(tmp_path).read_text())
    data["image"] = {"per_commit": "ci.example/never:sha-{sha7}", "per_commit_wait_minutes": 0.02}
    config = tmp_path / "never.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    loaded = load_config(config)
    result = run_bucket(loaded.buckets[1], settings(tmp_path, repo, image=loaded.image))
    assert result.health.phase is FailurePhase.ENVIRONMENT
    assert result.health.error is not None
    assert f"ci.example/never:sha-{head[:7]} did not appear" in result.health.error


def test_a_machine_without_the_prerequisites_skips_naming_them_unless_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(standin, "image_missing", lambda: "root (the stand-in docker mounts)")
    monkeypatch.delenv(support.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"need root \(the stand-in docker"):
        support.require_container_standin()
    monkeypatch.setenv(support.REQUIRE, "1")  # what .ci/run sets
    with pytest.raises(pytest.fail.Exception, match="PERFGATE_REQUIRE_CONTAINER=1 requires"):
        support.require_container_standin()
