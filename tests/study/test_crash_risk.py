from __future__ import annotations

from autotune.space.schema import StudySpec
from autotune.study.steering import CrashRisk, SteeringOptions

SPACE = StudySpec.model_validate(
    {
        "engine": {"name": "sglang"},
        "model": "m",
        "parameters": [
            {"name": "backend", "type": "categorical", "flag": "--b", "choices": ["a", "b", "c"]},
            {"name": "bs", "type": "int", "flag": "--bs", "low": 1, "high": 512, "log": True},
            {"name": "spec", "type": "bool", "flag": "--spec"},
            {
                "name": "steps",
                "type": "int",
                "flag": "--steps",
                "low": 1,
                "high": 5,
                "when": "spec",
            },
        ],
    }
)


def _history(risk: CrashRisk) -> None:
    """Backend c crashes; a and b serve, whatever the batch size."""
    for i, bs in enumerate([1, 4, 16, 64, 256, 512]):
        risk.observe({"backend": "ab"[i % 2], "bs": bs, "spec": False}, crashed=False)
    for bs in (2, 300):
        risk.observe({"backend": "c", "bs": bs, "spec": False}, crashed=True)


def test_no_prediction_before_enough_evidence() -> None:
    risk = CrashRisk(SPACE, SteeringOptions(min_launched=8, min_crashes=2))
    for bs in range(1, 8):
        risk.observe({"backend": "c", "bs": bs, "spec": False}, crashed=bs % 2 == 0)
    assert risk.probability({"backend": "c", "bs": 2, "spec": False}) is None
    assert risk.check({"backend": "c", "bs": 2, "spec": False}) is None


def test_predicts_crashes_near_crashed_configurations_only() -> None:
    risk = CrashRisk(SPACE, SteeringOptions(explore=0.0), seed=0)
    _history(risk)
    bad = risk.probability({"backend": "c", "bs": 32, "spec": False})
    good = risk.probability({"backend": "a", "bs": 32, "spec": False})
    assert bad is not None and good is not None and bad > 0.5 > 0.1 > good
    reason = risk.check({"backend": "c", "bs": 32, "spec": False})
    assert reason is not None and reason.startswith("predicted crash") and "p=" in reason
    assert risk.check({"backend": "b", "bs": 100, "spec": True, "steps": 3}) is None


def test_cannot_lock_the_study_out_of_its_space() -> None:
    risk = CrashRisk(SPACE, SteeringOptions(explore=0.0, max_streak=3), seed=0)
    _history(risk)
    bad = {"backend": "c", "bs": 32, "spec": False}
    assert [risk.check(bad) is None for _ in range(5)] == [False, False, False, True, False]


def test_exploration_and_switch_off() -> None:
    risk = CrashRisk(SPACE, SteeringOptions(explore=1.0), seed=0)
    _history(risk)
    assert risk.check({"backend": "c", "bs": 32, "spec": False}) is None
    off = CrashRisk(SPACE, SteeringOptions(enabled=False))
    _history(off)
    assert off.check({"backend": "c", "bs": 2, "spec": False}) is None
