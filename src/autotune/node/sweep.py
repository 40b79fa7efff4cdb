"""Load sweeps on one running server: steps through loads, or the highest load under an SLO.

Relaunching is what costs, so every load of a sweep is measured on the server the trial
already started. ``steps`` measures each load of a list (or a geometric range) in turn;
``max_under_slo`` looks for the highest load that meets every SLO by bisection between two
bounds: both bounds first (the low one missing the SLO, or the high one meeting it, ends the
search), then the geometric middle of the bracket, until ``probes`` loads were measured or
the bracket is narrower than ``tolerance`` (relative), or than one request for a
concurrency. A load meets the SLO when no request failed and no bound is exceeded.

This module decides which loads to measure and what the sweep found; ``measure`` (the
runner) sends the requests. It assumes, as SLO search tools do, that latency grows with
load: a load above one that missed is never tried again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from autotune.models import Metrics, Sweep, SweepStep


@dataclass(frozen=True)
class Measured:
    """One measured load: its record and its metrics (for the trial's result)."""

    step: SweepStep
    metrics: Metrics


# Measures one load on the running server; None when the server itself failed (the trial
# ends there, and the runner knows why).
MeasureFn = Callable[[float], Measured | None]


@dataclass
class Found:
    """What a sweep found: every load it measured, in order, and the one that answers it."""

    measured: list[Measured]
    best: Measured | None  # the highest load meeting every SLO (or the highest, without SLO)
    max_load: float  # that load, 0.0 when none met the SLO
    failed: bool = False  # the server failed during the sweep


def run(sweep: Sweep, slo: Mapping[str, float], measure: MeasureFn) -> Found:
    """Measure the loads ``sweep`` asks for with ``measure`` and say what they showed."""
    if sweep.mode == "max_under_slo":
        return _bisect(sweep, measure)
    measured: list[Measured] = []
    for load in sweep.loads():
        got = measure(load)
        if got is None:
            return Found(measured, None, 0.0, failed=True)
        measured.append(got)
    return _answer(measured, bool(slo))


def _answer(measured: list[Measured], has_slo: bool) -> Found:
    if not has_slo:
        top = max(measured, key=lambda m: m.step.load, default=None)
        return Found(measured, top, top.step.load if top else 0.0)
    ok = [m for m in measured if m.step.meets_slo]
    best = max(ok, key=lambda m: m.step.load, default=None)
    if best is None:
        # Nothing met the SLO: the lowest load stands for the trial, and misses it.
        low = min(measured, key=lambda m: m.step.load, default=None)
        return Found(measured, low, 0.0)
    return Found(measured, best, best.step.load)


def _narrow(sweep: Sweep, low: float, high: float) -> bool:
    """Whether the bracket ``[low, high]`` is as narrow as the search needs."""
    if sweep.over == "concurrency" and high - low <= 1:
        return True
    return (high - low) / low <= sweep.tolerance


def _middle(sweep: Sweep, low: float, high: float) -> float:
    mid = math.sqrt(low * high)  # loads span decades: halve the ratio, not the difference
    if sweep.over == "concurrency":
        return float(min(max(round(mid), low + 1), high - 1))
    short = float(f"{mid:.3g}")  # a rate people can read and reuse, when it stays inside
    return short if low < short < high else mid


def _bisect(sweep: Sweep, measure: MeasureFn) -> Found:
    assert sweep.low is not None and sweep.high is not None
    low, high = sweep.round(sweep.low), sweep.round(sweep.high)
    measured: list[Measured] = []

    def probe(load: float) -> Measured | None:
        got = measure(load)
        if got is not None:
            measured.append(got)
        return got

    first = probe(low)
    if first is None:
        return Found(measured, None, 0.0, failed=True)
    if not first.step.meets_slo:
        return Found(measured, first, 0.0)  # even the lowest load misses the SLO
    best = first
    top = probe(high)
    if top is None:
        return Found(measured, best, best.step.load, failed=True)
    if top.step.meets_slo:
        return Found(measured, top, top.step.load)  # the whole range meets it
    while len(measured) < sweep.probes and not _narrow(sweep, low, high):
        got = probe(_middle(sweep, low, high))
        if got is None:
            return Found(measured, best, best.step.load, failed=True)
        if got.step.meets_slo:
            low, best = got.step.load, got
        else:
            high = got.step.load
    return Found(measured, best, best.step.load)


__all__ = ["Found", "MeasureFn", "Measured", "run"]
