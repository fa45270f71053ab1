"""Arguments and helpers shared by several verbs: one definition, one help text each."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeAlias

from perfgate.config import DEFAULT_CONFIG
from perfgate.errors import ExitCode, UsageError

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


def add_verb(
    verbs: Verbs, name: str, *, help: str, description: str | None, handler: Handler
) -> argparse.ArgumentParser:
    """A verb's parser: ``help`` for the verb list, the verb module's docstring for its --help."""
    parser = verbs.add_parser(
        name,
        help=help,
        description=(description or "").strip() or None,
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
    """--bucket and --tag, both repeatable; an unknown id or tag is an error, never ignored."""
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
    from perfgate.console import on_github

    if args.remote:
        return False
    return bool(args.local_baseline) or not on_github()


def repo_top() -> Path:
    """The top of the current git checkout; outside one, a usage error."""
    from perfgate.git import try_git

    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        raise UsageError("run this inside the repository's git checkout")
    return Path(top)
