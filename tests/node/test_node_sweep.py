"""Load sweeps: which loads are measured, and what a sweep or a bisection concludes."""

from __future__ import annotations

import pytest

from autotune.models import Metrics, Sweep, SweepStep
from autotune.node import sweep
from autotune.node.sweep import Measured


class Server:
    """Meets the SLO up to ``capacity`` (inclusive); records every load it was sent."""

    def __init__(self, capacity: float, dies_at: float | None = None) -> None:
        self.capacity = capacity
        self.dies_at = dies_at
        self.sent: list[float] = []

    def __call__(self, load: float) -> Measured | None:
        self.sent.append(load)
        if self.dies_at is not None and load >= self.dies_at:
            return None
        step = SweepStep(
            load=load, metrics={"ttft_p99_ms": 10.0 * load}, meets_slo=load <= self.capacity
        )
        return Measured(step, Metrics(output_tok_s=load))


SLO = {"ttft_p99_ms": 1.0}


def test_a_geometric_range_ends_at_high() -> None:
    assert Sweep(low=1, high=20).loads() == [1, 2, 4, 8, 16, 20]
    assert Sweep(over="rate", low=0.5, high=4).loads() == [0.5, 1, 2, 4]
    assert Sweep(values=[8, 2, 4]).loads() == [2, 4, 8]


def test_steps_measure_every_load_and_answer_the_highest_in_slo() -> None:
    server = Server(capacity=5)
    out = sweep.run(Sweep(low=1, high=16), SLO, server)
    assert server.sent == [1, 2, 4, 8, 16]
    assert out.max_load == 4 and out.best is not None and out.best.step.load == 4
    assert not out.failed


def test_steps_without_an_slo_answer_the_highest_load() -> None:
    out = sweep.run(Sweep(values=[1, 2]), {}, Server(capacity=0))
    assert out.best is not None and out.best.step.load == 2


def test_nothing_in_slo_stands_for_the_lowest_load_and_answers_zero() -> None:
    out = sweep.run(Sweep(values=[2, 4]), SLO, Server(capacity=1))
    assert out.max_load == 0 and out.best is not None and out.best.step.load == 2


@pytest.mark.parametrize("capacity", [1, 2, 6, 37, 100, 127])
def test_bisection_finds_the_highest_concurrency_within_one_request(capacity: int) -> None:
    server = Server(capacity=capacity)
    plan = Sweep(mode="max_under_slo", low=1, high=128, probes=12, tolerance=0.001)
    out = sweep.run(plan, SLO, server)
    assert out.max_load == capacity
    assert len(server.sent) <= 12
    # Never a load above one that already missed the SLO.
    for i, load in enumerate(server.sent):
        missed = [x for x in server.sent[:i] if x > capacity]
        assert all(load < m for m in missed)


def test_bisection_stops_at_its_probe_budget_with_a_load_that_met_the_slo() -> None:
    server = Server(capacity=37)
    out = sweep.run(Sweep(mode="max_under_slo", low=1, high=128, probes=4), SLO, server)
    assert len(server.sent) == 4
    assert 1 <= out.max_load <= 37
    assert out.best is not None and out.best.step.meets_slo


def test_bisection_over_rate_stops_at_the_tolerance() -> None:
    server = Server(capacity=3.3)
    plan = Sweep(over="rate", mode="max_under_slo", low=0.5, high=20, tolerance=0.05, probes=30)
    out = sweep.run(plan, SLO, server)
    assert 3.3 / 1.05 <= out.max_load <= 3.3
    assert len(server.sent) < 30


def test_bisection_ends_at_once_when_the_bounds_decide() -> None:
    low_misses = Server(capacity=0.5)
    out = sweep.run(Sweep(mode="max_under_slo", low=1, high=64), SLO, low_misses)
    assert (low_misses.sent, out.max_load) == ([1], 0.0)
    all_meet = Server(capacity=1000)
    out = sweep.run(Sweep(mode="max_under_slo", low=1, high=64), SLO, all_meet)
    assert (all_meet.sent, out.max_load) == ([1, 64], 64)


def test_a_server_failure_ends_the_sweep() -> None:
    server = Server(capacity=100, dies_at=8)
    out = sweep.run(Sweep(low=1, high=64), SLO, server)
    assert out.failed and server.sent == [1, 2, 4, 8]
    out = sweep.run(Sweep(mode="max_under_slo", low=1, high=64), SLO, Server(100, dies_at=64))
    assert out.failed


def test_bisection_stops_within_its_tolerance() -> None:
    server = Server(capacity=37)
    out = sweep.run(Sweep(mode="max_under_slo", low=1, high=128, tolerance=0.1), SLO, server)
    assert 37 / 1.1 <= out.max_load <= 37
