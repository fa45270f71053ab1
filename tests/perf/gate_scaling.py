"""How the gate's cost grows with buckets and with history length (``nox -s perf``).

Builds synthetic baseline stores with ``git fast-import`` (B buckets x H samples
each, spread over a linear history) plus B result artifacts, then times the whole
gate (load artifacts, read windows from git, judge, write the report) at several
sizes, side by side in one run. The figures to read are the ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import perfgate.config  # noqa: E402
from perfgate.baselines.store import (  # noqa: E402
    SEGMENT_LINES,
    BaselineStore,
    archive_dir,
    ids_path,
    sample_path,
    samples_from_result,
)
from perfgate.config import load_config  # noqa: E402
from perfgate.judge.gate import evaluate, load_results  # noqa: E402
from perfgate.report.surfaces import write_report  # noqa: E402
from perfgate.result import write_result  # noqa: E402
from tests.factories import make_result  # noqa: E402

COMMITS = 200
# The gate's cost is measured past GitHub's 256-job matrix limit, which binds only the
# rendered workflow; validation would refuse such a config, so the limit is lifted here.
perfgate.config.MAX_BUCKETS = 1_000_000


def build(root: Path, buckets: int, history: int) -> tuple[Path, Path, Path]:
    """A repository with main (COMMITS commits), perf-baselines, a config and artifacts."""
    repo = root / f"repo-{buckets}-{history}"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream: list[bytes] = []
    when = 1_700_000_000
    for index in range(COMMITS):
        message = f"c{index}".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"mark :{index + 1}\ncommitter t <t@x> {when + index} +0000\n".encode())
        stream.append(b"data %d\n%s\n" % (len(message), message))
    marks_file = root / f"marks-{buckets}-{history}"
    subprocess.run(
        ["git", "fast-import", "--quiet", f"--export-marks={marks_file}"],
        cwd=repo, input=b"".join(stream), check=True,
    )  # fmt: skip
    marks = dict(line.split() for line in marks_file.read_text().splitlines())
    shas = [marks[f":{i + 1}"] for i in range(COMMITS)]
    head = shas[-1]

    tasks = [f"t{i:04d}" for i in range((buckets + 1) // 2)]
    ids = [f"{t}/{b}" for t in tasks for b in ("numpy", "python")][:buckets]
    config = repo / "perfgate.yaml"
    lines = [
        "version: 1",
        "gate: {mode: advisory}",
        "defaults: {driver: command, command: {argv: ['true'], output: '{output_dir}/o.json'}}",
        "buckets:",
    ]
    lines += [
        f"  - {{task: {t}, backends: [{{physics: numpy}}, {{physics: python}}]}}" for t in tasks
    ]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    blobs: list[bytes] = [b"commit refs/heads/perf-baselines\n",
                          b"committer t <t@x> 1700001000 +0000\ndata 4\nseed\n"]  # fmt: skip
    for bucket in ids:
        template = make_result(bucket, 100.0, commit=head, run_id="0")
        out = []
        for k in range(history):
            sample = samples_from_result(
                replace(
                    template,
                    source=replace(template.source, commit=shas[k % COMMITS]),
                    ci=replace(template.ci, run_id=str(k)),
                    metric=replace(template.metric, value=100.0 + (k % 7) * 0.3),
                ),
                trusted_source="perf",
            )[0]
            out.append(sample.to_line())
        # The layout the writer produces: full segments archived, the rest live, an id index.
        live = sample_path("cpu-test", *bucket.split("/"))
        files = {ids_path(live): "".join(f"{json.loads(line)['sample_id']}\n" for line in out)}
        full = (len(out) - 1) // SEGMENT_LINES * SEGMENT_LINES if out else 0
        for end in range(SEGMENT_LINES, full + 1, SEGMENT_LINES):
            segment = out[end - SEGMENT_LINES : end]
            files[f"{archive_dir(live)}/{end:09d}.ndjson"] = "\n".join(segment) + "\n"
        files[live] = "".join(f"{line}\n" for line in out[full:])
        for path, text in files.items():
            data = text.encode()
            blobs.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(blobs), check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)

    results = repo / "results"
    for bucket in ids:
        write_result(make_result(bucket, 99.5, commit=head, event="pull_request"), results)
    return repo, config, results


def time_gate(repo: Path, config_path: Path, results_dir: Path) -> float:
    """Seconds for one whole gate run over this store."""
    config = load_config(config_path)
    began = time.perf_counter()
    results = load_results(results_dir).results
    store = BaselineStore(repo, branch="perf-baselines", remote=None)
    report = evaluate(config, config.buckets, results, store)
    write_report(report, repo / "report")
    elapsed = time.perf_counter() - began
    assert len(report.rows) == len(config.buckets)
    assert all(row.judgement and row.judgement.stats for row in report.rows)
    return elapsed


def main() -> int:
    """Run the scaling grid and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--buckets", type=int, default=1000)
    parser.add_argument("--history", type=int, default=2000)
    args = parser.parse_args()
    b, h = args.buckets, args.history
    # The last point goes past the live segment size at a quarter of the buckets, where
    # the per-bucket cost should stop growing with history altogether.
    grid = [(b // 10, h), (b, h // 20), (b, h // 4), (b, h), (b // 4, h * 4)]
    per_bucket: dict[tuple[int, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="perfgate-perf-") as tmp:
        for buckets, history in grid:
            built = time.perf_counter()
            repo, config, results = build(Path(tmp), buckets, history)
            build_s = time.perf_counter() - built
            seconds = min(time_gate(repo, config, results) for _ in range(2))
            per_bucket[(buckets, history)] = seconds / buckets
            print(f"buckets={buckets:5d} history={history:5d}  gate {seconds:6.2f} s "
                  f"({seconds / buckets * 1000:.2f} ms/bucket; store built in {build_s:.0f} s)",
                  flush=True)  # fmt: skip
            shutil.rmtree(repo)
    whole = {key: cost * key[0] for key, cost in per_bucket.items()}

    def ratio(
        table: dict[tuple[int, int], float], top: tuple[int, int], bottom: tuple[int, int]
    ) -> str:
        return f"x{table[top] / table[bottom]:.1f}"

    print()
    print(f"x10 buckets at history {h}: whole gate {ratio(whole, (b, h), (b // 10, h))}")
    print(f"x20 history at {b} buckets: per bucket {ratio(per_bucket, (b, h), (b, h // 20))}")
    print(f"x4 history at {b} buckets: per bucket {ratio(per_bucket, (b, h), (b, h // 4))}")
    print(
        f"x4 history past one segment ({SEGMENT_LINES} lines), at {b // 4} buckets: "
        f"per bucket {ratio(per_bucket, (b // 4, h * 4), (b, h))} of history {h}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
