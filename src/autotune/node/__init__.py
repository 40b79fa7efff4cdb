"""The node side: runs one trial on a GPU node and reports a TrialResult.

Imports only the standard library, httpx, pydantic, psutil, NVML and ``autotune.models`` /
``autotune.errors``: never Optuna, Ray or MLflow.
"""

from autotune.node.failures import classify, diagnose_file
from autotune.node.process import free_port
from autotune.node.runner import run_trial

__all__ = ["classify", "diagnose_file", "free_port", "run_trial"]
