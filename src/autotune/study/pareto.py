"""Throughput against latency: the configurations no other one beats on both.

A single objective hides the trade-off a person actually makes: a configuration 5% faster
in tokens per second may double the p99 time to first token. The Pareto front over the
objective and a latency metric shows every configuration that is not dominated (nothing else
is at least as good on both and better on one), each valued by the median of its launches,
so that a person can pick one and export it (``autotune export --trial N``). Only eligible
configurations count (never failed, survived the peak load, met the SLOs).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from autotune.core.records import TrialRecord
from autotune.models import Direction
from autotune.study.evidence import Launches, gather, ranked


@dataclass(frozen=True)
class Point:
    """One configuration on the front: its first trial and the median of each metric."""

    trial: int
    config: dict[str, object]
    values: dict[str, float]
    launches: int
    baseline: bool


def _medians(
    group: Launches, trials: dict[int, TrialRecord], metrics: Sequence[str]
) -> dict[str, float] | None:
    out: dict[str, float] = {}
    for m in metrics:
        values = [trials[n].metrics[m] for n in group.trials if m in trials[n].metrics]
        if not values:
            return None
        out[m] = float(statistics.median(values))
    return out


def _dominates(
    a: dict[str, float], b: dict[str, float], dirs: Sequence[tuple[str, Direction]]
) -> bool:
    better = False
    for metric, direction in dirs:
        x, y = (a[metric], b[metric]) if direction == "maximize" else (-a[metric], -b[metric])
        if x < y:
            return False
        better = better or x > y
    return better


def front(
    trials: Sequence[TrialRecord], objectives: Sequence[tuple[str, Direction]]
) -> list[Point]:
    """The non-dominated configurations, best first by the first objective.

    Args:
        trials: the study's records.
        objectives: ``(metric, direction)`` pairs, the study's objective first.
    """
    if not objectives:
        return []
    by_number = {t.number: t for t in trials}
    metrics = [m for m, _ in objectives]
    groups = ranked(gather(trials, metrics[0]), objectives[0][1])
    points = []
    for g in groups:
        values = _medians(g, by_number, metrics)
        if values is not None and g.first_trial is not None:
            points.append(Point(g.first_trial, g.config, values, len(g.values), g.baseline))
    return [
        p for p in points if not any(_dominates(q.values, p.values, objectives) for q in points)
    ]


__all__ = ["Point", "front"]
