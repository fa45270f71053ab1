"""Each bucket's runner models, fitted as its samples are stored (``<backend>.runners``).

The gate judges a run on its runner's terms (:mod:`perfgate.judge.runner_offsets`): runner
offsets and whole-run falls learned from ``gate.baseline.history_runs`` runs of history.
Reading and fitting that history for every bucket of every pull request made the gate
several times the cost of reading its windows, so the writer fits it once, as it appends,
and the gate reads the window and this file only.

One file per bucket, beside its live segment, with one model per window digest (an
experiment and metric) that has lines in the live segment. Its first line names the live
segment blob it was fitted with and the history depth (``perfgate-runners 1 <blob id>
<history runs>``); then one line per digest: ``<digest> <model as JSON>``. A reader trusts
it only when it names the live segment's current blob and the reader's own depth, so
samples appended by an older writer, a hand edit or another depth fall back to learning
the model from the history, as before: never a model of other samples.

The writer's history is the branch's own, in the order samples were stored (newest
first), where the gate's fallback orders a window's history by ancestry from the merge
base. On a target branch whose pushes publish in order the two are the same runs.

Everything here is pure: the store reads and writes the files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from perfgate.baselines.samples import Sample
from perfgate.baselines.segments import Entry, runner_name
from perfgate.config import Direction
from perfgate.judge.runner_offsets import Excursions, Offset, RunnerModel, StoredRun, fit_runners

RUNNERS_MAGIC = "perfgate-runners"
RUNNERS_VERSION = "1"
# No fitted offset, spread or fall comes near a factor of e (log units): past it, the
# file was edited by hand.
_MOST_G = 1.0


def runners_path(live_path: str) -> str:
    """The runner models of a bucket, beside its live segment."""
    return live_path.removesuffix(".ndjson") + ".runners"


def fit_models(
    newest_first: Iterable[Entry | None],
    wanted: Mapping[str, Direction],
    history_runs: int,
) -> dict[str, RunnerModel]:
    """The runner model of each ``wanted`` digest, from its nearest ``history_runs`` runs of
    ``newest_first`` (index entries, the newest stored first), as the gate would fit them."""
    runs: dict[str, dict[tuple[str, str], tuple[str | None, list[float]]]] = {d: {} for d in wanted}
    open_digests = set(wanted)
    for entry in newest_first:
        if not open_digests:
            break
        if not isinstance(entry, tuple) or entry[2] not in open_digests:
            continue
        commit, stamp, digest, figure, runner, _ = entry
        found = runs[digest]
        key = (commit, stamp)
        if key not in found:
            if len(found) == history_runs:
                open_digests.discard(digest)
                continue
            found[key] = (runner_name(runner), [])
        found[key][1].append(float(figure))
    return {
        digest: fit_runners(
            [StoredRun(runner=name, values=tuple(values)) for name, values in found.values()],
            wanted[digest],
        )
        for digest, found in runs.items()
    }


def wanted_digests(samples: Sequence[Sample]) -> dict[str, Direction]:
    """The digests (and directions) whose models an append of ``samples`` changes."""
    return {sample.window_digest: Direction(sample.direction) for sample in samples}


def render_runner_file(
    segment_blob: str, history_runs: int, models: Mapping[str, RunnerModel]
) -> str:
    """The file of ``models``, fitted over ``history_runs`` runs with live segment blob
    ``segment_blob``."""
    out = [f"{RUNNERS_MAGIC} {RUNNERS_VERSION} {segment_blob} {history_runs}\n"]
    for digest in sorted(models):
        text = json.dumps(_model_json(models[digest]), sort_keys=True, separators=(",", ":"),
                          allow_nan=False)  # fmt: skip
        out.append(f"{digest} {text}\n")
    return "".join(out)


def parse_runner_file(
    data: bytes | str | None, segment_blob: str, history_runs: int
) -> dict[str, RunnerModel]:
    """The models of a file fitted with live segment ``segment_blob`` over ``history_runs``
    runs; none when it names another blob or depth; a digest whose line is not a model
    (edited by hand) is left out, so its window learns its model from the history."""
    if not data:
        return {}
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    head, _, body = text.partition("\n")
    if head.split() != [RUNNERS_MAGIC, RUNNERS_VERSION, segment_blob, str(history_runs)]:
        return {}
    models = {}
    for line in body.splitlines():
        digest, _, payload = line.partition(" ")
        try:
            models[digest] = _model_of(json.loads(payload, parse_constant=_not_finite))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
    return models


def kept_models(
    previous: Mapping[str, RunnerModel],
    live: Sequence[Entry | None],
    refitted: Mapping[str, RunnerModel],
) -> dict[str, RunnerModel]:
    """The models a new file holds: ``refitted`` ones, and ``previous`` ones of digests that
    still have lines in the ``live`` segment (no new line: the same runs, the same model)."""
    present = {entry[2] for entry in live if isinstance(entry, tuple)}
    kept = {digest: model for digest, model in previous.items() if digest in present}
    return kept | dict(refitted)


def _model_json(model: RunnerModel) -> dict[str, Any]:
    found = model.excursions
    return {
        "direction": model.direction.value,
        "runs": model.runs,
        "tau": model.tau,
        "offsets": {name: [o.g, o.var, o.runs] for name, o in model.offsets.items()},
        "excursions": None if found is None else [found.count, found.runs, list(found.falls)],
    }


def _model_of(data: dict[str, Any]) -> RunnerModel:
    """A model from its JSON; ValueError (or TypeError, KeyError) when it is not one."""
    offsets = {}
    for name, (g, var, runs) in data["offsets"].items():
        if not isinstance(name, str) or abs(_number(g)) > _MOST_G or _number(var) < 0:
            raise ValueError(f"offset of {name!r} out of range")
        offsets[name] = Offset(g=float(g), var=float(var), runs=_count(runs))
    tau = _number(data["tau"])
    if not 0.0 <= tau <= _MOST_G:
        raise ValueError("tau out of range")
    excursions = None
    if data["excursions"] is not None:
        count, runs, falls = data["excursions"]
        # Every fall a float (JSON parsing refused NaN and infinities), deepest first.
        if not all(type(f) is float for f in falls) or falls != sorted(falls, reverse=True):
            raise ValueError("falls are not numbers, deepest first")
        if falls and not 0.0 < falls[-1] <= falls[0] <= _MOST_G:
            raise ValueError("falls out of range")
        excursions = Excursions(falls=tuple(falls), count=_count(count), runs=_count(runs))
    return RunnerModel(direction=Direction(data["direction"]), offsets=offsets, tau=tau,
                       runs=_count(data["runs"]), excursions=excursions)  # fmt: skip


def _not_finite(name: str) -> float:
    raise ValueError(f"not a finite number: {name}")


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return float(value)


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value
