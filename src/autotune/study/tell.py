"""Telling a trial: what Optuna is told about a proposal, and what the ledger writes down.

Every proposal ends here exactly once: a launched trial with its result (``tell_result``), a
proposal that was not launched (``tell_skip``), or one whose configuration was already
measured (``tell_repeat``). Each writes the trial's record through the ledger first (Optuna
takes no attribute on a finished trial), then tells Optuna the state, value and constraints
that ``outcome.verdict`` decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.core.records import CRASHES, SkipKind, SkipRecord, TrialRecord
from autotune.models import Cause, Failure, Outcome, Phase, TrialResult
from autotune.space.scenarios import slo_bounds
from autotune.space.schema import StudySpec
from autotune.study.deadends import DeadEnds
from autotune.study.ledger import Ledger
from autotune.study.outcome import PEAK, SKIP, verdict
from autotune.study.prune import saved_seconds

_EVIDENCE_KEPT = 20  # evidence lines stored per trial (the log has the rest)


@dataclass(frozen=True)
class Told:
    """What a finished trial came to."""

    outcome: Outcome  # the study's verdict (``slo_violated``, ``crashed``, ...)
    value: float | None  # the value Optuna was told, if any
    result: TrialResult  # the node's result with ``outcome`` set to the verdict


def _record(
    trial: optuna.Trial,
    config: dict[str, Any],
    result: TrialResult,
    outcome: Outcome,
    command: tuple[list[str], dict[str, str]],
    blame: list[str],
) -> TrialRecord:
    f = result.failure
    return TrialRecord(
        number=trial.number,
        state=TrialState.RUNNING.name,
        outcome=outcome,
        config=config,
        argv=command[0],
        env=command[1],
        log_path=result.log_path,
        simulated=result.simulated,
        node=result.node,
        gpu=result.gpu,
        engine_version=str(result.server_info.get("version") or ""),
        attempts=result.attempt,
        timings=result.timings,
        cleanup=result.cleanup,
        metrics=result.metrics.flat() if result.metrics is not None else {},
        cause=f.cause.value if f else None,
        phase=f.phase.value if f else None,
        hint=f.hint if f else "",
        evidence=f.evidence[:_EVIDENCE_KEPT] if f else [],
        message=(f.message or (f.evidence[0] if f.evidence else "")) if f else "",
        blame=blame,
        windows=result.windows,
        peak=result.peak.model_dump(mode="json") if result.peak is not None else None,
        scenarios=[r.model_dump(mode="json") for r in result.scenarios],
    )


def _failure(result: TrialResult, outcome: Outcome, metric: str) -> Failure:
    """The failure a crashed or timed-out trial is remembered by (for dead ends)."""
    if result.failure is not None:
        return result.failure
    if outcome is Outcome.CRASHED:  # e.g. it ran, but did not measure the objective
        return Failure(
            cause=Cause.BENCHMARK_ERRORS,
            phase=Phase.BENCHMARK,
            message=f"metric {metric!r} missing from the results",
        )
    return Failure(cause=Cause.UNKNOWN, phase=Phase.LAUNCH)


def tell_result(
    study: optuna.Study,
    ledger: Ledger,
    deadends: DeadEnds,
    spec: StudySpec,
    trial: optuna.Trial,
    config: dict[str, Any],
    result: TrialResult,
    command: tuple[list[str], dict[str, str]],
) -> Told:
    """Record and tell a launched trial's result.

    Args:
        study: the study the trial was asked from.
        ledger: where the record is written.
        deadends: remembers a permanent failure (and the study's copy is updated).
        spec: the space (objective and SLO).
        trial: the running trial.
        config: the configuration launched.
        result: what the node returned; ``infra`` here means its retries are used up.
        command: the real engine's ``(argv, env)`` for ``config``, redacted.
    """
    if result.outcome is Outcome.INFRA:  # not the configuration's fault: Optuna ignores it
        ledger.write_trial(
            trial._trial_id, _record(trial, config, result, Outcome.INFRA, command, [])
        )
        study.tell(trial, state=TrialState.FAIL)
        return Told(Outcome.INFRA, None, result)
    # Every scenario's SLO, under the names its metrics carry (chat.ttft_p99_ms).
    others = [m for m, _ in spec.objective.objectives[1:]]
    v = verdict(result, spec.objective.metric, slo_bounds(spec), others)
    blame: list[str] = []
    if v.outcome in CRASHES:
        dead = deadends.add(
            trial.number, config, _failure(result, v.outcome, spec.objective.metric)
        )
        if dead is not None:
            ledger.write_dead_ends(deadends.records)
            blame = [f"{k}={val!r}" for k, val in dead.blame.items()]
    record = _record(trial, config, result, v.outcome, command, blame)
    if v.outcome is Outcome.PRUNED and result.windows:  # stopped early by the pruner
        w = spec.workload
        saved = saved_seconds(result.windows, w.windows, w.peak > w.concurrency)
        record = record.model_copy(update={"pruned_saved_s": saved})
    ledger.write_trial(trial._trial_id, record)
    constraints = dict(v.constraints)
    if result.peak is not None and v.outcome is Outcome.OK:
        # Failed requests at peak load: its windows stand, but it can never win.
        constraints[PEAK] = 0.0 if result.peak.survived else 1.0
    for name, amount in constraints.items():
        trial.set_constraint(name, float(amount))
    if v.state == TrialState.COMPLETE and others:  # multi-objective: every value
        study.tell(trial, v.values)
    elif v.state == TrialState.COMPLETE:
        study.tell(trial, v.value)
    else:
        study.tell(trial, state=v.state)
    value = v.value if v.state == TrialState.COMPLETE else None
    return Told(v.outcome, value, result.model_copy(update={"outcome": v.outcome}))


def _skip_record(trial: optuna.Trial, config: dict[str, Any], skip: SkipRecord) -> TrialRecord:
    return TrialRecord(
        number=trial.number,
        state=TrialState.RUNNING.name,
        outcome=Outcome.PRUNED,
        cause=skip.kind.value if skip.kind is not SkipKind.REPEAT else None,
        message=f"not launched: {skip.reason}",
        config=config,
        skip=skip,
    )


def tell_skip(
    study: optuna.Study,
    ledger: Ledger,
    trial: optuna.Trial,
    config: dict[str, Any],
    skip: SkipRecord,
) -> None:
    """Record a proposal that was not launched; Optuna is told it is infeasible (it learns)."""
    ledger.write_trial(trial._trial_id, _skip_record(trial, config, skip))
    trial.set_constraint(SKIP, 1.0)
    study.tell(trial, state=TrialState.PRUNED)


def tell_repeat(
    study: optuna.Study,
    ledger: Ledger,
    trial: optuna.Trial,
    config: dict[str, Any],
    earlier: TrialRecord,
    value: float | None = None,
    others: Sequence[str] = (),
) -> SkipRecord:
    """Record a proposal already measured by ``earlier``: Optuna is told the same result.

    ``value``: what to tell (the median of the configuration's launches); ``earlier``'s own
    value when None. ``others``: a multi-objective study's other objectives, told from
    ``earlier``'s metrics.
    """
    several = value is not None and value != earlier.value
    reason = (
        f"same configuration as trial {earlier.number}, launched enough: "
        "the median of its launches is reused"
        if several
        else f"same configuration as trial {earlier.number}: its measurement is reused"
    )
    skip = SkipRecord(kind=SkipKind.REPEAT, reason=reason, same_as=earlier.number)
    ledger.write_trial(trial._trial_id, _skip_record(trial, config, skip))
    for name, amount in earlier.constraints.items():
        trial.set_constraint(name, amount)
    primary = value if value is not None else earlier.value
    rest = [earlier.metrics.get(m) for m in others]
    if others and primary is not None and all(v is not None for v in rest):
        study.tell(trial, [primary, *(float(v) for v in rest if v is not None)])
    else:
        study.tell(trial, primary)
    return skip


__all__ = ["Told", "tell_repeat", "tell_result", "tell_skip"]
