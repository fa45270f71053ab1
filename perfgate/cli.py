"""``python -m perfgate VERB``: the one place that parses arguments and turns errors into exits."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from perfgate import __version__
from perfgate.config import DEFAULT_CONFIG, Bucket, Config, load_config
from perfgate.errors import ExitCode, PerfgateError, UsageError

DEFAULT_RESULTS = Path(".perfgate/results")
DEFAULT_WORK = Path(".perfgate/work")

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 4 as R8 says, not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=DEFAULT_CONFIG,
        help="the perfgate.yaml to read (default: %(default)s)",
    )


def bucket_json(bucket: Bucket) -> dict[str, object]:
    """The matrix entry other tools (templates, CI) consume for one bucket."""
    return {
        "id": bucket.id,
        "file_stem": bucket.file_stem,
        "task": bucket.task,
        "backend": bucket.backend_key,
        "physics": bucket.physics,
        "render": bucket.render,
        "driver": bucket.driver,
        "timeout_minutes": bucket.timeout_minutes,
        "runner": list(bucket.runner),
        "tags": list(bucket.tags),
        "paths": list(bucket.paths),
    }


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate perfgate.yaml and say how many buckets it expands to."""
    config = load_config(args.config)
    print(f"{config.path}: ok, {len(config.buckets)} buckets")
    return ExitCode.OK


def cmd_matrix(args: argparse.Namespace) -> int:
    """Print the expanded bucket matrix."""
    config = load_config(args.config)
    buckets = config.select(args.bucket, args.tag)
    if args.json:
        print(json.dumps([bucket_json(b) for b in buckets], indent=2))
        return ExitCode.OK
    from perfgate.console import render_table

    rows = [
        [b.id, b.driver, f"{b.timeout_minutes:g}m", ",".join(b.runner), ",".join(b.tags)]
        for b in buckets
    ]
    print(render_table(["bucket", "driver", "timeout", "runner", "tags"], rows))
    return ExitCode.OK


def cmd_bench(args: argparse.Namespace) -> int:
    """Run buckets and write one result artifact each."""
    from perfgate import context, hardware
    from perfgate.bench import BenchSettings, run_buckets
    from perfgate.console import Progress, bench_table

    config: Config = load_config(args.config)
    buckets = config.select(args.bucket, args.tag)
    settings = BenchSettings(
        checkout=Path.cwd(),
        work_root=args.work_dir,
        out_dir=args.out,
        hardware=hardware.detect(),
        context=context.detect(os.environ, default_target=config.gate.target_branches[0]),
    )
    print(
        f"perfgate: {len(buckets)} bucket(s) on {settings.hardware.slug}, "
        f"results in {settings.out_dir}",
        file=sys.stderr,
    )
    progress = Progress(len(buckets))
    results = run_buckets(buckets, settings, on_start=progress.start, on_done=progress.finish)
    print(bench_table(results))
    return ExitCode.OK


def _relative(path: Path) -> Path:
    # Generated headers name the paths; keep them relative so they do not depend on the machine.
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def cmd_render(args: argparse.Namespace) -> int:
    """Render workflows and composite actions, or (``--check``) diff them against the tree."""
    from perfgate import render

    config = load_config(_relative(args.config))
    out = _relative(args.out)
    site = render.site_for(config, out, self_ci=render.is_perfgate_checkout(out))
    files = render.render_site(site)
    if args.check:
        diffs = render.drift(files, out)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            print(
                f"perfgate: {len(diffs)} generated file(s) under {out} are stale; "
                f"run `{render.RENDER_TASK}` (or `{site.command}`) and commit the result",
                file=sys.stderr,
            )
            return render.STALE_EXIT
        print(f"perfgate: {len(files)} generated file(s) under {out} are up to date")
        return ExitCode.OK
    changed = render.write(files, out)
    for path in changed:
        print(f"wrote {path}")
    print(f"perfgate: {len(files)} file(s) rendered under {out}, {len(changed)} changed")
    return ExitCode.OK


def cmd_affected(args: argparse.Namespace) -> int:
    """Say which buckets a change touches; on GitHub also write ``run`` and ``buckets`` outputs."""
    from perfgate.selection import affected

    config = load_config(args.config)
    if args.all:
        selected = config.buckets
    else:
        try:
            changed = args.changed_files.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(
                f"{args.changed_files}: cannot read the changed-files list ({exc.strerror}); "
                "pass a file with one repository-relative path per line, or --all"
            ) from None
        selected = affected(config.buckets, changed)
    ids = [bucket.id for bucket in selected]
    for bucket_id in ids:
        print(bucket_id)
    print(f"perfgate: {len(ids)} of {len(config.buckets)} bucket(s) affected", file=sys.stderr)
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with Path(output).open("a", encoding="utf-8") as handle:
            handle.write(f"run={'true' if ids else 'false'}\n")
            handle.write(f"buckets={json.dumps(ids)}\n")
    return ExitCode.OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every verb."""
    parser = _Parser(
        prog="perfgate",
        description="Performance-regression gate: run benchmark buckets, judge them "
        "against a rolling baseline, report one verdict.",
    )
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    validate = verbs.add_parser("validate", help="check perfgate.yaml")
    _add_config(validate)
    validate.set_defaults(handler=cmd_validate)

    matrix = verbs.add_parser("matrix", help="print the expanded bucket matrix")
    _add_config(matrix)
    matrix.add_argument("--json", action="store_true", help="print JSON for other tools")
    matrix.add_argument("--bucket", action="append", default=[], metavar="ID")
    matrix.add_argument("--tag", action="append", default=[], metavar="TAG")
    matrix.set_defaults(handler=cmd_matrix)

    bench = verbs.add_parser("bench", help="run buckets and write their result artifacts")
    _add_config(bench)
    bench.add_argument(
        "--bucket", action="append", default=[], metavar="ID", help="run this bucket (repeatable)"
    )
    bench.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="run buckets with this tag"
    )
    bench.add_argument(
        "--out", type=Path, default=DEFAULT_RESULTS, help="result directory (default: %(default)s)"
    )
    bench.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK,
        help="logs, attempt outputs and caches (default: %(default)s)",
    )
    bench.set_defaults(handler=cmd_bench)

    render = verbs.add_parser(
        "render", help="render workflows and composite actions from templates/"
    )
    _add_config(render)
    render.add_argument(
        "--out",
        type=Path,
        default=Path(),
        help="repository root to render into (default: %(default)s)",
    )
    render.add_argument(
        "--check",
        action="store_true",
        help="re-render in memory, print a unified diff and exit 1 when anything is stale",
    )
    render.set_defaults(handler=cmd_render)

    affected = verbs.add_parser("affected", help="list the buckets a change touches")
    _add_config(affected)
    source = affected.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--changed-files", type=Path, metavar="FILE", help="file with one changed path per line"
    )
    source.add_argument("--all", action="store_true", help="select every bucket (forced run)")
    affected.set_defaults(handler=cmd_affected)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and map every PerfgateError to its exit code (DESIGN.md R8)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return int(handler(args))
    except PerfgateError as exc:
        print(f"perfgate: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("perfgate: interrupted", file=sys.stderr)
        return 130
