"""``python -m perfgate VERB``: the one place that parses arguments and turns errors into exits."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from perfgate import __version__
from perfgate.config import DEFAULT_CONFIG, Bucket, Config, load_config
from perfgate.errors import ExitCode, PerfgateError, UsageError

if TYPE_CHECKING:
    from perfgate.github import GitHubClient
    from perfgate.publishing import Published
    from perfgate.result import Result
    from perfgate.store import BaselineStore

DEFAULT_RESULTS = Path(".perfgate/results")
DEFAULT_WORK = Path(".perfgate/work")
DEFAULT_REPORT = Path(".perfgate/report")

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


def _add_selection(parser: argparse.ArgumentParser, what: str) -> None:
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


def _add_report_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_REPORT,
        help="where summary.md, verdict.json and junit.xml go (default: %(default)s)",
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
        "retries": bucket.retries,
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


def open_store(config: Config, *, local: bool) -> BaselineStore | None:
    """The baseline store of the current repository; None outside a git repository.

    ``local`` reads and writes the local branch only; otherwise the configured
    remote is used when this repository has it.
    """
    from perfgate.git import try_git
    from perfgate.store import BaselineStore

    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        return None
    baseline = config.gate.baseline
    remote = None if local else baseline.remote
    if remote is not None and try_git("remote", "get-url", remote, cwd=Path(top)) is None:
        remote = None
    return BaselineStore(
        Path(top), branch=baseline.branch, remote=remote, push_retries=baseline.push_retries
    )


def _publishable(results: Sequence[Result]) -> tuple[list[Result], list[str]]:
    """Healthy results with a positive figure, and why each other one is left out."""
    keep, skipped = [], []
    for result in results:
        value = result.metric.value
        if not result.health.healthy:
            skipped.append(f"{result.bucket.id}: unhealthy run, not a baseline")
        elif value is None or value <= 0:
            skipped.append(f"{result.bucket.id}: no positive figure, not a baseline")
        else:
            keep.append(result)
    return keep, skipped


def record_samples(
    store: BaselineStore, results: Sequence[Result], trusted_source: str, message: str
) -> int:
    """Append the publishable results to the store; print each refusal; return how many."""
    from perfgate.store import sample_from_result

    keep, refused = _publishable(results)
    for line in refused:
        print(f"perfgate: refused {line}", file=sys.stderr)
    if not keep:
        print("perfgate: nothing to record", file=sys.stderr)
        return len(refused)
    samples = [sample_from_result(r, trusted_source=trusted_source) for r in keep]
    outcome = store.append(samples, message)
    print(
        f"perfgate: recorded {outcome.added} sample(s) on {store.branch}"
        f"{f' ({outcome.already_present} already present)' if outcome.already_present else ''}"
        f"{f' at {outcome.commit[:12]}' if outcome.commit else ''}",
        file=sys.stderr,
    )
    return len(refused)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run buckets and write one result artifact each; locally also judge them."""
    from perfgate import context, hardware
    from perfgate.bench import BenchSettings, run_buckets
    from perfgate.console import Progress, bench_table, on_github

    config: Config = load_config(args.config)
    buckets = config.select(args.bucket, args.tag)
    settings = BenchSettings(
        checkout=Path.cwd(),
        # Absolute: the benchmark may change directory and must still find its cache.
        work_root=args.work_dir.resolve(),
        out_dir=args.out.resolve(),
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
    if args.no_judge or on_github():
        # In CI the aggregate job judges every bucket at once (nox -s gate).
        print(bench_table(results))
        return ExitCode.OK
    from perfgate.gate import evaluate
    from perfgate.report import terminal_table, write_report

    store = open_store(config, local=True)
    report = evaluate(config, buckets, results, store)
    write_report(report, args.report_dir)
    print(terminal_table(report))
    if args.record:
        if store is None:
            raise UsageError("--record needs a git repository to hold the baseline branch")
        record_samples(store, results, "local", "Record local baseline samples")
    return report.exit_code


def cmd_gate(args: argparse.Namespace) -> int:
    """Judge every result artifact against its baseline and write the report surfaces."""
    from perfgate import context
    from perfgate.console import annotate
    from perfgate.gate import evaluate, load_results, report_json
    from perfgate.report import terminal_table, write_github_surfaces, write_report

    config = load_config(args.config)
    expected = config.select(args.bucket, args.tag)
    artifacts = load_results(args.results)
    report = evaluate(
        config,
        expected,
        artifacts.results,
        open_store(config, local=args.local_baseline),
        notes=artifacts.unreadable,
    )
    paths = write_report(report, args.report_dir)
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    if run.on_github:
        from perfgate.handoff import write_context

        # Lets the trusted workflow_run job post a fork pull request's verdict (R12).
        write_context(run, args.report_dir)
    write_github_surfaces(report)
    print(terminal_table(report))
    for note in report.notes:
        annotate("warning", note)
    print(f"perfgate: report in {paths['summary']} and {paths['verdict']}", file=sys.stderr)
    if args.post:
        from perfgate.publishing import post_from_run

        published = post_from_run(report_json(report), run, os.environ.get("GITHUB_TOKEN"))
        if published is not None:
            _say_published(published, run.head_sha or "", run.pr_number)
    return report.exit_code


def _say_published(published: Published, head_sha: str, pr_number: int | None) -> None:
    comment = published.comment
    print(
        f"perfgate: posted {len(published.statuses)} commit status(es) on {head_sha[:12]}"
        + (
            f"; {comment.action} the comment on #{pr_number}"
            + (f", removed {len(comment.removed)} duplicate(s)" if comment.removed else "")
            if comment
            else ""
        ),
        file=sys.stderr,
    )


def _flag_rejected_report(client: GitHubClient, payload: dict[str, Any], error: Exception) -> None:
    """A rejected report still fails the run's commit: never silence where a verdict belongs."""
    from perfgate.publishing import AGGREGATE_CONTEXT, fit_description

    run = payload.get("workflow_run")
    head_sha = run.get("head_sha") if isinstance(run, dict) else None
    if not isinstance(head_sha, str) or not re.fullmatch(r"[0-9a-f]{40}", head_sha):
        return
    url = run.get("html_url") if isinstance(run, dict) else None
    client.create_status(
        head_sha,
        state="failure",
        context=AGGREGATE_CONTEXT,
        description=fit_description(f"report rejected: {error}", advisory=False),
        target_url=url if isinstance(url, str) else None,
    )


def cmd_post_report(args: argparse.Namespace) -> int:
    """Trusted workflow_run job: validate a pull request run's report artifact, then post it."""
    from perfgate import context
    from perfgate.github import GitHubClient
    from perfgate.handoff import (
        HandoffRejected,
        confirm_pull_request,
        load_handoff,
        require_coverage,
        trusted_bucket_ids,
    )
    from perfgate.publishing import publish

    run = context.detect(os.environ)
    token = os.environ.get("GITHUB_TOKEN")
    if not run.repository or not token:
        raise UsageError(
            "post-report needs GITHUB_REPOSITORY and GITHUB_TOKEN (a job with `statuses: write` "
            "and `pull-requests: write`, triggered by workflow_run)"
        )
    event_path = os.environ.get("GITHUB_EVENT_PATH")
    try:
        payload = json.loads(Path(event_path).read_text(encoding="utf-8")) if event_path else {}
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the event payload {event_path}: {exc}") from None
    client = GitHubClient(api_url=run.api_url, repository=run.repository, token=token)
    try:
        handoff = load_handoff(
            args.report_dir,
            event_name=os.environ.get("GITHUB_EVENT_NAME", ""),
            payload=payload,
            repository=run.repository,
        )
        base_ref = confirm_pull_request(client, handoff, payload)
        require_coverage(handoff, trusted_bucket_ids(args.config, base_ref), args.report_dir)
    except HandoffRejected as exc:
        _flag_rejected_report(client, payload, exc)
        raise
    published = publish(
        client,
        handoff.verdict,
        head_sha=handoff.head_sha,
        pr_number=handoff.pr_number,
        run_url=handoff.run_url,
    )
    _say_published(published, handoff.head_sha, handoff.pr_number)
    return ExitCode.OK


def cmd_publish(args: argparse.Namespace) -> int:
    """Append trusted samples (pushes to protected branches only) to the baseline branch."""
    from perfgate import context
    from perfgate.gate import load_results

    config = load_config(args.config)
    run = context.detect(os.environ, default_target=config.gate.target_branches[0])
    protected = ", ".join(config.gate.protected_branches)
    if run.event != "push" or not config.gate.is_protected(run.branch):
        raise UsageError(
            f"refusing to publish: baselines are written only by pushes to protected branches "
            f"({protected}); this run is a {run.event!r} event on {run.branch!r}. Locally, use "
            "`nox -s bench -- --record` to keep samples on your local baseline branch"
        )
    artifacts = load_results(args.results)
    for problem in artifacts.unreadable:
        print(f"perfgate: {problem}", file=sys.stderr)
    results = artifacts.results
    foreign = [
        r.bucket.id
        for r in results
        if r.source.event != "push" or not config.gate.is_protected(r.source.branch)
    ]
    if foreign:
        raise UsageError(
            "refusing to publish artifacts not produced by a protected push: " + ", ".join(foreign)
        )
    store = open_store(config, local=False)
    if store is None:
        raise UsageError("publish must run inside the repository's git checkout")
    message = f"Append baseline samples from {run.commit}"
    refused = record_samples(store, results, "protected_branch", message)
    if refused:
        # A failed run is never a baseline; the exit code says so as the gate's would (R8).
        from perfgate.gate import exit_code_for
        from perfgate.oracle import Verdict

        print(f"perfgate: {refused} unhealthy result(s) were not published", file=sys.stderr)
        return exit_code_for(Verdict.HARD_FAILURE, config.gate.mode)
    return ExitCode.OK


def _repo_top() -> Path:
    from perfgate.git import try_git

    top = try_git("rev-parse", "--show-toplevel")
    if top is None:
        raise UsageError("run this inside the repository's git checkout")
    return Path(top)


def cmd_seed(args: argparse.Namespace) -> int:
    """Replay historical commits and append their samples (dry run unless --execute)."""
    from perfgate import seed

    current = load_config(args.config or DEFAULT_CONFIG)
    store = open_store(current, local=args.local_baseline)
    if store is None:
        raise UsageError("seed must run inside the repository's git checkout")
    options = seed.SeedOptions(
        branch=args.branch,
        last=args.last,
        commits=tuple(args.commits or ()),
        commit_branches=tuple(args.commit_branch),
        plan=args.plan,
        target=args.target,
        selection=seed.Selection(
            ids=tuple(args.bucket), tags=tuple(args.tag), backends=tuple(args.backend)
        ),
        samples=args.samples,
        strict_ancestry=args.strict_ancestry,
        execute=args.execute,
        seed_key=args.seed_key,
        work_dir=args.work_dir.resolve(),
        summary=args.summary,
        config_given=args.config is not None,
    )
    return seed.command(options, current, store)


def cmd_verify_baselines(args: argparse.Namespace) -> int:
    """Say per bucket whether its baseline can gate (READY), is filling (WARMING) or EMPTY."""
    from perfgate import hardware
    from perfgate.verify import Readiness, readiness_json, readiness_table, verify_store

    _repo_top()
    config = load_config(args.config)
    buckets = config.select(args.bucket, args.tag)
    store = open_store(config, local=args.local_baseline)
    assert store is not None  # _repo_top found the repository
    slug = args.hardware or hardware.detect().slug
    target = args.target or config.gate.target_branches[0]
    rows, notes, tip = verify_store(
        store,
        buckets,
        hardware=slug,
        target_branch=target,
        min_samples=config.gate.baseline.min_samples,
    )
    print(f"baselines on {store.branch} for {target} on {slug}:")
    print(readiness_table(rows))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    report = readiness_json(
        rows, hardware=slug, target_branch=target, baseline_tip=tip, notes=notes
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.require and not report["ready"]:
        waiting = [r.bucket for r in rows if r.status is not Readiness.READY]
        print(f"perfgate: not every bucket can gate yet: {', '.join(waiting)}", file=sys.stderr)
        return ExitCode.BLOCK
    return ExitCode.OK


def cmd_reseed_plan(args: argparse.Namespace) -> int:
    """Turn the gate's under-filled buckets into a plan for `seed --plan`."""
    from perfgate import context
    from perfgate.reseed import (
        ReseedPlan,
        emit_plan,
        parse_underfilled,
        plan_buckets,
        plan_from_report,
    )

    config = load_config(args.config)
    min_samples = config.gate.baseline.min_samples
    if args.report is not None:
        try:
            report = json.loads(args.report.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"{args.report}: not a readable verdict.json: {exc}") from None
        plan = plan_from_report(report, min_samples, str(args.report))
    else:
        run = context.detect(os.environ, default_target=config.gate.target_branches[0])
        commit, target = args.commit or run.commit, args.target or run.target_branch
        if not commit or not target:
            raise UsageError("--underfilled needs --commit and --target (or a GitHub push run)")
        plan = ReseedPlan(
            commit=commit,
            target_branch=target,
            min_samples=min_samples,
            buckets=plan_buckets(parse_underfilled(args.underfilled), {}, min_samples),
        )
    emit_plan(plan, args.out)
    return ExitCode.OK


def cmd_resolve_image(args: argparse.Namespace) -> int:
    """Choose the CI image (manifest hit, target-branch tag, build), or record an era."""
    from perfgate import context, image
    from perfgate.store import commit_to_branch

    config = load_config(args.config)
    if config.image is None:
        raise UsageError(f"{config.path} has no 'image' block; add one to resolve CI images")
    spec = config.image
    checkout = args.checkout
    run = context.detect(os.environ, cwd=checkout, default_target=config.gate.target_branches[0])
    era = image.era_of(spec, checkout)
    store = open_store(config, local=args.local_baseline)
    if args.record:
        protected = ", ".join(config.gate.protected_branches)
        if run.event != "push" or not config.gate.is_protected(run.branch):
            raise UsageError(
                f"refusing to record an image era: the manifest is written only by pushes to "
                f"protected branches ({protected}); this run is a {run.event!r} event on "
                f"{run.branch!r}"
            )
        if store is None:
            raise UsageError("--record must run inside the repository's git checkout")
        commit = commit_to_branch(
            store.repo,
            store.branch,
            store.remote,
            image.manifest_editor(spec.manifest, era, args.record, run.commit),
            image.record_message(era, args.record),
            store.push_retries,
            # Only the manifest is checked out: the samples on the branch can be large.
            paths=[spec.manifest],
        )
        state = f"recorded at {commit[:12]}" if commit else "already recorded"
        print(
            f"perfgate: era {era.key} -> {args.record} {state} on {store.branch}", file=sys.stderr
        )
        return ExitCode.OK
    manifest = None
    if store is not None:
        manifest = image.read_manifest(store.repo, store.refresh(), spec.manifest, store.branch)
    target_branch = args.target_branch or run.target_branch
    choice = image.choose(
        spec,
        era=era,
        manifest=manifest,
        target_branch=target_branch,
        usable=image.probe_with(spec.probe, checkout) if spec.probe else lambda _: True,
        build=(
            image.build_with(spec, target_branch, checkout)
            if spec.build and not args.no_build
            else None
        ),
    )
    output_file = os.environ.get("GITHUB_OUTPUT")
    if output_file:
        with Path(output_file).open("a", encoding="utf-8") as handle:
            handle.writelines(f"{key}={value}\n" for key, value in choice.step_outputs().items())
    print(json.dumps(choice.to_json(), indent=2))
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
    _add_selection(matrix, "list")
    matrix.set_defaults(handler=cmd_matrix)

    bench = verbs.add_parser("bench", help="run buckets and write their result artifacts")
    _add_config(bench)
    _add_selection(bench, "run")
    bench.add_argument(
        "--out", type=Path, default=DEFAULT_RESULTS, help="result directory (default: %(default)s)"
    )
    bench.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK,
        help="logs, attempt outputs and caches (default: %(default)s)",
    )
    bench.add_argument(
        "--no-judge",
        action="store_true",
        help="only run and write artifacts (CI never judges here)",
    )
    bench.add_argument(
        "--record",
        action="store_true",
        help="after judging, keep this run's healthy figures on the local baseline branch",
    )
    _add_report_dir(bench)
    bench.set_defaults(handler=cmd_bench)

    gate = verbs.add_parser("gate", help="judge result artifacts and write the report")
    _add_config(gate)
    gate.add_argument("--results", type=Path, required=True, help="directory of result artifacts")
    _add_report_dir(gate)
    _add_selection(gate, "expect")
    gate.add_argument(
        "--local-baseline",
        action="store_true",
        help="read the local baseline branch instead of fetching it from the remote",
    )
    gate.add_argument(
        "--post",
        action="store_true",
        help="post commit statuses and the sticky PR comment when the token may write; "
        "otherwise print one notice (the exit code stays the verdict's)",
    )
    gate.set_defaults(handler=cmd_gate)

    post_report = verbs.add_parser(
        "post-report",
        help="in a trusted workflow_run job: validate a pull request's report artifact and post it",
    )
    _add_config(post_report)
    post_report.add_argument(
        "--report-dir",
        type=Path,
        required=True,
        help="the downloaded report artifact (verdict.json and context.json)",
    )
    post_report.set_defaults(handler=cmd_post_report)

    publish = verbs.add_parser("publish", help="append trusted samples to the baseline branch")
    _add_config(publish)
    publish.add_argument(
        "--results", type=Path, required=True, help="directory of result artifacts"
    )
    publish.set_defaults(handler=cmd_publish)

    seed = verbs.add_parser(
        "seed", help="replay historical commits to fill baselines (dry run unless --execute)"
    )
    seed.add_argument(
        "--config",
        type=Path,
        default=None,
        help="seed every commit with this perfgate.yaml (default: each commit's own, "
        "and ./perfgate.yaml for the store and the default target)",
    )
    source = seed.add_mutually_exclusive_group(required=True)
    source.add_argument("--branch", metavar="BRANCH", help="replay the newest commits of BRANCH")
    source.add_argument("--commits", nargs="+", metavar="SHA", help="replay these commits")
    source.add_argument(
        "--commit-branch",
        action="append",
        default=[],
        metavar="SHA:BRANCH",
        help="replay SHA for target BRANCH (repeatable)",
    )
    source.add_argument(
        "--plan", type=Path, metavar="FILE", help="a reseed plan from `perfgate reseed-plan`"
    )
    seed.add_argument(
        "--last", type=int, default=5, metavar="N", help="with --branch: how many commits (5)"
    )
    seed.add_argument(
        "--target",
        metavar="BRANCH",
        help="the branch the samples are for (default: --branch, else the first "
        "target branch of perfgate.yaml)",
    )
    _add_selection(seed, "seed")
    seed.add_argument(
        "--backend", action="append", default=[], metavar="KEY", help="backend key allowlist"
    )
    seed.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="samples per bucket and commit (default: enough for the commits to fill "
        "one minimum window together)",
    )
    seed.add_argument(
        "--strict-ancestry",
        action="store_true",
        help="reject (exit 4) commits that are not ancestors of the target tip instead of "
        "dropping them",
    )
    seed.add_argument("--execute", action="store_true", help="run the plan and write samples")
    seed.add_argument(
        "--seed-key",
        default="seed",
        help="names this seeding: the same key skips samples already stored; a new key "
        "measures the same commits again (default: %(default)s)",
    )
    seed.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK / "seed",
        help="worktrees, logs and results (default: %(default)s)",
    )
    seed.add_argument(
        "--summary",
        type=Path,
        default=Path(".perfgate/seed/seed_records.json"),
        help="the summary of the records (default: %(default)s)",
    )
    seed.add_argument(
        "--local-baseline",
        action="store_true",
        help="read and write the local baseline branch only (no fetch, no push)",
    )
    seed.set_defaults(handler=cmd_seed)

    verify = verbs.add_parser(
        "verify-baselines", help="say per bucket whether its baseline can gate"
    )
    _add_config(verify)
    verify.add_argument("--hardware", metavar="SLUG", help="default: this machine's")
    verify.add_argument(
        "--target", metavar="BRANCH", help="default: the first target branch of perfgate.yaml"
    )
    _add_selection(verify, "verify")
    verify.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    verify.add_argument(
        "--require", action="store_true", help="exit 1 unless every bucket is READY"
    )
    verify.add_argument(
        "--local-baseline", action="store_true", help="read the local baseline branch"
    )
    verify.set_defaults(handler=cmd_verify_baselines)

    reseed = verbs.add_parser(
        "reseed-plan", help="turn the gate's under-filled buckets into a seed plan"
    )
    _add_config(reseed)
    origin = reseed.add_mutually_exclusive_group(required=True)
    origin.add_argument("--report", type=Path, metavar="FILE", help="the gate's verdict.json")
    origin.add_argument(
        "--underfilled", metavar="JSON", help="the gate's `underfilled` step output"
    )
    reseed.add_argument("--commit", metavar="SHA", help="with --underfilled (default: this run's)")
    reseed.add_argument(
        "--target", metavar="BRANCH", help="with --underfilled (default: this run's)"
    )
    reseed.add_argument("--out", type=Path, metavar="FILE", help="write the plan here")
    reseed.set_defaults(handler=cmd_reseed_plan)

    resolve_image = verbs.add_parser(
        "resolve-image", help="choose the CI image for this run, or record an image era"
    )
    _add_config(resolve_image)
    resolve_image.add_argument(
        "--checkout",
        type=Path,
        default=Path.cwd(),
        help="the source checkout whose era inputs are hashed (default: the current directory)",
    )
    resolve_image.add_argument(
        "--record",
        metavar="IMAGE",
        help="record IMAGE (immutable reference) for this checkout's era; protected pushes only",
    )
    resolve_image.add_argument(
        "--local-baseline",
        action="store_true",
        help="read the manifest from the local baseline branch instead of the remote",
    )
    resolve_image.add_argument(
        "--no-build", action="store_true", help="never fall back to image.build"
    )
    resolve_image.add_argument(
        "--target-branch",
        metavar="BRANCH",
        help="whose image tag is the fallback (default: this run's target branch; the seed "
        "workflow passes the branch it seeds)",
    )
    resolve_image.set_defaults(handler=cmd_resolve_image)

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
