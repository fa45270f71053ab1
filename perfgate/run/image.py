"""Which CI image a run uses (docs/design.md R11).

The era key hashes the declared container inputs of the checkout: selected ``KEY=VALUE``
entries of an env file (such as ``docker/.env.base``), hashes of named files, and package
pins. A manifest on the baseline branch (``image_era_manifest.json``) maps each era to an
immutable image. On a miss the image is the tag of the run's *target* branch (a pull
request's base, a merge group's base, a push's own branch; never the synthetic PR merge
ref), then, when that tag cannot be used, the optional build. Recording an era is a
trusted write, allowed only to pushes to protected branches, like publishing baselines.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfgate.config import ImageSpec, image_reference_problem
from perfgate.errors import (
    ConfigError,
    EraConflict,
    GateMalfunction,
    GitError,
    Stalled,
    UsageError,
)
from perfgate.identity import stable_hash
from perfgate.run.staleness import required_pin
from perfgate.util.bounded import run_bounded
from perfgate.util.git import git

ERA_VERSION = 1
MANIFEST_SCHEMA_VERSION = 1
# How long a registry probe (``image.probe``, ``image.digest``) may take: an answer takes
# seconds; a registry or network that stalls must not hold the job until its timeout.
PROBE_TIMEOUT_S = 120.0


class ImageSource(StrEnum):
    """Where the chosen image came from."""

    MANIFEST = "manifest"
    TAG = "tag"
    BUILD = "build"


@dataclass(frozen=True, kw_only=True)
class Era:
    """The era key and the declared inputs it hashes."""

    key: str
    contract: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ImageChoice:
    """The image a run uses and why."""

    image: str
    matched: bool
    era: Era
    source: ImageSource
    target_branch: str | None

    def to_json(self) -> dict[str, Any]:
        """What ``perfgate resolve-image`` prints."""
        return {
            "era_key": self.era.key,
            "image_era_version": ERA_VERSION,
            "image": self.image,
            "matched": self.matched,
            "source": self.source.value,
            "target_branch": self.target_branch,
        }

    def step_outputs(self) -> dict[str, str]:
        """``$GITHUB_OUTPUT`` entries for the workflow."""
        return {
            "image": self.image,
            "matched": "true" if self.matched else "false",
            "era_key": self.era.key,
            "source": self.source.value,
        }


def parse_env_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines; comments, blanks and ``export`` prefixes skipped, quotes stripped."""
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def era_of(spec: ImageSpec, checkout: Path) -> Era:
    """Hash the declared inputs; any input that cannot be read raises ConfigError naming it."""
    fields: dict[str, str] = {}
    if spec.env_file is not None:
        path = checkout / spec.env_file
        try:
            values = parse_env_file(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(
                f"{path}: cannot read the image era inputs ({exc.strerror}); "
                "fix image.env_file in perfgate.yaml"
            ) from None
        for key in spec.env_keys:
            if key not in values:
                raise ConfigError(
                    f"{path}: has no {key}=...; the image era key needs it "
                    "(fix image.env_keys in perfgate.yaml or the file)"
                )
            # Plain keys, so env-only eras hash exactly like the reference gate's.
            fields[key] = values[key]
    for name in spec.files:
        path = checkout / name
        try:
            fields[f"file:{name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise ConfigError(
                f"{path}: cannot hash it for the image era key ({exc.strerror}); "
                "fix image.files in perfgate.yaml"
            ) from None
    for pin in spec.pins:
        fields[f"pin:{pin.package}"] = required_pin(checkout, pin.file, pin.package)
    contract = {"image_era_version": ERA_VERSION, "fields": fields}
    return Era(key=stable_hash(contract), contract=contract)


def parse_manifest(text: str, where: str) -> dict[str, Any]:
    """The manifest document; a malformed one raises GateMalfunction naming ``where``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GateMalfunction(f"{where}: not valid JSON: {exc}") from None
    eras = data.get("eras") if isinstance(data, dict) else None
    if not isinstance(eras, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("image"), str) for entry in eras.values()
    ):
        raise GateMalfunction(
            f"{where}: expected {{'eras': {{<era key>: {{'image': <ref>}}}}}}; fix the manifest"
        )
    result: dict[str, Any] = data
    return result


def read_manifest(repo: Path, tip: str | None, path: str, branch: str) -> dict[str, Any] | None:
    """The manifest at ``tip`` of the baseline branch, straight from git objects; None if absent."""
    if tip is None:
        return None
    try:
        text = git("show", f"{tip}:{path}", cwd=repo)
    except GitError as exc:
        if "does not exist" in exc.stderr or "exists on disk, but not in" in exc.stderr:
            return None
        raise GateMalfunction(f"cannot read {path} from {branch!r}: {exc}") from None
    return parse_manifest(text, f"{branch}:{path}")


def fill_template(template: str, values: Mapping[str, str], where: str) -> str:
    """``template`` with its ``{name}`` placeholders filled; an unknown one is a ConfigError."""
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"perfgate.yaml: {where}: placeholder {exc} is unknown; "
            f"use {', '.join('{' + k + '}' for k in values)}"
        ) from None


def branch_values(target_branch: str, era: Era) -> dict[str, str]:
    """Placeholders for tag and build templates."""
    return {
        "branch": target_branch,
        "branch_slug": re.sub(r"[^A-Za-z0-9_.-]+", "-", target_branch).strip("-"),
        "branch_leaf": target_branch.rsplit("/", 1)[-1],
        "era_key": era.key,
        "era_short": era.key[:12],
    }


def tag_for(spec: ImageSpec, target_branch: str | None, era: Era) -> str | None:
    """The target branch's image tag: the first matching pattern of ``image.tags``."""
    if not target_branch:
        return None
    for pattern, template in spec.tags.items():
        if fnmatch.fnmatchcase(target_branch, pattern):
            return fill_reference(
                template, branch_values(target_branch, era), f"image.tags[{pattern!r}]"
            )
    return None


def fill_reference(template: str, values: Mapping[str, str], where: str) -> str:
    """An image template filled; ConfigError unless the result is an image reference."""
    image = fill_template(template, values, where)
    problem = image_reference_problem(image)
    if problem:
        raise ConfigError(
            f"perfgate.yaml: {where}: {template!r} gives {image!r}, which {problem}; "
            "{branch_slug} makes a branch name safe in a tag"
        )
    return image


def choose(
    spec: ImageSpec,
    *,
    era: Era,
    manifest: Mapping[str, Any] | None,
    target_branch: str | None,
    usable: Callable[[str], bool],
    build: Callable[[Era], str] | None,
) -> ImageChoice:
    """Manifest hit, else the target branch's tag (when ``usable``), else ``build``."""
    entry = (manifest or {}).get("eras", {}).get(era.key)
    if entry is not None:
        problem = image_reference_problem(entry["image"])
        if problem:
            raise GateMalfunction(
                f"the image manifest records era {era.key} as {entry['image']!r}, which "
                f"{problem}; record a good one with `resolve-image --record IMAGE --force REASON`"
            )
        return ImageChoice(
            image=entry["image"],
            matched=True,
            era=era,
            source=ImageSource.MANIFEST,
            target_branch=target_branch,
        )
    tag = tag_for(spec, target_branch, era)
    if tag is not None and usable(tag):
        return ImageChoice(
            image=tag, matched=False, era=era, source=ImageSource.TAG, target_branch=target_branch
        )
    if build is not None:
        return ImageChoice(
            image=build(era),
            matched=False,
            era=era,
            source=ImageSource.BUILD,
            target_branch=target_branch,
        )
    if tag is None:
        raise ConfigError(
            f"perfgate.yaml: image: era {era.key} is not in the manifest and no image.tags "
            f"pattern matches the target branch {target_branch!r}; add a pattern or a build"
        )
    raise GateMalfunction(
        f"image {tag} (target branch {target_branch!r}) is not available and no image.build "
        "is configured; publish the tag or configure a build"
    )


def probe_with(
    argv: Sequence[str], cwd: Path, timeout: float = PROBE_TIMEOUT_S
) -> Callable[[str], bool]:
    """A check that an image exists (e.g. ``docker manifest inspect {image}``): exit 0 = yes.

    A probe still running after ``timeout`` seconds raises Stalled: a registry that does not
    answer says nothing about the image.
    """

    def usable(image: str) -> bool:
        command = [arg.replace("{image}", image) for arg in argv]
        try:
            return _ask_registry(command, cwd, None, timeout).returncode == 0
        except OSError:
            return False

    return usable


def _ask_registry(
    command: Sequence[str], cwd: Path, env: Mapping[str, str] | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``command``'s answer, or Stalled when it has none within ``timeout`` seconds."""
    try:
        return run_bounded(command, timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        raise Stalled(
            f"{shlex.join(command)} did not answer within {timeout:g} s (the registry or the "
            "network stalled): check that the registry answers from this runner, then run again"
        ) from None


def build_with(spec: ImageSpec, target_branch: str | None, cwd: Path) -> Callable[[Era], str]:
    """Run ``image.build.argv`` and return the image reference it produced."""
    if spec.build is None:
        raise ConfigError("perfgate.yaml: image.build is not configured")
    build = spec.build

    def run(era: Era) -> str:
        values = branch_values(target_branch or "", era)
        image = fill_reference(build.image, values, "image.build.image")
        argv = [
            fill_template(arg, {**values, "image": image}, "image.build.argv") for arg in build.argv
        ]
        completed = subprocess.run(argv, cwd=cwd, check=False)
        if completed.returncode != 0:
            raise GateMalfunction(
                f"image build {' '.join(argv)} failed (exit {completed.returncode})"
            )
        return image

    return run


@dataclass(frozen=True, kw_only=True)
class EraRecord:
    """An era's manifest entry to write: the image, the commit recording it, and how."""

    era: Era
    image: str
    commit: str | None
    # Further fields of the entry (where the image came from).
    details: Mapping[str, Any] | None = None
    # A concurrent roll won: converge on its record instead of refusing another image.
    keep_recorded: bool = False
    # The reason to replace a recorded entry, kept in the new entry beside those it replaced.
    force: str | None = None

    @property
    def message(self) -> str:
        """Commit message of the record, with the reason it was forced."""
        forced = f" (forced: {self.force})" if self.force is not None else ""
        return f"[image_era] Record {self.era.key[:12]} -> {self.image}{forced}"


def with_era(manifest: Mapping[str, Any] | None, record: EraRecord) -> dict[str, Any]:
    """The manifest with ``record``'s era recorded as its image; a recorded era is never
    rewritten.

    An era recorded with another image raises EraConflict, unless ``keep_recorded`` (a
    concurrent roll won: converge on its record) or ``force`` (the reason to replace it,
    kept in the new entry beside the entries it replaced).
    """
    era, image, force = record.era, record.image, record.force
    problem = image_reference_problem(image)
    if problem:
        # A step output is one line, and docker must read it as an image: nothing else is
        # ever recorded (every resolve-image after it would fail).
        raise UsageError(f"refusing to record {image!r} for era {era.key}: it {problem}")
    document: dict[str, Any] = dict(manifest or {})
    document["schema_version"] = MANIFEST_SCHEMA_VERSION
    eras = dict(document.get("eras", {}))
    current = eras.get(era.key)
    if current is not None and force is None:
        if current["image"] != image and not record.keep_recorded:
            raise EraConflict(
                f"era {era.key} is already recorded as {current['image']}; a manifest entry "
                f"is immutable, so {image} is refused. New image inputs make a new era; to "
                "replace this one, pass --force REASON (roll-era, or resolve-image --record)"
            )
    else:
        entry: dict[str, Any] = {
            "image": image,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": record.commit,
            "inputs": dict(era.contract["fields"]),
            **(record.details or {}),
        }
        if current is not None:
            entry["forced"] = force
            earlier = {k: v for k, v in current.items() if k != "replaced"}
            entry["replaced"] = [*current.get("replaced", []), earlier]
        eras[era.key] = entry
    document["eras"] = dict(sorted(eras.items()))
    return document


def manifest_editor(path: str, record: EraRecord) -> Callable[[Path], bool]:
    """An ``apply`` for pushing.commit_to_branch: add the era to the manifest in a work tree."""

    def apply(tree: Path) -> bool:
        file = tree / path
        before = file.read_text(encoding="utf-8") if file.is_file() else None
        current = parse_manifest(before, path) if before is not None else None
        document = with_era(current, record)
        if current is not None and record.force is None and record.era.key in current["eras"]:
            return False
        file.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False)
        file.write_text(text + "\n", encoding="utf-8")
        return True

    return apply


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def digest_of(
    argv: Sequence[str],
    image: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = PROBE_TIMEOUT_S,
) -> str | None:
    """The registry digest ``argv`` prints for ``image`` (its first ``sha256:...``), or None;
    Stalled when it prints nothing within ``timeout`` seconds."""
    command = [arg.replace("{image}", image) for arg in argv]
    try:
        done = _ask_registry(command, cwd, env, timeout)
    except OSError:
        return None
    found = _DIGEST.search(done.stdout) if done.returncode == 0 else None
    return found.group(0) if found else None


def pinned(image: str, digest: str | None) -> str:
    """``name:tag@sha256:...``: the tag kept for people, the digest for the registry."""
    if digest is None or "@" in image:
        return image
    return f"{image}@{digest}"
