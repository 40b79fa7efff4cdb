"""Where results are recorded for people: MLflow, or nothing.

``mlflow`` is imported only by ``tracking/mlflow.py``, and only when a tracker is made, so
that importing autotune (and everything on the node side) stays light.
"""

from __future__ import annotations

from autotune.tracking.base import Tracker
from autotune.tracking.null import NullTracker

__all__ = ["NullTracker", "Tracker", "make_tracker"]


def make_tracker(uri: str | None, enabled: bool = True, experiment: str = "autotune") -> Tracker:
    """The tracker for a run: MLflow at ``uri`` (None: ``./mlflow``), or a no-op if disabled.

    Raises:
        TrackingError: the MLflow store cannot be opened.
    """
    if not enabled:
        return NullTracker()
    from autotune.tracking.mlflow import MlflowTracker

    return MlflowTracker(uri, experiment=experiment)
