"""The ``docker run`` wrapping and the container profile, checked by argument list and files.

These tests assert the exact command that would be executed and what is prepared on the
host before it; tests/integration/run/test_container_image.py runs such commands through
the stand-in docker and image.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from perfgate.config import ContainerSpec, ImageSpec
from perfgate.errors import ConfigError
from perfgate.run.container import (
    GITCONFIG,
    IMAGE_ENV,
    Container,
    ContainerProfile,
    Mount,
    container_uid,
    image_for,
    make_links,
    mounts_for,
    prepare,
    resolve,
    translate,
    unwritable_dirs,
    user_arg,
    wrap,
)
from perfgate.run.drivers.isaaclab import CONTAINER as ISAACLAB
from perfgate.run.execution import AttemptDirs, EnvironmentProblem, Invocation, with_cache_env
from perfgate.run.layout import container_name
from perfgate.util.git import git


def attempt(tmp_path: Path) -> tuple[Path, AttemptDirs, Invocation]:
    checkout = (tmp_path / "checkout").resolve()
    dirs = AttemptDirs(
        number=2,
        output_dir=checkout / ".perfgate" / "work" / "runs" / "T__physx" / "attempt-2" / "output",
        cache_dir=checkout / ".perfgate" / "work" / "cache" / "local-1" / "T__physx" / "attempt-2",
    )
    invocation = Invocation(
        argv=(
            "./isaaclab.sh", "benchmark", "runtime", "--task", "T",
            "--output_path", str(dirs.output_dir), "presets=newton_mjwarp",
        ),
        cwd=checkout,
        env={"SECRET_TOKEN": "s3cret"},
        outputs=(str(dirs.output_dir),),
    )  # fmt: skip
    return checkout, dirs, with_cache_env(invocation, dirs.cache_dir)


def plain(**spec: Any) -> Container:
    """The command driver's plain profile with the given ``container`` block."""
    return resolve(ContainerSpec(**spec), ContainerProfile())


