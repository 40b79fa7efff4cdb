"""A tracker that never stops a study (``study/sync.py`` resends what a tracker missed).

The study's ledger (Optuna storage) is the source of truth; the tracker is a view of it. So
when the tracking server goes down mid-study, nothing needs buffering: ``ResilientTracker``
notes the failure, says once how to catch up, stops calling the backend for the rest of the
run (an unreachable HTTP server would otherwise cost its timeout on every trial), and the
study goes on. ``autotune sync`` later replays the ledger into the tracker; trackers log a
trial or a skip at most once, so what was already sent is not sent again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autotune.core.records import SkipLog, StudyInfo, TrialLog
from autotune.core.summary import StudySummary
from autotune.errors import TrackingError
from autotune.tracking.base import Tracker, TrackerOptions

_logger = logging.getLogger(__name__)


class ResilientTracker(Tracker):
    """A ``Tracker`` over another one; a ``TrackingError`` never reaches the driver.

    Not registered under a name: it wraps whichever tracker was asked for.

    Args:
        inner: the tracker that records (MLflow).
        on_error: told once, with the first error's message, when the backend fails.
    """

    name = "resilient"

    @classmethod
    def create(cls, options: TrackerOptions) -> ResilientTracker:
        """The default tracker (MLflow), wrapped."""
        from autotune.tracking.base import TRACKERS

        return cls(TRACKERS["mlflow"].create(options))

    def __init__(self, inner: Tracker, on_error: Callable[[str], None] | None = None) -> None:
        self.inner = inner
        self.on_error = on_error or (lambda message: _logger.warning("%s", message))
        self.missed = 0  # calls not made (or failed): what `autotune sync` will resend

    @property
    def down(self) -> bool:
        """Whether the backend failed during this run (what it missed is pending)."""
        return self.missed > 0

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        if self.down:
            self.missed += 1
            return None
        try:
            return fn(*args)
        except TrackingError as exc:
            self.missed += 1
            self.on_error(f"{exc} ({what}); the study goes on, nothing is lost")
            return None

    def connect(self) -> None:
        self._call("open", self.inner.connect)

    def start_study(self, info: StudyInfo) -> str | None:
        result: str | None = self._call("start", self.inner.start_study, info)
        return result

    def log_trial(self, log: TrialLog) -> None:
        self._call(f"trial {log.result.number}", self.inner.log_trial, log)

    def log_skip(self, log: SkipLog) -> None:
        self._call(f"skip {log.number}", self.inner.log_skip, log)

    def log_artifacts(self, paths: list[Path]) -> None:
        self._call("files", self.inner.log_artifacts, paths)

    def finish(self, summary: StudySummary) -> None:
        self._call("finish", self.inner.finish, summary)
