"""Identity hashes (docs/design.md R2): what makes two measurements comparable."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

BENCHMARK_CONTRACT_VERSION = 1
RUNTIME_CONTRACT_VERSION = 1


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators: the same value always gives the same text."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def stable_hash(value: Any, length: int = 16) -> str:
    """sha256 of the canonical JSON of ``value``, first ``length`` hex digits."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


def metric_contract(benchmark: Mapping[str, Any], *, path: str, direction: str) -> dict[str, Any]:
    """One metric's measurement contract: the bucket's, naming that metric's figure and direction.

    Its hash keeps each metric's samples in windows of their own; the name is left out, so a
    renamed metric keeps its baseline.
    """
    return {**benchmark, "metric_path": path, "direction": direction}


def runtime_inputs(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Wrap the runtime contract fields with the contract version."""
    return {"runtime_contract_version": RUNTIME_CONTRACT_VERSION, "fields": dict(fields)}
