"""Run a benchmark invocation inside ``docker run`` (docs/design.md: execution, R10, R12).

The wrapped command keeps the host's view for everything perfgate itself touches (working
directory, outputs to clean), while the program inside sees the checkout, its attempt's
output directory and its attempt's cache at fixed container paths. Every host path in the
argument list and the environment is rewritten to its container path. Environment values
never appear on the docker command line: each variable is passed as ``-e NAME`` and docker
reads the value from its own environment, so secrets stay out of process listings and logs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.config import ContainerSpec
from perfgate.errors import ConfigError
from perfgate.run.execution import AttemptDirs, Invocation

IMAGE_ENV = "PERFGATE_IMAGE"


@dataclass(frozen=True, kw_only=True)
class Mount:
    """A host directory bind-mounted at a container path."""

    host: Path
    container: str


def image_for(spec: ContainerSpec, env: Mapping[str, str], where: str) -> str:
    """``$PERFGATE_IMAGE`` (what resolve-image chose in CI), else the configured image."""
    image = env.get(IMAGE_ENV) or spec.image
    if not image:
        raise ConfigError(
            f"{where}: container has no image; set container.image in perfgate.yaml or export "
            f"{IMAGE_ENV} (nox -s resolve-image prints one)"
        )
    return image


def user_arg(spec: ContainerSpec) -> str:
    """``--user`` value: ``host`` means the invoking uid:gid, so outputs stay removable."""
    if spec.user == "host":
        return f"{os.getuid()}:{os.getgid()}"
    return spec.user


def container_name(*parts: str) -> str:
    """A docker-legal container name built from ``parts``."""
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", "-".join(("perfgate", *parts))).strip("-.")[:120]


def translate(value: str, mounts: Sequence[Mount]) -> str:
    """Rewrite a host path (alone, or after ``key=``) to its container path; else unchanged."""
    key, sep, rest = value.partition("=")
    if sep and not key.startswith("/"):
        return f"{key}={translate(rest, mounts)}"
    # The most specific mount wins: attempt directories usually live inside the checkout.
    for mount in sorted(mounts, key=lambda m: len(str(m.host)), reverse=True):
        host = str(mount.host)
        if value == host:
            return mount.container
        if value.startswith(host.rstrip("/") + "/"):
            return mount.container.rstrip("/") + value[len(host.rstrip("/")) :]
    return value


def mounts_for(spec: ContainerSpec, checkout: Path, dirs: AttemptDirs) -> tuple[Mount, ...]:
    """The checkout, the attempt's output directory and the attempt's cache."""
    return (
        Mount(host=checkout.resolve(), container=spec.checkout_mount),
        Mount(host=dirs.output_dir.resolve(), container=spec.output_mount),
        Mount(host=dirs.cache_dir.resolve(), container=spec.cache_mount),
    )


def wrap(
    invocation: Invocation,
    *,
    spec: ContainerSpec,
    image: str,
    checkout: Path,
    dirs: AttemptDirs,
    user: str,
    name: str,
) -> Invocation:
    """The ``docker run`` invocation that runs ``invocation`` in ``image``."""
    mounts = mounts_for(spec, checkout, dirs)
    # Relative arguments stay relative: the working directory mirrors the host cwd.
    inner = replace(invocation, cwd=invocation.cwd.resolve())
    env = {key: translate(value, mounts) for key, value in inner.env.items()}
    workdir = spec.workdir or translate(str(inner.cwd), mounts)
    if workdir == str(inner.cwd):  # the cwd is outside every mount
        workdir = spec.checkout_mount
    names = sorted(set(env) | set(spec.env))
    argv = (
        *spec.docker, "run", "--rm", "--init",
        "--name", name,
        "--gpus", spec.gpus,
        "--user", user,
        *(arg for m in mounts for arg in ("--volume", f"{m.host}:{m.container}")),
        "--workdir", workdir,
        *(arg for key in names for arg in ("--env", key)),
        *spec.extra_args,
        image,
        *(translate(arg, mounts) for arg in inner.argv),
    )  # fmt: skip
    return Invocation(
        argv=argv,
        cwd=invocation.cwd,
        env=env,
        outputs=invocation.outputs,
        # The docker client forwards SIGTERM, but a SIGKILLed client leaves the container
        # running on the GPU: whenever the run is torn down (timeout, interruption, perfgate
        # killed), the container is removed so it cannot disturb the next measurement.
        cleanup=(*spec.docker, "rm", "--force", name),
    )
