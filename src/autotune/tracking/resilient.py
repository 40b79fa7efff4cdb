"""A tracker that never stops a study, and ``sync``: resend what a tracker missed.

The study's ledger (Optuna storage) is the source of truth; the tracker is a view of it. So
when the tracking server goes down mid-study, nothing needs buffering: ``ResilientTracker``
notes the failure, says once how to catch up, stops calling the backend for the rest of the
run (an unreachable HTTP server would otherwise cost its timeout on every trial), and the
study goes on. ``sync`` later replays the ledger into the tracker; trackers log a trial or a
skip at most once, so what was already sent is not sent again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna

from autotune.errors import TrackingError
from autotune.models import Cause, Failure, Metrics, Outcome, Phase, TrialResult
from autotune.records import SkipLog, StudyInfo, StudySummary, TrialLog, TrialRecord
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


def _result(study: str, record: TrialRecord) -> TrialResult:
    """The ``TrialResult`` a launched trial's stored record stands for (for a resend)."""
    failure = None
    if record.cause is not None:
        try:
            failure = Failure(
                cause=Cause(record.cause),
                phase=Phase(record.phase or Phase.LAUNCH.value),
                hint=record.hint,
                message=record.message,
                evidence=record.evidence,
            )
        except ValueError:  # a cause or phase this version does not know
            failure = None
    return TrialResult(
        study=study,
        number=record.number,
        outcome=record.outcome or Outcome.CRASHED,
        metrics=Metrics(extra=record.metrics) if record.metrics else None,
        failure=failure,
        timings=record.timings
        or TrialResult.model_fields["timings"].get_default(call_default_factory=True),
        cleanup=record.cleanup
        or TrialResult.model_fields["cleanup"].get_default(call_default_factory=True),
        log_path=record.log_path,
        node=record.node,
        gpu=record.gpu,
        simulated=record.simulated,
        attempt=record.attempts,
    )


def sync(study: optuna.Study, tracker: Tracker, info: StudyInfo) -> tuple[int, int]:
    """Send the whole study to ``tracker``: its record, every trial and skip, its summary.

    Returns:
        ``(trials, skips)`` handed over (those already recorded are kept once by the tracker).

    Raises:
        TrackingError: the tracker is still unreachable.
    """
    from autotune.study.ledger import Ledger

    ledger = Ledger(study)
    run_id = tracker.start_study(
        info.model_copy(update={"run_id": ledger.study_record().tracker_run})
    )
    if run_id:
        ledger.set_tracker_run(run_id)
    trials = ledger.trials()
    sent = skipped = 0
    for record in trials:
        if record.skip is not None:
            tracker.log_skip(
                SkipLog(
                    study=info.study, number=record.number, config=record.config, skip=record.skip
                )
            )
            skipped += 1
        elif record.launched or record.outcome is Outcome.INFRA:
            tracker.log_trial(
                TrialLog(
                    study=info.study,
                    result=_result(info.study, record),
                    config=record.config,
                    argv=record.argv,
                    env=record.env,
                    baseline=record.baseline,
                )
            )
            sent += 1
    tracker.finish(ledger.summary(trials))
    return sent, skipped
