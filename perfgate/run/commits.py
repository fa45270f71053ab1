"""Two commits measured alternately on this machine (``compare --measure``).

Each side is a throwaway worktree of its commit (or the working tree for ``.``), with its
own perfgate.yaml's buckets; every bucket both declare is measured A, B, A, B... by the
same paired loop the bench's confirmation uses (``run.paired``), so the machine's
drift lands on both sides alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate import context
from perfgate.config import PRIMARY, Bucket, Config, load_config
from perfgate.errors import UsageError
from perfgate.result import PairedSide
from perfgate.run import hardware
from perfgate.run.admission import AdmissionControl
from perfgate.run.launch import BenchSettings
from perfgate.run.paired import PairLimits, measure_alternately

#: What --measure takes for the working tree, uncommitted changes included.
WORKING_TREE = "."


@dataclass(frozen=True, kw_only=True)
class Measured:
    """Both sides measured alternately: per bucket id, its (A, B) pairs."""

    a: str
    b: str
    pairs: dict[str, tuple[tuple[float, float], ...]]
    hardware: str
    notes: list[str] = field(default_factory=list)


def measure_commits(
    top: Path,
    a_ref: str,
    b_ref: str,
    *,
    config: Config,
    buckets: dict[str, Bucket],
    pairs: int,
    work: Path,
    say: Callable[[str], None],
) -> Measured:
    """Commits ``a_ref`` and ``b_ref`` of the repository at ``top``, checked out side by side under
    ``work``, measured alternately bucket by bucket, ``pairs`` pairs each."""
    machine = hardware.detect()
    base = BenchSettings(
        checkout=Path.cwd(),
        work_root=work,
        out_dir=work / "results",
        hardware=machine,
        context=context.detect(os.environ, default_target=config.gate.target_branches[0]),
        say=say,
        admission=config.admission,
    )
    notes: list[str] = []
    taken_pairs: dict[str, tuple[tuple[float, float], ...]] = {}
    with ExitStack() as stack:
        sides = {
            side: stack.enter_context(commit_side(top, ref, config, work / side.value))
            for side, ref in ((PairedSide.BASE, a_ref), (PairedSide.HEAD, b_ref))
        }
        label = {side: found.label for side, found in sides.items()}
        say(
            f"{len(buckets)} bucket(s) on {machine.slug}: {pairs} pair(s) each, "
            f"A ({label[PairedSide.BASE]}) and B ({label[PairedSide.HEAD]}) alternately"
        )
        for bucket_id, bucket in buckets.items():
            # Each side's own declaration of the bucket (its own benchmark).
            own = {side: found.config.find(bucket_id) for side, found in sides.items()}
            missing = [label[side] for side, b in own.items() if b is None]
            if missing:
                notes.append(f"{bucket_id}: not declared at {', '.join(missing)}; not compared")
                continue
            record = measure_alternately(
                bucket,
                {
                    side: (b, replace(base, checkout=sides[side].checkout))
                    for side, b in own.items()
                    if b is not None
                },
                base_commit=sides[PairedSide.BASE].commit,
                run_key=f"compare-{os.getpid()}",
                control=AdmissionControl(config.admission, machine),
                limits=PairLimits(max_pairs=pairs, budget_s=None, started=time.monotonic()),
                wants_more=lambda record: True,
            )
            taken = record.pairs(PRIMARY)
            ended = f" ({record.reason})" if record.reason else ""
            say(f"{bucket_id}: {len(taken)} usable pair(s) of {pairs}{ended}")
            if taken:
                taken_pairs[bucket_id] = tuple(taken)
            else:
                notes.append(f"{bucket_id}: no usable pair ({record.reason or 'see the logs'})")
    return Measured(
        a=label[PairedSide.BASE], b=label[PairedSide.HEAD], pairs=taken_pairs,
        hardware=machine.slug, notes=notes,
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class CommitSide:
    """One --measure side: where its tree is, which commit it is, and its own buckets."""

    label: str
    commit: str
    checkout: Path
    config: Config


@contextmanager
def commit_side(top: Path, ref: str, config: Config, root: Path) -> Iterator[CommitSide]:
    """``ref`` in a throwaway worktree (removed on exit), or the working tree for '.'."""
    from perfgate.run.checkout import replay_checkout
    from perfgate.util.git import resolve

    if ref == WORKING_TREE:
        head = resolve(top, "HEAD") or "working tree"
        yield CommitSide(label="working tree", commit=head, checkout=Path.cwd(), config=config)
        return
    commit = resolve(top, ref)
    if commit is None:
        raise UsageError(f"--measure {ref!r}: no such commit here; fetch it or check the name")
    try:
        relative = config.path.resolve().relative_to(top)
    except ValueError:
        relative = None  # a config outside the repository: both sides use it
    with replay_checkout(top, commit, root) as tree:
        own = tree / relative if relative is not None else None
        side_config = load_config(own) if own is not None and own.is_file() else config
        where = Path.cwd().resolve().relative_to(top)
        yield CommitSide(
            label=f"{ref} ({commit[:12]})" if ref != commit else commit[:12],
            commit=commit,
            checkout=tree / where,
            config=side_config,
        )
