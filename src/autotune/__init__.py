"""autotune: an autotuner for LLM inference servers.

An Optuna study over launch flags and environment variables; every trial is one server
launched, benchmarked and torn down; results go to MLflow; the best configuration is exported
as a launch command.
"""

from autotune.errors import (
    AutotuneError,
    ConfigError,
    DispatchError,
    LaunchError,
    PlacementError,
    StudyError,
    TrackingError,
)
from autotune.models import (
    Cause,
    Failure,
    Metrics,
    Outcome,
    Phase,
    Rule,
    TrialResult,
    TrialSpec,
    Workload,
)

__version__ = "0.1.0"

__all__ = [
    "AutotuneError",
    "Cause",
    "ConfigError",
    "DispatchError",
    "Failure",
    "LaunchError",
    "Metrics",
    "Outcome",
    "Phase",
    "PlacementError",
    "Rule",
    "StudyError",
    "TrackingError",
    "TrialResult",
    "TrialSpec",
    "Workload",
    "__version__",
]
