"""Gaussian-process search that learns where servers crash (a candidate, not the default).

Measured on the black box in-process (docs/benchmarks.md): level with the default TPE with
local moves in reach, more crashes, and seconds per proposal instead of milliseconds.

Optuna's ``GPSampler`` models the objective and each constraint with a Gaussian process, but
only over COMPLETE trials; autotune tells a crash as PRUNED with a violated ``crash``
constraint (``outcome.py``), so the GP would never see one and would propose the same crashing
corner again and again. ``CrashAwareGPSampler`` hands the GP a *view* of the study in which
every crashed or refused configuration is a complete trial that violates one constraint, its
objective value taken from the nearest configuration that ran (the objective goes on smoothly;
it is the server that fails there), and every other trial carries one constraint: its worst.
The GP's constrained expected improvement then weighs the chance of a crash against the gain,
the way SCOOT's feasibility model does. A GP costs cubic time in the trials; past ``max_trials``
the wrapped fallback sampler (TPE) takes over, so a 1000-trial study stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotune.study.ledger import constrained_copy


class CrashAwareGPSampler(BaseSampler):
    """Optuna's GP sampler over a study view in which crashes are infeasible points.

    Args:
        seed: seed of the GP's and the start-up draws.
        n_startup_trials: complete trials (the baseline's launches included) before the GP.
        max_trials: trials after which ``fallback`` proposes instead (a GP fit is cubic).
        fallback: the sampler used past ``max_trials`` (default: TPE).
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        n_startup_trials: int = 8,
        max_trials: int = 200,
        fallback: BaseSampler | None = None,
        impute: str = "nearest",
    ) -> None:
        self._impute = impute
        self._gp = optuna.samplers.GPSampler(
            seed=seed, n_startup_trials=n_startup_trials, warn_independent_sampling=False
        )
        self._fallback = fallback or optuna.samplers.TPESampler(seed=seed)
        self._max_trials = max_trials

    def _pick(self, study: Study) -> BaseSampler:
        n = len(study._get_trials(deepcopy=False, use_cache=True))
        return self._gp if n < self._max_trials else self._fallback

    def reseed_rng(self) -> None:
        self._gp.reseed_rng()
        self._fallback.reseed_rng()

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._pick(study).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        sampler = self._pick(study)
        if sampler is self._gp:
            return self._gp.sample_relative(_CrashView(study, self._impute), trial, search_space)  # type: ignore[arg-type]
        return sampler.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._pick(study).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._pick(study).before_trial(study, trial)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._pick(study).after_trial(study, trial, state, values)


class _CrashView:
    """The study as the GP sees it (everything else is the study's own)."""

    def __init__(self, study: Study, impute: str = "nearest") -> None:
        self._study = study
        self._impute = impute

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(
        self,
        deepcopy: bool = False,
        states: Container[TrialState] | None = None,
        use_cache: bool = False,
    ) -> list[FrozenTrial]:
        trials = self._study._get_trials(deepcopy=False, states=None, use_cache=use_cache)
        ran = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        worst = (min if self._study.direction == StudyDirection.MAXIMIZE else max)(
            (t.value for t in ran if t.value is not None), default=0.0
        )
        out: list[FrozenTrial] = []
        for t in trials:
            if t.state == TrialState.COMPLETE and t.value is not None:
                out.append(_with(t, t.value, max(t.constraints.values(), default=-1.0)))
            elif (
                t.state == TrialState.PRUNED
                and t.params
                and any(v > 0 for v in t.constraints.values())
            ):
                near = _nearest(t, ran) if self._impute == "nearest" else None
                out.append(_with(t, near.value if near is not None else worst, 1.0))
            elif t.state == TrialState.RUNNING:
                out.append(t)
        if states is not None:
            out = [t for t in out if t.state in states]
        return out


def _with(t: FrozenTrial, value: float | None, feasible: float) -> FrozenTrial:
    """A copy of ``t``, complete with ``value`` and one constraint (> 0: infeasible)."""
    return constrained_copy(t, value if value is not None else 0.0, feasible)


def _nearest(t: FrozenTrial, ran: list[FrozenTrial]) -> FrozenTrial | None:
    return min(ran, key=lambda r: _distance(t, r), default=None)


def _distance(a: FrozenTrial, b: FrozenTrial) -> float:
    total = 0.0
    for name, d in a.distributions.items():
        if name not in b.params:
            total += 1.0
            continue
        x, y = a.params[name], b.params[name]
        if isinstance(d, CategoricalDistribution):
            total += 0.0 if x == y else 1.0
        elif isinstance(d, IntDistribution | FloatDistribution):
            lo, hi, x, y = float(d.low), float(d.high), float(x), float(y)
            if d.log and lo > 0:
                lo, hi, x, y = math.log(lo), math.log(hi), math.log(x), math.log(y)
            total += ((x - y) / (hi - lo)) ** 2 if hi > lo else 0.0
    return total


__all__ = ["CrashAwareGPSampler"]
