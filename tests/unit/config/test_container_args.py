"""The container is the one boundary around a benchmark on a self-hosted runner (R14).

docker options in ``container.extra_args`` or ``container.run_args`` that break it (a
privileged container, a host namespace, a capability, a host device, a bind mount of the
host's root, system directories or a socket, an unconfined security profile) are refused
wherever the config is loaded, unless ``container.allow_unsafe_args`` says so; the image is
checked as an image reference there too, so ``validate`` and ``bench`` agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate import cli

CONFIG = """\
version: 1
defaults:
  driver: command
  container:
    image: registry.example/bench:1
    {defaults_key}: {defaults_args}
  command:
    argv: [python, bench.py, "{{output_dir}}/r.json"]
    output: "{{output_dir}}/r.json"
buckets:
  - task: boxed
    container:
      {bucket_key}: {bucket_args}
    backends: [{{physics: cpu}}]
"""


def config(
    tmp_path: Path,
    *,
    where: str = "bucket",
    key: str = "extra_args",
    args: list[str],
    opt_in: bool = False,
) -> Path:
    """A command bucket in a container whose ``key`` (in the defaults or the bucket) is ``args``."""
    # The other key carries a harmless option: the block merges key by key (R16).
    other = "run_args" if key == "extra_args" else "extra_args"
    harmless = json.dumps(["--shm-size", "1g"])
    text = CONFIG.format(
        defaults_key=key if where == "defaults" else other,
        defaults_args=json.dumps(args) if where == "defaults" else harmless,
        bucket_key=key if where == "bucket" else other,
        bucket_args=json.dumps(args) if where == "bucket" else harmless,
    )
    if opt_in:
        opted = "    allow_unsafe_args: true\n    image: registry"
        text = text.replace("    image: registry", opted)
    path = tmp_path / "perfgate.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# (arguments, the index of the refused option, what the message names)
UNSAFE = [
    (["--privileged"], 0, "--privileged"),
    (["--privileged=true"], 0, "--privileged"),
    (["--shm-size", "8g", "-v", "/:/host"], 2, "/"),
    (["-v/:/host"], 0, "/"),
    (["-v=/:/host"], 0, "/"),
    (["-itv", "/:/host:ro"], 0, "/"),
    (["--volume=/var/run/docker.sock:/var/run/docker.sock"], 0, "/var/run/docker.sock"),
    (["--volume", "/run/containerd/containerd.sock:/c.sock"], 0, "containerd.sock"),
    (["-v", "/srv/../etc:/e"], 0, "/etc"),
    (["-v", "/home/runner:/r"], 0, "/home/runner"),
    (["--mount", "type=bind,source=/,target=/host"], 0, "/"),
    (["--mount=type=bind,src=/sys,dst=/s,readonly"], 0, "/sys"),
    (["--mount", "type=volume,dst=/h,volume-opt=o=bind,volume-opt=device=/"], 0, "volume-opt"),
    (["--volumes-from", "other"], 0, "--volumes-from"),
    (["--pid=host"], 0, "--pid"),
    (["--pid", "host"], 0, "--pid"),
    (["--network=host"], 0, "--network"),
    (["--net", "host"], 0, "--net"),
    (["--network", "container:sidecar"], 0, "--network"),
    (["--ipc=host"], 0, "--ipc"),
    (["--uts=host"], 0, "--uts"),
    (["--userns=host"], 0, "--userns"),
    (["--cgroupns=host"], 0, "--cgroupns"),
    (["--cap-add=SYS_ADMIN"], 0, "--cap-add"),
    (["--cap-add", "NET_RAW"], 0, "--cap-add"),
    (["--device=/dev/sda"], 0, "--device"),
    (["--device", "/dev/kmsg"], 0, "--device"),
    (["--device-cgroup-rule=a *:* rwm"], 0, "--device-cgroup-rule"),
    (["--cgroup-parent", "/"], 0, "--cgroup-parent"),
    (["--security-opt", "seccomp=unconfined"], 0, "seccomp=unconfined"),
    (["--security-opt=apparmor:unconfined"], 0, "apparmor:unconfined"),
    (["--security-opt", "label=disable"], 0, "label=disable"),
    (["--security-opt=systempaths=unconfined"], 0, "systempaths=unconfined"),
    (["--security-opt", "seccomp=/tmp/anything.json"], 0, "seccomp=/tmp/anything.json"),
    (["--security-opt=no-new-privileges:false"], 0, "no-new-privileges:false"),
]


@pytest.mark.parametrize(("where", "key"), [("bucket", "extra_args"), ("defaults", "run_args")])
@pytest.mark.parametrize(("args", "index", "named"), UNSAFE, ids=[" ".join(c[0]) for c in UNSAFE])
def test_an_isolation_breaking_docker_option_is_refused_naming_file_key_and_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
    key: str,
    args: list[str],
    index: int,
    named: str,
) -> None:
    path = config(tmp_path, where=where, key=key, args=args)
    assert cli.main(["validate", "--config", str(path)]) == 4
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    key_path = f"buckets[0].container.{key}[{index}]" if where == "bucket" else (
        f"defaults.container.{key}[{index}]"
    )  # fmt: skip
    assert line.startswith(f"perfgate: error: {path}:"), line
    assert f": {key_path}: " in line, line
    assert named in line
    assert "remove it, or set container.allow_unsafe_args: true" in line
    assert "docs/security.md" in line


SAFE = [
    ["--shm-size", "8g"],
    ["--security-opt=no-new-privileges:true", "--ulimit", "nofile=65536:65536"],
    ["--security-opt", "no-new-privileges"],
    ["--security-opt", "apparmor=docker-default"],
    ["-v", "/data/isaac-assets:/assets:ro"],
    ["--volume=/mnt/datasets:/datasets"],
    ["-v", "kit-cache:/isaac-sim/kit/cache"],
    ["-v", "/scratch"],
    ["--mount", "type=volume,source=cache,target=/cache"],
    ["--mount", "type=bind,source=/data/assets,target=/assets,readonly"],
    ["--mount", "type=tmpfs,target=/tmp/x"],
    ["--network=none"],
    ["--network", "bench-net"],
    ["--ipc=private"],
    ["--cap-drop=ALL"],
    ["-e", "FOO=1", "-it"],
    ["--runtime=nvidia", "--memory", "32g"],
]


# A valid config goes on to validate's budget check, which reads the baseline branch (git).
@pytest.mark.slow
@pytest.mark.parametrize("args", SAFE, ids=[" ".join(a) for a in SAFE])
def test_ordinary_docker_options_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    path = config(tmp_path, args=args)
    assert cli.main(["validate", "--config", str(path)]) == 0, capsys.readouterr().err
    assert "allow_unsafe_args" not in capsys.readouterr().out


@pytest.mark.slow  # validate's budget check reads the baseline branch (git)
def test_the_opt_in_passes_them_and_every_load_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    path = config(tmp_path, args=["--privileged", "-v", "/:/host"], opt_in=True)
    assert cli.main(["validate", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    (notice,) = [line for line in out.splitlines() if "allow_unsafe_args" in line]
    assert notice.startswith("notice: ")
    assert "boxed/cpu" in notice and "container.allow_unsafe_args" in notice
    assert "--privileged" in notice and "-v /:/host" in notice
    assert cli.main(["matrix", "--json", "--config", str(path)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["container"]["allow_unsafe_args"] is True
    assert cli.main(["bench", "--dry-run", "--config", str(path)]) == 0
    warned = capsys.readouterr().err
    assert "container.allow_unsafe_args passes --privileged, -v /:/host" in warned, warned


def test_every_verb_that_loads_the_config_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = config(tmp_path, args=["--pid=host"])
    for verb in (["matrix", "--json"], ["bench", "--dry-run"]):
        assert cli.main([*verb, "--config", str(path)]) == 4
        (line,) = capsys.readouterr().err.splitlines()
        assert ": buckets[0].container.extra_args[0]: " in line, line


@pytest.mark.parametrize("verb", [["validate"], ["bench", "--dry-run"]])
def test_an_image_that_is_no_image_reference_is_refused_where_the_config_loads(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    verb: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFGATE_IMAGE", raising=False)
    path = config(tmp_path, args=["--shm-size", "1g"])
    text = path.read_text().replace("registry.example/bench:1", '"ubuntu:22.04 -v /:/host"')
    path.write_text(text, encoding="utf-8")
    assert cli.main([*verb, "--config", str(path)]) == 4
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"perfgate: error: {path}:5: defaults.container.image: "), line
    assert "is not an image reference" in line
