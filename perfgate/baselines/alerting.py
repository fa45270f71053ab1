"""After a protected push: every series of the target branch judged by the alert rule (R18).

Reads each bucket's stored runs along the target branch's first-parent line (the pushes;
:mod:`perfgate.baselines.history`), keeps the newest experiment's (a new launch,
benchmark or runtime hash, or a new baseline epoch, starts afresh, as a window does),
tells the rule where accepted changes start (:mod:`perfgate.baselines.acks`), and replays
them through :func:`perfgate.judge.alerts.watch`. Each regression it finds is named with
what a reader and a bisect need: its runs on either side, the suspect commits with their
titles, and the runner minutes a bisection of them would cost at most.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

from perfgate.baselines.acks import AcceptedLevel
from perfgate.baselines.bisect import BISECT_REPEATS, BisectPlan, step_sampling
from perfgate.baselines.history import History, Run, Series
from perfgate.config import PRIMARY, Bucket, Config, Direction
from perfgate.judge.alerts import AlertPolicy, Change, Episode, PushRun, watch
from perfgate.util.git import git

#: The newest runs of a series the rule replays (older ones cannot change what is open).
MAX_RUNS = 400
#: Suspect commits listed by name; a longer range is summarised.
LISTED_SUSPECTS = 30


@dataclass(frozen=True, kw_only=True)
class AlertKey:
    """What one regression issue is about: a bucket's metric on one hardware, and its range."""

    bucket: str
    hardware: str
    metric: str
    good: str
    bad: str

    def to_json(self) -> dict[str, str]:
        """The key as the issue's marker stores it."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AlertKey:
        """A key read back from a marker; ValueError when it is not one."""
        fields = ("bucket", "hardware", "metric", "good", "bad")
        if not all(isinstance(data.get(name), str) for name in fields):
            raise ValueError("not an alert key")
        return cls(**{name: str(data[name]) for name in fields})


@dataclass(frozen=True, kw_only=True)
class Suspect:
    """A commit of the suspect range and its title."""

    sha: str
    title: str


class FindingState(StrEnum):
    """Where a regression's episode stands."""

    OPEN = "open"
    RECOVERED = "recovered"  # the series came back
    ACCEPTED = "accepted"  # a maintainer accepted the change


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One regression of one series: its episode and everything an issue says about it."""

    key: AlertKey
    bucket: Bucket
    metric_path: str
    unit: str
    episode: Episode
    # The commit of each run the rule replayed, by run index.
    commits: tuple[str, ...]
    # The first-parent commits after the last good run up to the first bad one, oldest first.
    suspects: tuple[Suspect, ...]
    suspect_count: int
    # A bisection's runner-minute bound (None: the metric is not one a bisect can judge).
    bisect_minutes: float | None

    def sha(self, index: int) -> str:
        """The commit of run ``index``."""
        return self.commits[index]

    @property
    def state(self) -> FindingState:
        """Open, recovered or accepted."""
        if self.episode.recovery is not None:
            return FindingState.RECOVERED
        return FindingState.OPEN if self.episode.accepted_at is None else FindingState.ACCEPTED


@dataclass(frozen=True, kw_only=True)
class Improvement:
    """A confirmed improvement of one series (recorded, never alerted)."""

    bucket: str
    hardware: str
    metric: str
    unit: str
    change: Change
    good: str
    bad: str


@dataclass(frozen=True, kw_only=True)
class Survey:
    """What the alert rule makes of every selected series at the target branch's tip."""

    target_branch: str
    tip: str
    findings: tuple[Finding, ...]
    improvements: tuple[Improvement, ...]
    series: int
    notes: tuple[str, ...]
    accepted: tuple[AcceptedLevel, ...] = ()

    @property
    def open(self) -> tuple[Finding, ...]:
        """The regressions still open at the tip."""
        return tuple(f for f in self.findings if f.state is FindingState.OPEN)

    def acceptance(self, key: AlertKey) -> AcceptedLevel | None:
        """The acceptance that covers the regression ``key`` names: one starting after its
        last good commit and at or before its first bad one (None: none does)."""
        return next(
            (
                level
                for level in self.accepted
                if level.ack.applies_to(key.bucket, key.metric)
                and key.bad in level.after
                and key.good not in level.after
            ),
            None,
        )


