"""Reseed plan: the gate's under-filled buckets -> what the seed workflow measures at one commit.

A bucket is under-filled when it measured a figure but its window holds fewer than
``min_samples`` samples (a new bucket, or a launch or runtime change that reset its
baseline). The plan names the pushed commit, its target branch and, per bucket, how
many samples would fill the window; ``perfgate seed --plan FILE`` consumes it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.util.console import write_step_outputs

PLAN_SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class ReseedBucket:
    """One under-filled bucket: samples in its window now, and how many to seed."""

    id: str
    have: int
    samples: int


@dataclass(frozen=True, kw_only=True)
class ReseedPlan:
    """What to seed: buckets at one commit, for one target branch."""

    commit: str
    target_branch: str
    min_samples: int
    buckets: tuple[ReseedBucket, ...]
    hardware: tuple[str, ...] = ()
    # Names the seeding (`seed --seed-key`); an era roll's key follows its image, so a
    # rebuilt era measures the same commit again instead of finding it seeded.
    seed_key: str | None = None

    @property
    def bucket_ids(self) -> tuple[str, ...]:
        """The ids of the buckets to seed."""
        return tuple(b.id for b in self.buckets)

    def only(self, ids: Iterable[str]) -> ReseedPlan:
        """The plan narrowed to ``ids`` (one bucket's job of a matrix seeding the plan)."""
        wanted = set(ids)
        return replace(self, buckets=tuple(b for b in self.buckets if b.id in wanted))

    def to_json(self) -> dict[str, Any]:
        """The machine-readable plan the seed workflow consumes."""
        return {
            "schema_version": PLAN_SCHEMA_VERSION,
            "commit": self.commit,
            "target_branch": self.target_branch,
            "min_samples": self.min_samples,
            "hardware": list(self.hardware),
            "bucket_ids": list(self.bucket_ids),
            "buckets": [{"id": b.id, "have": b.have, "samples": b.samples} for b in self.buckets],
            **({"seed_key": self.seed_key} if self.seed_key else {}),
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> ReseedPlan:
        """Parse a plan file's content; a malformed one raises ConfigError naming ``source``."""
        try:
            if data.get("schema_version") != PLAN_SCHEMA_VERSION:
                raise ConfigError(
                    f"{source}: schema_version {data.get('schema_version')!r} is not "
                    f"{PLAN_SCHEMA_VERSION}; regenerate it with `perfgate reseed-plan`"
                )
            buckets = tuple(
                ReseedBucket(id=str(b["id"]), have=int(b.get("have", 0)), samples=int(b["samples"]))
                for b in data["buckets"]
            )
            return cls(
                commit=str(data["commit"]),
                target_branch=str(data["target_branch"]),
                min_samples=int(data["min_samples"]),
                buckets=buckets,
                hardware=tuple(str(h) for h in data.get("hardware", [])),
                seed_key=str(data["seed_key"]) if data.get("seed_key") else None,
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{source}: not a reseed plan ({type(exc).__name__}: {exc}); "
                "expected the JSON written by `perfgate reseed-plan`"
            ) from None


def plan_buckets(
    underfilled: Iterable[str], have: Mapping[str, int], min_samples: int
) -> tuple[ReseedBucket, ...]:
    """Each under-filled bucket once, with the samples that would bring it to the minimum."""
    seen: dict[str, ReseedBucket] = {}
    for bucket in underfilled:
        if bucket in seen:
            continue
        count = max(0, have.get(bucket, 0))
        seen[bucket] = ReseedBucket(id=bucket, have=count, samples=max(1, min_samples - count))
    return tuple(seen.values())


# The reasons of a window too small to judge (the gate's under-filled buckets).
_UNDERFILLED = frozenset({"NO_BASELINE", "INSUFFICIENT_WINDOW"})


def plan_from_report(report: Mapping[str, Any], min_samples: int, source: str) -> ReseedPlan:
    """A plan from a gate's verdict.json: its commit, target branch and under-filled buckets."""
    commit, target = report.get("commit"), report.get("target_branch")
    if not commit or not target:
        raise ConfigError(
            f"{source}: the report names no commit or target branch, so there is nothing "
            "to reseed at; pass --underfilled with --commit and --target instead"
        )
    have: dict[str, int] = {}
    for row in report.get("rows", []):
        # The emptiest window decides: a metric added later starts with none.
        short = [
            metric
            for metric in row.get("metrics") or []
            if metric.get("gates") and _UNDERFILLED & set(metric.get("reasons") or [])
        ]
        have[str(row.get("bucket"))] = min(
            int((entry.get("baseline") or {}).get("samples") or 0) for entry in [row, *short]
        )
    return ReseedPlan(
        commit=str(commit),
        target_branch=str(target),
        min_samples=min_samples,
        buckets=plan_buckets(report.get("underfilled", []), have, min_samples),
        hardware=tuple(report.get("hardware", [])),
    )


def parse_underfilled(text: str) -> list[str]:
    """The gate's ``underfilled`` step output (a JSON list of bucket ids)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--underfilled: not JSON ({exc.msg}); pass the gate's `underfilled` output, "
            "e.g. '[\"cartpole/numpy\"]'"
        ) from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("--underfilled: expected a JSON list of bucket ids")
    return value


def load_plan(path: Path) -> ReseedPlan:
    """Read a plan file written by ``perfgate reseed-plan``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the reseed plan: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: the reseed plan is not JSON: {exc.msg}") from None
    return ReseedPlan.from_json(data, str(path))


def plan_text(plan: ReseedPlan) -> str:
    """One line per bucket, for people reading the log."""
    if not plan.buckets:
        return f"nothing to reseed at {plan.commit[:12]} ({plan.target_branch})"
    head = f"reseed {len(plan.buckets)} bucket(s) at {plan.commit[:12]} ({plan.target_branch}):"
    lines = [
        f"  {b.id}: {b.have} of {plan.min_samples} samples, seed {b.samples}" for b in plan.buckets
    ]
    return "\n".join([head, *lines])


def emit_plan(plan: ReseedPlan, out: Path | None, env: Mapping[str, str] = os.environ) -> None:
    """Write the plan to ``out`` (else stdout) and, on GitHub, as step outputs."""
    text = json.dumps(plan.to_json(), indent=2, allow_nan=False) + "\n"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(plan_text(plan), file=sys.stderr)
    else:
        print(text, end="")
    write_step_outputs(
        {
            "reseed_needed": "true" if plan.buckets else "false",
            "reseed_plan": json.dumps(plan.to_json(), separators=(",", ":"), allow_nan=False),
        },
        env,
    )
