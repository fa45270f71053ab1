"""Arguments and helpers shared by several verbs: one definition, one help text each."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO, TypeAlias

from perfgate.config import DEFAULT_CONFIG, Bucket, Config, GatePolicy, Mode
from perfgate.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfgate.judge.gate import GateReport

# What ``add_subparsers`` returns: each verb module registers its parser on it.
Verbs: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

DEFAULT_RESULTS = Path(".perfgate/results")
DEFAULT_WORK = Path(".perfgate/work")
DEFAULT_REPORT = Path(".perfgate/report")

Handler = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 4 as R8 says, not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


# What each exit code means (docs/design.md R8), for the verbs' --help; a verb gives its
# own meaning where it differs. Only the verbs that judge (bench, gate) exit by a verdict.
EXIT_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.BLOCK: "a regression (BLOCK)",
    ExitCode.HARD_FAILURE: "a benchmark failed (HARD_FAILURE)",
    ExitCode.MALFUNCTION: "perfgate itself could not run (no artifacts, unreadable baseline, "
    "failed push)",
    ExitCode.USAGE: "bad perfgate.yaml or command line (the message names file, key and fix)",
}
# Exit 0 of a verb that judges: the verdict tells it in every gate.mode, and
# gate.always_pass is the opt-in to exit 0 whatever it is.
VERDICT_OK = "the verdict is PASS- or WARN-level (any verdict with gate.always_pass)"


def add_verb(
    verbs: Verbs,
    name: str,
    *,
    help: str,
    description: str | None,
    handler: Handler,
    examples: Sequence[str] = (),
    exits: Mapping[ExitCode, str] | None = None,
) -> argparse.ArgumentParser:
    """A verb's parser: ``help`` in the verb list; its --help has a description, examples
    and the exit codes it can return (each with its meaning for this verb)."""
    codes = {ExitCode.OK: EXIT_MEANINGS[ExitCode.OK], **(exits or {})}
    codes.setdefault(ExitCode.USAGE, EXIT_MEANINGS[ExitCode.USAGE])
    epilog = ["examples:", *(f"  {line}" for line in examples)] if examples else []
    epilog += ["", "exit codes:"] if epilog else ["exit codes:"]
    epilog += [f"  {int(code)}  {codes[code]}" for code in sorted(codes)]
    parser = verbs.add_parser(
        name,
        help=help,
        description=(description or "").strip() or None,
        epilog="\n".join(epilog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def add_config(parser: argparse.ArgumentParser) -> None:
    """--config PATH (default ./perfgate.yaml)."""
    parser.add_argument(
        "--config",
        type=Path,
        default=DEFAULT_CONFIG,
        help="the perfgate.yaml to read (default: %(default)s)",
    )


def add_selection(parser: argparse.ArgumentParser, what: str) -> None:
    """--bucket, --tag and --backend, all repeatable: ids and tags select (their union),
    backend keys narrow; an unknown id, tag or key is an error, never ignored."""
    parser.add_argument(
        "--bucket",
        action="append",
        default=[],
        metavar="ID",
        help=f"{what} this bucket (repeatable)",
    )
    parser.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help=f"{what} buckets with this tag"
    )
    parser.add_argument(
        "--backend",
        action="append",
        default=[],
        metavar="KEY",
        help="only buckets of this backend key (repeatable; narrows --bucket and --tag)",
    )


def selected(config: Config, args: argparse.Namespace) -> tuple[Bucket, ...]:
    """The buckets ``add_selection``'s flags choose from ``config``."""
    return config.select(args.bucket, args.tag, args.backend)


def add_report_dir(parser: argparse.ArgumentParser) -> None:
    """--report-dir DIR for summary.md, verdict.json and junit.xml."""
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_REPORT,
        help="where summary.md, verdict.json and junit.xml go (default: %(default)s)",
    )


def add_baseline_source(
    parser: argparse.ArgumentParser,
    *,
    remote_flag: str = "--remote",
    remote_help: str = "use the baseline branch on the configured remote "
    "(gate.baseline.remote); the default in CI",
) -> None:
    """Which baseline branch a verb reads (and writes): the local one unless CI or asked.

    Outside CI a laptop's run must never touch the shared remote by surprise; in CI
    (GITHUB_ACTIONS) the configured remote is the only baseline there is.
    """
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        remote_flag,
        dest="remote",
        action="store_true",
        help=remote_help,
    )
    source.add_argument(
        "--local-baseline",
        action="store_true",
        help="use the local baseline branch only, no fetch and no push; the default outside CI",
    )


def baseline_is_local(args: argparse.Namespace) -> bool:
    """True when the verb should use the local baseline branch (see add_baseline_source)."""
    from perfgate.util.console import on_github

    if args.remote:
        return False
    return bool(args.local_baseline) or not on_github()


def add_json(parser: argparse.ArgumentParser, document: str) -> None:
    """--json: one JSON document on stdout for other tools; the human side moves to stderr."""
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print {document} as one JSON document on stdout (tables and notes go to stderr)",
    )


def human(args: argparse.Namespace) -> TextIO:
    """Where tables and notes go: stdout, or stderr when stdout carries --json."""
    return sys.stderr if getattr(args, "json", False) else sys.stdout


def print_json(document: object) -> None:
    """The --json document: strict JSON (never NaN), one object, on stdout."""
    print(json.dumps(document, indent=2, allow_nan=False))


def closing_lines(report: GateReport, *, local_bench: bool, gate: GatePolicy) -> list[str]:
    """What a person needs to read last: why the exit code is what it is, what to do next."""
    from perfgate.judge.gate import awaits_baseline

    lines = []
    waiting = [row.bucket for row in report.rows if awaits_baseline(row)]
    if waiting and local_bench:
        runs = max(gate.runs_to_fill(bucket.repeats) for bucket in waiting)
        lines.append(
            f"no baseline yet for {len(waiting)} bucket(s) on this machine: record one with "
            f"`nox -s bench -- --record` ({runs} recorded runs fill a window: "
            f"{gate.window_needs})"
        )
    lines += exit_lines(report)
    return lines


def exit_lines(report: GateReport) -> list[str]:
    """Why the exit code is what it is (R8), and what gate.mode does and does not change."""
    from perfgate.judge.verdicts import Verdict

    level = report.overall.level
    if level is Verdict.PASS:
        return [
            f"exit 0: the verdict is {report.overall.label}: every bucket reported and none "
            "regressed"
        ]
    if report.always_pass:
        return [
            f"exit 0 although the verdict is {report.overall.label}: gate.always_pass is set in "
            "perfgate.yaml (without it BLOCK exits 1 and HARD_FAILURE 2)"
        ]
    if level is Verdict.WARN:
        return [
            f"exit 0: the verdict is {report.overall.label}, which never fails the run (only "
            "BLOCK and HARD_FAILURE do)"
        ]
    what = (
        "a confirmed regression"
        if level is Verdict.BLOCK
        else "a benchmark failed or did not report"
    )
    lines = [f"exit {report.exit_code}: {report.overall.label}, {what}"]
    if report.mode is Mode.ADVISORY:
        lines.append(
            "gate.mode is advisory: in CI this check fails too, but it stops no merge until "
            'branch protection requires it (docs/ci.md "Rolling out the gate")'
        )
    return lines


def repo_top() -> Path:
    """The top of the current git checkout; outside one, a usage error."""
    from perfgate.util.git import try_git

    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        raise UsageError("run this inside the repository's git checkout")
    return Path(top)
