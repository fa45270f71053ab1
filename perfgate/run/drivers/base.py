"""What a driver is: how a bucket's benchmark is launched and how its output is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfgate.config import Bucket, PhaseMarkers
from perfgate.errors import UsageError
from perfgate.run.bundle import MetricStats
from perfgate.run.container import ContainerProfile
from perfgate.run.execution import AttemptDirs, Invocation


class CheckoutUnsupported(UsageError):
    """The checkout cannot run the bucket's benchmark at all; the message says what was sought.

    Raised by ``Driver.invocation`` before anything is launched; in a run the bucket's
    result is a HARD_FAILURE in phase ``import`` (the checkout could not load the
    benchmark). Where nothing runs (``bench --dry-run``) it is a usage error (exit 4): the
    command was run from the wrong directory.
    """


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """What a driver read from one attempt's output."""

    stats: MetricStats
    runtime_fields: Mapping[str, Any] = field(default_factory=dict)
    # Every software version the output reports (hashed or not): stale-image evidence (R7).
    versions: Mapping[str, str] = field(default_factory=dict)
    # Further finite figures the output reports, keyed by their path (recorded, not gated).
    figures: Mapping[str, float] = field(default_factory=dict)
    # The bucket's further metrics found in the output, by name (``bundle.metric_values``).
    metrics: Mapping[str, float] = field(default_factory=dict)
    config_mismatch: str | None = None
    error: str | None = None
    output_file: Path | None = None

    @property
    def usable(self) -> bool:
        """True when the output was read and echoed the requested launch."""
        return self.error is None and self.config_mismatch is None


class Driver(Protocol):
    """A way to run one bucket's benchmark. A new driver is one module implementing this."""

    name: str
    version: str
    # Threads of numeric libraries when the bucket does not set ``threads`` (None: inherit).
    default_threads: int | None
    # What the benchmark needs from a container (R16); a bucket's container block overrides it.
    container: ContainerProfile
    # Launches share a cache kept warm across samples unless the bucket says ``cache: cold``.
    warm_cache: bool
    # The checkout's Git LFS content is part of the benchmark (assets): fetched for every
    # checkout perfgate makes (the merge base, replayed commits) and in the rendered jobs.
    needs_lfs: bool
    # (file, package) pins a warm cache's key follows: what compiled its kernels.
    cache_pins: tuple[tuple[str, str], ...]

    def markers(self, bucket: Bucket) -> PhaseMarkers:
        """Log markers that tell the failure phase."""
        ...

    def launch_inputs(self, bucket: Bucket) -> dict[str, Any]:
        """Driver-specific launch settings that change the experiment (hashed, R2)."""
        ...

    def invocation(self, bucket: Bucket, dirs: AttemptDirs, checkout: Path) -> Invocation:
        """The command for one attempt, writing into ``dirs.output_dir``."""
        ...

    def read(self, bucket: Bucket, dirs: AttemptDirs, invocation: Invocation) -> Measurement:
        """Read the attempt's output."""
        ...
