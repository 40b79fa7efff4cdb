"""The search inside the study driver: what is refused before launch, the crash budget,
several workers, and trials the pruner stopped (the real driver, in-process)."""

from __future__ import annotations

from collections import Counter

import pytest
from tests.search.inprocess import run_study
from tests.search.landscapes import by_name

from autotune.search import read
from autotune.study.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


def test_the_shipped_verify_space_refuses_at_most_one_proposal_in_five_launches() -> None:
    """search_spaces/verify.yaml through the stand-in's model: the search is told what the
    constraints and the dead ends refuse, and the channel counts are a dependent range."""
    from tests.search.verify_space import VERIFY

    _, driver = run_study(VERIFY, 0, 40, windows=3)
    records = Ledger(driver.study).trials()
    refused = Counter(
        r.skip.kind.value for r in records if r.skip and r.skip.kind.value != "repeat"
    )
    launched = sum(r.launched for r in records)
    assert sum(refused.values()) <= launched / 5, refused
    # what was refused is never proposed again as it was
    configs = [tuple(sorted(r.config.items())) for r in records if r.skip is not None]
    assert len(configs) == len(set(configs))


def test_once_the_crash_budget_is_spent_a_likely_crash_is_neither_proposed_nor_launched() -> None:
    land = by_name("five")
    base = land.space(30)
    land.space = lambda trials: {**base, "budget": {"trials": trials, "crash_budget": 0.1}}  # type: ignore[method-assign]
    try:
        launches, driver = run_study(land, 3, 30)
    finally:
        del land.space
    crashed = [la.config for la in launches if la.crashed]
    assert len(crashed) >= 3  # the budget (3 of 30) was spent
    free, plain = run_study(by_name("five"), 3, 30)
    others = [la.config for la in free if la.kind != "answer"]
    risky = [c for c in others if driver._over_budget(c) is not None]
    assert risky  # some configuration is as likely to crash as the cap
    for c in risky:
        assert not driver._feasible(c)  # the sampler may not propose it
        assert plain._over_budget(c) is None  # no budget in the space: never for that
    why = driver._over_budget(risky[0])
    assert why is not None and "crash budget 3" in why


def test_several_workers_never_run_one_configuration_twice_at_once() -> None:
    launches, driver = run_study(by_name("box"), 1, 30, parallel=4)
    ran = [la for la in launches if la.kind != "answer"]
    proposed = [la for la in ran if la.source in ("design", "pairs", "model", "random")]
    for la in proposed:  # no proposal in flight while the same one is
        during = [
            o
            for o in proposed
            if o is not la and o.end - o.seconds < la.end and o.end > la.end - la.seconds
        ]
        assert all(o.config != la.config for o in during)
    serial, _ = run_study(by_name("box"), 1, 30)
    assert max(la.end for la in ran) < max(la.end for la in serial if la.kind != "answer")


def test_a_launch_the_pruner_stopped_counts_as_one_that_ran() -> None:
    _, driver = run_study(by_name("box"), 0, 20, windows=3)
    trials = driver.study.get_trials(deepcopy=False)
    pruned = [
        t for t in trials if t.user_attrs.get("outcome") == "pruned" and t.intermediate_values
    ]
    assert pruned
    h = read(driver.study, trials)
    assert all(t.params in h.ran for t in pruned)
