"""The hostile-input corpus: every bad config and artifact gets one clean answer (R8, R14).

``tests/corpus/configs/*.yaml`` open with ``# expect: EXIT | LINE | KEY PATH | FRAGMENT``
(``-`` for a YAML-level problem with no key path). Each one, through ``validate`` and through
``bench`` (a verb that would write), exits EXIT with exactly one stderr line
``perfgate: error: FILE:LINE: KEY PATH: ...FRAGMENT...``, prints no traceback and writes nothing.

``tests/corpus/artifacts/*.json`` are broken result artifacts, listed with the words their
bucket's verdict must carry in ``expected.tsv``. Each, arriving as one bucket's artifact,
costs that bucket (HARD_FAILURE naming the file) and never the gate: ``gate`` still judges
the other bucket and writes only its report; ``publish`` refuses it by name and still
publishes the other bucket.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.config import load_config
from perfgate.result import write_result
from perfgate.util.git import git
from perfgate.util.yamlfile import MAX_BYTES
from tests.factories import make_result, of_experiment
from tests.git_support import MakeClone
from tests.paths import CORPUS

CONFIGS = sorted((CORPUS / "configs").glob("*.yaml"))
ARTIFACTS = [
    tuple(line.split("\t"))
    for line in (CORPUS / "artifacts" / "expected.tsv").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
]
TWO_BUCKETS = """\
version: 1
gate: {mode: blocking, protected_branches: [main]}
buckets:
  - task: cartpole
    backends: [{physics: numpy}, {physics: python}]
"""


def snapshot(root: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (but under ``skip``) with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file() and not any(path.is_relative_to(s) for s in skip)
    }


def expectation(path: Path) -> tuple[int, str, str, str]:
    """(exit code, line, key path, fragment) from the file's ``# expect:`` first line."""
    first = path.read_bytes().split(b"\n", 1)[0].decode("ascii")
    code, line, key_path, fragment = first.removeprefix("# expect: ").split(" | ")
    return int(code), line, key_path, fragment


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The CLI's exit code and stderr."""
    code = main(args)
    return code, capsys.readouterr().err


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len(CONFIGS) >= 40
    assert len(ARTIFACTS) >= 20
    listed = {name for name, _ in ARTIFACTS}
    assert listed == {p.name for p in (CORPUS / "artifacts").glob("*.json")}


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_a_hostile_config_gets_one_clean_line_and_nothing_is_written(
    config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, line, key_path, fragment = expectation(config)
    monkeypatch.chdir(tmp_path)
    before = snapshot(CORPUS)
    prefix = f"perfgate: error: {config}:{line}: " + ("" if key_path == "-" else f"{key_path}: ")
    for verb in (["validate"], ["bench", "--out", "out", "--work-dir", "work"]):
        exit_code, err = run([*verb, "--config", str(config)], capsys)
        assert exit_code == code, err
        assert err.count("\n") == 1 and err.startswith(prefix), err
        assert fragment in err, err
        assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == [], "a refused config wrote something"
    assert snapshot(CORPUS) == before


def test_a_20_mb_config_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """570 000 buckets: refused from its size alone (the figure: nox -s perf)."""
    config = tmp_path / "huge.yaml"
    with config.open("w", encoding="utf-8") as handle:
        handle.write("version: 1\nbuckets:\n")
        for index in range(570_000):
            handle.write(f"  - {{task: t{index}, backends: [{{physics: x}}]}}\n")
    assert config.stat().st_size > 20_000_000
    monkeypatch.chdir(tmp_path)
    code, err = run(["validate", "--config", str(config)], capsys)
    assert code == 4
    assert err.startswith(f"perfgate: error: {config}: ") and f"{MAX_BYTES}-byte limit" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture
def checkout(origin_clone: MakeClone) -> tuple[Path, str]:
    """A clone of a bare origin with a two-bucket blocking config; cwd is the clone."""
    clone = origin_clone(files={"perfgate.yaml": TWO_BUCKETS})
    return clone.path, clone.head


def results_with(broken: Path, directory: Path, sha: str) -> Path:
    """The broken artifact as cartpole/numpy's upload, beside a good one for cartpole/python."""
    upload = directory / "perfgate-result-cartpole__numpy"
    upload.mkdir(parents=True)
    shutil.copyfile(broken, upload / "cartpole__numpy.json")
    good = make_result("cartpole/python", 100.0, commit=sha, run_id="7")
    write_result(
        of_experiment(good, load_config(Path("perfgate.yaml"))),
        directory / "perfgate-result-cartpole__python",
    )
    return upload / "cartpole__numpy.json"


@pytest.mark.parametrize(("name", "fragment"), ARTIFACTS, ids=[n for n, _ in ARTIFACTS])
def test_a_broken_artifact_costs_its_bucket_never_the_gate(
    name: str,
    fragment: str,
    checkout: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clone, sha = checkout
    bad = results_with(CORPUS / "artifacts" / name, tmp_path / "results", sha)
    report = tmp_path / "report"
    # The report directory is gate's to write; git's own files hold the store (a fetch).
    allowed = (report, clone / ".git", tmp_path / "origin.git")
    before = snapshot(tmp_path, skip=allowed)
    code, err = run(["gate", "--results", str(tmp_path / "results"), "--report-dir", str(report)],
                    capsys)  # fmt: skip
    assert code == 2, err
    assert "Traceback" not in err
    verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    rows = {row["bucket"]: row for row in verdict["rows"]}
    row = rows["cartpole/numpy"]
    assert (row["verdict"], row["reasons"]) == ("HARD_FAILURE", ["UNREADABLE_ARTIFACT"])
    (detail,) = row["details"]
    assert detail.startswith(f"{bad}: not a ") and fragment in detail, detail
    assert "\n" not in detail
    assert rows["cartpole/python"]["reasons"] == ["NO_BASELINE"], "the good bucket was not judged"
    assert verdict["coverage"]["missing"] == []
    assert snapshot(tmp_path, skip=allowed) == before, "gate wrote outside its report directory"


@pytest.mark.parametrize(("name", "fragment"), ARTIFACTS, ids=[n for n, _ in ARTIFACTS])
def test_publish_refuses_a_broken_artifact_by_name_and_keeps_the_good_one(
    name: str,
    fragment: str,
    checkout: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clone, sha = checkout
    event = tmp_path / "push.json"
    event.write_text("{}", encoding="utf-8")
    for key, value in {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push",
                       "GITHUB_EVENT_PATH": str(event), "GITHUB_REF": "refs/heads/main",
                       "GITHUB_SHA": sha, "GITHUB_REPOSITORY": "org/repo"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    bad = results_with(CORPUS / "artifacts" / name, tmp_path / "results", sha)
    code, err = run(["publish", "--results", str(tmp_path / "results")], capsys)
    assert code == 2, err
    assert "Traceback" not in err
    refusal = [line for line in err.splitlines() if str(bad) in line]
    assert len(refusal) == 1 and fragment in refusal[0], err
    stored = git("ls-tree", "-r", "--name-only", "origin/perf-baselines", cwd=clone).split()
    assert [p for p in stored if p.endswith(".ndjson")] == [
        "samples/cpu-test/cartpole/python.ndjson"
    ]
