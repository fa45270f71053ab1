"""docker options that break the container's isolation, refused unless opted into (R14).

On a self-hosted GPU runner the container is the one boundary perfgate puts between the
benchmark (pull-request code, or a replayed commit) and the runner: its credentials, its
other jobs, its docker daemon. ``container.extra_args`` and ``container.run_args`` reach
``docker run`` as written, so the config refuses what would open that boundary: a
privileged container, a host (or another container's) namespace, an added capability, a
host device, a bind mount of the host's root, its system directories or a socket, a
volume made from a host path, an unconfined or custom security profile. The list is
docs/security.md's; ``container.allow_unsafe_args: true`` lets them through, named in a
notice wherever the config loads.

The arguments come before the image, so every one is an option or an option's value; each
is read as an option, whatever precedes it, so an option hidden behind a harmless one's
missing value is still seen (a value that looks like a refused option is refused too).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from perfgate.config.bucket import Bucket

#: The key that lets refused options through: loudly named, as what it allows is.
OPT_IN = "allow_unsafe_args"

# Refused whatever their value.
_ALWAYS = {
    "--privileged": "gives the container every capability and every host device",
    "--cap-add": "adds a kernel capability the container is otherwise denied",
    "--device": "passes a host device in (the GPUs come through container.gpus)",
    "--device-cgroup-rule": "lets the container open host devices",
    "--volumes-from": "mounts another container's volumes (which may hold the docker socket)",
    "--cgroup-parent": "moves the container out of the cgroup docker confines it in",
}
# Namespaces: refused when shared with the host or joined from another container.
_NAMESPACES = ("--pid", "--ipc", "--network", "--net", "--uts", "--userns", "--cgroupns")
_VOLUME = ("-v", "--volume")
# Of the options read here, the one that takes no value.
_BOOLEAN = frozenset({"--privileged"})
# Single-letter flags docker run takes without a value, which may precede -v in one word.
_SHORT_FLAGS = frozenset("itdP")
# Host directories a bind mount may neither be nor lie under: the system, the runner's
# homes (its registration and credentials), and where sockets and the daemon's state live.
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
               "/proc", "/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var")  # noqa: S108  # fmt: skip
# --security-opt values that keep, or tighten, docker's default confinement.
_SAFE_SECURITY_OPTS = frozenset({"no-new-privileges", "no-new-privileges:true",
                                 "no-new-privileges=true"})  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class UnsafeArg:
    """A refused option: where it starts in the list, as written, and what it breaks."""

    index: int
    written: str
    why: str


def unsafe_args(args: Sequence[str]) -> list[UnsafeArg]:
    """Every option of ``args`` (docker run options) that breaks the container's isolation."""
    found: list[UnsafeArg] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        for option, value, takes_next in _options(arg, following):
            why = _why(option, value)
            if why is not None:
                written = f"{arg} {following}" if takes_next else arg
                found.append(UnsafeArg(index=index, written=written, why=why))
    return found


def refusal(unsafe: UnsafeArg) -> str:
    """The message for a refused option: what it breaks, and the two ways on."""
    written = unsafe.written if len(unsafe.written) <= 80 else unsafe.written[:77] + "..."
    return (
        f"{written!r} {unsafe.why}; the container is the one boundary between the benchmark "
        f"and this runner: remove it, or set container.{OPT_IN}: true to pass it anyway "
        "(dangerous, see docs/security.md)"
    )


def opted_in_notices(buckets: Sequence[Bucket]) -> tuple[str, ...]:
    """A notice per set of refused options the opt-in lets through, naming its buckets."""
    passed: dict[str, list[str]] = {}
    for bucket in buckets:
        spec = bucket.container
        if spec is None or not spec.allow_unsafe_args:
            continue
        args = (*(spec.run_args or ()), *spec.extra_args)
        written = ", ".join(unsafe.written for unsafe in unsafe_args(args))
        if written:
            passed.setdefault(written, []).append(bucket.id)
    return tuple(
        f"{', '.join(ids)}: container.{OPT_IN} passes {written} to docker run, which breaks "
        "the container's isolation: the benchmark can reach this runner (docs/security.md)"
        for written, ids in passed.items()
    )


def _options(arg: str, following: str) -> Iterator[tuple[str, str, bool]]:
    """(option, its value, whether the value is the next word) for each option in ``arg``."""
    if arg.startswith("--"):
        option, equals, value = arg.partition("=")
        takes_next = not equals and option not in _BOOLEAN
        yield option, value if equals else (following if takes_next else ""), takes_next
        return
    if not arg.startswith("-"):
        return
    # Short options may share a word: -itv /:/x, -v/:/x, -v=/:/x.
    for at, letter in enumerate(arg[1:], start=1):
        if letter == "v":
            rest = arg[at + 1 :].removeprefix("=")
            yield "-v", rest or following, not rest
            return
        if letter not in _SHORT_FLAGS:
            return  # an option taking a value: the rest of the word is its value


def _why(option: str, value: str) -> str | None:
    """What ``option`` with ``value`` breaks; None when it keeps the container confined."""
    if option in _ALWAYS:
        return _ALWAYS[option]
    mode = value.lower()
    if option in _NAMESPACES and (mode == "host" or mode.startswith("container:")):
        return f"shares the {'host' if mode == 'host' else 'other container'}'s namespace"
    if option in _VOLUME:
        # SOURCE:TARGET[:OPTIONS] binds or names a volume; a lone path is an anonymous volume.
        return _bind_problem(value.split(":")[0]) if ":" in value else None
    if option == "--mount":
        return _mount_problem(value)
    if option == "--security-opt" and not _safe_security_opt(value):
        return (
            "loosens docker's default confinement (only no-new-privileges and a named "
            "apparmor profile are allowed)"
        )
    return None


def _bind_problem(source: str) -> str | None:
    """Why a bind mount of ``source`` breaks the boundary; else None (a volume name is fine)."""
    if source.startswith("."):
        return f"bind-mounts {source}, a relative host path (it resolves where docker runs)"
    if not source.startswith("/"):
        return None  # a named volume: docker's own storage
    path = posixpath.normpath(source)
    if path == "/" or path.startswith("//"):
        return "bind-mounts the host's root directory"
    if path.rsplit("/", 1)[-1].endswith(".sock"):
        return f"bind-mounts the host socket {path} (a daemon's socket is the host)"
    for system in SYSTEM_DIRS:
        if path == system or path.startswith(system + "/"):
            return f"bind-mounts {path}, under the host's {system}"
    return None


def _mount_problem(value: str) -> str | None:
    """Why a ``--mount`` specification breaks the boundary; else None."""
    # docker reads it as CSV with case-insensitive keys: quotes go, keys are lowered.
    parts = (part.partition("=") for part in value.replace('"', "").split(","))
    fields = {key.strip().lower(): item for key, _, item in parts}
    if any(key.startswith(("volume-opt", "volume-driver")) for key in fields):
        return "makes a volume with driver options (volume-opt can bind any host path)"
    # Checked whatever the type: a path given as a volume's source is no volume name.
    return _bind_problem(fields.get("source") or fields.get("src") or "")


def _safe_security_opt(value: str) -> bool:
    """True for a --security-opt value that keeps docker's default confinement or tightens it."""
    if value in _SAFE_SECURITY_OPTS:
        return True
    key, _, profile = value.replace(":", "=", 1).partition("=")
    return key == "apparmor" and profile not in ("", "unconfined")
