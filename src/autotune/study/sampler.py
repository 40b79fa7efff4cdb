"""TPE with local moves around the best configuration, for studies of a few dozen launches.

TPE finds the right region quickly but, with 30 launches over five or more parameters, rarely
lands on the region's best point, and the best points of server tuning sit at edges (the
largest batch that still fits). With probability ``local`` (once ``after`` trials have run
and there is a best one) a trial is instead a copy of the best configuration with one or two
parameters moved a little: a numeric one by a small step on its own scale (log where the
parameter is log), a categorical or bool one to another value. Everything else is TPE's.
Crashed and refused moves are told to the study like any other trial, so TPE learns from
them too; the crash models still vet every proposal before it is launched.

Two options were measured on bench/search and are off by default (docs/benchmarks.md):
``design`` makes the first proposals after the baseline a one-at-a-time design (as SGLang's
auto_benchmark tiers start: the baseline with one parameter moved to the far end of its range,
or another choice), which cut crashes but cost reach within 30 launches; ``push`` makes a
share of the local moves go half-way to an end of the range instead of a small step.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotune.study.ledger import is_baseline, is_enqueued

LOCAL_SHARE = 0.5  # the default share of local moves (bench/search, docs/benchmarks.md)
DESIGN = 0  # one-at-a-time launches from the baseline: measured (5 cost reach), off


class LocalTPESampler(BaseSampler):
    """TPE, and now and then a small move from the best configuration so far.

    Args:
        tpe: the TPE sampler that makes every other proposal.
        local: share of trials that are local moves.
        after: complete trials needed before the first local move.
        step: size of a numeric move, as a share of the range (one standard deviation).
        anneal: complete trials by which moves shrink to a third of ``step`` (0: never).
        bisect: share of local moves that go half-way toward the nearest crash (measured, off).
        design: one-at-a-time proposals from the baseline before TPE (0: none, the default).
        push: share of local moves that go half-way to an end of the range (measured, off).
        seed: seed of the local draws.
    """

    def __init__(
        self,
        tpe: BaseSampler,
        *,
        local: float = LOCAL_SHARE,
        after: int = 8,
        step: float = 0.12,
        anneal: int = 0,
        bisect: float = 0.0,
        design: int = DESIGN,
        push: float = 0.0,
        seed: int | None = None,
    ) -> None:
        self._tpe = tpe
        self._design = design  # one-at-a-time launches from the baseline still to make
        self._design_done: list[tuple[str, int]] = []  # (parameter, pass) already proposed
        self._push = push
        self._ends: dict[int, tuple[str, int]] = {}  # trial -> (parameter, pass): design
        self._pushes: dict[int, bool] = {}  # trial -> move half-way to a range end
        self._local = local
        self._after = after
        self._step = step
        self._anneal = anneal
        self._bisect = bisect
        self._edges: dict[int, dict[str, Any]] = {}  # trial -> the crash nearest the best
        self._scale: dict[int, float] = {}
        self._rng = random.Random(seed)
        self._moves: dict[int, tuple[dict[str, Any], set[str]]] = {}  # trial -> (best, moved)

    def reseed_rng(self) -> None:
        self._tpe.reseed_rng()
        self._rng.seed()

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._tpe.before_trial(study, trial)
        if is_enqueued(trial):
            return
        if self._design > 0 and self._plan_design(study, trial):
            return
        if self._rng.random() >= self._local:
            return
        best = _best(study)
        if best is None:
            return
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(done) < self._after:
            return
        names = list(best.params)
        moved = set(self._rng.sample(names, k=min(len(names), self._rng.choice((1, 1, 2)))))
        self._moves[trial.number] = (dict(best.params), moved)
        if self._bisect and self._rng.random() < self._bisect:
            near = _nearest_crash(study, best)
            if near is not None:
                self._edges[trial.number] = near
        if self._anneal:  # smaller moves as the study goes on: a third of the size at anneal
            self._scale[trial.number] = max(1 / 3, 1 - (2 / 3) * len(done) / self._anneal)
        if self._push and self._rng.random() < self._push:
            self._pushes[trial.number] = True

    def _plan_design(self, study: Study, trial: FrozenTrial) -> bool:
        """Make this trial the baseline with one parameter at an end of its range (or another
        choice): the first pass moves each parameter once, the second to its other end."""
        base = next(
            (
                t
                for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if is_baseline(t) and t.params
            ),
            None,
        )
        if base is None:
            return False
        names = list(base.params)
        todo = [(n, k) for k in (0, 1) for n in names if (n, k) not in self._design_done]
        if not todo:
            self._design = 0
            return False
        name, k = todo[0]
        self._design_done.append((name, k))
        self._design -= 1
        self._moves[trial.number] = (dict(base.params), {name})
        self._ends[trial.number] = (name, k)
        return True

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        if trial.number in self._moves:
            return {}
        return self._tpe.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if trial.number in self._moves:
            return {}
        return self._tpe.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        move = self._moves.get(trial.number)
        if move is not None and param_name in move[0]:
            best, moved = move
            value = best[param_name]
            end = self._ends.get(trial.number)
            if end is not None and end[0] == param_name:
                return _end(param_distribution, value, end[1], self._rng)
            if param_name in moved and self._pushes.get(trial.number):
                return _toward_end(param_distribution, value, self._rng)
            if param_name in moved or not param_distribution._contains(
                param_distribution.to_internal_repr(value)
            ):
                edge = self._edges.get(trial.number, {}).get(param_name)
                if edge is not None and isinstance(
                    param_distribution, IntDistribution | FloatDistribution
                ):  # half-way to the crash: optima sit at crash edges
                    half = _halfway(param_distribution, value, edge)
                    if half != value:
                        return half
                step = self._step * self._scale.get(trial.number, 1.0)
                return _nudge(param_distribution, value, self._rng, step)
            return value
        return self._tpe.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._moves.pop(trial.number, None)
        self._scale.pop(trial.number, None)
        self._edges.pop(trial.number, None)
        self._ends.pop(trial.number, None)
        self._pushes.pop(trial.number, None)
        self._tpe.after_trial(study, trial, state, values)


def _best(study: Study) -> FrozenTrial | None:
    """The best measured trial that met its constraints."""
    sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
    best: FrozenTrial | None = None
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.value is None or any(v > 0 for v in t.constraints.values()):
            continue
        if best is None or sign * t.value > sign * (best.value or 0.0):
            best = t
    return best


def _nearest_crash(study: Study, best: FrozenTrial) -> dict[str, Any] | None:
    """The params of the crashed trial that differs from ``best`` in the fewest values."""
    crashed = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,))
        if t.constraints.get("crash", 0) > 0 and t.params
    ]
    if not crashed:
        return None
    near = min(crashed, key=lambda t: sum(t.params.get(k) != v for k, v in best.params.items()))
    return dict(near.params)


def _halfway(d: IntDistribution | FloatDistribution, value: Any, edge: Any) -> Any:
    """Half-way from ``value`` to ``edge`` on the parameter's scale, on its grid."""
    if isinstance(edge, bool) or not isinstance(edge, int | float):
        return value
    a, b = float(value), float(edge)
    mid = math.sqrt(a * b) if d.log and a > 0 and b > 0 else (a + b) / 2
    if isinstance(d, IntDistribution):
        out: Any = int(d.low + round((mid - d.low) / d.step) * d.step)
    elif d.step is not None:
        out = float(d.low + round((mid - d.low) / d.step) * d.step)
    else:
        out = mid
    return min(d.high, max(d.low, out))


