"""perfgate.yaml, parsed and validated into frozen dataclasses (docs/design.md R1, R14).

Shared vocabulary, like ``result`` or ``errors``: every stage reads a ``Config`` and no
module here imports a stage. The model is ``policy`` (gate, window, qualification,
admission, report, alerts), ``bucket`` (a bucket, its metrics and driver settings),
``image`` (R11) and ``model`` (the whole file); ``load`` reads a file, ``expand`` turns a
bucket entry into buckets, ``checks`` holds what the schema cannot say (R14), and
``messages`` says each problem on one line.
"""

from perfgate.config.bucket import (
    DEFAULT_KEEP_ENV,
    MAX_METRICS,
    PRIMARY,
    Bucket,
    CommandSpec,
    ContainerSpec,
    Direction,
    Floor,
    FloorKind,
    IsaacLabSpec,
    Metric,
    OutputFormat,
    PhaseMarkers,
)
from perfgate.config.checks import branch_problem, image_reference_problem
from perfgate.config.image import ImageRoll, ImageSpec
from perfgate.config.load import load_config
from perfgate.config.model import DEFAULT_CONFIG, Config
from perfgate.config.policy import (
    ActionRef,
    AdmissionMode,
    AdmissionPolicy,
    AlertsSpec,
    BaselinePolicy,
    ConfirmMode,
    FileRef,
    GatePolicy,
    Mode,
    OraclePolicy,
    PolicyName,
    QualifyPolicy,
    RunnerIdentity,
)

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_KEEP_ENV",
    "MAX_METRICS",
    "PRIMARY",
    "ActionRef",
    "AdmissionMode",
    "AdmissionPolicy",
    "AlertsSpec",
    "BaselinePolicy",
    "Bucket",
    "CommandSpec",
    "Config",
    "ConfirmMode",
    "ContainerSpec",
    "Direction",
    "FileRef",
    "Floor",
    "FloorKind",
    "GatePolicy",
    "ImageRoll",
    "ImageSpec",
    "IsaacLabSpec",
    "Metric",
    "Mode",
    "OraclePolicy",
    "OutputFormat",
    "PhaseMarkers",
    "PolicyName",
    "QualifyPolicy",
    "RunnerIdentity",
    "branch_problem",
    "image_reference_problem",
    "load_config",
]
