"""Crashes teach the study where not to go: the real driver on a space where half crashes.

The toy server (tests/study/servers/toy.py) crashes for backends c and d and for x * y > 5
(about 55% of the space), and is fastest right at the crashing edge. Random search launches
crashes at about that rate; the search (autotune.search: its sampler and crash regions) must
launch fewer after the first 10 trials. bench/search measures the search over many
landscapes and seeds (docs/benchmarks.md).
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from tests.search.drivers import command_driver
from tests.study.study_helpers import toy_space

from autotune.core.records import SkipKind
from autotune.study.ledger import Ledger

pytestmark = pytest.mark.slow

SEED = 0
TRIALS = 30


def launched_outcomes(study: optuna.Study) -> list[str]:
    return [str(t.outcome) for t in Ledger(study).trials() if t.launched]


def crash_share(outcomes: list[str], after: int = 10) -> float:
    late = outcomes[after:]
    return sum(o in ("crashed", "timeout") for o in late) / max(1, len(late))


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def _study(tmp_path: Path, name: str, sampler: str, steer: bool) -> optuna.Study:
    space = toy_space(tmp_path / f"{name}.yaml", trials=TRIALS)
    driver = command_driver(
        space, tmp_path / name, study=name, seed=SEED, sampler=sampler, steer=steer
    )
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    study: optuna.Study = driver.study
    return study


def test_crashes_steer_the_study_away_from_the_crashing_region(tmp_path: Path) -> None:
    rnd = launched_outcomes(_study(tmp_path, "random", "random", steer=False))
    steered_study = _study(tmp_path, "steered", "search", steer=True)
    steered = launched_outcomes(steered_study)
    assert len(rnd) == len(steered) == TRIALS  # skips never count against the budget

    random_share, steered_share = crash_share(rnd), crash_share(steered)
    assert random_share > 0.4, random_share  # the space really is half crashes
    # The search before issue 52 halved random search's crash share here; autotune.search cut
    # it by a quarter to a half (0.30-0.50 against 0.65 in three runs on a quiet machine,
    # 2026-12-06), and with its line step by a half or more (0.15, 0.20, 0.30 in three runs on
    # a loaded machine, 2026-12-06: the measured values, and so the proposals, vary from run
    # to run). Fewer crashes than random search is what is held (three runs are too few to
    # hold the margin).
    assert steered_share < random_share, (steered_share, random_share)
    # The search weighs the same crash regions the driver refuses by: none of its proposals
    # is refused as a predicted crash.
    kinds = [r.skip.kind for r in Ledger(steered_study).trials() if r.skip]
    assert SkipKind.PREDICTED_CRASH not in kinds


def test_proposals_the_crash_regions_cover_are_refused_before_launch(tmp_path: Path) -> None:
    """Random search with steering on: what every explanation of an earlier crash covers is
    recorded, never launched, and told to Optuna as infeasible."""
    study = _study(tmp_path, "screened", "random", steer=True)
    trials = study.get_trials(deepcopy=False)
    kinds = {r.number: r.skip.kind for r in Ledger(study).trials() if r.skip}
    predicted = [t for t in trials if kinds.get(t.number) is SkipKind.PREDICTED_CRASH]
    assert predicted, "the crash regions never refused a proposal"
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
