"""A tracker that records nothing (``--no-mlflow``)."""

from __future__ import annotations

from typing import Any

from autotune.models import TrialResult


class NullTracker:
    """Implements ``Tracker`` and does nothing; Optuna storage still holds everything."""

    parent_run_id: str | None = None

    def start_study(self, study: str, info: dict[str, Any]) -> None:
        """Do nothing."""

    def log_trial(self, result: TrialResult, params: dict[str, Any], extra: dict[str, Any]) -> None:
        """Do nothing."""

    def finish(self, summary: dict[str, Any]) -> None:
        """Do nothing."""