def alert_policy(config: Config, bucket: Bucket, metric: str) -> AlertPolicy:
    """The rule for one series: perfgate.yaml's ``alerts`` (each of the rule's settings),
    the metric's minimum drop."""
    declaration = bucket.metric_named(metric)
    own = declaration.min_drop_pct if declaration is not None else None
    minimum = own if own is not None else config.gate.oracle.min_drop_pct
    spec = config.alerts
    names = (f.name for f in fields(AlertPolicy) if f.name != "min_drop_pct")
    return AlertPolicy(min_drop_pct=minimum, **{name: getattr(spec, name) for name in names})


def first_parent(repo_history: History) -> frozenset[str]:
    """The commits of the target branch's first-parent line: its pushes."""
    listing = git("rev-list", "--first-parent", repo_history.target_tip,
                  cwd=repo_history.store.repo)  # fmt: skip
    return frozenset(listing.split())


def pushes(series: Series, line: frozenset[str]) -> list[Run]:
    """The series' runs on the first-parent line, of its newest experiment, newest MAX_RUNS."""
    runs = [run for run in series.runs if run.commit.sha in line]
    if not runs:
        return []
    newest = runs[-1].key
    return [run for run in runs if run.key == newest][-MAX_RUNS:]


def suspects_between(history: History, good: str, bad: str) -> list[Suspect]:
    """First-parent commits after ``good`` up to ``bad``, oldest first, with their titles."""
    listing = git("log", "--first-parent", "--reverse", "--format=%H%x1f%s", f"{good}..{bad}",
                  cwd=history.store.repo)  # fmt: skip
    found = []
    for line in listing.splitlines():
        sha, _, title = line.partition("\x1f")
        if sha:
            found.append(Suspect(sha=sha, title=title))
    return found


def bisect_bound(config: Config, bucket: Bucket, hardware: str, candidates: int) -> float:
    """The runner minutes a bisection of ``candidates`` commits costs at most (as it plans)."""
    gate = config.gate
    plan = BisectPlan(
        bucket=bucket,
        good="",
        bad="",
        candidates=("",) * candidates,
        repeats=BISECT_REPEATS,
        max_repeats=step_sampling(bucket, gate, BISECT_REPEATS).max_repeats,
        good_runs=gate.runs_to_fill(BISECT_REPEATS),
        hardware=hardware,
        metric=bucket.metric.path,
    )
    return plan.runner_minutes()[0]


def survey(config: Config, history: History, accepted: Sequence[AcceptedLevel] = ()) -> Survey:
    """Replay every series of ``history`` with the alert rule; name each regression."""
    line = first_parent(history)
    findings: list[Finding] = []
    improvements: list[Improvement] = []
    count = 0
    for series in history.series():
        runs = pushes(series, line)
        if not runs:
            continue
        count += 1
        commits = tuple(run.commit.sha for run in runs)
        known = set()
        for level in accepted:
            if level.ack.applies_to(series.bucket.id, series.metric):
                first = next((i for i, sha in enumerate(commits) if sha in level.after), None)
                if first is not None:
                    known.add(first)
        watched = watch(
            [PushRun(commit=r.commit.sha, values=r.values, runner=r.runner) for r in runs],
            direction=Direction(series.direction),
            policy=alert_policy(config, series.bucket, series.metric),
            known_shifts=known,
        )
        for episode in watched.episodes:
            good, bad = commits[episode.alert.last_good], commits[episode.alert.first_bad]
            listed = suspects_between(history, good, bad)
            primary = series.metric == PRIMARY
            findings.append(
                Finding(
                    key=AlertKey(
                        bucket=series.bucket.id,
                        hardware=series.hardware,
                        metric=series.metric,
                        good=good,
                        bad=bad,
                    ),
                    bucket=series.bucket,
                    metric_path=series.metric_path,
                    unit=series.unit,
                    episode=episode,
                    commits=commits,
                    suspects=tuple(listed[:LISTED_SUSPECTS]),
                    suspect_count=len(listed),
                    bisect_minutes=(
                        bisect_bound(config, series.bucket, series.hardware, len(listed))
                        if primary
                        else None
                    ),
                )
            )
        for change in watched.improvements:
            improvements.append(
                Improvement(
                    bucket=series.bucket.id,
                    hardware=series.hardware,
                    metric=series.metric,
                    unit=series.unit,
                    change=change,
                    good=commits[change.last_good],
                    bad=commits[change.first_bad],
                )
            )
    return Survey(
        target_branch=history.target_branch,
        tip=history.target_tip,
        findings=tuple(findings),
        improvements=tuple(improvements),
        series=count,
        notes=history.notes,
        accepted=tuple(accepted),
    )
