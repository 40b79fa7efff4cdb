"""What a study's trials say, as the proposals (``sampler.py``, ``design.py``, ``swaps.py``)
read them: what a trial measured, whether it failed, the best one, the additive model over
them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotune.space.schema import ConfigKey, config_key, same_value
from autotune.study.additive import CENTER, FINE_KNOTS, KNOTS, RIDGE, AdditiveModel
from autotune.study.outcome import CRASH, SKIP

NEAR = 0.05  # two readings this close (log) are alike


def sign(study: Study) -> float:
    """1 where the study maximizes, -1 where it minimizes."""
    return 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0


def read(t: FrozenTrial) -> float | None:
    """What a trial measured: its value, or the mean of the windows a pruned one read (None:
    nothing, a crash)."""
    if t.state == TrialState.COMPLETE and t.value is not None:
        return float(t.value)
    crashed = t.constraints.get(CRASH, 0.0) > 0
    if t.state == TrialState.PRUNED and t.intermediate_values and not crashed:
        return statistics.mean(t.intermediate_values.values())
    return None


def failed(t: FrozenTrial) -> bool:
    """A trial that crashed or was not launched (refused, broke a constraint)."""
    return t.state == TrialState.PRUNED and (
        t.constraints.get(CRASH, 0.0) > 0 or t.constraints.get(SKIP, 0.0) > 0
    )


def has(params: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether ``params`` has every value of ``config`` (and maybe conditional others)."""
    return all(n in params and same_value(params[n], v) for n, v in config.items())


def key(params: Mapping[str, Any]) -> ConfigKey:
    """A configuration as something to look up launched ones by (``config_key``)."""
    return config_key(params)


def best_trial(study: Study, need: set[str] | None = None) -> FrozenTrial | None:
    """The best measured trial that met its constraints (and names every parameter of
    ``need``)."""
    s = sign(study)
    best: FrozenTrial | None = None
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.value is None or any(v > 0 for v in t.constraints.values()):
            continue
        if need and not need <= set(t.params):
            continue
        if best is None or s * t.value > s * (best.value or 0.0):
            best = t
    return best


def fit(
    study: Study,
    best: FrozenTrial,
    fine: bool = True,
    ridge: float = RIDGE,
    center: bool = CENTER,
    square: str = "peaks",
) -> tuple[AdditiveModel, list[FrozenTrial]] | None:
    """The additive model of the (log) objective over the trials with ``best``'s parameters,
    and those that met their constraints (None: too few to fit). With ``fine``, the model
    with finer bends (``FINE_KNOTS``) where it predicts left-out launches better; ``ridge``
    and ``center``: the model's shrinkage and centring (``AdditiveModel``). ``square``:
    ``peaks`` refits with a square term for each number whose effect that model puts highest
    inside its range (a piecewise-linear effect is highest at a bend, so a peak between two
    bends was proposed at one of them); ``all``: a square term for every number; ``off``."""
    if square not in ("peaks", "all", "off"):
        raise ValueError(f"square must be peaks, all or off, not {square!r}")
    s = sign(study)
    trials = study.get_trials(deepcopy=False)
    alike = [t for t in trials if set(t.params) == set(best.params)]
    rows = [
        t
        for t in alike
        if t.state == TrialState.COMPLETE
        and t.value is not None
        and not any(v > 0 for v in t.constraints.values())
    ]
    # A trial the pruner stopped measured a window or two: what it read still says how
    # its settings did (the one-at-a-time start's worse settings are mostly pruned).
    stopped = [t for t in alike if t.state == TrialState.PRUNED and read(t) is not None]
    configs = [t.params for t in rows] + [t.params for t in stopped]
    raw = [read(t) or 0.0 for t in rows + stopped]
    # Effects multiply (tok/s, latency): fit their logs, the larger the better.
    if all(v > 0 for v in raw):
        values = [s * math.log(v) for v in raw]
    else:
        values = [s * v for v in raw]
    knots = (KNOTS, FINE_KNOTS) if fine else (KNOTS,)
    every = square == "all"
    models = [AdditiveModel(best.distributions, k, ridge, center, every) for k in knots]
    if not all([m.fit(configs, values) for m in models]):  # too few launches for either
        return None
    chosen = min(models, key=lambda m: m.loo)
    if square == "peaks" and (hills := chosen.peaked()):
        chosen = AdditiveModel(best.distributions, chosen.knots, ridge, center, hills)
        chosen.fit(configs, values)
    return chosen, rows


__all__ = ["NEAR", "best_trial", "failed", "fit", "has", "key", "read", "sign"]
