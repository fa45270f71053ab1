"""Read perfgate.yaml: check it whole, then build its policies and expand its buckets (R1, R14).

The order of the checks is the order a reader fixes a file in: values no step can take,
then the schema, then what the schema cannot say (across keys and blocks).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.config.bucket import Bucket, argv_of
from perfgate.config.checks import (
    check_alerts,
    check_bucket_count,
    check_gate,
    check_gate_block,
    check_image,
    check_matrix,
    check_perfgate_source,
    check_qualify,
    check_task_aliases,
    check_unique_id,
    check_values,
)
from perfgate.config.container import opted_in_notices
from perfgate.config.expand import expand
from perfgate.config.image import ImageBuild, ImageRoll, ImageSpec, PinInput
from perfgate.config.messages import check_schema, fail
from perfgate.config.model import DEFAULT_CONFIG, Config
from perfgate.config.policy import (
    ActionRef,
    AdmissionMode,
    AdmissionPolicy,
    AlertsSpec,
    BaselinePolicy,
    ConfirmMode,
    CpuAdmission,
    FileRef,
    GatePolicy,
    GpuAdmission,
    Mode,
    OraclePolicy,
    PolicyName,
    QualifyPolicy,
    ReportSpec,
    RunnerIdentity,
)
from perfgate.util.yamlfile import KeyPath, YamlDocument, format_key_path, load_yaml

_DEFAULT_SETTINGS: dict[str, Any] = {
    "driver": "demo",
    "runner": ["ubuntu-latest"],
    "timeout_minutes": 10,
    "retries": 1,
    "num_envs": 512,
    "steps": 200,
    "warmup_steps": 20,
    "seed": 42,
    "tags": ["always"],
    "baseline_epoch": 1,
    "paths": [],
    "keep_env": [],
    "repeats": Bucket.repeats,
    "max_repeats": Bucket.max_repeats,
    "max_pairs": Bucket.max_pairs,
}


def load_config(path: Path = DEFAULT_CONFIG) -> Config:
    """Read, validate and expand ``path``; any problem raises ConfigError naming the key path."""
    document = load_yaml(path)
    if not isinstance(document.data, dict):
        fail(
            document,
            (),
            "expected a mapping with 'version: 1' and a 'buckets' list at the top "
            "(see perfgate/schemas/perfgate.schema.json)",
        )
    renamed = _read_renamed_keys(document)
    raw_buckets = document.data.get("buckets")
    if isinstance(raw_buckets, list):
        # Said before any per-bucket work: a huge matrix costs nothing to refuse.
        check_bucket_count(document, len(raw_buckets))
    check_values(document)
    check_schema(document)
    data = document.data
    check_task_aliases(document, data)
    check_gate_block(document, data.get("gate", {}))
    gate = _gate_policy(document, data.get("gate", {}))
    defaults = {**_DEFAULT_SETTINGS, **data.get("defaults", {})}
    buckets: list[Bucket] = []
    seen: dict[str, KeyPath] = {}
    for index, entry in enumerate(data["buckets"]):
        expanded = expand(document, ("buckets", index), entry, defaults)
        for backend_index, bucket in enumerate(expanded):
            check_unique_id(
                document, seen, bucket.id, ("buckets", index, "backends", backend_index)
            )
            buckets.append(bucket)
    check_matrix(document, len(buckets))
    check_gate(document, gate)
    qualify = QualifyPolicy(**data.get("qualify", {}))
    check_qualify(document, qualify)
    if "image" in data:
        check_image(document, data["image"])
    alerts = AlertsSpec(**data.get("alerts", {}))
    check_alerts(document, alerts)
    source = data.get("workflows", {}).get("perfgate_source")
    check_perfgate_source(document, source)
    return Config(
        path=path,
        gate=gate,
        buckets=tuple(buckets),
        image=_image_spec(data["image"]) if "image" in data else None,
        qualify=qualify,
        perfgate_source=source,
        action_ref=ActionRef(data.get("workflows", {}).get("action_ref", ActionRef.SELF)),
        bench_jobs=data.get("workflows", {}).get("bench_jobs", Config.bench_jobs),
        coalesce_pushes=data.get("workflows", {}).get("coalesce_pushes", Config.coalesce_pushes),
        benchmark_install=tuple(data.get("workflows", {}).get("benchmark_install", ())),
        report=ReportSpec(**data.get("report", {})),
        notices=(*renamed, *_deprecations(document, gate), *opted_in_notices(buckets)),
        admission=_admission_policy(data.get("admission", {})),
        alerts=alerts,
    )


#: Keys read under their new names: (the block's key path, old name, new name).
_RENAMED_KEYS: tuple[tuple[KeyPath, str, str], ...] = (
    # "alarm" beside alerts.false_alert_rate read as the same thing; this one is BLOCKs.
    (("gate",), "false_alarm_rate", "false_block_rate"),
    # The same minimum a metric's own min_drop_pct overrides, under one name.
    (("gate", "oracle"), "min_block_regression_pct", "min_drop_pct"),
)


def _read_renamed_keys(document: YamlDocument) -> tuple[str, ...]:
    """Move each renamed key to its new name in ``document`` (its line too); a notice each."""
    notices = []
    for block_path, old, new in _RENAMED_KEYS:
        block: Any = document.data
        for key in block_path:
            block = block.get(key) if isinstance(block, dict) else None
        if not isinstance(block, dict) or old not in block:
            continue
        old_path, new_path = (*block_path, old), (*block_path, new)
        if new in block:
            fail(document, old_path, f"the old name of {format_key_path(new_path)}, which "
                 f"is set too; keep {new} alone")  # fmt: skip
        notices.append(
            f"{document.where(old_path)}: {format_key_path(old_path)} is read as "
            f"{format_key_path(new_path)}, its new name; rename it"
        )
        block[new] = block.pop(old)
        document.lines[new_path] = document.lines.pop(old_path)
    return tuple(notices)


def _deprecations(document: YamlDocument, gate: GatePolicy) -> tuple[str, ...]:
    """A notice per deprecated key present: accepted, ignored, and named so it gets removed."""
    if gate.baseline.push_retries is None:
        return ()
    key_path: KeyPath = ("gate", "baseline", "push_retries")
    return (
        f"{document.where(key_path)}: {format_key_path(key_path)} is deprecated and ignored: "
        "a publish now retries until gate.baseline.publish_deadline_minutes (default 10) "
        "have passed; remove push_retries",
    )


def _gate_policy(document: YamlDocument, raw: Mapping[str, Any]) -> GatePolicy:
    """The ``gate`` block over its defaults (checked by ``check_gate_block``)."""
    calibration = raw.get("calibration")
    oracle = OraclePolicy(**raw.get("oracle", {}))
    confirm_drop = raw.get("confirm_drop_pct")
    return GatePolicy(
        mode=Mode(raw.get("mode", Mode.ADVISORY)),
        always_pass=bool(raw.get("always_pass", False)),
        target_branches=tuple(raw.get("target_branches", GatePolicy.target_branches)),
        protected_branches=tuple(raw.get("protected_branches", GatePolicy.protected_branches)),
        policy=PolicyName(raw.get("policy", PolicyName.CALIBRATED)),
        false_block_rate=float(raw.get("false_block_rate", GatePolicy.false_block_rate)),
        # YAML 1.1 reads a bare `off` as false: the schema allows it, and it means off.
        confirm=ConfirmMode(raw.get("confirm", ConfirmMode.PAIRED) or ConfirmMode.OFF),
        # Unset: the default, or the minimum drop when that is larger.
        confirm_drop_pct=float(
            confirm_drop
            if confirm_drop is not None
            else max(GatePolicy.confirm_drop_pct, oracle.min_drop_pct)
        ),
        budget_minutes=(
            float(raw["budget_minutes"]) if raw.get("budget_minutes") is not None else None
        ),
        runner_identity=RunnerIdentity(raw.get("runner_identity", GatePolicy.runner_identity)),
        oracle=oracle,
        baseline=BaselinePolicy(**raw.get("baseline", {})),
        calibration=None
        if calibration is None
        else FileRef(
            path=document.path.parent / calibration,
            where=f"{document.where(('gate', 'calibration'))}: gate.calibration",
            root=document.path.parent,
        ),
    )


def _admission_policy(raw: Mapping[str, Any]) -> AdmissionPolicy:
    """The ``admission`` block over its defaults (the schema checked every key and value)."""
    gpu, cpu = raw.get("gpu", {}), raw.get("cpu", {})
    return AdmissionPolicy(
        # YAML 1.1 reads a bare `off` as false: the schema allows it, and it means off.
        mode=AdmissionMode(raw.get("mode", AdmissionMode.ENFORCE) or AdmissionMode.OFF),
        gpu=GpuAdmission(
            **{
                **gpu,
                **{k: tuple(gpu[k]) for k in ("throttle_reasons", "ignore_processes") if k in gpu},
            }
        ),
        cpu=CpuAdmission(**cpu),
        wait_seconds=float(raw.get("wait_seconds", AdmissionPolicy.wait_seconds)),
        poll_seconds=float(raw.get("poll_seconds", AdmissionPolicy.poll_seconds)),
        remeasure=raw.get("remeasure", AdmissionPolicy.remeasure),
    )


def _image_spec(raw: Mapping[str, Any]) -> ImageSpec:
    """The ``image`` block (checked by ``check_image``)."""
    build = raw.get("build")
    digest = argv_of(raw["digest"]) if "digest" in raw else ImageSpec.digest
    return ImageSpec(
        env_file=raw.get("env_file"),
        env_keys=tuple(raw.get("env_keys", ())),
        files=tuple(raw.get("files", ())),
        pins=tuple(PinInput(file=p["file"], package=p["package"]) for p in raw.get("pins", ())),
        manifest=raw.get("manifest", ImageSpec.manifest),
        tags=dict(raw.get("tags", {})),
        probe=argv_of(raw["probe"]) if "probe" in raw else None,
        build=ImageBuild(argv=tuple(build["argv"]), image=build["image"]) if build else None,
        digest=digest or None,
        roll=_image_roll(raw["roll"]) if "roll" in raw else None,
        per_commit=raw.get("per_commit"),
        per_commit_wait_minutes=float(
            raw.get("per_commit_wait_minutes", ImageSpec.per_commit_wait_minutes)
        ),
    )


def _image_roll(raw: Mapping[str, Any]) -> ImageRoll:
    return ImageRoll(
        build=ImageBuild(argv=tuple(raw["build"]["argv"]), image=raw["build"]["image"]),
        refs=tuple(raw["refs"]),
        tag=argv_of(raw.get("tag", list(ImageRoll.tag))),
        push=argv_of(raw.get("push", list(ImageRoll.push))),
        login=argv_of(raw["login"]) if "login" in raw else None,
        secrets=tuple(raw.get("secrets", ())),
        runner=tuple(raw.get("runner", ImageRoll.runner)),
        timeout_minutes=raw.get("timeout_minutes", ImageRoll.timeout_minutes),
    )
