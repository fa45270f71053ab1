"""The benchmark never sees credentials (R14): a real run, its whole environment recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfgate.config import load_config
from perfgate.context import RunContext
from perfgate.result import Hardware
from perfgate.run.bench import run_bucket
from perfgate.run.launch import BenchSettings

DUMP = """import json, os, sys
open(sys.argv[1], "w").write(json.dumps({"fps": 1.0, "env": dict(os.environ)}))
"""
SECRETS = {
    "GITHUB_TOKEN": "ghs_1",
    "GH_ENTERPRISE_TOKEN": "ghe_1",
    "GITHUB_ENTERPRISE_TOKEN": "ghe_2",
    "INPUT_GITHUB_TOKEN": "ghs_2",
    "INPUT_REPO-TOKEN": "ghs_3",
    "ACTIONS_CACHE_URL": "https://cache.example",
    "GIT_CONFIG_PARAMETERS": "'http.extraheader'='AUTHORIZATION: basic c2VjcmV0'",
    "NGC_API_KEY": "ngc",
    "WANDB_API_KEY": "wandb",
}


def test_the_benchmark_gets_no_credential_but_those_the_config_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    (tmp_path / "dump.py").write_text(DUMP, encoding="utf-8")
    (tmp_path / "perfgate.yaml").write_text(
        "version: 1\n"
        "defaults:\n"
        "  driver: command\n"
        "  repeats: 1\n"
        "  keep_env: [WANDB_API_KEY]\n"
        f"  command: {{argv: [{json.dumps(sys.executable)}, dump.py, '{{output_dir}}/r.json'],"
        " output: '{output_dir}/r.json'}\n"
        "  metric: {path: fps}\n"
        "buckets:\n  - task: env\n    backends: [{physics: cpu}]\n",
        encoding="utf-8",
    )
    (bucket,) = load_config(tmp_path / "perfgate.yaml").buckets
    settings = BenchSettings(
        checkout=tmp_path,
        work_root=tmp_path / "work",
        out_dir=tmp_path / "out",
        hardware=Hardware(slug="cpu-test"),
        context=RunContext(commit=None, branch=None, target_branch=None, event="local"),
    )
    result = run_bucket(bucket, settings)
    assert result.health.healthy, result.log_tail
    output = tmp_path / "work/runs/env__cpu/sample-0/attempt-1/output/r.json"
    seen = json.loads(output.read_text())["env"]
    assert seen["HARMLESS_SETTING"] == "kept"
    assert seen["WANDB_API_KEY"] == "wandb"  # kept by name in perfgate.yaml
    leaked = (set(SECRETS) - {"WANDB_API_KEY"}) & set(seen)
    assert not leaked, f"the benchmark saw {sorted(leaked)}"
