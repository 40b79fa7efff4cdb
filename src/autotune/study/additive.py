"""An additive model of the objective, for proposals that push each parameter to where it pays.

Server settings mostly act on their own: a larger batch is better until it no longer fits, a
kernel backend is worth so much, fusion adds a few percent. TPE learns such trends slowly
within 30 launches over five or more parameters: it rarely puts every parameter at its best
end at once. This model fits log(value) as a sum of one effect per parameter (a level per
categorical or bool value, a piecewise-linear curve on the scaled range of a number) by
ridge regression over the configurations that ran, and ranks candidate configurations by it.
A piecewise-linear effect is highest at a bend or an end, never between two bends, so a number
whose effect peaks inside its range (a buffer size's hill) may also get a square term
(``square``; ``history.fit`` chooses which numbers).
Its argmax among candidates that the crash model lets through is a proposal that moves every
parameter toward its best end together, up to the learned crash edges.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from autotune.space.schema import same_value

# shrinks effects the launches barely support toward none (0.3 until measured: at 0.3 a
# one-at-a-time launch kept a quarter to four fifths of its effect; docs/benchmarks.md)
RIDGE = 0.01
# A number's effect is piecewise linear on its scaled range, bending at these points: it can
# rise and level off (graph batch sizes), peak inside the range (a buffer size) or keep rising.
KNOTS = (-0.5, 0.0, 0.5)
# Finer bends, for a peak between the coarse ones (a buffer best at a quarter of its log
# range); a study fits both and keeps the one that predicts left-out launches better (``loo``).
FINE_KNOTS = (-0.6, -0.3, 0.0, 0.3, 0.6)
# Centre each feature on the launches' mean before the fit: the ridge then shrinks effects,
# not the offsets the one-hot levels and curves carry, and a level no launch had is predicted
# as the launches' own mix, not off by whatever share of the offset its group's other levels
# took (a choice that only crashed read 37% worse than the best). Measured level over the
# boxes (+0.8 and -0.4 points held out, -0.6 on a tuning box), so off (docs/benchmarks.md).
CENTER = False


class AdditiveModel:
    """log(value) as a sum of per-parameter effects over one set of parameters.

    Args:
        distributions: the parameters (name -> Optuna distribution) the model covers.
        knots: where a number's piecewise-linear effect may bend, on its scaled range.
        ridge: how hard effects the launches barely support are shrunk toward none.
        square: the numbers whose effect also has a square term (True: every number).
    """

    def __init__(
        self,
        distributions: Mapping[str, BaseDistribution],
        knots: Sequence[float] = KNOTS,
        ridge: float = RIDGE,
        center: bool = CENTER,
        square: bool | Collection[str] = False,
    ) -> None:
        self.distributions = dict(distributions)
        self.knots = tuple(knots)
        # numbers whose effect also has a square term (True: every number)
        self.square = frozenset(
            (self.distributions if square is True else square) if square else ()
        )
        self.ridge = ridge
        self.center = center
        self._offset: np.ndarray | float = 0.0  # each feature's mean over the fit's launches
        self.loo = math.inf  # leave-one-out mean squared error of the last fit
        self._coef: np.ndarray | None = None
        self._cov: np.ndarray | None = None  # the coefficients' posterior covariance
        self._mean = 0.0

    def features(self, config: Mapping[str, Any]) -> list[float]:
        """One row: one-hot levels for choices; x (in [-1, 1]) and its hinges for numbers."""
        row: list[float] = []
        for name, d in self.distributions.items():
            value = config.get(name)
            if isinstance(d, CategoricalDistribution):
                row += [1.0 if same_value(value, c) else 0.0 for c in d.choices]
            else:
                row += self._curve(name, scaled(d, value))
        return row

    def _curve(self, name: str, x: float) -> list[float]:
        """A number's features at ``x`` on its scaled range: x, its square where ``square``
        names it, and its hinges."""
        return [x] + [x * x] * (name in self.square) + [max(0.0, x - k) for k in self.knots]

    def fit(self, configs: Sequence[Mapping[str, Any]], values: Sequence[float]) -> bool:
        """Fit to measured configurations; False when there are too few to say anything."""
        if len(configs) < 4:
            return False
        x = np.array([self.features(c) for c in configs])
        y = np.array(values, dtype=float)
        self._mean = float(y.mean())
        self._offset = x.mean(axis=0) if self.center else 0.0
        x = x - self._offset
        a = x.T @ x + self.ridge * np.eye(x.shape[1])
        self._coef = np.linalg.solve(a, x.T @ (y - self._mean))
        # Bayesian ridge: the residuals' variance times A^-1 (a floor keeps a perfect fit from
        # claiming certainty).
        resid = y - self._mean - x @ self._coef
        dof = max(1, len(y) - 1)
        var = max(float(resid @ resid) / dof, 1e-4)
        inv = np.linalg.inv(a)
        self._cov = var * inv
        # Each launch's leave-one-out residual, from its leverage (ridge's closed form).
        lev = np.einsum("ij,jk,ik->i", x, inv, x)
        self.loo = float(np.mean((resid / np.maximum(1 - lev, 1e-3)) ** 2))
        return True

    def peaked(self, points: int = 33) -> set[str]:
        """The numbers whose fitted effect is highest strictly inside their range (on
        ``points`` places across it), not at an end: a buffer size's hill, not a batch size
        that keeps paying up to a crash edge."""
        if self._coef is None:
            raise RuntimeError("fit the model first")
        out: set[str] = set()
        at = 0  # where the parameter's coefficients start
        for name, d in self.distributions.items():
            if isinstance(d, CategoricalDistribution):
                at += len(d.choices)
                continue
            rows = np.array([self._curve(name, x) for x in np.linspace(-1.0, 1.0, points)])
            top = int((rows @ self._coef[at : at + rows.shape[1]]).argmax())
            if 0 < top < points - 1:
                out.add(name)
            at += rows.shape[1]
        return out

    def std(self, configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The posterior standard deviation of each configuration's predicted log value."""
        if self._cov is None:
            raise RuntimeError("fit the model first")
        x = np.array([self.features(c) for c in configs]) - self._offset
        return np.asarray(np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", x, self._cov, x), 1e-12)))

    def predict(self, configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Predicted log value of each configuration."""
        if self._coef is None:
            raise RuntimeError("fit the model first")
        x = np.array([self.features(c) for c in configs]) - self._offset
        return np.asarray(x @ self._coef + self._mean)


def scaled(d: BaseDistribution, value: Any) -> float:
    """``value`` on [-1, 1] over the parameter's range (its log where the parameter is log)."""
    if not isinstance(d, IntDistribution | FloatDistribution):
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    low, high, x = float(d.low), float(d.high), float(value)
    if d.log and low > 0 and x > 0:
        low, high, x = math.log(low), math.log(high), math.log(x)
    if high <= low:
        return 0.0
    return 2.0 * (min(high, max(low, x)) - low) / (high - low) - 1.0


def candidates(
    distributions: Mapping[str, BaseDistribution],
    tops: Sequence[Mapping[str, Any]],
    rng: random.Random,
    n: int = 300,
    reach: float = 2.0,
    most: int = 3,
    slides: Sequence[float] = (),
    pairs: Collection[frozenset[str]] | None = None,
) -> list[dict[str, Any]]:
    """Configurations to rank: each of the best ones with every parameter moved to each end or
    choice (one at a time), random moves of one to ``most`` parameters on their own
    scale, a number at most ``reach`` (of the [-1, 1] range) from where it was, and for each
    step in ``slides`` every two numbers moved that far in opposite directions (their places
    in their ranges keep their sum: along the edge of a pool that two numbers fill; only the
    two of one of ``pairs`` where given)."""
    out: list[dict[str, Any]] = []
    names = list(distributions)
    for top in tops:
        out.extend(_slides(distributions, top, slides, pairs))
        for name in names:
            for value in _levels(distributions[name]):
                c = {**top, name: value}
                if (
                    abs(
                        scaled(distributions[name], value)
                        - scaled(distributions[name], top.get(name))
                    )
                    <= reach
                ):
                    out.append(c)
        for _ in range(n // max(1, len(tops))):
            moved = rng.sample(names, k=min(len(names), rng.randint(1, most)))
            c = dict(top)
            for name in moved:
                c[name] = _near(distributions[name], top.get(name), rng, reach)
            out.append(c)
    return out


def _slides(
    distributions: Mapping[str, BaseDistribution],
    top: Mapping[str, Any],
    steps: Sequence[float],
    pairs: Collection[frozenset[str]] | None,
) -> list[dict[str, Any]]:
    """``top`` with every two of its numbers (of ``pairs`` where given) moved each step of
    ``steps`` in opposite directions."""
    numbers = {
        n: d
        for n, d in distributions.items()
        if isinstance(d, IntDistribution | FloatDistribution)
        and isinstance(top.get(n), int | float)
    }
    out = []
    for a, b in itertools.permutations(numbers, 2) if steps else ():
        if pairs is not None and frozenset((a, b)) not in pairs:
            continue
        for step in steps:
            c = {**top, a: _moved(numbers[a], top[a], -step), b: _moved(numbers[b], top[b], step)}
            if c != top:
                out.append(c)
    return out


def _moved(d: IntDistribution | FloatDistribution, value: Any, by: float) -> Any:
    """``value`` moved ``by`` on the [-1, 1] scale of its range (within it), on its grid."""
    x = min(1.0, max(-1.0, scaled(d, value) + by))
    low, high = float(d.low), float(d.high)
    if d.log:
        low, high = math.log(low), math.log(high)
    y = low + (x + 1.0) / 2.0 * (high - low)
    return on_grid(d, math.exp(y) if d.log else y)


def _near(d: BaseDistribution, value: Any, rng: random.Random, reach: float) -> Any:
    if isinstance(d, CategoricalDistribution) or not isinstance(
        d, IntDistribution | FloatDistribution
    ):
        return draw(d, rng)
    return _moved(d, value, rng.uniform(-reach, reach))


def draw(d: BaseDistribution, rng: random.Random) -> Any:
    """A value of ``d`` drawn uniformly on the parameter's own scale, on its grid."""
    if isinstance(d, CategoricalDistribution):
        return rng.choice(d.choices)
    if not isinstance(d, IntDistribution | FloatDistribution):
        raise TypeError(f"unknown distribution {d!r}")
    low, high = float(d.low), float(d.high)
    if d.log:
        x = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        x = rng.uniform(low, high)
    return on_grid(d, x)


def _levels(d: BaseDistribution) -> list[Any]:
    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, IntDistribution | FloatDistribution):
        return [d.low, d.high]
    return []


def on_grid(d: IntDistribution | FloatDistribution, x: float) -> Any:
    """``x`` on the parameter's grid (its step from ``low``), within its range."""
    if isinstance(d, IntDistribution):
        return int(min(d.high, max(d.low, d.low + round((x - d.low) / d.step) * d.step)))
    if d.step is not None:
        return float(min(d.high, max(d.low, d.low + round((x - d.low) / d.step) * d.step)))
    return float(min(d.high, max(d.low, x)))


def toward(d: IntDistribution | FloatDistribution, value: Any, end: Any, f: float) -> Any:
    """The point ``f`` of the way from ``value`` to ``end`` on the parameter's scale, on its
    grid."""
    a, b = float(value), float(end)
    if d.log and a > 0 and b > 0:
        return on_grid(d, math.exp(math.log(a) + f * (math.log(b) - math.log(a))))
    return on_grid(d, a + f * (b - a))


def sixteenths(d: IntDistribution | FloatDistribution, value: Any, end: Any) -> list[Any]:
    """The points 1/16, 2/16, ... of the way from ``value`` to ``end`` on the parameter's
    scale and grid, those that differ from ``value``."""
    points = (toward(d, value, end, k / 16) for k in range(1, 17))
    return [v for v in points if not same_value(v, value)]


__all__ = ["AdditiveModel", "candidates", "draw", "on_grid", "scaled", "sixteenths", "toward"]
