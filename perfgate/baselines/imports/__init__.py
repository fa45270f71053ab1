"""Importing an existing history: another tool's benchmark record becomes baseline samples.

``history`` is what every source reads into (runs of a suite at a commit), ``datajs`` and
``asv`` read github-action-benchmark's ``data.js`` and an asv results directory, and
``mapping`` puts each run's benchmarks onto the metrics of perfgate.yaml that name them and
writes the samples through the store's one write path, each checked as a publish's (R9).
"""

from perfgate.baselines.imports.asv import read_asv
from perfgate.baselines.imports.datajs import read_data_js
from perfgate.baselines.imports.history import (
    IMPORTED_HARDWARE,
    TRUSTED_SOURCE,
    History,
    HistoryError,
    HistoryRun,
)
from perfgate.baselines.imports.mapping import ImportPlan, MappedMetric, plan_import, record

__all__ = [
    "IMPORTED_HARDWARE",
    "TRUSTED_SOURCE",
    "History",
    "HistoryError",
    "HistoryRun",
    "ImportPlan",
    "MappedMetric",
    "plan_import",
    "read_asv",
    "read_data_js",
    "record",
]
