"""Identity hashes (R2): canonical, short, and sensitive to exactly what they cover."""

from __future__ import annotations

import hashlib
import re

from perfgate.identity import canonical_json, runtime_inputs, stable_hash
from perfgate.result import IdentityRecord


def test_stable_hash_ignores_key_order_and_is_16_hex() -> None:
    a = stable_hash({"task": "cartpole", "num_envs": 1024, "nested": {"b": 1, "a": [1, 2]}})
    b = stable_hash({"nested": {"a": [1, 2], "b": 1}, "num_envs": 1024, "task": "cartpole"})
    assert a == b
    assert re.fullmatch(r"[0-9a-f]{16}", a)


def test_stable_hash_is_sha256_of_compact_sorted_json() -> None:
    value = {"b": 1, "a": "é"}
    assert canonical_json(value) == '{"a":"é","b":1}'
    assert stable_hash(value) == hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()[:16]


def test_stable_hash_changes_with_any_value() -> None:
    assert stable_hash({"num_envs": 1024}) != stable_hash({"num_envs": 2048})
    assert stable_hash({"steps": 1}) != stable_hash({"steps": "1"})


def test_identity_hashes_each_cover_their_own_inputs() -> None:
    base = IdentityRecord.of(
        launch={"task": "cartpole", "num_envs": 64},
        benchmark={"steps": 100},
        runtime=runtime_inputs({"versions.numpy": "2.0"}),
    )
    newer_numpy = IdentityRecord.of(
        launch=base.launch,
        benchmark=base.benchmark,
        runtime=runtime_inputs({"versions.numpy": "2.1"}),
    )
    assert base.launch_hash == newer_numpy.launch_hash
    assert base.benchmark_hash == newer_numpy.benchmark_hash
    assert base.runtime_hash != newer_numpy.runtime_hash
    assert base.launch_hash == stable_hash({"task": "cartpole", "num_envs": 64})
    assert base.runtime["runtime_contract_version"] == 1
