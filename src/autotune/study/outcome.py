"""From a ``TrialResult`` to what Optuna is told.

Optuna's samplers ignore FAIL trials, so a crashing region would be sampled again and again.
Instead every configuration that did not produce a valid result is told as PRUNED *with a
violated constraint*: Optuna's TPE puts infeasible trials in its "bad" group, so the sampler
learns to stay away from them, while the study's best trial and its importances only ever see
real measurements. SLO misses keep their measured value (COMPLETE) with a violated constraint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import optuna

from autotune.models import Outcome, TrialResult

# Constraint names set on trials (Optuna: > 0 means violated).
CRASH = "crash"
SLO = "slo"
SKIP = "skip"
PEAK = "peak"  # failed requests at the workload's peak load


@dataclass(frozen=True)
class Verdict:
    """What to tell Optuna about one trial."""

    state: optuna.trial.TrialState
    value: float | None
    constraints: dict[str, float] = field(default_factory=dict)
    outcome: Outcome = Outcome.OK
    # Every objective's value, the primary first (a multi-objective study tells all of them).
    values: list[float] | None = None


def slo_violations(metrics: dict[str, float], slo: dict[str, float]) -> dict[str, float]:
    """How far each SLO bound is exceeded, relative to the bound (> 0 violated, <= 0 met).

    A bound on a metric the trial did not produce counts as violated.
    """
    out: dict[str, float] = {}
    for name, bound in slo.items():
        value = metrics.get(name)
        if value is None:
            out[name] = 1.0
        else:
            out[name] = (value - bound) / bound if bound else value - bound
    return out


def verdict(
    result: TrialResult, metric: str, slo: dict[str, float], others: Sequence[str] = ()
) -> Verdict:
    """Decide the Optuna state, value and constraints of a finished trial.

    Args:
        result: what the node returned (``outcome`` is not INFRA: those are retried, not told).
        metric: the objective metric, a key of ``Metrics.flat()``.
        slo: latency bounds ``{metric: upper bound}``.
        others: a multi-objective study's other objectives (each must be measured too).
    """
    if result.outcome is Outcome.OK and result.metrics is not None:
        flat = result.metrics.flat()
        if any(m not in flat for m in (metric, *others)):
            return Verdict(optuna.trial.TrialState.PRUNED, None, {CRASH: 1.0}, Outcome.CRASHED)
        values = [flat[m] for m in (metric, *others)]
        over = slo_violations(flat, slo)
        worst = max(over.values(), default=0.0)
        outcome = Outcome.SLO_VIOLATED if worst > 0 else Outcome.OK
        state = optuna.trial.TrialState.COMPLETE
        return Verdict(state, flat[metric], {SLO: worst}, outcome, values)
    if result.outcome is Outcome.PRUNED:
        return Verdict(optuna.trial.TrialState.PRUNED, None, {SKIP: 1.0}, Outcome.PRUNED)
    return Verdict(optuna.trial.TrialState.PRUNED, None, {CRASH: 1.0}, result.outcome)