def _end(d: BaseDistribution, value: Any, k: int, rng: random.Random) -> Any:
    """Pass ``k`` of the one-at-a-time design: a number's far end (k=0, the end farther from
    ``value`` on the parameter's scale) or near end (k=1); another choice of a categorical."""
    if isinstance(d, CategoricalDistribution):
        others = [c for c in d.choices if c != value or type(c) is not type(value)]
        return others[k % len(others)] if others else value
    if not isinstance(d, IntDistribution | FloatDistribution):
        return value
    low, high = _scaled(d, d.low), _scaled(d, d.high)
    far_high = high - _scaled(d, value) >= _scaled(d, value) - low
    return d.high if far_high == (k == 0) else d.low


def _toward_end(d: BaseDistribution, value: Any, rng: random.Random) -> Any:
    """Half-way from ``value`` to one end of the range (either, at random), on its grid."""
    if not isinstance(d, IntDistribution | FloatDistribution) or isinstance(value, bool):
        return _nudge(d, value, rng, 0.12)
    end = d.high if rng.random() < 0.5 else d.low
    out = _halfway(d, value, end)
    return out if out != value else _halfway(d, value, d.low if end == d.high else d.high)


def _scaled(d: IntDistribution | FloatDistribution, x: Any) -> float:
    return math.log(float(x)) if d.log and float(x) > 0 else float(x)


def _nudge(d: BaseDistribution, value: Any, rng: random.Random, step: float) -> Any:
    """A value near ``value``: ``step`` of the range away (one sigma) on the parameter's scale."""
    if isinstance(d, CategoricalDistribution):
        others = [c for c in d.choices if c != value or type(c) is not type(value)]
        return rng.choice(others) if others else value
    if not isinstance(d, IntDistribution | FloatDistribution):
        return value
    low, high, x = float(d.low), float(d.high), float(value)
    log = d.log and low > 0 and x > 0
    if log:
        low, high, x = math.log(low), math.log(high), math.log(x)
    for _ in range(8):
        y = min(high, max(low, x + rng.gauss(0.0, step) * (high - low)))
        out = math.exp(y) if log else y
        if isinstance(d, IntDistribution):
            out = d.low + round((out - d.low) / d.step) * d.step
            out = int(min(d.high, max(d.low, out)))
        elif d.step is not None:
            out = d.low + round((out - d.low) / d.step) * d.step
            out = float(min(d.high, max(d.low, out)))
        if out != value:
            return out
    return value


__all__ = ["DESIGN", "LOCAL_SHARE", "LocalTPESampler"]
