"""The tracker interface: where results are recorded for people to compare."""

from __future__ import annotations

from typing import Any, Protocol

from autotune.models import TrialResult


class Tracker(Protocol):
    """Records a study and its trials; decides nothing."""

    def start_study(self, study: str, info: dict[str, Any]) -> None:
        """Open (or reopen, on resume) the parent record of a study."""
        ...

    def log_trial(self, result: TrialResult, params: dict[str, Any], extra: dict[str, Any]) -> None:
        """Record one finished trial as a child of the study."""
        ...

    def finish(self, summary: dict[str, Any]) -> None:
        """Close the study's record with its summary (best value, counts)."""
        ...
