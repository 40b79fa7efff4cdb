"""A configuration (parameter name -> value) -> launch arguments and environment.

Pure functions over a validated ``StudySpec``: which parameters are active under their
``when`` conditions, the argv/env a configuration adds to the engine's command, and which
constraints it violates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autotune.errors import ConfigError
from autotune.space.expr import compiled, topo_order
from autotune.space.schema import Parameter, StudySpec, choice_key

__all__ = ["active", "format_value", "order", "render", "render_value", "violations"]


# order() of the specs seen lately, by id (the spec kept with it, so that an id reused by
# another spec is not mistaken for it): ``active`` runs for every candidate a sampler weighs.
_ORDERS: dict[int, tuple[StudySpec, list[Parameter]]] = {}


def order(spec: StudySpec) -> list[Parameter]:
    """Parameters in dependency order: each after those its ``when`` names (else file order)."""
    known = _ORDERS.get(id(spec))
    if known is not None and known[0] is spec:
        return list(known[1])
    if len(_ORDERS) >= 16:
        _ORDERS.clear()
    out = _order(spec)
    _ORDERS[id(spec)] = (spec, out)
    return list(out)


def _order(spec: StudySpec) -> list[Parameter]:
    deps = {p.name: compiled(p.when).names if p.when else frozenset() for p in spec.parameters}
    for p in spec.parameters:  # a bound taken from another parameter: that one first
        ref = p.ref()
        if ref is not None:
            deps[p.name] = deps[p.name] | {ref[1]}
    by_name = {p.name: p for p in spec.parameters}
    return [by_name[name] for name in topo_order(deps)]


def active(spec: StudySpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``config`` whose parameters are active, in file order.

    A parameter is active when it has no ``when`` or its condition holds over the active
    values decided before it; a parameter absent from ``config`` (unset) is never active, and
    a condition naming it sees ``None``. Keys that are not parameters are dropped.
    """
    values: dict[str, Any] = {}
    for p in order(spec):
        if p.name not in config:
            continue
        if p.when is None or compiled(p.when).holds(values):
            values[p.name] = config[p.name]
    return {p.name: values[p.name] for p in spec.parameters if p.name in values}


def render(spec: StudySpec, config: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The arguments and environment of one configuration.

    Returns:
        ``fixed.args`` then each active parameter's arguments in file order; ``fixed.env``
        overlaid with the parameters' variables.

    Raises:
        ConfigError: a value that the parameter cannot take.
    """
    args = list(spec.fixed.args)
    env = dict(spec.fixed.env)
    for name, value in active(spec, config).items():
        more_args, more_env = render_value(spec.parameter(name), value)
        args += more_args
        env.update(more_env)
    return args, env


def render_value(param: Parameter, value: Any) -> tuple[list[str], dict[str, str]]:
    """What one parameter value adds to the launch, ignoring conditions.

    Examples: ``--cuda-graph-max-bs 128``; a ``store_true`` bool: ``--flag`` or nothing; a
    ``bool_style: value`` bool: ``--flag true``; an env parameter: ``{"NCCL_PROTO": "LL"}``;
    a ``map`` parameter: the args and env of that value's entry.

    Raises:
        ConfigError: ``value`` is not a value of ``param``.
    """
    if not param.contains(value):
        raise ConfigError(
            f"{value!r} is not a value of parameter {param.name!r} (see its range or choices)"
        )
    if param.map is not None:
        launch = param.map[choice_key(value)]
        return list(launch.args), dict(launch.env)
    if param.env is not None:
        return [], {param.env: format_value(param, value)}
    assert param.flag is not None
    if param.type == "bool" and param.bool_style == "store_true":
        return ([param.flag] if value else []), {}
    return [param.flag, format_value(param, value)], {}


def format_value(param: Parameter, value: Any) -> str:
    """A value as the text a server reads: ``128``, ``0.85``, ``true``/``1``, ``LL``."""
    if isinstance(value, bool):
        if param.env is not None:
            return "1" if value else "0"
        return "true" if value else "false"
    if param.type == "int":
        return str(int(value))
    if isinstance(value, float) or param.type == "float":
        return _float_text(float(value), param)
    return str(value)


def _float_text(value: float, param: Parameter) -> str:
    """Shortest text without float noise: 0.45 + 8 * 0.05 -> ``0.85``, not 0.8500000000000001."""
    if param.step is not None and isinstance(param.low, int | float):
        k = round((value - param.low) / param.step)
        decimals = max(_decimals(param.step), _decimals(param.low))
        value = round(param.low + k * param.step, decimals)
    text = f"{value:.12g}"
    return text if any(c in text for c in ".einf") else text + ".0"


def _decimals(x: float) -> int:
    text = f"{x:.12g}"
    if "e" in text:
        return max(0, -int(text.split("e")[1]) + 12)
    return len(text.split(".")[1]) if "." in text else 0


def violations(spec: StudySpec, config: Mapping[str, Any]) -> list[str]:
    """The constraints that ``config`` breaks, as written in the file.

    Constraints are evaluated over the active values only; one that names an inactive or
    unset parameter does not apply and is skipped.
    """
    values = active(spec, config)
    broken = []
    for text in spec.constraints:
        expr = compiled(text)
        if not expr.names <= values.keys():
            continue
        if not expr.holds(values):
            broken.append(text)
    return broken
