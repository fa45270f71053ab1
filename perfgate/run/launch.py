"""A bucket's launch: the settings a bench run works in, the identity and hashes of what
it launches, its warm cache and container, and its first command planned (nothing run)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate.config import AdmissionMode, AdmissionPolicy, Bucket, ImageSpec, Metric
from perfgate.context import RunContext
from perfgate.identity import BENCHMARK_CONTRACT_VERSION, metric_contract, stable_hash
from perfgate.result import CacheState, Hardware
from perfgate.run import container, staleness
from perfgate.run.allowance import Allowance
from perfgate.run.drivers import get_driver
from perfgate.run.execution import AttemptDirs, Invocation, with_cache_env
from perfgate.run.layout import SampleLayout, WarmCache


@dataclass(frozen=True, kw_only=True)
class BenchSettings:
    """Where a bench run works and what it runs on."""

    checkout: Path
    work_root: Path
    out_dir: Path
    hardware: Hardware
    context: RunContext
    # The benchmark's output, line by line, as it runs (None: quiet; the log file has it all).
    echo: Callable[[str], None] | None = None
    # Notices a person should see while it runs: each retry and why.
    say: Callable[[str], None] = lambda message: None
    # Is the machine fit to measure? Checked before and after every sample; the bench and
    # the seed pass perfgate.yaml's policy (off unless given: nothing to read otherwise).
    admission: AdmissionPolicy = field(
        default_factory=lambda: AdmissionPolicy(mode=AdmissionMode.OFF)
    )
    # perfgate.yaml's image block: with ``per_commit``, each checkout runs in its commit's image.
    image: ImageSpec | None = None
    # Where buckets keep their warm caches (None: under the work root, where CI restores them).
    warm_caches: Path | None = None
    # When the runner job began (seconds since the epoch; None: not known, as locally): its
    # setup, up to the first launch, is part of what the run cost (R17).
    job_started_at: float | None = None
    # What the run may spend beyond its plan, shared by every bucket it runs (R17).
    allowance: Allowance = field(default_factory=lambda: Allowance(None))

    @property
    def warm_root(self) -> Path:
        """The directory holding one warm cache per bucket (R16)."""
        return self.warm_caches or self.work_root / WARM_CACHE_DIR

    @property
    def base_warm_root(self) -> Path:
        """Where merge bases measured beside a change keep their warm caches: beside the
        buckets' own, never inside what CI restores and saves (each is keyed by its base
        commit, and would pile up there)."""
        return self.work_root / BASE_WARM_CACHE_DIR


#: Under the work root: one warm cache per bucket (R16), ``<file stem>``.
WARM_CACHE_DIR = "warm-cache"
#: Under the work root: the merge bases' warm caches, ``<file stem>.base-<commit>``.
BASE_WARM_CACHE_DIR = "warm-cache-bases"


@dataclass(frozen=True, kw_only=True)
class WarmCacheKeys:
    """Where a CI job keeps its buckets' warm caches and the actions-cache keys they are
    restored by: one cache for a lane (the buckets one runner job measures in turn).

    ``restore`` runs from the most specific prefix (every launch of the lane the same, with
    the driver's pins) to the widest (the same lane and pins), as upstream's restore-keys
    do; the key saved is the first plus the run's id, so each run saves its own (the cache
    rolls) and the next restores the newest.
    """

    path: str
    restore: tuple[str, str]


def warm_cache_keys(
    buckets: Sequence[Bucket], lane: str, checkout: Path, work_dir: Path
) -> WarmCacheKeys | None:
    """The warm-cache keys of the lane that measures ``buckets``, following their drivers'
    pins read from ``checkout`` (ConfigError when one cannot be read); None when every
    bucket runs cold."""
    warm = [b for b in buckets if cache_state(b) is CacheState.WARM]
    if not warm:
        return None
    pins = ""
    for file, package in dict.fromkeys(p for b in warm for p in get_driver(b.driver).cache_pins):
        version = staleness.required_pin(
            checkout, file, package, needed_by="the warm cache key", fix=file
        )
        pins += f"{package}{version}-"
    widest = f"perfgate-warm-{pins}{lane}-"
    launches = stable_hash(sorted(stable_hash(launch_identity(b)) for b in warm))
    return WarmCacheKeys(
        path=str(work_dir / WARM_CACHE_DIR), restore=(f"{widest}{launches}-", widest)
    )


def cache_state(bucket: Bucket) -> CacheState:
    """WARM when the bucket's launches share a warm cache (its ``cache``, else its driver's)."""
    mode = bucket.cache or ("warm" if get_driver(bucket.driver).warm_cache else "cold")
    return CacheState(mode)


def launch_identity(bucket: Bucket) -> dict[str, object]:
    """Everything that changes the experiment (hashed into ``launch_hash``)."""
    driver = get_driver(bucket.driver)
    threads = bucket.threads if bucket.threads is not None else driver.default_threads
    return {
        "task": bucket.task,
        "backend_key": bucket.backend_key,
        "physics": bucket.physics,
        "render": bucket.render,
        "driver": bucket.driver,
        "num_envs": bucket.num_envs,
        "steps": bucket.steps,
        "warmup_steps": bucket.warmup_steps,
        "seed": bucket.seed,
        # Only when set: buckets that leave threads alone keep the hashes they had.
        **({"threads": threads} if threads is not None else {}),
        # Cache state is part of the experiment (R16); cold buckets keep the hashes they had.
        **({"cache": "warm"} if cache_state(bucket) is CacheState.WARM else {}),
        **driver.launch_inputs(bucket),
    }


def benchmark_identity(bucket: Bucket, metric: Metric | None = None) -> dict[str, object]:
    """The measurement contract of ``metric`` (the primary's by default): ``benchmark_hash``."""
    driver = get_driver(bucket.driver)
    metric = metric or bucket.metric
    contract = {
        "benchmark_contract_version": BENCHMARK_CONTRACT_VERSION,
        "warmup_steps": bucket.warmup_steps,
        "steps": bucket.steps,
        "driver": driver.name,
        "driver_version": driver.version,
    }
    return metric_contract(contract, path=metric.path, direction=metric.direction.value)


#: What numeric libraries read for their thread count.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS")  # fmt: skip


def bucket_hashes(bucket: Bucket) -> tuple[str, str]:
    """The launch and benchmark hashes a run of ``bucket`` will carry (known before running)."""
    return stable_hash(launch_identity(bucket)), stable_hash(benchmark_identity(bucket))


def container_of(bucket: Bucket, image: ImageSpec | None = None) -> container.Container | None:
    """The bucket's container: its driver's profile with its ``container`` block's overrides
    (an image per commit carries the commit's own source); None when it runs on the host."""
    if bucket.container is None:
        return None
    resolved = container.resolve(bucket.container, get_driver(bucket.driver).container)
    per_commit = image is not None and image.per_commit is not None
    return resolved.for_own_source() if per_commit else resolved


def container_wrap(
    bucket: Bucket,
    settings: BenchSettings,
    layout: SampleLayout,
    *,
    env: Mapping[str, str] = os.environ,
    dry_run: bool = False,
) -> Callable[[Invocation, AttemptDirs], Invocation] | None:
    """The bucket's ``docker run`` wrapper, or None when it runs on the host. A ``dry_run``
    wrapper prepares nothing on the host and pulls nothing (an image per commit is named)."""
    resolved = container_of(bucket, settings.image)
    if resolved is None:
        return None
    image = container.image_for(
        resolved, env, f"bucket {bucket.id}", image=settings.image,
        checkout=settings.checkout, pull=not dry_run,
    )  # fmt: skip

    def wrap(invocation: Invocation, dirs: AttemptDirs) -> Invocation:
        if not dry_run:
            container.prepare(resolved, checkout=settings.checkout, dirs=dirs)
        return container.wrap(
            invocation,
            container=resolved,
            image=image,
            checkout=settings.checkout,
            dirs=dirs,
            name=layout.container_name(dirs.number),
        )

    return wrap


def thread_env(threads: int | None) -> dict[str, str]:
    """The environment that caps numeric libraries at ``threads`` (nothing when None)."""
    if threads is None:
        return {}
    return {name: str(threads) for name in THREAD_VARIABLES}


def run_key_of(run: RunContext) -> str:
    """What keys a run's per-attempt caches: run id, attempt and run label (R10), so two
    allocations of one qualification run (same run id and attempt) never share one."""
    ci = run.ci
    return "-".join(
        part for part in (ci.run_id or "local", ci.run_attempt or "1", ci.run_label) if part
    )


def launch_invocation(bucket: Bucket, checkout: Path, dirs: AttemptDirs) -> Invocation:
    """The driver's command for one launch, with the bucket's thread settings."""
    driver = get_driver(bucket.driver)
    threads = bucket.threads if bucket.threads is not None else driver.default_threads
    invocation = driver.invocation(bucket, dirs, checkout)
    return replace(invocation, env={**thread_env(threads), **invocation.env})


def warm_cache(bucket: Bucket, settings: BenchSettings, name: str | None) -> WarmCache | None:
    """The bucket's warm cache (``name`` under the warm root), or None when it runs cold."""
    if cache_state(bucket) is not CacheState.WARM:
        return None
    return WarmCache(path=settings.warm_root / (name or bucket.file_stem))


def sample_layout(
    bucket: Bucket,
    settings: BenchSettings,
    run_key: str,
    index: int,
    *,
    label: str | None = None,
    warm_name: str | None = None,
) -> SampleLayout:
    """Where sample ``index`` of ``bucket`` works (``label`` names its directory), with the
    bucket's warm cache (``warm_name`` under the warm root) when it runs warm."""
    return SampleLayout(
        work_root=settings.work_root,
        run_key=run_key,
        stem=bucket.file_stem,
        index=index,
        label=label,
        warm=warm_cache(bucket, settings, warm_name),
    )


@dataclass(frozen=True, kw_only=True)
class PlannedLaunch:
    """What a bucket's first sample would launch: the exact command, nothing run or made."""

    invocation: Invocation
    # The bucket's resolved container (None: it runs on the host).
    container: container.Container | None
    # The warm cache and its state now (None: each attempt starts from an empty cache).
    warm: WarmCache | None

    @property
    def warmup_first(self) -> bool:
        """True when the cache is cold now, so an unmeasured warm-up launch comes first."""
        return self.warm is not None and self.warm.state is CacheState.COLD


def plan_first_launch(
    bucket: Bucket, settings: BenchSettings, env: Mapping[str, str] = os.environ
) -> PlannedLaunch:
    """The first sample's first launch of ``bucket``, as :func:`run_bucket` would start it.

    Reads the checkout, nothing more: no link is made, no image pulled (an image per
    commit is named, not awaited). Raises what planning raises (CheckoutUnsupported, a
    ConfigError for a container without an image).
    """
    layout = sample_layout(bucket, settings, run_key_of(settings.context), 0)
    dirs = AttemptDirs(number=1, output_dir=layout.output_dir(1), cache_dir=layout.cache_dir(1))
    invocation = with_cache_env(launch_invocation(bucket, settings.checkout, dirs), dirs.cache_dir)
    wrap = container_wrap(bucket, settings, layout, env=env, dry_run=True)
    return PlannedLaunch(
        invocation=wrap(invocation, dirs) if wrap is not None else invocation,
        container=container_of(bucket, settings.image),
        warm=layout.warm,
    )
