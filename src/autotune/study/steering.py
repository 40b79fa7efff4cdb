"""Crash-risk steering: do not launch what the study's own history says will crash.

TPE already learns from crashes (they are told PRUNED with a violated constraint, see
``outcome.py``), but only as one half of its good/bad split, so it keeps proposing near the
crashed region, and the best configurations often sit right at its edge (more memory, bigger
batches). Every launch costs minutes on a GPU node, so before a proposal is launched this
model estimates its crash probability from the trials launched so far and rejects it when
the estimate is high. A rejected proposal is recorded as skipped with the reason and told to
Optuna like a crash, so the sampler learns from it too.

The model is a distance-weighted k-nearest-neighbour vote over the configurations launched so
far (numeric parameters scaled to [0, 1], on a log scale where the parameter is ``log``;
categorical ones one-hot), smoothed towards the study's overall crash rate. It only acts after
enough evidence (``min_launched`` launched, ``min_crashes`` crashed), lets a small share of
risky proposals through (``explore``), and never rejects more than ``max_streak`` proposals in
a row, so it cannot lock the study out of its space.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autotune.space.schema import Parameter, StudySpec


@dataclass(frozen=True)
class SteeringOptions:
    """When and how hard to steer (the defaults were chosen on bench/steering.py)."""

    enabled: bool = True
    threshold: float = 0.25  # reject at or above this predicted crash probability
    k: int = 3  # neighbours that vote
    min_launched: int = 8
    min_crashes: int = 2
    explore: float = 0.05  # share of risky proposals launched anyway
    max_streak: int = 20  # rejections in a row before one is launched regardless


class CrashRisk:
    """Predicts whether a configuration will crash from the configurations launched so far.

    Args:
        spec: the space (for the parameters' ranges and choices).
        options: thresholds; see ``SteeringOptions``.
        seed: seed of the exploration draws (the study's sampler seed).
    """

    def __init__(
        self, spec: StudySpec, options: SteeringOptions | None = None, seed: int | None = None
    ) -> None:
        self.spec = spec
        self.options = options or SteeringOptions()
        self._rng = random.Random(seed)
        self._points: list[list[float]] = []
        self._crashed: list[bool] = []
        self._streak = 0

    def observe(self, config: Mapping[str, Any], crashed: bool) -> None:
        """Learn the outcome of one launched configuration."""
        self._points.append(self._encode(config))
        self._crashed.append(crashed)

    @property
    def ready(self) -> bool:
        """Whether there is enough evidence to predict."""
        o = self.options
        return len(self._points) >= o.min_launched and sum(self._crashed) >= o.min_crashes

    def probability(self, config: Mapping[str, Any]) -> float | None:
        """The predicted crash probability of ``config``, or None before ``ready``."""
        if not self.ready:
            return None
        q = self._encode(config)
        dists = sorted(
            (math.dist(q, p), c) for p, c in zip(self._points, self._crashed, strict=True)
        )[: self.options.k]
        prior = sum(self._crashed) / len(self._crashed)
        weights = [1.0 / (d + 0.05) for d, _ in dists]
        votes = sum(w for w, (_, c) in zip(weights, dists, strict=True) if c)
        return (votes + prior) / (sum(weights) + 1.0)

    def check(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` should not be launched (one line, with the predicted probability),
        or None to launch it. Call once per proposal; a None counts as a launch."""
        o = self.options
        p = self.probability(config) if o.enabled else None
        if p is None or p < o.threshold or self._streak >= o.max_streak:
            self._streak = 0
            return None
        if self._rng.random() < o.explore:  # keep testing the model's belief now and then
            self._streak = 0
            return None
        self._streak += 1
        return (
            f"predicted crash p={p:.2f} (nearest of {len(self._points)} launched configurations "
            f"crashed; threshold {o.threshold:g})"
        )

    # -- encoding -------------------------------------------------------------------------

    def _encode(self, config: Mapping[str, Any]) -> list[float]:
        out: list[float] = []
        for p in self.spec.parameters:
            out.extend(_features(p, config.get(p.name), p.name in config))
        return out


def _features(p: Parameter, value: Any, active: bool) -> list[float]:
    if p.type in ("categorical", "bool"):
        # One-hot scaled so that two different values are at distance 1, like numeric ends.
        scale = 1.0 / math.sqrt(2.0)
        return [scale if active and value == v and type(value) is type(v) else 0.0
                for v in p.values()]
    # int/float: position in the range (log scale where the parameter is log), plus whether
    # the parameter is active at all (conditional parameters).
    if not active or isinstance(value, bool) or not isinstance(value, int | float):
        return [0.0, 0.0]
    low = float(p.low if p.low is not None else 0.0)
    high = float(p.high if p.high is not None else 1.0)
    x = float(value)
    if p.log and low > 0 and x > 0:
        low, high, x = math.log(low), math.log(high), math.log(x)
    span = high - low
    return [min(1.0, max(0.0, (x - low) / span)) if span > 0 else 0.0, 1.0]


__all__ = ["CrashRisk", "SteeringOptions"]
