"""The verdict-quality benchmark (``nox -s quality``): streaming, both policies side by side.

Every point of a synthetic series is judged against the runs before it, as the gate sees
its ancestors (window = the last 20 runs, every sample each recorded). A run takes its
samples the way the bench would: the calibrated policy starts with ``initial_repeats``
and re-measures on suspicion up to ``max_repeats``; the reference policy takes one figure,
as the seed did. Every sample a run took is recorded in the history (pushes publish them).

Suites: noise model x CV. In a quarter of the series nothing changes; in the others the
level drops once by 3, 5 or 10 % at a random point and stays there (a merged regression
persists). Figures per suite and policy:

* detection  -- drops flagged BLOCK at the change point or one of the next two points;
* false alarm -- BLOCKs per unchanged bucket-run (before any change);
* precision  -- detections / all BLOCKs;
* collateral -- BLOCKs after a change other than the one that detected it, per drop
  (innocent commits blamed for a regression that already landed);
* samples    -- mean samples per bucket-run;
* PR false-BLOCK -- 1 - (1 - false alarm)^9, a nine-bucket matrix;
* min/run, min/PR -- runner minutes of a bucket run (``S + L x samples``) and of a
  nine-bucket pull request, at the cost model's setup S and launch L (``targets.Options``).

Then the suites ``targets.SUITES`` lists (runner economics: ``economics.py``). Every
target of every suite is printed, each marked met or missed; ``--json`` writes every
figure and the ``targets`` list (``{name, value, target, met}``) to
``.perfgate/quality/quality.json``. The run exits 1 when a target is missed.

A run judges its samples the way the gate does once the bench stopped: the calibrated
rule's ``final`` verdict on every sample it took, against the window's runs.

Run: ``nox -s quality`` (``--quick``: 60 series per suite, a few minutes on 2 cores) or
``python tests/perf/verdict_quality.py`` (the full run, 640 series and two extra suites).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgate.config import AlertsSpec, load_config  # noqa: E402
from perfgate.judge.calibrated import calibrated_decide  # noqa: E402
from perfgate.judge.policies import CalibratedPolicy, Calibration, ReferencePolicy  # noqa: E402
from perfgate.judge.reference import reference_decide  # noqa: E402
from perfgate.judge.verdicts import Verdict  # noqa: E402
from perfgate.judge.window import analyse_window  # noqa: E402
from tests.perf import economics, runner_offsets  # noqa: E402
from tests.perf.targets import (  # noqa: E402
    SUITES,
    Options,
    SuiteReport,
    Target,
    at_least,
    at_most,
    upper95,
)

QUALITY_JSON = ROOT / ".perfgate" / "quality" / "quality.json"

NOISES = ("gauss", "t3", "bimodal", "drift")  # the suites
EXTRA = ("bimodal55", "drift+cal")  # the demo's gap; drift with an A/A calibration (full run)
CVS = (0.01, 0.02, 0.05)
DROPS = (0.03, 0.05, 0.10)  # every series drops once; points before the drop are unchanged
BIMODAL_SHARE = 0.30  # share of samples in the second mode
BIMODAL_GAP = 0.20  # the second mode is 20 % lower
DEMO_GAP = 0.55  # "bimodal55": the demo's pendulum/numpy gap (39 M vs 18 M)
DRIFT_PHI = 0.95  # AR(1) per run: correlation time ~20 runs
DRIFT_SD = 0.75  # stationary sd of the drifting level, in CVs
BURN_IN = 20  # runs recorded before the first judged point
POINTS = 60  # judged points per series
CHANGE_RANGE = (20, POINTS - 15)  # where the drop lands (judged-point index)
MAX_POOL = 16  # samples drawn per point (>= max_repeats)


@dataclass(frozen=True, kw_only=True)
class Suite:
    """One noise model at one CV."""

    noise: str
    cv: float

    @property
    def name(self) -> str:
        """'gauss 2%'."""
        return f"{self.noise} {self.cv * 100:g}%"


@dataclass(kw_only=True)
class Tally:
    """Counts for one policy on one suite."""

    unchanged: int = 0
    false_alarms: int = 0
    drops: dict[float, int] = field(default_factory=dict)
    detected: dict[float, int] = field(default_factory=dict)
    collateral: int = 0
    post_points: int = 0
    blocks: int = 0
    points: int = 0
    samples: int = 0
    inconclusive: int = 0
    warns: int = 0
    unchanged_pass: int = 0
    flagged: dict[float, int] = field(default_factory=dict)  # BLOCK or INCONCLUSIVE in time

    def add(self, other: Tally) -> None:
        """Accumulate another tally."""
        for name in ("unchanged", "false_alarms", "collateral", "post_points", "blocks",
                     "points", "samples", "inconclusive", "warns", "unchanged_pass"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for d, v in other.drops.items():
            self.drops[d] = self.drops.get(d, 0) + v
        for d, v in other.detected.items():
            self.detected[d] = self.detected.get(d, 0) + v
        for d, v in other.flagged.items():
            self.flagged[d] = self.flagged.get(d, 0) + v

    @property
    def fa(self) -> float:
        """False alarms per unchanged bucket-run."""
        return self.false_alarms / max(self.unchanged, 1)

    @property
    def pr_fa(self) -> float:
        """False BLOCK on a nine-bucket pull request."""
        return 1.0 - (1.0 - self.fa) ** 9

    def detection(self, drop: float) -> float:
        """Share of drops of this size flagged within two points."""
        return self.detected.get(drop, 0) / max(self.drops.get(drop, 0), 1)

    def flag_rate(self, drops: tuple[float, ...]) -> float:
        """Share of these drops flagged BLOCK or INCONCLUSIVE within two points."""
        return sum(self.flagged.get(d, 0) for d in drops) / max(
            sum(self.drops.get(d, 0) for d in drops), 1
        )

    @property
    def precision(self) -> float:
        """Detections / all BLOCKs."""
        return sum(self.detected.values()) / self.blocks if self.blocks else float("nan")

    @property
    def collateral_per_drop(self) -> float:
        """Innocent BLOCKs after a landed drop, per drop."""
        return self.collateral / max(sum(self.drops.values()), 1)


def _series_noise(
    suite: Suite, rng: np.random.Generator, n_runs: int
) -> tuple[np.ndarray, np.ndarray]:
    """(per-run log level offset, per-sample log noise [n_runs, MAX_POOL])."""
    shape = (n_runs, MAX_POOL)
    cv = suite.cv
    level = np.zeros(n_runs)
    if suite.noise == "gauss":
        eps = cv * rng.standard_normal(shape)
    elif suite.noise == "t3":
        eps = cv * rng.standard_t(3, shape) / math.sqrt(3.0)  # unit variance: CV is the SD
    elif suite.noise in ("bimodal", "bimodal55"):
        gap = BIMODAL_GAP if suite.noise == "bimodal" else DEMO_GAP
        second = rng.random(shape) < BIMODAL_SHARE
        eps = cv * rng.standard_normal(shape) + np.where(second, math.log1p(-gap), 0.0)
    elif suite.noise in ("drift", "drift+cal"):
        eps = cv * rng.standard_normal(shape)
        innov = DRIFT_SD * cv * math.sqrt(1 - DRIFT_PHI**2) * rng.standard_normal(n_runs)
        x = DRIFT_SD * cv * rng.standard_normal()
        for i in range(n_runs):
            x = DRIFT_PHI * x + innov[i]
            level[i] = x
    else:
        raise ValueError(suite.noise)
    return level, eps


def drift_run_noise() -> float:
    """Error of a 20-run mean as a predictor of the next AR(1) level, in CVs.

    What an A/A calibration measures as the noise shared by one run's samples.
    """
    phi, k = DRIFT_PHI, 20
    lag = sum(phi**i for i in range(1, k + 1)) / k
    within = sum(phi ** abs(i - j) for i in range(k) for j in range(k)) / k**2
    return DRIFT_SD * math.sqrt(1.0 + within - 2.0 * lag)


def _calibration(suite: Suite) -> Calibration | None:
    if suite.noise != "drift+cal":
        return None
    return Calibration(
        noise_pct=suite.cv * 100, df=200, run_noise_pct=drift_run_noise() * suite.cv * 100
    )


def _run_series(
    suite: Suite, seed: int, drop: float, policies: dict[str, object]
) -> dict[str, Tally]:
    """Stream one series through every policy (same level path and change point)."""
    rng = np.random.default_rng(seed)
    n_runs = BURN_IN + POINTS
    level, eps = _series_noise(suite, rng, n_runs)
    change = int(rng.integers(*CHANGE_RANGE)) if drop > 0 else POINTS + 1
    values = 100.0 * np.exp(eps + level[:, None])  # [run, sample]
    step = np.array([math.log1p(-drop) if (i - BURN_IN) >= change else 0.0 for i in range(n_runs)])
    values = values * np.exp(step)[:, None]
    rows = values.tolist()
    out: dict[str, Tally] = {}
    calibration = _calibration(suite)
    for name, policy in policies.items():
        tally = Tally()
        if drop > 0:
            tally.drops[drop] = 1
            tally.detected[drop] = 0
            tally.flagged[drop] = 0
        history: list[list[float]] = []  # oldest first
        for i in range(n_runs):
            pool = rows[i]
            judged = i >= BURN_IN
            if isinstance(policy, ReferencePolicy):
                samples = pool[:1]
                verdict = (
                    reference_decide(history[::-1][:20], samples, policy=policy).verdict
                    if judged
                    else Verdict.PASS
                )
            else:
                assert isinstance(policy, CalibratedPolicy)
                if not judged:
                    samples = pool[: policy.initial_repeats]
                    verdict = Verdict.PASS
                else:
                    model = analyse_window(
                        history[::-1][: policy.max_runs], policy=policy, calibration=calibration
                    )
                    m = policy.initial_repeats
                    while calibrated_decide(model, pool[:m], policy=policy).need_more:
                        m += 1
                    samples = pool[:m]
                    # What the gate decides on the recorded samples (perfgate's oracle).
                    verdict = calibrated_decide(model, samples, policy=policy, final=True).verdict
            history.append(samples)
            if not judged:
                continue
            point = i - BURN_IN
            tally.points += 1
            tally.samples += len(samples)
            block = verdict is Verdict.BLOCK
            tally.blocks += block
            tally.inconclusive += verdict is Verdict.INCONCLUSIVE
            tally.warns += verdict is Verdict.WARN
            if point < change:
                tally.unchanged += 1
                tally.false_alarms += block
                tally.unchanged_pass += verdict in (Verdict.PASS, Verdict.IMPROVED)
            else:
                tally.post_points += 1
                if point <= change + 2 and verdict in (Verdict.BLOCK, Verdict.INCONCLUSIVE):
                    tally.flagged[drop] = 1
                if block and point <= change + 2 and tally.detected[drop] == 0:
                    tally.detected[drop] = 1
                elif block:
                    tally.collateral += 1
        out[name] = tally
    return out


def _work(args: tuple[Suite, int, int, int, tuple[tuple[str, float], ...]]) -> dict[str, Tally]:
    suite, first_seed, count, salt, overrides = args
    policies = {"calibrated": _policy(overrides), "reference": ReferencePolicy()}
    total = {name: Tally() for name in policies}
    for s in range(first_seed, first_seed + count):
        drop = DROPS[s % len(DROPS)]
        for name, tally in _run_series(suite, salt * 1_000_003 + s, drop, policies).items():
            total[name].add(tally)
    return total


def _policy(overrides: tuple[tuple[str, float], ...]) -> CalibratedPolicy:
    """The calibrated policy with --set overrides (for sensitivity runs)."""
    fields = {f.name: f.type for f in dataclasses.fields(CalibratedPolicy)}
    kwargs = {k: (int(v) if fields[k] == "int" else v) for k, v in overrides}
    policy = CalibratedPolicy(**kwargs)  # type: ignore[arg-type]
    if policy.max_repeats > MAX_POOL:
        raise SystemExit(f"max_repeats {policy.max_repeats} > {MAX_POOL} samples drawn per point")
    return policy


def _chunks(
    suites: list[Suite], series: int, chunk: int, overrides: tuple[tuple[str, float], ...]
) -> Iterator[tuple[Suite, int, int, int, tuple[tuple[str, float], ...]]]:
    for suite in suites:
        salt = zlib.crc32(suite.name.encode())  # paired seeds whatever suites are selected
        for start in range(0, series, chunk):
            yield suite, start, min(chunk, series - start), salt, overrides


def _pct(x: float, digits: int = 2) -> str:
    return f"{x * 100:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    if b == 0:
        return "  -  " if a == 0 else " inf "
    return f"{a / b:5.2f}"


RUNNER_CVS = (0.01, 0.02)  # sample noise of the runner-offset suites


def _runner_work(args: tuple[float, int, int]) -> dict[str, runner_offsets.Outcome]:
    cv, first_seed, count = args
    total = {mode: runner_offsets.Outcome() for mode in runner_offsets.MODES}
    for s in range(first_seed, first_seed + count):
        drop = DROPS[s % len(DROPS)]
        result = runner_offsets.run_series(
            cv, 7_000_003 + s, drop, burn_in=BURN_IN, points=POINTS, change_range=CHANGE_RANGE
        )
        for mode, outcome in result.items():
            total[mode].add(outcome)
    return total


def _runner_suites(
    series: int, jobs: int
) -> tuple[dict[str, dict[str, runner_offsets.Outcome]], float]:
    """The runner-offset suites (one per CV), every mode; and the seconds they took."""
    started = time.perf_counter()
    chunk = max(5, series // 8)
    tasks = [(cv, start, min(chunk, series - start)) for cv in RUNNER_CVS
             for start in range(0, series, chunk)]  # fmt: skip
    results: dict[str, dict[str, runner_offsets.Outcome]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for (cv, _, _), outcome in zip(tasks, pool.map(_runner_work, tasks), strict=True):
            name = f"runners±5% {cv * 100:g}%"
            total = results.setdefault(
                name, {mode: runner_offsets.Outcome() for mode in runner_offsets.MODES}
            )
            for mode, part in outcome.items():
                total[mode].add(part)
    return results, time.perf_counter() - started


def _print_runners(
    results: dict[str, dict[str, runner_offsets.Outcome]],
    series: int,
    elapsed: float,
    options: Options,
) -> list[Target]:
    """The runner-offset table; the paired targets, each with its measured figure."""
    print()
    print(
        f"runner offsets: {series} series/suite x {POINTS} points; pools of "
        f"{runner_offsets.RUNNERS} runners with fixed offsets in +-5 %, each run on one of "
        f"them; {runner_offsets.THROTTLE_P:.0%} of samples throttled 15-35 % slow (admission "
        f"re-measures up to {runner_offsets.REMEASURE} per run); {elapsed:.0f} s"
    )
    head = (
        f"{'suite':<18}{'mode':<14}{'det3%':>6}{'det5%':>7}{'det10%':>7}{'FA%':>7}{'FA95%':>7}"
        f"{'PR-FA%':>7}{'coll/drop':>10}{'samp':>6}{'min/run':>8}{'min/PR':>7}{'paired%':>8}"
        f"{'INC%':>6}{'unchanged':>10}"
    )
    print(head)
    print("-" * len(head))
    for suite, by_mode in results.items():
        for mode, t in by_mode.items():
            drops = max(sum(t.drops.values()), 1)
            samples = t.samples / max(t.points, 1)
            print(
                f"{suite:<18}{mode:<14}{_pct(t.detection(0.03), 1):>6}"
                f"{_pct(t.detection(0.05), 1):>7}{_pct(t.detection(0.10), 1):>7}"
                f"{_pct(t.fa, 3):>7}{_pct(upper95(t.false_alarms, t.unchanged), 3):>7}"
                f"{_pct(1 - (1 - t.fa) ** 9, 2):>7}{t.collateral / drops:10.3f}"
                f"{samples:6.2f}{options.run_minutes(samples):8.1f}"
                f"{9 * options.run_minutes(samples):7.0f}"
                f"{_pct(t.paired_runs / max(t.points, 1), 1):>8}"
                f"{_pct(t.inconclusive / max(t.points, 1), 1):>6}{t.unchanged:>10}"
            )
    checks = []
    for suite, by_mode in results.items():
        paired = by_mode["paired"]
        bound = upper95(paired.false_alarms, paired.unchanged)
        checks += [
            at_most(f"{suite}: paired false BLOCK <= 0.1 % per bucket-run", paired.fa * 100,
                    0.1, "%", f"{_pct(paired.fa, 3)} % (95 % bound {_pct(bound, 3)} %)"),
            at_least(f"{suite}: paired detects >= 95 % of 5 % drops",
                     paired.detection(0.05) * 100, 95.0, "%",
                     f"{_pct(paired.detection(0.05), 1)} %"),
        ]  # fmt: skip
    return checks


def main(argv: list[str] | None = None) -> int:
    """Run the suites, print their tables and every target; 1 when a target is missed."""
    example = load_config(economics.EXAMPLE_CONFIG)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="60 series per suite (a few minutes on 2 cores)",
    )
    parser.add_argument("--series", type=int, help="series per suite (default 640, quick 60)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--suite", action="append", help="only core suites whose name starts so")
    parser.add_argument(
        "--no-runners", action="store_true", help="skip the runner-offset suites (paired A/B)"
    )
    parser.add_argument(
        "--only-core",
        action="store_true",
        help="skip the suites targets.SUITES lists (runner economics, post-merge alerts)",
    )
    parser.add_argument(
        "--setup-minutes",
        type=float,
        default=economics.setup_minutes(example),
        metavar="S",
        help="cost model: a bucket job's setup, runner minutes (default %(default).1f: the "
        "Isaac Lab example's, so one launch per bucket costs the upstream's 145 a PR)",
    )
    parser.add_argument(
        "--launch-minutes",
        type=float,
        default=economics.launch_minutes(example),
        metavar="L",
        help="cost model: one launch (a sample), runner minutes (default %(default).1f: the "
        "mean of the Isaac Lab example's launch_minutes)",
    )
    parser.add_argument(
        "--stored-samples",
        type=int,
        default=AlertsSpec().push_repeats,
        metavar="N",
        help="runner economics: the window's stored runs hold at least N samples, as pushes "
        "store them with alerts.push_repeats: N (default %(default)s, perfgate's; 1: as each "
        "run took them); the pull request still takes its repeats",
    )
    parser.add_argument(
        "--seed-offset",
        type=int,
        default=0,
        metavar="N",
        help="runner economics and post-merge alerts: draw another set of series (the same "
        "mix of pools and drops), to confirm on a held-out set a choice made on the default",
    )
    parser.add_argument(
        "--spend",
        type=Path,
        metavar="FILE",
        help="the whole bill: a job's setup and each bucket's launch time as `perfgate spend "
        "--json` measured them on a baseline branch (default: as the example declares them)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"write every figure and the targets to {QUALITY_JSON.relative_to(ROOT)}",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a CalibratedPolicy field (sensitivity runs)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.stored_samples <= 100:
        parser.error(f"--stored-samples {args.stored_samples}: must be in 1 ... 100")
    if not 0 <= args.seed_offset < 1_000_000:
        parser.error(f"--seed-offset {args.seed_offset}: must be in 0 ... 999,999")
    series = args.series or (60 if args.quick else 640)
    options = Options(
        series=series,
        quick=args.quick,
        jobs=args.jobs,
        setup_minutes=args.setup_minutes,
        launch_minutes=args.launch_minutes,
        stored_samples=args.stored_samples,
        seed_offset=args.seed_offset,
        spend=str(args.spend) if args.spend else None,
    )
    noises = NOISES if args.quick else NOISES + EXTRA
    suites = [Suite(noise=n, cv=c) for n in noises for c in CVS]
    if args.suite:
        suites = [s for s in suites if any(s.name.startswith(p) for p in args.suite)]
    started = time.perf_counter()
    results: dict[str, dict[str, Tally]] = {
        s.name: {"calibrated": Tally(), "reference": Tally()} for s in suites
    }
    overrides = tuple((k, float(v)) for k, v in (item.split("=", 1) for item in args.set))
    tasks = list(_chunks(suites, series, max(10, series // 8), overrides))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for task, result in zip(tasks, pool.map(_work, tasks), strict=True):
            for name, tally in result.items():
                results[task[0].name][name].add(tally)
    elapsed = time.perf_counter() - started
    wanted = not args.suite or any(p.startswith("runners") for p in args.suite)
    runners = _runner_suites(series, args.jobs) if wanted and not args.no_runners else None
    core = _print(results, series, elapsed, _policy(overrides), options, runners)
    reports = [core]
    if not args.only_core:
        reports += [importlib.import_module(name).quality(options) for name in SUITES]
    targets = [t for report in reports for t in report.targets]
    _print_targets(targets, options.quick)
    if args.json:
        _write_json(options, reports, targets, time.perf_counter() - started)
    return 1 if any(t.fails(options.quick) for t in targets) else 0


def _write_json(
    options: Options, reports: list[SuiteReport], targets: list[Target], elapsed: float
) -> None:
    """Every figure and target, as ``--json`` promises (non-finite figures as null)."""
    document = {
        "run": {**dataclasses.asdict(options), "seconds": round(elapsed, 1)},
        "suites": {report.name: report.figures for report in reports},
        "targets": [t.to_json() for t in targets],
    }
    QUALITY_JSON.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(document), indent=2, allow_nan=False)
    QUALITY_JSON.write_text(text + "\n", encoding="utf-8")
    print(f"figures and targets written to {QUALITY_JSON}")


def _finite(value: object) -> object:
    """NaN and infinities (a rate over no runs) as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _print_targets(targets: list[Target], quick: bool) -> None:
    print()
    print("targets:")
    width = max((len(t.name) for t in targets), default=0)
    for t in targets:
        print(f"  [{t.status(quick):>9}] {t.name:<{width}}  {t.detail}")
    if quick and any(t.status(quick) == "undecided" for t in targets):
        print(
            "  undecided: a quick run's rate whose 95 % interval holds its bound; too few "
            "trials to judge it, so it does not fail the run (the full run judges it)"
        )