def test_docker_run_arguments_of_a_plain_profile(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    container = resolve(
        ContainerSpec(
            image="ignored",
            checkout_mount="/workspace/isaaclab",
            env=("ACCEPT_EULA", "OMNI_KIT_ACCEPT_EULA"),
            user="1000:1000",
            extra_args=("--shm-size", "8g"),
        ),
        ContainerProfile(),
    )
    wrapped = wrap(
        invocation,
        container=container,
        image="nvcr.io/x/isaac-lab:sha-1234567",
        checkout=checkout,
        dirs=dirs,
        name="perfgate-run-T-2",
    )
    assert wrapped.argv == (
        "docker", "run", "--rm", "--init",
        "--name", "perfgate-run-T-2",
        "--gpus", "all",
        "--user", "1000:1000",
        "--volume", f"{checkout}:/workspace/isaaclab",
        "--volume", f"{dirs.output_dir}:/perfgate/output",
        "--volume", f"{dirs.cache_dir}:/perfgate/cache",
        "--workdir", "/workspace/isaaclab",
        "--env", "ACCEPT_EULA",
        "--env", "CUDA_CACHE_PATH",
        "--env", "OMNI_KIT_ACCEPT_EULA",
        "--env", "PERFGATE_CACHE_DIR",
        "--env", "SECRET_TOKEN",
        "--env", "WARP_CACHE_PATH",
        "--shm-size", "8g",
        "nvcr.io/x/isaac-lab:sha-1234567",
        "./isaaclab.sh", "benchmark", "runtime", "--task", "T",
        "--output_path", "/perfgate/output",
        "presets=newton_mjwarp",
    )  # fmt: skip


def test_the_isaaclab_profile_is_the_upstream_perf_smoke_run(tmp_path: Path) -> None:
    """.github/workflows/perf-smoke-test.yaml's docker run, piece by piece, without a flag
    copied into perfgate.yaml."""
    checkout, dirs, invocation = attempt(tmp_path)
    container = resolve(ContainerSpec(), ISAACLAB)
    wrapped = wrap(invocation, container=container, image="img", checkout=checkout, dirs=dirs,
                   name="n")  # fmt: skip
    argv = wrapped.argv
    assert argv[argv.index("--user") + 1] == "1000:1000"  # the image's user, not the runner's
    assert f"{checkout}:/workspace/isaaclab" in argv
    assert f"{dirs.cache_dir / 'kit'}:/isaac-sim/kit/cache" in argv
    image_at = argv.index("img")
    assert argv[:4] == ("docker", "run", "--rm", "--init")
    assert argv[image_at - 5 : image_at] == (
        "--security-opt=no-new-privileges:true",
        "--ulimit", "nofile=65536:65536", "--ulimit", "nproc=4096:4096",
    )  # fmt: skip
    for name, value in {
        "OMNI_KIT_ACCEPT_EULA": "yes",
        "ACCEPT_EULA": "Y",
        "OMNI_KIT_DISABLE_CUP": "1",
        "ISAAC_SIM_HEADLESS": "1",
        "PYTHONUNBUFFERED": "1",
        "WARP_CACHE_PATH": "/perfgate/cache/warp",
        "CUDA_CACHE_PATH": "/perfgate/cache/nv",
        "GIT_CONFIG_GLOBAL": f"/perfgate/cache/{GITCONFIG}",
    }.items():
        assert wrapped.env[name] == value
        assert argv[argv.index(name) - 1] == "--env" and argv.index(name) < image_at
    assert container.links == {"_isaac_sim": "/isaac-sim"}


def test_perfgate_yaml_overrides_pieces_of_the_drivers_profile() -> None:
    container = resolve(
        ContainerSpec(
            user="image",
            links={"_isaac_sim": None, "apps/sim": "/opt/sim"},
            caches={"kit": "/root/.kit"},
            set_env={"ISAAC_SIM_HEADLESS": None, "EXTRA": "1"},
            run_args=("--ipc=host",),
        ),
        ISAACLAB,
    )
    assert container.user == "image" and user_arg(container.user) is None
    assert container.links == {"apps/sim": "/opt/sim"}
    assert container.caches == {"kit": "/root/.kit"}
    assert "ISAAC_SIM_HEADLESS" not in container.set_env
    assert container.set_env["EXTRA"] == "1" and container.set_env["ACCEPT_EULA"] == "Y"
    assert container.run_args == ("--ipc=host",)
    assert container.checkout_mount == "/workspace/isaaclab"  # untouched pieces stay


def test_environment_values_never_reach_the_command_line(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    wrapped = wrap(
        invocation, container=plain(user="0:0"), image="img", checkout=checkout, dirs=dirs,
        name="n",
    )  # fmt: skip
    assert "s3cret" not in " ".join(wrapped.argv)
    # docker reads each value from its own environment, rewritten to container paths.
    assert wrapped.env["SECRET_TOKEN"] == "s3cret"
    assert wrapped.env["PERFGATE_CACHE_DIR"] == "/perfgate/cache"
    assert wrapped.env["WARP_CACHE_PATH"] == "/perfgate/cache/warp"


def test_host_side_stays_for_cleaning_and_timeouts(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    wrapped = wrap(
        invocation, container=plain(docker=("sudo", "docker")), image="img",
        checkout=checkout, dirs=dirs, name="perfgate-x",
    )  # fmt: skip
    assert wrapped.cwd == invocation.cwd
    assert wrapped.outputs == (str(dirs.output_dir),)
    assert wrapped.argv[:3] == ("sudo", "docker", "run")
    assert wrapped.cleanup == ("sudo", "docker", "rm", "--force", "perfgate-x")


def test_working_directory_follows_the_host_cwd_inside_the_checkout(tmp_path: Path) -> None:
    checkout, dirs, _ = attempt(tmp_path)
    (checkout / "tools").mkdir(parents=True)
    inner = Invocation(argv=("run",), cwd=checkout / "tools")
    wrapped = wrap(inner, container=plain(), image="img", checkout=checkout, dirs=dirs, name="n")
    index = wrapped.argv.index("--workdir")
    assert wrapped.argv[index + 1] == "/workspace/checkout/tools"


def test_an_image_built_from_the_commit_gets_no_checkout_over_its_source(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    container = resolve(ContainerSpec(), ISAACLAB).for_own_source()
    wrapped = wrap(invocation, container=container, image="ci:sha-1", checkout=checkout,
                   dirs=dirs, name="n")  # fmt: skip
    volumes = [wrapped.argv[i + 1] for i, a in enumerate(wrapped.argv) if a == "--volume"]
    assert not any(v.startswith(f"{checkout}:") for v in volumes)
    assert wrapped.argv[wrapped.argv.index("--workdir") + 1] == "/workspace/isaaclab"
    assert container.links == {} and "GIT_CONFIG_GLOBAL" not in wrapped.env


def test_translate_rewrites_paths_alone_or_after_a_key() -> None:
    mounts = (
        Mount(host=Path("/h/co"), container="/c"),
        Mount(host=Path("/h/co/o"), container="/o"),
    )
    assert translate("/h/co/src/x.py", mounts) == "/c/src/x.py"
    assert translate("/h/co/o/bundle.json", mounts) == "/o/bundle.json"  # most specific wins
    assert translate("--output_path=/h/co/o", mounts) == "--output_path=/o"
    assert translate("/h/cow", mounts) == "/h/cow"  # a prefix of a name is not a parent
    assert translate("presets=a,b", mounts) == "presets=a,b"


def test_image_comes_from_the_environment_before_the_config() -> None:
    container = plain(image="configured:tag")
    assert image_for(container, {}, "bucket b") == "configured:tag"
    resolved = "resolved@sha256:" + "ab" * 32
    assert image_for(container, {IMAGE_ENV: resolved}, "bucket b") == resolved
    with pytest.raises(ConfigError, match="bucket b: container has no image"):
        image_for(plain(), {}, "bucket b")
    # container.image is checked where the config loads; the environment's is checked here.
    with pytest.raises(ConfigError, match=r"\$PERFGATE_IMAGE 'lab -v /:/host' is not an image"):
        image_for(container, {IMAGE_ENV: "lab -v /:/host"}, "bucket b")


@pytest.mark.slow  # starts git
def test_an_image_per_commit_is_named_by_the_checkouts_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", str(repo))
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q",
        "--allow-empty", "-m", "x", cwd=repo)  # fmt: skip
    sha = git("rev-parse", "HEAD", cwd=repo).strip()
    spec = ImageSpec(per_commit="ci.example/isaac-lab-ci:sha-{sha}")
    named = image_for(plain(), {IMAGE_ENV: "ignored"}, "b", image=spec, checkout=repo, pull=False)
    assert named == f"ci.example/isaac-lab-ci:sha-{sha}"


def test_users_and_their_uids() -> None:
    assert user_arg("host") == f"{os.getuid()}:{os.getgid()}"
    assert user_arg("root") == "root" and container_uid("root") is None
    assert container_uid("1000:1000") == 1000 and container_uid("image") is None


@pytest.mark.parametrize("image", ["--privileged", "img --rm", "img:ok\nfoo=bar", "-v/:/host"])
def test_an_image_that_is_no_image_reference_never_reaches_docker(image: str) -> None:
    with pytest.raises(ConfigError, match=r"bucket b: \$PERFGATE_IMAGE .* is not an image ref"):
        image_for(plain(image="configured:tag"), {IMAGE_ENV: image}, "bucket b")


def test_container_names_are_docker_legal() -> None:
    assert container_name("run 1/2", "Task__physx", "1") == "perfgate-run-1-2-Task__physx-1"


def test_links_are_made_once_and_something_else_there_is_named(tmp_path: Path) -> None:
    container = resolve(ContainerSpec(), ISAACLAB)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    make_links(container, checkout)
    make_links(container, checkout)  # a link already right is left as it is
    assert (checkout / "_isaac_sim").readlink() == Path("/isaac-sim")
    (checkout / "_isaac_sim").unlink()
    (checkout / "_isaac_sim").symlink_to("/home/me/isaacsim")  # a developer's own link
    with pytest.raises(EnvironmentProblem, match=r"container\.links\._isaac_sim: null"):
        make_links(container, checkout)
    assert (checkout / "_isaac_sim").readlink() == Path("/home/me/isaacsim")  # never replaced


def test_outputs_and_caches_are_opened_for_the_images_user(tmp_path: Path) -> None:
    container = resolve(ContainerSpec(user="4321:4321"), ISAACLAB)
    checkout = tmp_path / "checkout"
    (checkout / "source").mkdir(parents=True)
    (checkout / "source" / "a.py").write_text("x\n")
    (checkout / "source").chmod(0o755)
    (checkout / "source" / "a.py").chmod(0o644)
    dirs = AttemptDirs(number=1, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    dirs.output_dir.mkdir()
    dirs.cache_dir.mkdir()
    prepare(container, checkout=checkout, dirs=dirs)
    for path in (dirs.output_dir, dirs.cache_dir, dirs.cache_dir / "kit", checkout / "source"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o777 == 0o777, path
    assert stat.S_IMODE((checkout / "source" / "a.py").stat().st_mode) == 0o666
    assert (dirs.cache_dir / GITCONFIG).read_text().count("directory = *") == 1
    assert (checkout / "_isaac_sim").readlink() == Path("/isaac-sim")


@pytest.mark.slow  # starts git
def test_a_linked_worktrees_git_directory_is_mounted_read_only_at_its_own_path(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", str(repo))
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q",
        "--allow-empty", "-m", "x", cwd=repo)  # fmt: skip
    git("worktree", "add", "-q", "--detach", str(tmp_path / "base"), cwd=repo)
    container = resolve(ContainerSpec(), ISAACLAB)
    dirs = AttemptDirs(number=1, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    common = (repo / ".git").resolve()
    assert Mount(host=common, container=str(common), read_only=True) in mounts_for(
        container, tmp_path / "base", dirs
    )
    # A plain checkout carries its .git inside the mounted checkout already.
    assert not any(m.read_only for m in mounts_for(container, repo, dirs))


@pytest.mark.slow  # starts git
@pytest.mark.parametrize("target", ["/", "/etc", "../outside"])
def test_a_git_file_naming_no_repository_mounts_nothing_outside_the_checkout(
    tmp_path: Path, target: str
) -> None:
    # Inside another repository: git must not fall back to it either.
    git("init", "-q", str(tmp_path))
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "outside").mkdir()
    (checkout / ".git").write_text(f"gitdir: {target}\n")
    container = resolve(ContainerSpec(), ISAACLAB)
    dirs = AttemptDirs(number=1, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    mounts = mounts_for(container, checkout, dirs)
    assert {m.host for m in mounts} == {
        checkout.resolve(), dirs.output_dir.resolve(), dirs.cache_dir.resolve(),
        (dirs.cache_dir / "kit").resolve(),
    }  # fmt: skip


def test_cache_directories_the_containers_user_cannot_write_are_found(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "warp" / "kernels").mkdir(parents=True)
    (cache / "kit").mkdir()
    for path in (cache, cache / "kit", cache / "warp" / "kernels"):
        path.chmod(0o777)
    (cache / "warp").chmod(0o755)  # left by a container that ran as another user
    assert unwritable_dirs(cache, 4321) == [cache / "warp"]
    assert unwritable_dirs(cache, 0) == []  # root writes anywhere
