"""The ``docker run`` wrapping, checked by its argument list.

No Docker engine runs on test machines, so these tests assert the exact command that
would be executed; the wrapped invocation is what execution.run_process would start.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.config import ContainerSpec
from perfgate.errors import ConfigError
from perfgate.run.container import IMAGE_ENV, container_name, image_for, translate, user_arg, wrap
from perfgate.run.execution import AttemptDirs, Invocation, with_cache_env


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


def test_docker_run_arguments(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    spec = ContainerSpec(
        image="ignored",
        checkout_mount="/workspace/isaaclab",
        env=("ACCEPT_EULA", "OMNI_KIT_ACCEPT_EULA"),
        extra_args=("--shm-size", "8g"),
    )
    wrapped = wrap(
        invocation,
        spec=spec,
        image="nvcr.io/x/isaac-lab:sha-1234567",
        checkout=checkout,
        dirs=dirs,
        user="1000:1000",
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


def test_environment_values_never_reach_the_command_line(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    wrapped = wrap(
        invocation, spec=ContainerSpec(), image="img", checkout=checkout, dirs=dirs,
        user="0:0", name="n",
    )  # fmt: skip
    assert "s3cret" not in " ".join(wrapped.argv)
    # docker reads each value from its own environment, rewritten to container paths.
    assert wrapped.env["SECRET_TOKEN"] == "s3cret"
    assert wrapped.env["PERFGATE_CACHE_DIR"] == "/perfgate/cache"
    assert wrapped.env["WARP_CACHE_PATH"] == "/perfgate/cache/warp"


def test_host_side_stays_for_cleaning_and_timeouts(tmp_path: Path) -> None:
    checkout, dirs, invocation = attempt(tmp_path)
    wrapped = wrap(
        invocation, spec=ContainerSpec(docker=("sudo", "docker")), image="img",
        checkout=checkout, dirs=dirs, user="0:0", name="perfgate-x",
    )  # fmt: skip
    assert wrapped.cwd == invocation.cwd
    assert wrapped.outputs == (str(dirs.output_dir),)
    assert wrapped.argv[:3] == ("sudo", "docker", "run")
    assert wrapped.cleanup == ("sudo", "docker", "rm", "--force", "perfgate-x")


def test_working_directory_follows_the_host_cwd_inside_the_checkout(tmp_path: Path) -> None:
    checkout, dirs, _ = attempt(tmp_path)
    (checkout / "tools").mkdir(parents=True)
    inner = Invocation(argv=("run",), cwd=checkout / "tools")
    wrapped = wrap(
        inner, spec=ContainerSpec(), image="img", checkout=checkout, dirs=dirs,
        user="0:0", name="n",
    )  # fmt: skip
    index = wrapped.argv.index("--workdir")
    assert wrapped.argv[index + 1] == "/workspace/checkout/tools"


def test_translate_rewrites_paths_alone_or_after_a_key() -> None:
    from perfgate.run.container import Mount

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
    spec = ContainerSpec(image="configured:tag")
    assert image_for(spec, {}, "bucket b") == "configured:tag"
    resolved = "resolved@sha256:" + "ab" * 32
    assert image_for(spec, {IMAGE_ENV: resolved}, "bucket b") == resolved
    with pytest.raises(ConfigError, match="bucket b: container has no image"):
        image_for(ContainerSpec(), {}, "bucket b")


@pytest.mark.parametrize("image", ["--privileged", "img --rm", "img:ok\nfoo=bar", "-v/:/host"])
def test_an_image_that_is_no_image_reference_never_reaches_docker(image: str) -> None:
    with pytest.raises(ConfigError, match=r"bucket b: \$PERFGATE_IMAGE .* is not an image ref"):
        image_for(ContainerSpec(image="configured:tag"), {IMAGE_ENV: image}, "bucket b")


def test_host_user_is_the_invoking_uid_and_gid() -> None:
    assert user_arg(ContainerSpec()) == f"{os.getuid()}:{os.getgid()}"
    assert user_arg(ContainerSpec(user="root")) == "root"


def test_container_names_are_docker_legal() -> None:
    assert container_name("run 1/2", "Task__physx", "1") == "perfgate-run-1-2-Task__physx-1"
