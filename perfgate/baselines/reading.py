"""Reading the baseline branch straight from git objects: no checkout, one process per batch.

Blobs stream out of one ``git cat-file --batch`` and are handed over one at a time while
git decompresses the next ones, so a reader never holds more than the blob in hand.
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, NamedTuple

from perfgate.baselines.segments import is_archive
from perfgate.errors import GateMalfunction, GitError
from perfgate.util.git import git, git_env, resolve

# Directories one ``git ls-tree`` lists: its command line stays far below any system's limit.
LIST_AT_ONCE = 1000
# How far git may write ahead of the reader (Linux allows up to 1 MiB to anyone): enough
# to overlap git's work with ours, little enough that memory stays a few segments.
PIPE_BYTES = 1024 * 1024


def fetch_tip(repo: Path, branch: str, remote: str, *, timeout: float | None = None) -> str | None:
    """Fetch ``branch`` from ``remote`` into its remote-tracking ref; None when absent there.

    The one fetch of the baseline branch, for readers and writers alike. ``timeout``:
    seconds the fetch may take (git's default for network calls without one). A failure
    is a GitError saying the branch cannot be read, with git's stderr for the write path
    to tell a lost race or a network failure (retried) from the rest. No ``--prune``: with
    the one exact refspec, git fails on a branch gone from the remote before it prunes, so
    the answer "absent" comes from that failure, never from the remote-tracking ref.
    """
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        git("fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}",
            cwd=repo, timeout=timeout)  # fmt: skip
    except GitError as exc:
        if "couldn't find remote ref" in exc.stderr:
            return None
        raise GitError(
            exc.args_list,
            exc.returncode,
            exc.stderr,
            summary=f"cannot read the baseline branch {branch!r} from {remote!r}: {exc}; "
            "check the remote and the token's read access",
        ) from None
    return resolve(repo, tracking)


def object_format(repo: Path) -> str:
    """The repository's hash algorithm (``sha1`` or ``sha256``)."""
    try:
        return git("rev-parse", "--show-object-format", cwd=repo).strip() or "sha1"
    except GitError:
        return "sha1"


def ancestry(repo: Path, base: str) -> dict[str, int]:
    """Every ancestor of ``base`` (itself included) mapped to its distance, nearest first."""
    return {sha.decode(): index for sha, index in ancestry_ids(repo, base).items()}


def ancestry_ids(repo: Path, base: str, limit: int | None = None) -> dict[bytes, int]:
    """:func:`ancestry` keyed by the ids as bytes, as segment lines and indexes hold them;
    with ``limit``, only the nearest that many (fewer: the walk reached the root)."""
    # A shallow clone walks without error but sees almost no history: every sample would
    # fail the ancestry check and every bucket would silently read NO_BASELINE.
    if git("rev-parse", "--is-shallow-repository", cwd=repo).strip() == "true":
        raise GateMalfunction(
            f"{repo} is a shallow clone, so the baseline ancestry check cannot see history; "
            "check out with full history (actions/checkout: fetch-depth: 0, or "
            "git fetch --unshallow)"
        )
    bounded = [] if limit is None else [f"--max-count={limit}"]
    listing = subprocess.run(
        ["git", "rev-list", "--topo-order", *bounded, base],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        raise GateMalfunction(
            f"cannot walk the history of {base}: {listing.stderr.decode().strip()}; "
            "CI checkouts need fetch-depth: 0"
        )
    shas = listing.stdout.split()
    return dict(zip(shas, range(len(shas)), strict=True))


def list_archives(repo: Path, tip: str) -> dict[str, list[str]]:
    """Archive segments per bucket directory at ``tip``, newest first."""
    listing = git("ls-tree", "-r", "--name-only", tip, "--", "samples/", cwd=repo)
    found: dict[str, list[str]] = {}
    for name in listing.splitlines():
        directory, _, leaf = name.rpartition("/")
        if is_archive(leaf):
            found.setdefault(directory, []).append(name)
    return {directory: sorted(names, reverse=True) for directory, names in found.items()}


def tree_blobs(repo: Path, tip: str, directories: Iterable[str]) -> dict[str, str]:
    """The blob id of each file in each of ``directories`` (not below them) at ``tip``.

    One ``git ls-tree`` lists a thousand directories in one walk of the tree; naming each
    file to ``cat-file`` instead walks the tree again for every file. A directory that does
    not exist lists nothing.
    """
    wanted = sorted({directory.rstrip("/") + "/" for directory in directories})
    found: dict[str, str] = {}
    for start in range(0, len(wanted), LIST_AT_ONCE):
        listing = subprocess.run(
            ["git", "--literal-pathspecs", "ls-tree", "-z", "--full-tree", tip, "--",
             *wanted[start : start + LIST_AT_ONCE]],
            cwd=repo,
            env=git_env(),
            capture_output=True,
            check=False,
        )  # fmt: skip
        if listing.returncode != 0:
            raise GateMalfunction(
                f"git ls-tree failed while reading baselines: {listing.stderr.decode().strip()}"
            )
        for entry in listing.stdout.split(b"\0"):
            about, _, name = entry.partition(b"\t")
            mode_type_id = about.split()
            if len(mode_type_id) == 3 and mode_type_id[1] == b"blob":
                found[name.decode("utf-8", "surrogateescape")] = mode_type_id[2].decode()
    return found


class Blob(NamedTuple):
    """One answer of ``git cat-file --batch``: the spec asked, and the blob (None: absent or
    not a blob)."""

    spec: str
    oid: str | None
    data: bytes | None


def stream_blobs(repo: Path, specs: Sequence[str]) -> Iterator[Blob]:
    """Each spec's blob, in order, read straight off git's output as git writes it.

    A thread writes the requests; this one reads the answers, as a raw ``git cat-file
    --batch`` is read, while git decompresses the next blobs into the pipe.
    """
    if not specs:
        return
    process = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        env=git_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    _widen(process.stdout)
    sender = threading.Thread(target=_send, args=(process.stdin, specs), daemon=True)
    sender.start()
    finished = False
    try:
        for spec in specs:
            yield _answer(process.stdout, spec)
        finished = True
    finally:
        if not finished:
            process.kill()
        sender.join()
        process.stdout.close()
        stderr = process.stderr.read().decode() if process.stderr else ""
        if process.wait() != 0 and finished:
            raise GateMalfunction(f"git cat-file failed while reading baselines: {stderr.strip()}")


def _widen(pipe: IO[bytes]) -> None:
    """Let git run further ahead of the reader: a larger pipe where the system allows one."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _send(stdin: IO[bytes], specs: Sequence[str]) -> None:
    try:
        with stdin:
            stdin.write("".join(f"{spec}\n" for spec in specs).encode())
    except (BrokenPipeError, ValueError):
        pass  # the reader stopped early and killed git


def _answer(stdout: IO[bytes], spec: str) -> Blob:
    """The next answer on git's output, for ``spec``."""
    try:
        header = stdout.readline()
        if header.endswith((b" missing\n", b" ambiguous\n")):
            return Blob(spec, None, None)
        if header:
            oid, kind, size = header.split()
            data = stdout.read(int(size))
            if len(data) == int(size) and stdout.read(1) == b"\n":
                # Content follows whatever the type, and is read even when it is no blob
                # (a tree where a file was expected): left in the pipe, every later
                # answer would be read from the middle of it.
                return Blob(spec, oid.decode(), data) if kind == b"blob" else Blob(spec, None, None)
    except (OSError, ValueError) as exc:
        raise GateMalfunction(f"git cat-file stopped answering: {exc}") from None
    raise GateMalfunction("git cat-file stopped answering")
