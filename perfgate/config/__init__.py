"""perfgate.yaml, parsed and validated into frozen dataclasses (docs/design.md R1, R14).

Shared vocabulary, like ``result`` or ``errors``: every stage reads a ``Config`` and no
module here imports a stage. The model is ``policy`` (gate, window, qualification,
admission, report, alerts), ``bucket`` (a bucket, its metrics and driver settings),
``image`` (R11) and ``model`` (the whole file); ``load`` reads a file, ``expand`` turns a
bucket entry into buckets, ``checks`` holds what the schema cannot say (R14), and
``messages`` says each problem on one line.
"""

from perfgate.config.bucket import (
    COMMAND_PLACEHOLDERS,
    DEFAULT_KEEP_ENV,
    PRIMARY,
    Bucket,
    CommandSpec,
    ContainerSpec,
    DemoSpec,
    Direction,
    Floor,
    FloorKind,
    IsaacLabSpec,
    Metric,
    PhaseMarkers,
    summed_path,
)
from perfgate.config.checks import (
    branch_problem,
    image_reference_problem,
    path_problem,
    placeholder_problem,
)
from perfgate.config.image import (
    IMAGE_PLACEHOLDERS,
    PER_COMMIT_PLACEHOLDERS,
    ROLL_PLACEHOLDERS,
    ImageBuild,
    ImageRoll,
    ImageSpec,
    PinInput,
)
from perfgate.config.load import load_config
from perfgate.config.model import DEFAULT_CONFIG, Config
from perfgate.config.policy import (
    DEFAULT_THROTTLE_REASONS,
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
)

__all__ = [
    "COMMAND_PLACEHOLDERS",
    "DEFAULT_CONFIG",
    "DEFAULT_KEEP_ENV",
    "DEFAULT_THROTTLE_REASONS",
    "IMAGE_PLACEHOLDERS",
    "PER_COMMIT_PLACEHOLDERS",
    "PRIMARY",
    "ROLL_PLACEHOLDERS",
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
    "CpuAdmission",
    "DemoSpec",
    "Direction",
    "FileRef",
    "Floor",
    "FloorKind",
    "GatePolicy",
    "GpuAdmission",
    "ImageBuild",
    "ImageRoll",
    "ImageSpec",
    "IsaacLabSpec",
    "Metric",
    "Mode",
    "OraclePolicy",
    "PhaseMarkers",
    "PinInput",
    "PolicyName",
    "QualifyPolicy",
    "ReportSpec",
    "branch_problem",
    "image_reference_problem",
    "load_config",
    "path_problem",
    "placeholder_problem",
    "summed_path",
]
