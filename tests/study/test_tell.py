"""Telling trials: what Optuna is told and what the ledger records, on a real Optuna study."""

from __future__ import annotations

from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from autotune.core.records import SkipKind, SkipRecord
from autotune.models import Cause, Failure, Metrics, Outcome, Phase, Stats, TrialResult
from autotune.space.schema import StudySpec
from autotune.study.deadends import DeadEnds
from autotune.study.ledger import Ledger
from autotune.study.outcome import CRASH, SKIP, SLO
from autotune.study.tell import tell_repeat, tell_result, tell_skip

SPEC = StudySpec.model_validate(
    {
        "engine": {"name": "sglang"},
        "model": "m",
        "parameters": [
            {"name": "backend", "type": "categorical", "flag": "--backend", "choices": ["a", "b"]}
        ],
        "slo": {"ttft_p99_ms": 100.0},
    }
)
COMMAND = (["srv", "--backend", "a"], {"HF_TOKEN": "***"})


@pytest.fixture
def study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(direction="maximize")


def _ask(study: optuna.Study) -> optuna.Trial:
    trial = study.ask()
    trial.suggest_categorical("backend", ["a", "b"])
    return trial


def _tell(study: optuna.Study, result: TrialResult, deadends: DeadEnds | None = None) -> Any:
    trial = _ask(study)
    told = tell_result(
        study,
        Ledger(study),
        deadends or DeadEnds(SPEC),
        SPEC,
        trial,
        {"backend": "a"},
        result,
        COMMAND,
    )
    return told, Ledger(study).trial(trial.number), study.trials[trial.number]


def test_ok_is_complete_with_its_measurement(study: optuna.Study) -> None:
    result = TrialResult(
        study="s", number=0, outcome=Outcome.OK, node="n1", metrics=Metrics(output_tok_s=50.0)
    )
    told, record, frozen = _tell(study, result)
    assert told.outcome is Outcome.SLO_VIOLATED  # no ttft measured: the bound counts as missed
    assert frozen.state == TrialState.COMPLETE and frozen.value == 50.0
    assert frozen.constraints[SLO] > 0
    assert record.outcome is Outcome.SLO_VIOLATED and record.value == 50.0
    assert record.argv == COMMAND[0] and record.env == COMMAND[1] and record.node == "n1"
    assert told.result.outcome is Outcome.SLO_VIOLATED  # what the tracker is given


def test_crash_is_recorded_remembered_and_blamed(study: optuna.Study) -> None:
    deadends = DeadEnds(SPEC)
    failure = Failure(
        cause=Cause.ARCH_UNSUPPORTED,
        phase=Phase.LOAD,
        blame=["--backend"],
        evidence=[f"line {i}" for i in range(30)],
    )
    result = TrialResult(study="s", number=0, outcome=Outcome.CRASHED, failure=failure)
    told, record, frozen = _tell(study, result, deadends)
    assert told.outcome is Outcome.CRASHED and told.value is None
    assert frozen.state == TrialState.PRUNED and frozen.constraints == {CRASH: 1.0}
    assert record.cause == "arch_unsupported" and record.blame == ["backend='a'"]
    assert len(record.evidence) == 20 and record.message == "line 0"
    assert Ledger(study).dead_ends() == deadends.records and len(deadends.records) == 1


def test_infra_after_the_last_retry_is_a_failed_trial_not_a_crash(study: optuna.Study) -> None:
    failure = Failure(cause=Cause.PORT_IN_USE, phase=Phase.LAUNCH, permanent=False)
    result = TrialResult(study="s", number=0, outcome=Outcome.INFRA, failure=failure, attempt=2)
    told, record, frozen = _tell(study, result)
    assert told.outcome is Outcome.INFRA and frozen.state == TrialState.FAIL
    assert record.outcome is Outcome.INFRA and record.attempts == 2
    assert Ledger(study).dead_ends() == []


