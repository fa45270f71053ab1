"""The ``image`` block: era key inputs, manifest, fallbacks and the era roll (R11)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: What ``image.tags`` and ``image.build.image`` may name; ``image.build.argv`` also ``{image}``.
IMAGE_PLACEHOLDERS = frozenset({"branch", "branch_slug", "branch_leaf", "era_key", "era_short"})


@dataclass(frozen=True, kw_only=True)
class PinInput:
    """A package version pinned in a checkout file; an era-key input that must resolve."""

    file: str
    package: str


@dataclass(frozen=True, kw_only=True)
class ImageBuild:
    """The last-resort build: an argument list and the image reference it produces."""

    argv: tuple[str, ...]
    image: str


#: Placeholders of the era roll's templates: the pushed commit, its branch and the era.
ROLL_PLACEHOLDERS = IMAGE_PLACEHOLDERS | {"sha", "sha7"}
#: Placeholders of ``image.per_commit``: the commit whose image is run.
PER_COMMIT_PLACEHOLDERS = frozenset({"sha", "sha7"})


@dataclass(frozen=True, kw_only=True)
class ImageRoll:
    """How ``perfgate roll-era`` builds and publishes a new era's image (R11).

    The build produces ``build.image``; each of ``refs`` is tagged from it (``tag``) and
    pushed (``push``); the first ref, resolved to its digest where possible, is recorded.
    """

    build: ImageBuild
    refs: tuple[str, ...]
    tag: tuple[str, ...] = ("docker", "tag", "{image}", "{ref}")
    push: tuple[str, ...] = ("docker", "push", "{ref}")
    # Runs first, with the registry secrets in its environment (never on its command line).
    login: tuple[str, ...] | None = None
    # Repository secrets the rendered roll job passes to the roll step, by name (R12).
    secrets: tuple[str, ...] = ()
    runner: tuple[str, ...] = ("ubuntu-latest",)
    timeout_minutes: int = 120


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    """The top-level ``image`` block: era key inputs, manifest, fallbacks (R11)."""

    env_file: str | None = None
    env_keys: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    pins: tuple[PinInput, ...] = ()
    manifest: str = "image_era_manifest.json"
    tags: Mapping[str, str] = field(default_factory=dict)
    probe: tuple[str, ...] | None = None
    build: ImageBuild | None = None
    # Prints the digest of ``{image}`` in a registry; None: images are recorded as tagged.
    digest: tuple[str, ...] | None = ("docker", "buildx", "imagetools", "inspect", "{image}")
    roll: ImageRoll | None = None
    # The image the project's own CI built for each commit ("registry/ci:sha-{sha}"): head and
    # merge base each run in their own commit's image, with no checkout mounted over it.
    per_commit: str | None = None
    # How long a bench waits for a commit's image to appear before giving up on it.
    per_commit_wait_minutes: float = 30.0
