"""Crashes teach the study where not to go: the real driver on a space where half crashes.

The toy server (tests/study/servers/toy.py) crashes for backends c and d and for x * y > 5
(about 55% of the space), and is fastest right at the crashing edge. Random search launches
crashes at about that rate; TPE, told crashes as infeasible, plus the crash-region model of
study/steering.py must launch far fewer after the first 10 trials. bench/search measures the
search over many landscapes and seeds (docs/benchmarks.md).
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from bench.steering import crash_share, launched_outcomes, make_driver, toy_space

from autotune.core.records import SkipKind
from autotune.study.ledger import Ledger
from autotune.study.steering import SteeringOptions

pytestmark = pytest.mark.slow

SEED = 0
TRIALS = 30


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def _study(tmp_path: Path, name: str, sampler: str, steer: bool) -> optuna.Study:
    space = toy_space(tmp_path / f"{name}.yaml", trials=TRIALS)
    driver = make_driver(
        space,
        tmp_path / name,
        study=name,
        seed=SEED,
        sampler=sampler,
        steering=SteeringOptions(enabled=steer),
    )
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    study: optuna.Study = driver.study
    return study


def test_crashes_steer_the_study_away_from_the_crashing_region(tmp_path: Path) -> None:
    rnd = launched_outcomes(_study(tmp_path, "random", "random", steer=False))
    steered_study = _study(tmp_path, "steered", "tpe", steer=True)
    steered = launched_outcomes(steered_study)
    assert len(rnd) == len(steered) == TRIALS  # skips never count against the budget

    random_share, steered_share = crash_share(rnd), crash_share(steered)
    assert random_share > 0.4, random_share  # the space really is half crashes
    assert steered_share < random_share / 2, (steered_share, random_share)

    # Rejected proposals are recorded, never launched, and told to Optuna as infeasible.
    trials = steered_study.get_trials(deepcopy=False)
    kinds = {r.number: r.skip.kind for r in Ledger(steered_study).trials() if r.skip}
    predicted = [t for t in trials if kinds.get(t.number) is SkipKind.PREDICTED_CRASH]
    assert predicted, "the risk model never rejected a proposal"
    for t in predicted:
        assert t.state == optuna.trial.TrialState.PRUNED
        assert t.user_attrs["outcome"] == "pruned"
        # Stored as its own kind, never as a dead end (which would claim a crash happened).
        assert t.user_attrs["cause"] == "predicted_crash"
        assert "no configuration that ran had it" in t.user_attrs["skipped"]
        assert t.system_attrs.get("constraints:skip", 0) > 0
        assert "log_path" not in t.user_attrs
    # It only acts on evidence: a refusal always follows a launched crash.
    first = min(t.number for t in predicted)
    assert any(t.number < first and t.user_attrs.get("outcome") == "crashed" for t in trials)
