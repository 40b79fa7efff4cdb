"""``autotune sync``: replay a study's ledger into a tracker that missed part of it.

The ledger (Optuna storage) is the source of truth and a tracker only a view of it, so a
tracking server that was down mid-study (``tracking/resilient.py`` kept the study going) is
caught up from the ledger; trackers log a trial or a skip at most once. It lives with the
study because it reads one (the tracking layer does not read Optuna).
"""

from __future__ import annotations

import optuna
from pydantic import ValidationError

from autotune.core.records import SkipLog, StudyInfo, TrialLog, TrialRecord
from autotune.models import (
    Cause,
    Failure,
    Metrics,
    Outcome,
    Phase,
    ScenarioResult,
    TrialResult,
)
from autotune.study.ledger import Ledger
from autotune.tracking.base import Tracker


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
        scenarios=_scenarios(record),
    )


def _scenarios(record: TrialRecord) -> list[ScenarioResult]:
    """Each scenario's result and sweep steps, so a resend logs them too."""
    out = []
    for data in record.scenarios:
        try:
            out.append(ScenarioResult.model_validate(data))
        except ValidationError:  # written by another version: the metrics still go
            continue
    return out


def sync(study: optuna.Study, tracker: Tracker, info: StudyInfo) -> tuple[int, int]:
    """Send the whole study to ``tracker``: its record, every trial and skip, its summary.

    Returns:
        ``(trials, skips)`` handed over (those already recorded are kept once by the tracker).

    Raises:
        TrackingError: the tracker is still unreachable.
    """
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
                    proposed_by=record.proposed_by,
                )
            )
            sent += 1
    tracker.finish(ledger.summary(trials))
    return sent, skipped
