"""Accepted changes on the baseline branch: an intended slowdown is a known level shift (R18).

``acknowledgements.ndjson`` at the branch's root holds one canonical JSON line per
acceptance: the bucket (``*``: every bucket), the metric (null: every metric of it), the
commit the new level starts at, why, who, and where it came from (``accept`` on the
command line, the ``perfgate-accepted`` label on an alert's issue, a merged pull request's
description or label). Only trusted writers record one: a maintainer's ``perfgate
accept`` and a protected push's alert job. Lines are appended with the store's
fetch-reapply-retry and deduplicated by their id, so recording twice is harmless.

Readers turn each into a known level shift: a window's runs at the accepted commit or
after it form the level it judges with (``kept_runs``); the alert rule starts a new level
there; the trend site marks it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from perfgate.baselines.pushing import commit_to_branch
from perfgate.baselines.reading import stream_blobs
from perfgate.baselines.store import BaselineStore
from perfgate.errors import GitError, UsageError
from perfgate.identity import stable_hash
from perfgate.util.git import git

ACK_FILE = "acknowledgements.ndjson"
EVERY_BUCKET = "*"
#: Where an acceptance came from.
SOURCES = ("accept", "issue-label", "pull-request")
REASON_LIMIT = 300
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True)
class Acknowledgement:
    """One accepted change: from ``commit`` on, ``bucket``'s metric is at a new level."""

    bucket: str
    metric: str | None
    commit: str
    reason: str
    by: str
    source: str
    recorded_at: str

    @property
    def ack_id(self) -> str:
        """Stable for what was accepted (bucket, metric, commit), whoever recorded it."""
        return stable_hash({"bucket": self.bucket, "metric": self.metric, "commit": self.commit})

    def applies_to(self, bucket: str, metric: str) -> bool:
        """True when this acceptance covers ``bucket``'s ``metric``."""
        return self.bucket in (EVERY_BUCKET, bucket) and self.metric in (None, metric)

    def to_line(self) -> str:
        """Canonical JSON (sorted keys, compact) with the id."""
        return json.dumps({**asdict(self), "id": self.ack_id}, sort_keys=True,
                          separators=(",", ":"), allow_nan=False)  # fmt: skip

    @classmethod
    def from_line(cls, line: str) -> Acknowledgement:
        """Parse one stored line; ValueError when it is not an acceptance."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        texts = ("bucket", "commit", "reason", "by", "source", "recorded_at")
        for name in texts:
            if not isinstance(data.get(name), str):
                raise ValueError(f"{name} {data.get(name)!r} is not a string")
        if data.get("metric") is not None and not isinstance(data["metric"], str):
            raise ValueError(f"metric {data['metric']!r} is not a string")
        if not _SHA.fullmatch(data["commit"]):
            raise ValueError(f"commit {data['commit']!r} is not a full commit SHA")
        return cls(metric=data.get("metric"), **{name: data[name] for name in texts})


def acknowledgement(
    *, bucket: str, commit: str, reason: str, by: str, source: str, metric: str | None = None
) -> Acknowledgement:
    """A new acceptance, its reason made one plain line within REASON_LIMIT characters."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    plain = " ".join("".join(c if c.isprintable() else " " for c in reason).split())
    if not plain:
        raise UsageError(
            'an accepted change needs a reason (--reason "..."): say why it is intended'
        )
    if len(plain) > REASON_LIMIT:
        plain = plain[: REASON_LIMIT - 1].rstrip() + "…"
    return Acknowledgement(
        bucket=bucket,
        metric=None if metric in (None, "") else metric,
        commit=commit,
        reason=plain,
        by=" ".join(by.split())[:100] or "unknown",
        source=source,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def read_acks(repo: Path, tip: str | None) -> tuple[list[Acknowledgement], list[str]]:
    """Every acceptance on the baseline branch at ``tip`` (oldest first), and a warning per
    line that is not one."""
    if tip is None:
        return [], []
    (blob,) = stream_blobs(repo, [f"{tip}:{ACK_FILE}"])
    found: dict[str, Acknowledgement] = {}
    warnings = []
    text = (blob.data or b"").decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ack = Acknowledgement.from_line(line)
        except (ValueError, TypeError) as exc:
            warnings.append(f"{ACK_FILE}:{number}: not an accepted change, skipped ({exc})")
            continue
        found.setdefault(ack.ack_id, ack)
    return list(found.values()), warnings


def record_acks(store: BaselineStore, acks: Sequence[Acknowledgement], message: str) -> int:
    """Append the acceptances not recorded yet; returns how many were new."""
    added: list[int] = [0]

    def edit(tree: Path) -> bool:
        path = tree / ACK_FILE
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        known = set()
        for line in text.splitlines():
            try:
                known.add(Acknowledgement.from_line(line).ack_id)
            except (ValueError, TypeError):
                continue
        fresh = [a for a in {a.ack_id: a for a in acks}.values() if a.ack_id not in known]
        added[0] = len(fresh)
        if not fresh:
            return False
        if text and not text.endswith("\n"):
            text += "\n"
        path.write_text(text + "".join(f"{a.to_line()}\n" for a in fresh), encoding="utf-8")
        return True

    commit_to_branch(
        store.repo, store.branch, store.remote, edit, message, store.retry, paths=[ACK_FILE]
    )
    return added[0]


def descendants(repo: Path, commit: str, tip: str) -> frozenset[str]:
    """``commit`` and every commit on a path from it to ``tip`` (empty: not an ancestor)."""
    try:
        git("merge-base", "--is-ancestor", commit, tip, cwd=repo)
    except GitError:
        return frozenset()
    listing = git("rev-list", "--ancestry-path", f"{commit}..{tip}", cwd=repo).split()
    return frozenset([commit, *listing])


@dataclass(frozen=True, kw_only=True)
class AcceptedLevel:
    """An acceptance, and the commits at its level: its commit and every one after it."""

    ack: Acknowledgement
    after: frozenset[str]


def accepted_levels(
    repo: Path, acks: Iterable[Acknowledgement], tip: str | None
) -> tuple[AcceptedLevel, ...]:
    """The acceptances whose commit ``tip`` contains, each with the commits at its level."""
    if tip is None:
        return ()
    levels = []
    for ack in acks:
        after = descendants(repo, ack.commit, tip)
        if after:
            levels.append(AcceptedLevel(ack=ack, after=after))
    return tuple(levels)


def kept_runs(
    levels: Iterable[AcceptedLevel], bucket: str, metric: str, run_commits: Sequence[str]
) -> int | None:
    """How many of a window's runs (nearest first, by commit) are at the newest accepted
    level of ``bucket``'s ``metric``: the known level shift the rule judges with (None:
    no acceptance covers this window)."""
    kept = None
    for level in levels:
        if not level.ack.applies_to(bucket, metric):
            continue
        count = 0
        for commit in run_commits:
            if commit not in level.after:
                break
            count += 1
        # The newest acceptance cuts the window shortest.
        kept = count if kept is None else min(kept, count)
    return kept
