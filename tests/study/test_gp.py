"""The crash-aware GP candidate (study/gp.py): what the GP is shown of a study."""

from __future__ import annotations

import warnings

import optuna
import pytest

from autotune.study.gp import CrashAwareGPSampler, _CrashView

Done = optuna.trial.TrialState.COMPLETE


@pytest.fixture(autouse=True)
def _quiet() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study() -> optuna.Study:
    study = optuna.create_study(direction="maximize")
    for x, value, crashed in [(0.1, 1.0, False), (0.5, 5.0, False), (0.55, None, True)]:
        study.enqueue_trial({"x": x})
        trial = study.ask()
        trial.suggest_float("x", 0.0, 1.0)
        trial.set_constraint("crash" if crashed else "slo", 1.0 if crashed else -0.5)
        if crashed:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, value)
    return study


def test_a_crash_is_shown_as_an_infeasible_point_valued_like_its_nearest_run() -> None:
    shown = _CrashView(_study())._get_trials(states=(Done,))
    assert [t.state for t in shown] == [Done] * 3
    crash = shown[2]
    assert crash.params == {"x": 0.55}
    assert crash.value == 5.0  # from x=0.5, the nearest configuration that ran
    assert crash.constraints == {"feasible": 1.0}
    assert [t.constraints for t in shown[:2]] == [{"feasible": -0.5}] * 2


def test_the_worst_value_is_shown_when_asked_and_the_real_study_is_untouched() -> None:
    study = _study()
    shown = _CrashView(study, impute="worst")._get_trials(states=(Done,))
    assert shown[2].value == 1.0
    assert study.trials[2].state == optuna.trial.TrialState.PRUNED


def test_past_max_trials_the_fallback_proposes() -> None:
    fallback = optuna.samplers.RandomSampler(seed=0)
    sampler = CrashAwareGPSampler(seed=0, max_trials=2, fallback=fallback)
    study = _study()
    assert sampler._pick(study) is fallback
    assert CrashAwareGPSampler(seed=0)._pick(study) is not fallback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.sampler = sampler
        trial = study.ask()
    assert 0.0 <= trial.suggest_float("x", 0.0, 1.0) <= 1.0