def _print(
    results: dict[str, dict[str, Tally]],
    series: int,
    elapsed: float,
    p: CalibratedPolicy,
    options: Options,
    runners: tuple[dict[str, dict[str, runner_offsets.Outcome]], float] | None = None,
) -> SuiteReport:
    """The core tables; their figures and targets."""
    print(
        f"verdict quality: {series} series/suite x {POINTS} points after {BURN_IN} recorded runs; "
        f"window {p.max_runs} runs; calibrated = false_block_rate {p.false_block_rate:g}, "
        f"{p.initial_repeats}..{p.max_repeats} samples; reference = the seed's rule, 1 sample; "
        f"cost S = {options.setup_minutes:.1f} min + L = {options.launch_minutes:.1f} min a "
        f"sample; {elapsed:.0f} s"
    )
    head = (
        f"{'suite':<15}{'policy':<7}{'det3%':>6}{'det5%':>7}{'det10%':>7}{'flag5+':>7}{'FA%':>7}"
        f"{'FA95%':>7}{'PR-FA%':>7}{'prec':>6}{'coll/drop':>10}{'samp':>6}{'min/run':>8}"
        f"{'min/PR':>7}{'INC%':>6}{'AA-PASS%':>9}{'unchanged':>10}"
    )
    print(head)
    print("-" * len(head))
    for suite, by_policy in results.items():
        for name in ("calibrated", "reference"):
            t = by_policy[name]
            samples = t.samples / max(t.points, 1)
            cells = [
                f"{suite:<15}{name[:3]:<7}",
                f"{_pct(t.detection(0.03), 1):>6}{_pct(t.detection(0.05), 1):>7}",
                f"{_pct(t.detection(0.10), 1):>7}{_pct(t.flag_rate((0.05, 0.10)), 1):>7}",
                f"{_pct(t.fa, 3):>7}{_pct(upper95(t.false_alarms, t.unchanged), 3):>7}",
                f"{_pct(t.pr_fa, 2):>7}{t.precision:6.3f}{t.collateral_per_drop:10.3f}",
                f"{samples:6.2f}{options.run_minutes(samples):8.1f}",
                f"{9 * options.run_minutes(samples):7.0f}",
                f"{_pct(t.inconclusive / max(t.points, 1), 1):>6}",
                f"{_pct(t.unchanged_pass / max(t.unchanged, 1), 1):>9}{t.unchanged:>10}",
            ]
            print("".join(cells))
        new, ref = by_policy["calibrated"], by_policy["reference"]
        cells = [
            f"{'':<15}{'new/ref':<7}{_ratio(new.detection(0.03), ref.detection(0.03)):>6}",
            f"{_ratio(new.detection(0.05), ref.detection(0.05)):>7}",
            f"{_ratio(new.detection(0.10), ref.detection(0.10)):>7}{'':>7}",
            f"{_ratio(new.fa, ref.fa):>7}{'':>7}{_ratio(new.pr_fa, ref.pr_fa):>7}{'':>6}",
            f"{_ratio(new.collateral_per_drop, ref.collateral_per_drop):>10}",
        ]
        print("".join(cells))
    print()
    if series < 300 and results:
        print("(quick run: about 2k unchanged bucket-runs per suite, so false-alarm rates are")
        print(" good to about +-0.1 %; the full run's 20k per suite is what the targets need)")
    extra = _print_runners(runners[0], series, runners[1], options) if runners else []
    figures = {
        suite: {name: _tally_figures(t, options) for name, t in by_policy.items()}
        for suite, by_policy in results.items()
    }
    if runners:
        figures.update(
            {
                suite: {mode: _outcome_figures(t, options) for mode, t in by_mode.items()}
                for suite, by_mode in runners[0].items()
            }
        )
    return SuiteReport(name="verdicts", figures=figures,
                       targets=(*_targets(results), *extra))  # fmt: skip


