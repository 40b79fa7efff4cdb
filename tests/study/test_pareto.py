"""The Pareto front of throughput against latency, by the median of each configuration."""

from __future__ import annotations

from typing import Any

from autotune.core.records import TrialRecord
from autotune.models import Outcome
from autotune.study.noise import Direction
from autotune.study.pareto import front

OBJ: list[tuple[str, Direction]] = [("tok_s", "maximize"), ("ttft_p99_ms", "minimize")]


def _t(number: int, bs: int, tok_s: float, ttft: float, **extra: Any) -> TrialRecord:
    return TrialRecord(
        number=number,
        state="COMPLETE",
        outcome=Outcome.OK,
        config={"bs": bs},
        metrics={"tok_s": tok_s, "ttft_p99_ms": ttft},
        **extra,
    )


def test_front_keeps_the_trade_off_and_drops_the_dominated() -> None:
    trials = [
        _t(0, 1, 100.0, 50.0, baseline=True),  # slow, snappy: on the front
        _t(1, 2, 200.0, 80.0),  # on the front
        _t(2, 4, 150.0, 90.0),  # dominated by 1
        _t(3, 8, 300.0, 400.0),  # fastest, laggy: on the front
    ]
    points = front(trials, OBJ)
    assert [p.trial for p in points] == [3, 1, 0]
    assert points[2].baseline and points[0].values == {"tok_s": 300.0, "ttft_p99_ms": 400.0}


def test_front_uses_medians_and_skips_failed_configurations() -> None:
    trials = [
        _t(0, 1, 100.0, 50.0),
        _t(1, 2, 500.0, 40.0),  # one lucky launch ...
        _t(2, 2, 90.0, 60.0),  # ... and two ordinary ones: median (90, 60) is dominated
        _t(3, 2, 95.0, 60.0),
        _t(4, 8, 900.0, 10.0, peak={"survived": False}),  # failed at peak load: never
    ]
    assert [p.trial for p in front(trials, OBJ)] == [0]
