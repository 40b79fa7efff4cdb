from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from autotune.errors import StudyError
from autotune.space import active, violations
from autotune.space.schema import StudySpec
from autotune.space.suggest import distribution, distributions, suggest

SPACE = """
engine: {name: sglang}
model: m
parameters:
  - {name: bs, type: int, low: 16, high: 512, log: true, flag: --cuda-graph-max-bs}
  - {name: threads, type: int, low: 64, high: 512, step: 32, env: NCCL_NTHREADS}
  - {name: mem, type: float, low: 0.45, high: 0.7, step: 0.05, flag: --mem-fraction-static}
  - {name: lr, type: float, low: 0.001, high: 1, log: true, env: LR}
  - {name: mixed, type: categorical, choices: [LL, 3, 2.5, false], env: MIXED}
  - name: spec
    type: bool
    map:
      true: {args: [--speculative-algorithm, EAGLE3]}
      false: {}
  - {name: steps, type: int, low: 1, high: 5, flag: --speculative-num-steps, when: spec}
  - {name: topk, type: int, low: 1, high: 4, flag: --speculative-eagle-topk, when: spec}
  - {name: deep, type: int, low: 0, high: 3, env: DEEP, when: topk > 1}
constraints:
  - topk != 1 or steps <= 3
baseline: {bs: 512, mem: 0.55, mixed: 3, spec: true, steps: 3, topk: 1, deep: 2}
"""


@pytest.fixture
def spec(space: Callable[[str], StudySpec]) -> StudySpec:
    return space(SPACE)


@pytest.fixture(autouse=True)
def quiet_optuna() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _check_config(spec: StudySpec, trial: optuna.trial.BaseTrial, config: dict) -> None:
    assert config == active(spec, config)  # nothing inactive is set
    assert list(config) == [p.name for p in spec.parameters if p.name in config]
    assert set(trial.params) == set(config)
    for name, value in config.items():
        assert spec.parameter(name).contains(value), (name, value)
        assert trial.params[name] == value
    # conditions decide presence
    assert ("steps" in config) == bool(config["spec"])
    assert ("deep" in config) == (config.get("topk", 0) > 1)


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_suggest_in_a_real_study(spec: StudySpec, tmp_path: Path, sampler: str) -> None:
    # sqlite for one (what the driver uses), memory for the other: sqlite is slow here.
    storage = f"sqlite:///{tmp_path / 'study.db'}" if sampler == "random" else None
    chosen = (
        optuna.samplers.RandomSampler(seed=1)
        if sampler == "random"
        else optuna.samplers.TPESampler(seed=1, n_startup_trials=5)
    )
    study = optuna.create_study(storage=storage, sampler=chosen, direction="maximize")
    seen_spec = set()

    def objective(trial: optuna.Trial) -> float:
        config = suggest(trial, spec)
        _check_config(spec, trial, config)
        seen_spec.add(config["spec"])
        return float(config["bs"]) - 100 * len(violations(spec, config))

    study.optimize(objective, n_trials=20)
    assert seen_spec == {False, True}
    again = optuna.load_study(study_name=study.study_name, storage=storage) if storage else study
    assert len(again.trials) == 20
    for trial in again.trials:
        for name, dist in trial.distributions.items():
            assert dist == distribution(spec.parameter(name))


def test_baseline_is_enqueued_and_reproduced_exactly(spec: StudySpec) -> None:
    assert spec.baseline is not None
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.enqueue_trial(dict(spec.baseline))
    trial = study.ask()
    config = suggest(trial, spec, fixed=spec.baseline)
    # deep is named, but its condition (topk > 1) is false: not set
    assert config == {"bs": 512, "mem": 0.55, "mixed": 3, "spec": True, "steps": 3, "topk": 1}
    assert trial.params == config
    # not named: left to the engine default, not suggested
    assert "threads" not in trial.params and "lr" not in trial.params
    study.tell(trial, 1.0)
    # the next trial is a normal one
    nxt = study.ask()
    _check_config(spec, nxt, suggest(nxt, spec))


def test_baseline_with_a_float_for_an_int(space: Callable[[str], StudySpec]) -> None:
    spec = space(SPACE.replace("baseline: {bs: 512,", "baseline: {bs: 512.0,"))
    assert spec.baseline is not None
    study = optuna.create_study()
    study.enqueue_trial(dict(spec.baseline))
    config = suggest(study.ask(), spec, fixed=spec.baseline)
    assert config["bs"] == 512 and type(config["bs"]) is int


def test_fixed_without_enqueue_is_an_error(spec: StudySpec) -> None:
    trial = optuna.trial.FixedTrial({"bs": 64, "mem": 0.5, "mixed": "LL", "spec": False})
    with pytest.raises(StudyError, match="parameter 'bs' came back as 64, not the fixed 512"):
        suggest(trial, spec, fixed={"bs": 512})


def test_fixed_trial_reproduces_a_configuration(spec: StudySpec) -> None:
    config = {"bs": 64, "threads": 96, "mem": 0.5, "lr": 0.01, "mixed": False, "spec": False}
    assert suggest(optuna.trial.FixedTrial(config), spec) == config


def test_distributions(spec: StudySpec) -> None:
    dists = distributions(spec)
    assert list(dists) == [p.name for p in spec.parameters]
    assert dists["bs"] == optuna.distributions.IntDistribution(16, 512, log=True)
    assert dists["threads"] == optuna.distributions.IntDistribution(64, 512, step=32)
    assert dists["mem"] == optuna.distributions.FloatDistribution(0.45, 0.7, step=0.05)
    assert dists["lr"] == optuna.distributions.FloatDistribution(0.001, 1, log=True)
    assert dists["mixed"] == optuna.distributions.CategoricalDistribution(["LL", 3, 2.5, False])
    assert dists["spec"] == optuna.distributions.CategoricalDistribution([False, True])


def test_add_trial_with_distributions(spec: StudySpec) -> None:
    # distributions() is what a driver needs to record a config it did not ask for
    study = optuna.create_study()
    params = {"bs": 128, "spec": False}
    study.add_trial(
        optuna.trial.create_trial(
            params=params, distributions={k: distributions(spec)[k] for k in params}, value=1.0
        )
    )
    assert study.trials[0].params == params
