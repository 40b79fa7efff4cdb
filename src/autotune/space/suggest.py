"""The one place where the space meets Optuna: parameters -> ``trial.suggest_*`` calls.

The baseline is run as an enqueued trial: the driver calls
``study.enqueue_trial(spec.baseline)`` and then ``suggest(trial, spec, fixed=spec.baseline)``,
so the baseline's values are recorded with the same distributions as every other trial, and
parameters the baseline does not name are neither suggested nor set (the engine default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import BaseTrial

from autotune.errors import StudyError
from autotune.space.expr import compiled
from autotune.space.render import order
from autotune.space.schema import Parameter, StudySpec

__all__ = ["distribution", "distributions", "normalize", "suggest"]


def suggest(
    trial: BaseTrial, spec: StudySpec, fixed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Ask ``trial`` for one configuration of ``spec``.

    Parameters are asked in dependency order; one whose ``when`` is false over the values
    chosen so far is skipped (absent from the result and from the trial's params).

    Args:
        trial: an Optuna trial (``study.ask()``, or ``FixedTrial``).
        spec: the validated space.
        fixed: a configuration to reproduce (the baseline). Only the parameters it names are
            set, with exactly its values; the trial must have been enqueued with it.

    Returns:
        ``{name: value}`` of the active parameters, in file order.

    Raises:
        StudyError: with ``fixed``, the trial returned another value (it was not enqueued).
    """
    values: dict[str, Any] = {}
    for p in order(spec):
        if p.when is not None and not compiled(p.when).holds(values):
            continue
        if fixed is None:
            values[p.name] = _ask(trial, spec, p, values)
            continue
        if p.name not in fixed:
            continue
        want = normalize(p, fixed[p.name])
        got = _ask(trial, spec, p, values)
        if got != want or isinstance(got, bool) != isinstance(want, bool):
            raise StudyError(
                f"trial {getattr(trial, 'number', '?')}: parameter {p.name!r} came back as "
                f"{got!r}, not the fixed {want!r} (call study.enqueue_trial(fixed) first)"
            )
        values[p.name] = want
    return {p.name: values[p.name] for p in spec.parameters if p.name in values}


def normalize(param: Parameter, value: Any) -> Any:
    """A value as Optuna returns it for ``param``: ints for int parameters, floats for float."""
    if param.type == "int" and not isinstance(value, bool):
        return int(value)
    if param.type == "float" and not isinstance(value, bool):
        return float(value)
    return value


def distribution(
    param: Parameter, spec: StudySpec | None = None, values: Mapping[str, Any] | None = None
) -> BaseDistribution:
    """The Optuna distribution of one parameter.

    A bound taken from another parameter (``high: {param: M}``) needs ``spec``: it is M's
    value in ``values`` when given, else the widest range M allows.
    """
    if param.type in ("int", "float"):
        if spec is not None:
            low, high = spec.range_in(param, values or {})
        else:
            assert isinstance(param.low, int | float) and isinstance(param.high, int | float)
            low, high = float(param.low), float(param.high)
        if param.type == "int":
            return IntDistribution(int(low), int(high), log=param.log, step=int(param.step or 1))
        return FloatDistribution(low, high, log=param.log, step=param.step)
    return CategoricalDistribution(param.values())


def distributions(spec: StudySpec) -> dict[str, BaseDistribution]:
    """Every parameter's distribution, e.g. for ``study.add_trial`` or importance plots."""
    return {p.name: distribution(p, spec) for p in spec.parameters}


def _ask(trial: BaseTrial, spec: StudySpec, p: Parameter, values: Mapping[str, Any]) -> Any:
    # Bounds taken from another parameter are that parameter's value, chosen before this one
    # (render.order): Optuna then samples inside the range that value leaves.
    d = distribution(p, spec, values)
    if isinstance(d, IntDistribution):
        return trial.suggest_int(p.name, d.low, d.high, step=d.step, log=d.log)
    if isinstance(d, FloatDistribution):
        return trial.suggest_float(p.name, d.low, d.high, step=d.step, log=d.log)
    return trial.suggest_categorical(p.name, p.values())
