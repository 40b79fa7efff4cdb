"""A range bound taken from another parameter: ``high: {param: NAME}``."""

from __future__ import annotations

import warnings

import optuna
import pytest

from autotune.errors import ConfigError
from autotune.space import load_text
from autotune.space.schema import StudySpec
from autotune.space.suggest import distributions, suggest

SPACE = """\
engine: {name: sglang}
model: m
parameters:
  - {name: hi, type: int, low: 1, high: 32, log: true, env: MAXC}
  - name: lo
    type: int
    low: 1
    high: {param: hi}
    log: true
    env: MINC
baseline: {hi: 8, lo: 2}
"""


def _load(text: str) -> StudySpec:
    return load_text(text, "t.yaml")


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        _load(text)
    return info.value


def test_every_proposal_respects_the_bound() -> None:
    spec = _load(SPACE)
    study = optuna.create_study(
        sampler=optuna.samplers.TPESampler(seed=1, n_startup_trials=5, multivariate=True)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for _ in range(40):
            trial = study.ask()
            config = suggest(trial, spec)
            assert 1 <= config["lo"] <= config["hi"] <= 32, config
            study.tell(trial, float(config["lo"] * 3 - abs(config["hi"] - 8)))
    assert spec.in_range({"hi": 4, "lo": 8}) == ["lo=8 is outside 1..4"]


def test_the_baseline_replays_through_the_bound() -> None:
    spec = _load(SPACE)
    study = optuna.create_study()
    study.enqueue_trial({"hi": 8, "lo": 2})
    trial = study.ask()
    assert suggest(trial, spec, fixed={"hi": 8, "lo": 2}) == {"hi": 8, "lo": 2}


def test_static_range_and_distributions() -> None:
    spec = _load(SPACE)
    assert spec.static_range(spec.parameter("lo")) == (1.0, 32.0)
    assert spec.range_in(spec.parameter("lo"), {"hi": 4}) == (1.0, 4.0)
    d = distributions(spec)["lo"]
    assert (d.low, d.high) == (1, 32)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("old", "new", "line", "fragment"),
    [
        (
            "high: {param: hi}",
            "high: {param: hj}",
            8,
            "'high' names unknown parameter 'hj' (known: hi, lo)",
        ),
        ("high: {param: hi}", "high: {param: lo}", 8, "names 'lo' itself"),
        (
            "type: int\n    low: 1\n    high: {param: hi}",
            "type: float\n    low: 1\n    high: {param: hi}",
            8,
            "a int parameter",
        ),
        (
            "    low: 1\n    high: {param: hi}",
            "    low: 2\n    high: {param: hi}",
            7,
            "low (2) is above hi's smallest value (1)",
        ),
        (
            "baseline: {hi: 8, lo: 2}",
            "baseline: {hi: 2, lo: 8}",
            11,
            "baseline value 8 of 'lo' is above the baseline's hi=2",
        ),
        ("baseline: {hi: 8, lo: 2}", "baseline: {lo: 2}", 11, "baseline sets 'lo' but not 'hi'"),
        ("    log: true\n    env: MINC", "    step: 1\n    env: MINC", 9, "'step' cannot"),
    ],
)
def test_errors_name_file_and_line(old: str, new: str, line: int, fragment: str) -> None:
    text = SPACE.replace(old, new)
    assert text != SPACE
    err = _error(text)
    assert str(err).startswith(f"t.yaml:{line}:"), str(err)
    assert fragment in str(err)


def test_the_shipped_collective_space_uses_a_bound_not_a_constraint() -> None:
    from space_helpers import SPACES

    from autotune.space import load

    spec = load(SPACES / "collective.yaml")
    assert spec.parameter("NCCL_MIN_NCHANNELS").ref() == ("high", "NCCL_MAX_NCHANNELS")
    assert not any("NCHANNELS" in c for c in spec.constraints)
