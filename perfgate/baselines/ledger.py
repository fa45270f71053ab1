"""What published runs cost, kept on the baseline branch beside their samples (R17).

Publish (and seeding) appends one line per bucket run of a protected push to
``spend/<hardware>/<YYYY-MM-DD>.ndjson``: the runner time its result recorded, by kind
(setup, launches, retries, waits...). A run whose samples were refused is counted too:
its runner billed it. ``perfgate spend`` sums the lines per day, per bucket and per CI
run, and says what a job's setup and a launch took. A pull request's runs never write
to the branch (R9); what each cost is in its own summary and ``verdict.json``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from perfgate.baselines.samples import plain_name
from perfgate.result import Result, Spend, SpendKind
from perfgate.util import jsonfile

LEDGER_DIR = "spend"


@dataclass(frozen=True, kw_only=True)
class SpendRecord:
    """What one bucket run of a published push cost its runner."""

    run: str  # the CI run id and attempt ("123.1"); outside CI, when the run began
    bucket: str
    hardware: str
    commit: str | None
    finished_at: str  # ISO 8601, UTC
    runner: str | None
    spend: Spend

    @property
    def key(self) -> tuple[str, str, str]:
        """One line per bucket run (a seed job runs a bucket many times in one CI run): a
        publish retried never counts a run twice."""
        return self.run, self.bucket, self.finished_at

    @property
    def path(self) -> str:
        """The ledger file of the run's hardware and day, the hardware a plain name as in a
        sample's path: a day's file stays small, as every publish writes it whole."""
        return f"{LEDGER_DIR}/{plain_name(self.hardware)}/{self.day.isoformat()}.ndjson"

    @property
    def day(self) -> date:
        """The UTC day the run finished."""
        return date.fromisoformat(self.finished_at[:10])

    def to_line(self) -> str:
        """The record as one JSON line."""
        return json.dumps(
            {"run": self.run, "bucket": self.bucket, "hardware": self.hardware,
             "commit": self.commit, "finished_at": self.finished_at, "runner": self.runner,
             "spend": self.spend.to_json()},
            sort_keys=True, allow_nan=False,
        )  # fmt: skip

    @classmethod
    def from_line(cls, line: str) -> SpendRecord:
        """Parse a ledger line; ValueError names what is wrong."""
        try:
            data: dict[str, Any] = jsonfile.loads(line)  # NaN and Infinity refused
            finished_at = str(data["finished_at"])
            date.fromisoformat(finished_at[:10])
            spend = Spend.from_json(data["spend"])
            if any(part.seconds < 0 or part.launches < 0 for part in spend.lines.values()):
                raise ValueError("a negative runner time or launch count")
            return cls(
                run=str(data["run"]),
                bucket=str(data["bucket"]),
                hardware=str(data["hardware"]),
                commit=data.get("commit"),
                finished_at=finished_at,
                runner=data.get("runner"),
                spend=spend,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a spend record: {exc!r}") from None


def record_of(result: Result) -> SpendRecord | None:
    """The ledger line of a result, or None when its artifact recorded no spend."""
    if result.spend is None:
        return None
    run = (
        f"{result.ci.run_id}.{result.ci.run_attempt or 1}"
        if result.ci.run_id
        else result.timings.started_at
    )
    return SpendRecord(
        run=run,
        bucket=result.bucket.id,
        hardware=result.hardware.slug,
        commit=result.source.commit,
        finished_at=result.timings.finished_at,
        runner=result.ci.runner_name,
        spend=result.spend,
    )


def appended(text: str, records: Iterable[SpendRecord]) -> tuple[str, int]:
    """A ledger file's text with ``records`` it does not hold yet, and how many were new."""
    held = set()
    for line in text.splitlines():
        try:
            held.add(SpendRecord.from_line(line).key)
        except ValueError:
            continue  # kept as it is: reading says where it is
    lines = []
    for record in records:
        if record.key not in held:
            held.add(record.key)
            lines.append(record.to_line())
    if not lines:
        return text, 0
    prefix = text if not text or text.endswith("\n") else text + "\n"
    return prefix + "".join(f"{line}\n" for line in lines), len(lines)


@dataclass(frozen=True, kw_only=True)
class Tally:
    """Runner minutes of a group of bucket runs."""

    runs: int
    minutes: float


@dataclass(frozen=True, kw_only=True)
class SpendSummary:
    """What the ledger's bucket runs cost: per day, per bucket and per CI run."""

    by_day: dict[date, Tally]
    by_bucket: dict[str, Tally]
    # Runner minutes of each CI run (every bucket of one push), oldest first.
    per_run: tuple[float, ...]
    # What a job's setup took (median over the jobs that recorded one), in minutes.
    setup_minutes: float | None
    # What one measured launch took, per bucket (median over its runs), in minutes.
    launch_minutes: dict[str, float]

    @property
    def minutes(self) -> float:
        """Runner minutes in all."""
        return sum(t.minutes for t in self.by_day.values())

    def per_run_percentile(self, share: float) -> float | None:
        """The CI run cost ``share`` of runs stay within (nearest rank), or None."""
        if not self.per_run:
            return None
        ranked = sorted(self.per_run)
        return ranked[min(len(ranked) - 1, max(0, round(share * len(ranked) + 0.5) - 1))]


def summarise(records: Sequence[SpendRecord], *, since: date | None = None) -> SpendSummary:
    """Sum ``records`` (those finished on or after ``since``) per day, bucket and run."""
    kept = [r for r in records if since is None or r.day >= since]
    by_day: dict[date, list[SpendRecord]] = {}
    by_bucket: dict[str, list[SpendRecord]] = {}
    by_run: dict[str, list[SpendRecord]] = {}
    for record in sorted(kept, key=lambda r: r.finished_at):
        by_day.setdefault(record.day, []).append(record)
        by_bucket.setdefault(record.bucket, []).append(record)
        by_run.setdefault(record.run, []).append(record)
    # A job records its setup on its first bucket only: the others' zero is no setup.
    setups = [s for s in (r.spend.of(SpendKind.SETUP).seconds for r in kept) if s > 0]
    launches: dict[str, float] = {}
    for bucket, runs in by_bucket.items():
        each = [
            line.seconds / line.launches
            for line in (r.spend.of(SpendKind.MEASURE) for r in runs)
            if line.launches
        ]
        if each:
            launches[bucket] = statistics.median(each) / 60.0
    return SpendSummary(
        by_day={day: _tally(rs) for day, rs in by_day.items()},
        by_bucket={bucket: _tally(rs) for bucket, rs in sorted(by_bucket.items())},
        per_run=tuple(_tally(rs).minutes for rs in by_run.values()),
        setup_minutes=statistics.median(setups) / 60.0 if setups else None,
        launch_minutes=launches,
    )


def _tally(records: Sequence[SpendRecord]) -> Tally:
    return Tally(runs=len(records), minutes=sum(r.spend.seconds for r in records) / 60.0)
