"""Run a benchmark invocation inside ``docker run`` (docs/design.md: execution, R10, R12, R16).

A driver owns the profile its benchmark needs in the image (:class:`ContainerProfile`):
where the checkout is mounted, which user runs it, the links the checkout must carry,
writable caches, environment and docker options. perfgate.yaml's ``container`` block
overrides pieces of it (:func:`resolve`); nobody copies flags by hand.

The wrapped command keeps the host's view for everything perfgate itself touches (working
directory, outputs to clean), while the program inside sees the checkout, its attempt's
output directory and its cache at fixed container paths. Every host path in the argument
list and the environment is rewritten to its container path. Environment values never
appear on the docker command line: each variable is passed as ``--env NAME`` and docker
reads the value from its own environment, so secrets stay out of process listings and logs.
"""

from __future__ import annotations

import functools
import os
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate.config import ContainerSpec, ImageSpec, image_reference_problem
from perfgate.errors import ConfigError
from perfgate.run.execution import AttemptDirs, EnvironmentProblem, Invocation
from perfgate.util.git import try_git

IMAGE_ENV = "PERFGATE_IMAGE"
#: The git configuration a container reads (GIT_CONFIG_GLOBAL), written into its cache.
GITCONFIG = "perfgate.gitconfig"
# Every checkout is the benchmark's own: git inside the container runs as another user
# than the one owning the files, which git refuses unless told the directory is safe.
_GITCONFIG_TEXT = (
    "# Written by perfgate: git may read the mounted checkout.\n[safe]\n\tdirectory = *\n"
)


@dataclass(frozen=True, kw_only=True)
class ContainerProfile:
    """What a driver's benchmark needs from its container (R16); perfgate.yaml overrides it."""

    checkout_mount: str = "/workspace/checkout"
    # "host": the invoking uid:gid; "image": the image's USER; else a docker --user value.
    user: str = "host"
    # Made in the checkout before launch: path in the checkout -> target in the container.
    links: Mapping[str, str] = field(default_factory=dict)
    # Subdirectories of the bucket's cache, mounted writable at these container paths.
    caches: Mapping[str, str] = field(default_factory=dict)
    # Set in the container; values included (never secrets).
    env: Mapping[str, str] = field(default_factory=dict)
    # docker run options (security, limits), before the bucket's extra arguments.
    run_args: tuple[str, ...] = ()
    writable_checkout: bool = False
    git_metadata: bool = False


@dataclass(frozen=True, kw_only=True)
class Container:
    """One bucket's container: its driver's profile with perfgate.yaml's overrides applied."""

    image: str | None
    docker: tuple[str, ...]
    checkout_mount: str
    workdir: str | None
    output_mount: str
    cache_mount: str
    user: str
    gpus: str
    # Passed through by name from the host (values never on the command line).
    pass_env: tuple[str, ...]
    set_env: Mapping[str, str]
    links: Mapping[str, str]
    caches: Mapping[str, str]
    run_args: tuple[str, ...]
    extra_args: tuple[str, ...]
    writable_checkout: bool
    git_metadata: bool
    # False for an image that carries the commit's own source (image.per_commit).
    mount_checkout: bool = True
    # run_args/extra_args may break the container's isolation (config: allow_unsafe_args).
    allow_unsafe_args: bool = False

    def for_own_source(self) -> Container:
        """The same container for an image built from the commit: no checkout mounted over
        its source, and nothing made in the checkout (its ``_isaac_sim`` is the image's own)."""
        return replace(
            self, mount_checkout=False, links={}, writable_checkout=False, git_metadata=False
        )

    def to_json(self) -> dict[str, object]:
        """The resolved settings, as ``matrix --json`` shows them."""
        return {
            "image": self.image,
            "checkout_mount": self.checkout_mount if self.mount_checkout else None,
            "user": self.user,
            "links": dict(self.links),
            "caches": {"<cache>": self.cache_mount, **self.caches},
            "set_env": dict(self.set_env),
            "pass_env": list(self.pass_env),
            "run_args": [*self.run_args, *self.extra_args],
            "writable_checkout": self.writable_checkout,
            "git_metadata": self.git_metadata,
            "allow_unsafe_args": self.allow_unsafe_args,
        }