def _tally_figures(t: Tally, options: Options) -> dict[str, float]:
    samples = t.samples / max(t.points, 1)
    return {
        "detected_3pct": t.detection(0.03),
        "detected_5pct": t.detection(0.05),
        "detected_10pct": t.detection(0.10),
        "false_block_rate": t.fa,
        "false_block_upper95": upper95(t.false_alarms, t.unchanged),
        "pr_false_block_rate": t.pr_fa,
        "collateral_per_drop": t.collateral_per_drop,
        "samples_per_run": samples,
        "minutes_per_run": options.run_minutes(samples),
        "minutes_per_pr": 9 * options.run_minutes(samples),
        "inconclusive_rate": t.inconclusive / max(t.points, 1),
        "unchanged_runs": t.unchanged,
    }


def _outcome_figures(t: runner_offsets.Outcome, options: Options) -> dict[str, float]:
    samples = t.samples / max(t.points, 1)
    return {
        "detected_5pct": t.detection(0.05),
        "detected_10pct": t.detection(0.10),
        "false_block_rate": t.fa,
        "false_block_upper95": upper95(t.false_alarms, t.unchanged),
        "samples_per_run": samples,
        "minutes_per_run": options.run_minutes(samples),
        "minutes_per_pr": 9 * options.run_minutes(samples),
        "paired_rate": t.paired_runs / max(t.points, 1),
        "inconclusive_rate": t.inconclusive / max(t.points, 1),
        "unchanged_runs": t.unchanged,
    }


