"""The space as the search sees it: what the trials so far say about each parameter.

A sampler is told nothing but the trials: the parameters it knows are those some trial had,
each with the widest range any trial gave it (a bound taken from another parameter narrows
one trial's range, not the parameter's). A number is placed on [0, 1] over that range, on its
own scale (log where Optuna samples it so); a categorical's value by its index. A parameter a
trial did not have (a conditional one that was off) is absent: ``nan`` or ``-1``. Which value
of which parameter switches a conditional parameter on is read from the trials too
(``conditions``), so a planned configuration holds exactly the parameters it would have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial

Config = dict[str, Any]


def same(a: Any, b: Any) -> bool:
    """Whether two values are the same value (True is not 1)."""
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def key(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A configuration as something to look configurations up by."""
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


@dataclass(frozen=True)
class Param:
    """One parameter: a number (its widest range, scale and step) or a choice."""

    name: str
    choices: tuple[Any, ...] = ()  # a categorical's (empty: a number)
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    step: float | None = None
    integer: bool = False

    @property
    def numeric(self) -> bool:
        return not self.choices

    def place(self, value: Any) -> float:
        """A number's place on [0, 1] over its range, on its scale (nan: not a number)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return math.nan
        low, high, x = self.low, self.high, float(value)
        if self.log and low > 0 and x > 0:
            low, high, x = math.log(low), math.log(high), math.log(x)
        return (x - low) / (high - low) if high > low else 0.5

    def index(self, value: Any) -> int:
        """A choice's index (-1: not one of them)."""
        return next((i for i, c in enumerate(self.choices) if same(c, value)), -1)

    def at(self, u: float) -> Any:
        """The number at place ``u`` (clipped to [0, 1]), on its step."""
        u = min(1.0, max(0.0, u))
        if self.log and self.low > 0:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        if self.step:
            x = self.low + round((x - self.low) / self.step) * self.step
        x = min(self.high, max(self.low, x))
        return int(round(x)) if self.integer else float(round(x, 12))

    def reference(self) -> Any:
        """The value a setting takes where nothing says better: a choice's first, a number's
        middle on its scale."""
        return self.choices[0] if self.choices else self.at(0.5)

    def least(self) -> Any:
        """The value a setting that a feature switches on starts at: a choice's first, a
        number's low end (the feature on, at its least)."""
        return self.choices[0] if self.choices else self.at(0.0)


def param_of(name: str, d: BaseDistribution) -> Param:
    if isinstance(d, CategoricalDistribution):
        return Param(name, tuple(d.choices))
    if isinstance(d, IntDistribution | FloatDistribution):
        step: float | None = d.step
        if isinstance(d, IntDistribution) and d.step == 1:
            step = None
        return Param(name, (), d.low, d.high, d.log, step, isinstance(d, IntDistribution))
    raise TypeError(f"parameter {name!r}: unsupported distribution {d!r}")


def known(trials: Sequence[FrozenTrial]) -> dict[str, Param]:
    """Every parameter some trial had, with the widest range any trial gave it."""
    out: dict[str, Param] = {}
    for t in trials:
        for name, d in t.distributions.items():
            p = param_of(name, d)
            q = out.get(name)
            if q is not None and p.numeric and q.numeric:
                p = Param(
                    name, (), min(p.low, q.low), max(p.high, q.high), p.log, p.step, p.integer
                )
            elif q is not None and not p.numeric:
                p = Param(name, tuple(dict.fromkeys((*q.choices, *p.choices))))
            out[name] = p
    return dict(sorted(out.items()))


def encode(params: Sequence[Param], configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """configs x params: a number's place, a choice's index; nan where a configuration has no
    value of the parameter."""
    out = np.full((len(configs), len(params)), np.nan)
    for j, p in enumerate(params):
        for i, c in enumerate(configs):
            if p.name in c:
                out[i, j] = p.place(c[p.name]) if p.numeric else float(p.index(c[p.name]))
    return out


Condition = tuple[str, frozenset[str]]  # (parent, the reprs of the values that switch it on)


def conditions(configs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Condition]:
    """For each parameter that some configurations lack, the choice parameter whose values
    tell when it is there: present exactly where the parent has one of those values (none
    found: the parameter is kept wherever it was planned)."""
    out: dict[str, Condition] = {}
    for child in names:
        has = [c for c in configs if child in c]
        if not has or len(has) == len(configs):
            continue
        for parent in names:
            if parent == child or any(parent not in c for c in has):
                continue
            on = {repr(c[parent]) for c in has}
            others = [c for c in configs if parent in c and child not in c]
            if isinstance(next(iter(has))[parent], float) or not others:
                continue
            if all(repr(c[parent]) not in on for c in others):
                out[child] = (parent, frozenset(on))
                break
    return out


def active(config: Mapping[str, Any], conds: Mapping[str, Condition]) -> Config:
    """``config`` without the parameters its values switch off."""
    out = dict(config)
    changed = True
    while changed:  # a condition may name a conditional parameter
        changed = False
        for child, (parent, on) in conds.items():
            if child in out and (parent not in out or repr(out[parent]) not in on):
                del out[child]
                changed = True
    return out


__all__ = ["Config", "Param", "active", "conditions", "encode", "key", "known", "same"]