def _merged(base: Mapping[str, str], overrides: Mapping[str, str | None]) -> dict[str, str]:
    """``base`` with ``overrides`` applied key by key; a None value removes the key."""
    merged: dict[str, str | None] = {**base, **overrides}
    return {key: value for key, value in merged.items() if value is not None}


def resolve(spec: ContainerSpec, profile: ContainerProfile) -> Container:
    """The driver's profile, each piece perfgate.yaml sets replacing or merging over it."""
    return Container(
        image=spec.image,
        docker=spec.docker,
        checkout_mount=spec.checkout_mount or profile.checkout_mount,
        workdir=spec.workdir,
        output_mount=spec.output_mount,
        cache_mount=spec.cache_mount,
        user=spec.user or profile.user,
        gpus=spec.gpus,
        pass_env=spec.env,
        set_env=_merged(profile.env, spec.set_env),
        links=_merged(profile.links, spec.links),
        caches=_merged(profile.caches, spec.caches),
        run_args=profile.run_args if spec.run_args is None else spec.run_args,
        extra_args=spec.extra_args,
        writable_checkout=(
            profile.writable_checkout if spec.writable_checkout is None else spec.writable_checkout
        ),
        git_metadata=profile.git_metadata if spec.git_metadata is None else spec.git_metadata,
        allow_unsafe_args=spec.allow_unsafe_args,
    )


@dataclass(frozen=True, kw_only=True)
class Mount:
    """A host directory bind-mounted at a container path."""

    host: Path
    container: str
    read_only: bool = False

    @property
    def volume(self) -> str:
        """docker's ``--volume`` value."""
        return f"{self.host}:{self.container}" + (":ro" if self.read_only else "")


def image_for(
    container: Container,
    env: Mapping[str, str],
    where: str,
    *,
    image: ImageSpec | None = None,
    checkout: Path | None = None,
    pull: bool = True,
) -> str:
    """The image to run: the checkout's own commit's with ``image.per_commit`` (awaited
    unless ``pull`` is False), else ``$PERFGATE_IMAGE`` (what resolve-image chose in CI),
    else the configured image."""
    if image is not None and image.per_commit is not None and checkout is not None:
        commit = try_git("rev-parse", "HEAD", cwd=checkout)
        if commit is None:
            raise ConfigError(
                f"{where}: image.per_commit needs a git checkout to name the commit's image; "
                f"{checkout} is none"
            )
        ref = image.per_commit.format(sha=commit, sha7=commit[:7])
        if not pull:
            return ref
        return await_image(container.docker, ref, image.per_commit_wait_minutes * 60.0)
    chosen = env.get(IMAGE_ENV)
    if chosen:
        # container.image was checked where the config loaded; the environment is checked here.
        problem = image_reference_problem(chosen)
        if problem:
            raise ConfigError(f"{where}: ${IMAGE_ENV} {chosen!r} {problem}")
        return chosen
    if not container.image:
        raise ConfigError(
            f"{where}: container has no image; set container.image in perfgate.yaml or export "
            f"{IMAGE_ENV} (nox -s resolve-image prints one)"
        )
    return container.image


