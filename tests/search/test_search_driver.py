"""The search inside the study driver: what is refused before launch, the crash budget,
several workers, and trials the pruner stopped (the real driver, in-process)."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from tests.search.inprocess import run_study
from tests.search.landscapes import Landscape, Point, by_name, crash, ok

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


def test_several_workers_never_run_one_configuration_twice_at_once_and_share_confirmation() -> None:
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
    confirm = [la for la in ran if la.source == "confirm"]
    assert confirm
    # a round's launches overlap: the rounds are spread over the free workers
    overlaps = sum(
        1
        for a in confirm
        for b in confirm
        if a is not b and b.end - b.seconds < a.end and b.end - b.seconds >= a.end - a.seconds
    )
    assert overlaps > 0
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


def _missing_kernels() -> Landscape:
    """fa3 cannot start at all (its kernels are not installed: an import error at launch);
    the other backends serve, best with a large graph batch."""

    def evaluate(c: dict[str, Any], rng: random.Random) -> Point:
        if c["backend"] == "fa3":
            return crash("import_error", "launch", "ImportError: cannot import name 'flash_ops'")
        speed = {"triton": 1.0, "flashinfer": 1.3}[c["backend"]]
        return ok(100.0 * speed * (1 + math.log2(c["bs"] / 8) / 6) * (1.1 if c["chunked"] else 1))

    return Landscape(
        name="missing-kernels",
        about="a backend whose module is missing",
        parameters=[
            {
                "name": "backend",
                "type": "categorical",
                "choices": ["triton", "flashinfer", "fa3"],
                "flag": "--attention-backend",
            },
            {"name": "bs", "type": "int", "low": 8, "high": 512, "log": True, "flag": "--bs"},
            {"name": "chunked", "type": "bool", "flag": "--chunked"},
        ],
        evaluate=evaluate,
        baseline={"backend": "triton", "bs": 8, "chunked": False},
    )


def test_a_value_whose_module_is_missing_is_never_proposed_again() -> None:
    """On a real H100 the study launched fa3 again after it failed with an import error;
    the choice is a dead end in any company from its first crash on."""
    launches, driver = run_study(_missing_kernels(), 0, 24)
    trials = sorted(driver.study.get_trials(deepcopy=False), key=lambda t: t.number)
    fa3 = [t.number for t in trials if t.params.get("backend") == "fa3"]
    assert len(fa3) == 1, fa3  # tried once (the screen), then neither proposed nor launched
    assert sum(la.crashed for la in launches) == 1
    (dead,) = driver.deadends.records
    assert dead.blame == {"backend": "fa3"}
