"""The tracker interface (where results are recorded for people to compare) and its registry.

A tracker is a view of the study, never its source of truth (that is Optuna storage, see
``study/ledger.py``): it records what the driver hands it and decides nothing.
``tests/tracking/test_tracker_contract.py`` runs one suite against every registered tracker.
Trackers register by name next to their class, and a name's module is imported only when
it is asked for (``mlflow`` is heavy)::

    @TRACKERS.register
    class MlflowTracker(Tracker):
        name = "mlflow"
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from autotune.core.records import SkipLog, StudyInfo, TrialLog
from autotune.core.registry import Registry
from autotune.core.summary import StudySummary


@dataclass(frozen=True)
class TrackerOptions:
    """What the CLI knows when it makes a tracker, whichever one it is.

    Args:
        uri: where to record (MLflow: a tracking URI or folder; None: the default store).
        experiment: the group studies are recorded under (an MLflow experiment).
        cwd: the folder a default store is relative to (None: the current directory).
    """

    uri: str | None = None
    experiment: str = "autotune"
    cwd: Path | None = None


class Tracker(abc.ABC):
    """Records a study and its trials; decides nothing.

    The contract every implementation keeps:

    - ``start_study`` is called once per run of the driver, before any ``log_trial``; a
      resumed study calls it again with ``info.run_id`` set to what the first call returned,
      and the tracker reopens that record instead of making a second one.
    - ``log_trial`` records one finished trial. Logging the same trial and attempt again
      (a resume after an interrupted log) leaves it recorded once.
    - ``finish`` closes the study's record with its summary; ``start_study`` may follow
      (the next resume).
    - Secrets never reach the store in clear: argv, env, storage URLs and logs are redacted.
    - Every failure of the backend leaves as ``TrackingError``; ``log_trial`` before
      ``start_study`` is a ``TrackingError`` too.
    - Nothing the tracker returns changes the study, except the id ``start_study`` returns,
      which the driver stores for the next resume.
    """

    name: ClassVar[str]  # the registry name

    @classmethod
    @abc.abstractmethod
    def create(cls, options: TrackerOptions) -> Tracker:
        """Make the tracker from the CLI's options.

        Raises:
            TrackingError: its store cannot be opened.
        """

    def connect(self) -> None:
        """Open the store now (creating it on first use), so that ``start_study`` is quick.

        Optional: the CLI calls it while the executor starts; ``start_study`` opens the store
        itself when it was not called. Calling it changes nothing a study records.

        Raises:
            TrackingError: the backend failed.
        """
        return None

    @abc.abstractmethod
    def start_study(self, info: StudyInfo) -> str | None:
        """Open (or reopen, on resume) the study's record.

        Returns:
            The id of the record, to pass back as ``StudyInfo.run_id`` on resume; None when
            there is nothing to reopen.

        Raises:
            TrackingError: the backend failed.
        """

    @abc.abstractmethod
    def log_trial(self, log: TrialLog) -> None:
        """Record one finished trial as part of the study.

        Raises:
            TrackingError: the backend failed, or ``start_study`` was not called.
        """

    @abc.abstractmethod
    def log_skip(self, log: SkipLog) -> None:
        """Record a proposal that was not launched, with its reason (every proposal is seen).

        Raises:
            TrackingError: the backend failed, or ``start_study`` was not called.
        """

    @abc.abstractmethod
    def log_artifacts(self, paths: list[Path]) -> None:
        """Attach files to the study's record (report, plots, launch script).

        Raises:
            TrackingError: the backend failed.
        """

    @abc.abstractmethod
    def finish(self, summary: StudySummary) -> None:
        """Close the study's record with its summary (best value, counts).

        Raises:
            TrackingError: the backend failed.
        """


# Looked up by name: the module named like the tracker first (``autotune.tracking.mlflow``),
# then every public module of the package, then entry points ``autotune.trackers``.
TRACKERS: Registry[Tracker] = Registry(
    "tracker", "autotune.tracking", "autotune.trackers", "--tracker"
)

__all__ = ["TRACKERS", "Tracker", "TrackerOptions"]