@functools.lru_cache(maxsize=64)
def await_image(docker: tuple[str, ...], ref: str, wait_s: float) -> str:
    """``ref`` once ``docker pull`` finds it, polling for at most ``wait_s`` (the project's CI
    may still be building it); an image that never appears is an environment failure."""
    deadline = time.monotonic() + wait_s
    interval = min(30.0, max(0.2, wait_s / 20))
    while True:
        try:
            pulled = subprocess.run(
                [*docker, "pull", "--quiet", ref],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=max(60.0, wait_s),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentProblem(f"cannot run {docker[0]} to pull {ref}: {exc}") from None
        if pulled.returncode == 0:
            return ref
        if time.monotonic() >= deadline:
            last = (pulled.stderr or pulled.stdout).strip().splitlines()[-1:] or ["no output"]
            raise EnvironmentProblem(
                f"image {ref} did not appear within {wait_s / 60:g} minute(s) ({last[0]}): "
                "check that the project's CI built and pushed it for this commit, or raise "
                "image.per_commit_wait_minutes"
            )
        time.sleep(interval)


def user_arg(user: str) -> str | None:
    """``--user`` value: ``host`` is the invoking uid:gid, ``image`` passes none."""
    if user == "host":
        return f"{os.getuid()}:{os.getgid()}"
    return None if user == "image" else user


def container_uid(user: str) -> int | None:
    """The uid the container runs as, when the setting says it (None: a name or the image's)."""
    uid = (user_arg(user) or "").partition(":")[0]
    return int(uid) if uid.isdigit() else None


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


def git_common_dir(checkout: Path) -> Path | None:
    """The repository's git directory when ``checkout`` is a linked worktree (its ``.git`` is a
    file naming a host path the container cannot see); None for a plain checkout."""
    if not (checkout / ".git").is_file():
        return None
    found = try_git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=checkout)
    return Path(found).resolve() if found else None


def mounts_for(container: Container, checkout: Path, dirs: AttemptDirs) -> tuple[Mount, ...]:
    """The checkout, the attempt's output directory, its cache and the cache's subdirectories,
    and a linked worktree's git directory (read-only, at its own path)."""
    mounts = [
        Mount(host=dirs.output_dir.resolve(), container=container.output_mount),
        Mount(host=dirs.cache_dir.resolve(), container=container.cache_mount),
        *(
            Mount(host=(dirs.cache_dir / name).resolve(), container=path)
            for name, path in sorted(container.caches.items())
        ),
    ]
    if container.mount_checkout:
        mounts.insert(0, Mount(host=checkout.resolve(), container=container.checkout_mount))
        common = git_common_dir(checkout) if container.git_metadata else None
        if common is not None:
            mounts.append(Mount(host=common, container=str(common), read_only=True))
    return tuple(mounts)


def _writable_by(path: Path, uid: int) -> bool:
    """True when ``uid`` may write into ``path`` by its owner or other bits (groups aside)."""
    info = path.stat()
    return uid == 0 or bool(
        info.st_mode & stat.S_IWOTH or (info.st_uid == uid and info.st_mode & stat.S_IWUSR)
    )


def unwritable_dirs(root: Path, uid: int) -> list[Path]:
    """Directories in ``root``'s tree (itself included) that ``uid`` cannot create files in."""
    found = [root] if not _writable_by(root, uid) else []
    for parent, dirs, _ in os.walk(root):
        found += [Path(parent, name) for name in dirs if not _writable_by(Path(parent, name), uid)]
    return found


def _open_up(path: Path, *, tree: bool) -> None:
    """a+rwX on ``path`` (and, with ``tree``, everything below it), as far as this user may."""
    paths = [path]
    if tree:
        for root, dirs, files in os.walk(path):
            paths += [Path(root, name) for name in (*dirs, *files)]
    for each in paths:
        try:
            mode = each.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            extra = 0o777 if stat.S_ISDIR(mode) or mode & 0o111 else 0o666
            if mode & extra != extra:
                each.chmod(stat.S_IMODE(mode) | extra)
        except OSError:
            continue


def make_links(container: Container, checkout: Path) -> None:
    """The profile's links in the checkout (``_isaac_sim -> /isaac-sim``): dangling on the
    host, valid in the image. Something else already there is left alone and named."""
    for relative, target in sorted(container.links.items()):
        path = checkout / relative
        if path.is_symlink() and str(path.readlink()) == target:
            continue
        if path.is_symlink() or path.exists():
            what = f"a link to {path.readlink()}" if path.is_symlink() else "a file"
            raise EnvironmentProblem(
                f"{path} is {what}, but the container needs a link to {target} there: remove "
                f"it, or set container.links.{relative}: null in perfgate.yaml"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)


