"""The swap repair on its own: one number moved the least way out of a crash's explanations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna

from autotune.study.swaps import SWAP_RISK, repair

SPACE = {
    "backend": optuna.distributions.CategoricalDistribution(["triton", "fa3"]),
    "graph_bs": optuna.distributions.IntDistribution(1, 512, log=True),
    "buffsize": optuna.distributions.IntDistribution(256, 65536, log=True),
}


def _share(c: Mapping[str, Any]) -> float:
    """Two explanations of one crash: fa3 with graph_bs >= 160, fa3 with buffsize >= 4096."""
    if c["backend"] != "fa3":
        return 0.0
    return ((c["graph_bs"] >= 160) + (c["buffsize"] >= 4096)) / 2


def test_a_swap_that_meets_no_explanation_is_made_as_it_is() -> None:
    config = {"backend": "fa3", "graph_bs": 64, "buffsize": 1024}
    assert repair(config, SPACE, {"backend"}, _share, None) is config


def test_the_repair_moves_one_number_the_least_way_below_the_explanations() -> None:
    config = {"backend": "fa3", "graph_bs": 512, "buffsize": 1024}  # meets one of two
    fixed = repair(config, SPACE, {"backend"}, _share, None)
    assert fixed is not None and fixed["buffsize"] == 1024 and fixed["backend"] == "fa3"
    assert fixed["graph_bs"] < 160  # out of the explanation, by the least move there is
    assert _share(fixed) == 0.0
    one_less = repair(config, SPACE, {"backend", "graph_bs"}, _share, None)  # graph_bs fixed
    assert one_less is not None and _share(one_less) <= SWAP_RISK  # half met: still allowed
    assert one_less["graph_bs"] == 512


def test_no_repair_when_every_one_number_move_leaves_too_much_met() -> None:
    def share(c: Mapping[str, Any]) -> float:  # three explanations, one of them no number
        if c["backend"] != "fa3":
            return 0.0
        return (1 + (c["graph_bs"] >= 160) + (c["buffsize"] >= 4096)) / 3

    config = {"backend": "fa3", "graph_bs": 512, "buffsize": 8192}
    assert repair(config, SPACE, {"backend"}, share, None) is None


def test_the_repair_skips_what_the_crash_model_refuses() -> None:
    config = {"backend": "fa3", "graph_bs": 512, "buffsize": 1024}
    fixed = repair(config, SPACE, {"backend"}, _share, lambda c: c["graph_bs"] > 64)
    assert fixed is not None and fixed["graph_bs"] <= 64


def test_a_higher_limit_lets_a_repair_leave_some_explanations_met_but_never_all() -> None:
    def share(c: Mapping[str, Any]) -> float:  # five explanations, three of them no number
        if c["backend"] != "fa3":
            return 0.0
        return (3 + (c["graph_bs"] >= 160) + (c["buffsize"] >= 4096)) / 5

    config = {"backend": "fa3", "graph_bs": 512, "buffsize": 1024}  # four of five met
    assert repair(config, SPACE, {"backend"}, share, None) is None  # the default limit
    fixed = repair(config, SPACE, {"backend"}, share, None, 0.8)
    assert fixed is not None and fixed["graph_bs"] < 160 and share(fixed) == 0.6
    every = {"backend": "fa3", "graph_bs": 512, "buffsize": 8192}  # all met, neither may move
    assert repair(every, SPACE, {"backend", "buffsize", "graph_bs"}, share, None, 1.0) is None


CHOICES = {
    "backend": optuna.distributions.CategoricalDistribution(["triton", "cutlass", "deep_gemm"]),
    "compile": optuna.distributions.CategoricalDistribution([False, True]),
    "graph_bs": optuna.distributions.IntDistribution(1, 512, log=True),
}


def _compile_crash(c: Mapping[str, Any]) -> float:
    """One crash (deep_gemm, compile, graph_bs 256) and its explanations, weighed: deep_gemm
    with compile (0.4), compile with graph_bs >= 64 (0.6)."""
    if not c["compile"]:
        return 0.0
    return 0.4 * (c["backend"] == "deep_gemm") + 0.6 * (c["graph_bs"] >= 64)


class _Rates:
    """An additive model's stand-in: cutlass reads better than triton."""

    def predict(self, configs: list[Mapping[str, Any]]) -> list[float]:
        return [{"triton": 0.0, "cutlass": 0.3, "deep_gemm": 0.35}[c["backend"]] for c in configs]


def test_a_swap_a_crash_pairs_with_another_choice_is_repaired_by_moving_that_choice() -> None:
    """compile on at the best configuration (deep_gemm) meets both explanations of the crash;
    the batch moved below 64 still leaves deep_gemm with compile (0.4) met, and another
    backend leaves 0.6 met. Numbers alone: the least met is the batch's move. With choices
    (up to 0.7 met) the batch's move still wins (0.4 < 0.6); where the batch may not move, the
    backend goes to the choice the model rates best, never to one meeting more than 0.7."""
    swap = {"backend": "deep_gemm", "compile": True, "graph_bs": 256}
    numbers = repair(swap, CHOICES, {"compile"}, _compile_crash, None, 0.5)
    assert numbers is not None and numbers["backend"] == "deep_gemm" and numbers["graph_bs"] < 64
    assert repair(swap, CHOICES, {"compile", "graph_bs"}, _compile_crash, None, 0.5) is None
    moved = repair(swap, CHOICES, {"compile", "graph_bs"}, _compile_crash, None, 0.5, 0.7, _Rates())
    assert moved == {"backend": "cutlass", "compile": True, "graph_bs": 256}
    assert repair(swap, CHOICES, {"compile", "graph_bs"}, _compile_crash, None, 0.5, 0.55) is None


def test_a_choice_repair_below_the_floor_is_not_made() -> None:
    """The model rates cutlass 0.3; a floor above that leaves no repair (triton's 0.0 is
    below it too), a floor below it leaves cutlass's."""
    swap = {"backend": "deep_gemm", "compile": True, "graph_bs": 256}
    fixed = {"compile", "graph_bs"}
    assert repair(swap, CHOICES, fixed, _compile_crash, None, 0.5, 0.7, _Rates(), 0.32) is None
    moved = repair(swap, CHOICES, fixed, _compile_crash, None, 0.5, 0.7, _Rates(), 0.25)
    assert moved is not None and moved["backend"] == "cutlass"
