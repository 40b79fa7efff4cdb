"""Where results are recorded for people: MLflow, or nothing.

mlflow  MlflowTracker  one parent run per study, one child run per trial (``import mlflow``)
none    NullTracker    records nothing (``--no-mlflow``); Optuna storage keeps everything

``base.Tracker`` declares what the driver calls and the contract every tracker keeps;
``TRACKERS`` finds a tracker by name, and ``mlflow`` is imported only when it is asked for,
so that importing autotune (and everything on the node side) stays light.
"""

from __future__ import annotations

from autotune.tracking.base import TRACKERS, Tracker, TrackerOptions
from autotune.tracking.none import NullTracker

__all__ = ["TRACKERS", "NullTracker", "Tracker", "TrackerOptions", "make_tracker"]


def make_tracker(uri: str | None, enabled: bool = True, experiment: str = "autotune") -> Tracker:
    """The tracker for a run: MLflow at ``uri`` (None: ``./mlflow``), or ``none`` if disabled.

    Raises:
        TrackingError: the MLflow store cannot be opened.
    """
    name = "mlflow" if enabled else "none"
    return TRACKERS.get_class(name).create(TrackerOptions(uri=uri, experiment=experiment))