def prepare(container: Container, *, checkout: Path, dirs: AttemptDirs) -> None:
    """Everything the launch needs on the host: links, cache directories, a git config, and
    write access for the container's user where it needs it (outputs, caches, checkout)."""
    for name in container.caches:
        (dirs.cache_dir / name).mkdir(parents=True, exist_ok=True)
    if container.git_metadata:
        (dirs.cache_dir / GITCONFIG).write_text(_GITCONFIG_TEXT, encoding="utf-8")
    if container.mount_checkout:
        make_links(container, checkout)
    uid = container_uid(container.user)
    if uid != os.getuid():
        _open_up(dirs.output_dir, tree=False)
        # A warm cache restored in CI belongs to the runner, down to its last subdirectory.
        _open_up(dirs.cache_dir, tree=True)
    if uid is not None:
        _refuse_unwritable_cache(dirs.cache_dir, uid)
    unwritable = uid is None or not _writable_by(checkout, uid)
    if container.writable_checkout and container.mount_checkout and unwritable:
        _open_up(checkout, tree=True)


def _refuse_unwritable_cache(cache_dir: Path, uid: int) -> None:
    """Stop before launch when the container's user cannot write its caches: Warp's kernel
    cache then fails with a PermissionError that Isaac Lab's lazy task loader reports as a
    missing ``mdp`` attribute, which reads as a bug in the change under test."""
    blocked = unwritable_dirs(cache_dir, uid)
    if not blocked:
        return
    first = blocked[0].stat()
    more = f" and {len(blocked) - 1} more" if len(blocked) > 1 else ""
    raise EnvironmentProblem(
        f"the container's user (uid {uid}) cannot write {blocked[0]}{more} in the bucket's "
        f"cache (owned by uid {first.st_uid}, mode {stat.S_IMODE(first.st_mode):o}), and "
        f"perfgate (uid {os.getuid()}) may not open it up: delete {cache_dir} (a restored CI "
        "cache: its key) so the launch starts cold, or run perfgate as that directory's owner"
    )


def wrap(
    invocation: Invocation,
    *,
    container: Container,
    image: str,
    checkout: Path,
    dirs: AttemptDirs,
    name: str,
) -> Invocation:
    """The ``docker run`` invocation that runs ``invocation`` in ``image``."""
    mounts = mounts_for(container, checkout, dirs)
    # Relative arguments stay relative: the working directory mirrors the host cwd.
    inner = replace(invocation, cwd=invocation.cwd.resolve())
    if not container.mount_checkout:
        # The image's own source sits where the checkout would: paths map there all the same.
        mounts += (Mount(host=checkout.resolve(), container=container.checkout_mount),)
    env = {key: translate(value, mounts) for key, value in inner.env.items()}
    env.update(container.set_env)
    if container.git_metadata:
        env["GIT_CONFIG_GLOBAL"] = f"{container.cache_mount.rstrip('/')}/{GITCONFIG}"
    workdir = container.workdir or translate(str(inner.cwd), mounts)
    if workdir == str(inner.cwd):  # the cwd is outside every mount
        workdir = container.checkout_mount
    names = sorted(set(env) | set(container.pass_env))
    user = user_arg(container.user)
    volumes = [m for m in mounts if container.mount_checkout or m.host != checkout.resolve()]
    argv = (
        *container.docker, "run", "--rm", "--init",
        "--name", name,
        "--gpus", container.gpus,
        *(("--user", user) if user is not None else ()),
        *(arg for m in volumes for arg in ("--volume", m.volume)),
        "--workdir", workdir,
        *(arg for key in names for arg in ("--env", key)),
        *container.run_args,
        *container.extra_args,
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
        cleanup=(*container.docker, "rm", "--force", name),
    )
