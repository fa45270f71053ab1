"""`python -m perfgate VERB`: assemble the verbs, dispatch, and turn errors into exits (R8).

Each verb module declares its own arguments beside the code that runs it; this module
only lists them, in the order `--help` shows, and owns the one place that catches.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from perfgate import __version__
from perfgate.cli.common import Handler, Parser
from perfgate.errors import ExitCode, PerfgateError, Terminated
from perfgate.util.redact import redact

# The verbs' modules, in the order of the verb list in ``perfgate --help``.
VERB_MODULES = tuple(
    importlib.import_module(f"perfgate.cli.{name}")
    for name in (
        "config",
        "bench",
        "gate",
        "compare",
        "post_report",
        "publish",
        "alert",
        "accept",
        "seed",
        "import_history",
        "bisect",
        "verify",
        "spend",
        "report",
        "reseed",
        "qualify",
        "image",
        "roll_era",
        "ci",
    )
)


def build_parser() -> Parser:
    """The argument parser with every verb."""
    parser = Parser(
        prog="perfgate",
        description="Performance-regression gate: run benchmark buckets, judge them "
        "against a rolling baseline, report one verdict.",
    )
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for module in VERB_MODULES:
        module.register(verbs)
    return parser


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGINT interrupts and SIGTERM/SIGHUP raise Terminated, whatever perfgate inherited.

    Without this a cancelled CI job (SIGTERM) would end perfgate on the spot and leave its
    benchmark, containers and temporary trees behind (R14). SIGINT is set too: Python keeps
    a SIGINT that its parent ignored (a background job of a non-interactive shell) ignored,
    and a runner that cancels by SIGINT to perfgate's pid alone would then never stop it.
    """

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    handlers = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: raise_terminated,
        signal.SIGHUP: raise_terminated,
    }
    previous = {}
    try:
        for signum, handler in handlers.items():
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread (an embedding caller): leave signals alone
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            if old is not None:
                signal.signal(signum, old)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and map every PerfgateError to its exit code (docs/design.md R8)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        with terminate_as_interrupt():
            return int(handler(args))
    except PerfgateError as exc:
        print(f"perfgate: error: {redact(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except Terminated as exc:
        print(f"perfgate: terminated by signal {exc.signum}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("perfgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`perfgate matrix --json | head`): nothing left to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception:
        # An unexpected crash is the gate malfunctioning (R8: exit 3), never a verdict:
        # Python's own exit 1 would read as BLOCK in blocking mode.
        traceback.print_exc()
        print("perfgate: internal error (exit 3): please report it with the trace above",
              file=sys.stderr)  # fmt: skip
        return int(ExitCode.MALFUNCTION)