def test_missing_metric_is_a_crash_remembered_as_benchmark_errors(study: optuna.Study) -> None:
    deadends = DeadEnds(SPEC)
    result = TrialResult(study="s", number=0, outcome=Outcome.OK, metrics=Metrics())
    spec = SPEC.model_copy(
        update={"objective": SPEC.objective.model_copy(update={"metric": "accept_length"})}
    )
    trial = _ask(study)
    told = tell_result(
        study, Ledger(study), deadends, spec, trial, {"backend": "a"}, result, COMMAND
    )
    assert told.outcome is Outcome.CRASHED
    assert [d.cause for d in deadends.records] == ["benchmark_errors"]


@pytest.mark.parametrize("kind", [SkipKind.CONSTRAINT, SkipKind.DEAD_END, SkipKind.PREDICTED_CRASH])
def test_a_skip_is_infeasible_and_keeps_its_kind(study: optuna.Study, kind: SkipKind) -> None:
    trial = _ask(study)
    tell_skip(study, Ledger(study), trial, {"backend": "b"}, SkipRecord(kind=kind, reason="why"))
    record = Ledger(study).trial(trial.number)
    frozen = study.trials[trial.number]
    assert frozen.state == TrialState.PRUNED and frozen.constraints == {SKIP: 1.0}
    assert record.skip == SkipRecord(kind=kind, reason="why") and record.cause == kind.value
    assert record.message == "not launched: why" and record.outcome is Outcome.PRUNED
    assert record.log_path is None and not record.launched


def test_a_repeat_is_told_the_earlier_measurement(study: optuna.Study) -> None:
    result = TrialResult(
        study="s", number=0, outcome=Outcome.OK, metrics=Metrics(output_tok_s=70.0)
    )
    _tell(study, result)
    earlier = Ledger(study).measured({"backend": "a"})
    assert earlier is not None
    trial = _ask(study)
    skip = tell_repeat(study, Ledger(study), trial, {"backend": "a"}, earlier)
    frozen = study.trials[trial.number]
    assert skip.kind is SkipKind.REPEAT and skip.same_as == 0
    assert frozen.state == TrialState.COMPLETE and frozen.value == 70.0
    assert frozen.constraints == study.trials[0].constraints
    assert Ledger(study).trial(trial.number).cause is None  # reused, not a failure


def test_a_multi_objective_trial_is_told_every_value_and_a_repeat_too() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"])
    spec = SPEC.model_copy(
        update={
            "objective": SPEC.objective.model_validate(
                {
                    "metrics": [
                        {"metric": "output_tok_s", "direction": "maximize"},
                        {"metric": "ttft_p99_ms", "direction": "minimize"},
                    ]
                }
            ),
            "slo": {},
        }
    )
    ttft = Stats(mean=40.0, p50=40.0, p90=45.0, p99=50.0)
    result = TrialResult(
        study="s",
        number=0,
        outcome=Outcome.OK,
        metrics=Metrics(output_tok_s=70.0, ttft_ms=ttft),
    )
    trial = _ask(study)
    told = tell_result(
        study, Ledger(study), DeadEnds(spec), spec, trial, {"backend": "a"}, result, COMMAND
    )
    assert told.outcome is Outcome.OK and study.trials[0].values == [70.0, 50.0]
    earlier = Ledger(study).measured({"backend": "a"})
    assert earlier is not None
    again = _ask(study)
    tell_repeat(study, Ledger(study), again, {"backend": "a"}, earlier, 72.0, ["ttft_p99_ms"])
    assert study.trials[again.number].values == [72.0, 50.0]
    # A run without the second objective's metric cannot be told two values: infeasible.
    bare = TrialResult(study="s", number=2, outcome=Outcome.OK, metrics=Metrics(output_tok_s=9.0))
    third = _ask(study)
    told = tell_result(
        study, Ledger(study), DeadEnds(spec), spec, third, {"backend": "b"}, bare, COMMAND
    )
    assert told.outcome is Outcome.CRASHED
    assert study.trials[third.number].state == TrialState.PRUNED
