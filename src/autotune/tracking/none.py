"""A tracker that records nothing (``--no-mlflow``): Optuna storage still holds everything."""

from __future__ import annotations

from pathlib import Path

from autotune.core.records import SkipLog, StudyInfo, TrialLog
from autotune.core.summary import StudySummary
from autotune.errors import TrackingError
from autotune.tracking.base import TRACKERS, Tracker, TrackerOptions


@TRACKERS.register
class NullTracker(Tracker):
    """Records nothing; it still keeps the call order of the contract."""

    name = "none"

    def __init__(self) -> None:
        self._started = False

    @classmethod
    def create(cls, options: TrackerOptions) -> NullTracker:
        """A tracker that needs no store."""
        return cls()

    def start_study(self, info: StudyInfo) -> str | None:
        """Record nothing; there is no record to reopen on resume."""
        self._started = True
        return None

    def log_trial(self, log: TrialLog) -> None:
        """Record nothing.

        Raises:
            TrackingError: ``start_study`` was not called (a driver bug, caught the same way
                whichever tracker is used).
        """
        if not self._started:
            raise TrackingError("log_trial called before start_study")

    def log_skip(self, log: SkipLog) -> None:
        """Record nothing (``start_study`` must have been called)."""
        if not self._started:
            raise TrackingError("log_skip called before start_study")

    def log_artifacts(self, paths: list[Path]) -> None:
        """Record nothing."""

    def finish(self, summary: StudySummary) -> None:
        """Record nothing."""