def _targets(results: dict[str, dict[str, Tally]]) -> list[Target]:
    """The verdict rule's targets (issue 11)."""
    checks: list[Target] = []
    gauss = results.get("gauss 2%")
    if gauss is not None:
        t = gauss["calibrated"]
        mean = t.samples / max(t.points, 1)
        checks += [
            at_most("gauss 2%: false alarms <= 0.1 % per bucket-run", t.fa * 100, 0.1, "%",
                    f"{_pct(t.fa, 3)} %"),
            at_least("gauss 2%: >= 95 % of 5 % drops detected", t.detection(0.05) * 100, 95.0,
                     "%", f"{_pct(t.detection(0.05), 1)} %"),
            at_most("gauss 2%: <= 3 samples per bucket-run", mean, 3.0, "samples",
                    f"{mean:.2f}"),
        ]  # fmt: skip
    heavy = {n: r["calibrated"].fa for n, r in results.items() if n.startswith(("bimodal", "t3"))}
    if heavy:
        worst = max(heavy, key=lambda n: heavy[n])
        checks.append(
            at_most("bimodal and t3: false alarms <= 0.5 %", heavy[worst] * 100, 0.5, "%",
                    f"worst {worst}: {_pct(heavy[worst], 3)} %")
        )  # fmt: skip
    if results:
        pr = {n: r["calibrated"].pr_fa for n, r in results.items()}
        missed = [f"{n} {_pct(v, 2)} %" for n, v in pr.items() if v > 0.01]
        worst = max(pr, key=lambda n: pr[n])
        checks.append(
            at_most("PR false-BLOCK (9 buckets) <= 1 %, every suite", pr[worst] * 100, 1.0, "%",
                    "; ".join(missed) if missed else f"worst {worst}: {_pct(pr[worst], 2)} %")
        )  # fmt: skip
        ratio = {
            n: r["calibrated"].collateral_per_drop / max(r["reference"].collateral_per_drop, 1e-12)
            for n, r in results.items()
        }
        missed = [f"{n} x{v:.2f}" for n, v in ratio.items() if v > 0.1]
        worst = max(ratio, key=lambda n: ratio[n])
        checks.append(
            at_most("collateral <= 1/10 of the reference's, every suite", ratio[worst], 0.1, "x",
                    "; ".join(missed) if missed else f"worst {worst}: x{ratio[worst]:.2f}")
        )  # fmt: skip
    return checks


if __name__ == "__main__":
    raise SystemExit(main())
