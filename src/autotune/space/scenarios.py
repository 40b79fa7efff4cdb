"""The ``scenarios:``, ``sweep:``, ``goodput:`` and ``combine:`` parts of a space file.

``check`` holds a space to what these parts mean (called by ``StudySpec``'s validator, so its
errors carry ``FILE:LINE``): scenario names, metric names in SLOs and in the objective, weights
that match the scenarios, a bisection that has an SLO to bisect on, a sweep's loads. ``plan``
and ``slo_bounds`` turn a valid space into what a trial runs and what the study checks.

A space with only ``workload:`` (and perhaps ``sweep:``/``goodput:`` beside it) is one
implicit scenario whose metrics keep their plain names, so older spaces and studies read as
before.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from autotune.models import PIECES_COUNTED, Combine, Goodput, Metrics, Scenario, Sweep, Workload
from autotune.space.located import LocatedError
from autotune.space.workload import DatasetError, materialise


class SpaceParts(Protocol):
    """What these parts read of a space (``space.schema.StudySpec``, whose validator calls
    ``check``: a protocol, so that this module does not import the schema back)."""

    @property
    def objective(self) -> Any: ...
    @property
    def slo(self) -> dict[str, float]: ...
    @property
    def workload(self) -> Workload: ...
    @property
    def scenarios(self) -> list[Scenario] | None: ...
    @property
    def sweep(self) -> Sweep | None: ...
    @property
    def goodput(self) -> Goodput | None: ...
    @property
    def combine(self) -> Any: ...
    @property
    def model_fields_set(self) -> set[str]: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any: ...


Spec = TypeVar("Spec", bound=SpaceParts)

# Metric names a load produces (``Metrics.flat()`` of a server trial).
_STATS = [
    f"{n}_{k}_ms" for n in ("ttft", "itl", "e2e", "tpot") for k in ("mean", "p50", "p90", "p99")
]
BASE_METRICS = frozenset(
    [
        *Metrics().flat(),
        *_STATS,
        "accept_length",
        "peak_failed_requests",
        "send_lag_p99_ms",
        PIECES_COUNTED,
    ]
)
GOODPUT_METRICS = frozenset({"goodput_req_s", "goodput_miss_pct"})


def _err(message: str, at: tuple[str | int, ...]) -> Exception:
    return LocatedError(message, at)


def _hint(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def metrics_of(scenario: Scenario) -> frozenset[str]:
    """The metric names a scenario reports."""
    out = set(BASE_METRICS)
    if scenario.goodput is not None:
        out |= GOODPUT_METRICS
    if scenario.sweep is not None and scenario.slo:
        out.add(scenario.sweep.metric)  # the highest load meeting its SLO
    return frozenset(out)


def plan(spec: SpaceParts) -> list[Scenario]:
    """The scenarios a trial measures: the named ones, the implicit one when the space sweeps
    or counts goodput, or none (the workload's windows and peak, as always)."""
    if spec.scenarios is not None:
        return list(spec.scenarios)
    if spec.sweep is None and spec.goodput is None:
        return []
    return [Scenario(workload=spec.workload, slo=spec.slo, sweep=spec.sweep, goodput=spec.goodput)]


def combine(spec: SpaceParts) -> Combine | None:
    """How the objective is made from several scenarios (None: one implicit scenario)."""
    if spec.scenarios is None:
        return None
    c = spec.combine
    return Combine(
        how=c.how if c is not None else "weighted_mean",
        weights=dict(c.weights) if c is not None else {},
        metrics=dict(objectives(spec)),
    )


def objectives(spec: SpaceParts) -> list[tuple[str, str]]:
    """``(metric, direction)`` of every objective, the primary first (a multi-objective
    space lists them under ``objective.metrics``)."""
    several = getattr(spec.objective, "metrics", None) or []
    pairs = [(str(o.metric), str(o.direction)) for o in several]
    return pairs or [(spec.objective.metric, spec.objective.direction)]


def slo_bounds(spec: SpaceParts) -> dict[str, float]:
    """Every SLO bound the study checks, by the metric name a trial reports it under."""
    out = dict(spec.slo)
    for s in spec.scenarios or []:
        out.update({f"{s.name}.{k}": v for k, v in s.slo.items()})
    return out


def materialise_scenarios(
    spec: Spec, base: Path
) -> tuple[Spec, list[tuple[str, tuple[str | int, ...]]]]:
    """``spec`` with each scenario's prompt file read into its workload (as the loader does
    for ``workload:``), and the problems found as ``(message, path)``."""
    problems: list[tuple[str, tuple[str | int, ...]]] = []
    out = []
    for i, s in enumerate(spec.scenarios or []):
        try:
            out.append(s.model_copy(update={"workload": materialise(s.workload, base)}))
        except DatasetError as exc:
            problems.append((str(exc), ("scenarios", i, "workload", "prompts", "path")))
    if problems:
        return spec, problems
    copy: Spec = spec.model_copy(update={"scenarios": out})
    return copy, []


def check(spec: SpaceParts) -> None:
    """Raise ``LocatedError`` for the first problem of these parts of ``spec``."""
    if spec.scenarios is None:
        _check_implicit(spec)
        return
    for key in ("sweep", "goodput"):
        if getattr(spec, key) is not None:
            raise _err(
                f"'{key}' beside 'scenarios' is ambiguous (move it under the scenario it is for)",
                (key,),
            )
    if "workload" in spec.model_fields_set:
        raise _err(
            "give either 'workload' (one scenario) or 'scenarios' (several), not both "
            "(move the workload under a scenario; YAML anchors can share settings)",
            ("workload",),
        )
    if not spec.scenarios:
        raise _err("'scenarios' is empty (name at least one, or use 'workload')", ("scenarios",))
    names: list[str] = []
    for i, s in enumerate(spec.scenarios):
        if not s.name:
            raise _err("a scenario needs a 'name' (e.g. chat)", ("scenarios", i))
        if s.name in names:
            raise _err(
                f"duplicate scenario name {s.name!r} (each name must be unique)",
                ("scenarios", i, "name"),
            )
        names.append(s.name)
        _check_scenario(s, ("scenarios", i))
    _check_combine(spec, names)
    _check_top_slo(spec)
    _check_objective(spec)


def _check_implicit(spec: SpaceParts) -> None:
    if spec.combine is not None:
        raise _err(
            "'combine' applies to several 'scenarios' (remove it, or declare scenarios)",
            ("combine",),
        )
    if spec.sweep is None and spec.goodput is None:
        return  # today's space: nothing of these parts to check
    implicit = Scenario(
        workload=spec.workload, slo=spec.slo, sweep=spec.sweep, goodput=spec.goodput
    )
    _check_scenario(implicit, ())
    _check_objective(spec)


def _check_scenario(s: Scenario, at: tuple[str | int, ...]) -> None:
    known = metrics_of(s)
    for key in s.slo:
        if key not in known:
            extra = ""
            if key in GOODPUT_METRICS:
                extra = " (goodput metrics need a 'goodput:' block with per-request bounds)"
            raise _err(
                f"SLO names unknown metric {key!r}{_hint(key, known)}{extra} "
                f"(known: {', '.join(sorted(known))})",
                (*at, "slo", key),
            )
    if s.sweep is None:
        return
    sw = s.sweep
    where = (*at, "sweep")
    if sw.over == "concurrency" and s.workload.rate is not None:
        raise _err(
            "a sweep over concurrency runs a closed loop, but the workload has a rate (sweep "
            "over: rate, or remove rate from the workload)",
            (*where, "over"),
        )
    if sw.mode == "max_under_slo":
        if not s.slo:
            raise _err(
                "mode max_under_slo bisects on the SLO, and there is none (add slo: "
                "{ttft_p99_ms: ...} to this scenario, or use mode: steps)",
                (*where, "mode"),
            )
        if sw.values is not None:
            raise _err(
                "a bisection searches between 'low' and 'high', not a list of 'values' "
                "(use low/high, or mode: steps)",
                (*where, "values"),
            )
    if sw.values is None and (sw.low is None or sw.high is None):
        missing = "low" if sw.low is None else "high"
        raise _err(
            f"a sweep needs 'values' (a list of loads) or 'low' and 'high' (add '{missing}')",
            where,
        )
    if sw.values is not None:
        if sw.low is not None or sw.high is not None:
            raise _err("give 'values' or 'low'/'high', not both", (*where, "values"))
        if not sw.values:
            raise _err("'values' is empty (list at least one load)", (*where, "values"))
        for j, v in enumerate(sw.values):
            if v <= 0 or (sw.over == "concurrency" and float(v) != int(v)):
                what = "a whole number >= 1" if sw.over == "concurrency" else "> 0"
                raise _err(f"a {sw.over} must be {what}, got {v:g}", (*where, "values", j))
    elif sw.low is not None and sw.high is not None and sw.low >= sw.high:
        raise _err(
            f"low ({sw.low:g}) must be below high ({sw.high:g}) (swap them)", (*where, "low")
        )


def _check_combine(spec: SpaceParts, names: list[str]) -> None:
    c = spec.combine
    if c is None:
        return
    if c.how == "worst" and c.weights:
        raise _err(
            "weights mean nothing to combine: worst (remove them, or use weighted_mean)",
            ("combine", "weights"),
        )
    for key in c.weights:
        if key not in names:
            raise _err(
                f"weights name unknown scenario {key!r}{_hint(key, names)} "
                f"(scenarios: {', '.join(names)})",
                ("combine", "weights", key),
            )
    missing = [n for n in names if n not in c.weights]
    if c.weights and missing:
        raise _err(
            f"weights must name every scenario; missing {missing} (add them, or remove "
            "weights for equal ones)",
            ("combine", "weights"),
        )


def _split(name: str, spec: SpaceParts) -> tuple[Scenario | None, str]:
    head, dot, rest = name.partition(".")
    if not dot:
        return None, name
    for s in spec.scenarios or []:
        if s.name == head:
            return s, rest
    return None, name


def _check_top_slo(spec: SpaceParts) -> None:
    names = [s.name for s in spec.scenarios or []]
    for key in spec.slo:
        s, metric = _split(key, spec)
        if s is None:
            head = key.partition(".")[0]
            raise _err(
                f"with several scenarios an SLO names its scenario: {key!r} is not "
                f"'<scenario>.<metric>' with a scenario of {names}{_hint(head, names)} "
                f"(e.g. {names[0]}.{metric.partition('.')[2] or metric}, or move it under "
                "that scenario's slo:)",
                ("slo", key),
            )
        if metric not in metrics_of(s):
            raise _err(
                f"SLO names unknown metric {metric!r} of scenario {s.name!r}"
                f"{_hint(metric, metrics_of(s))}",
                ("slo", key),
            )


def _check_objective(spec: SpaceParts) -> None:
    plan_ = plan(spec)
    several = len(objectives(spec)) > 1
    for i, (metric, _direction) in enumerate(objectives(spec)):
        at: tuple[str | int, ...] = (
            ("objective", "metrics", i, "metric")
            if several
            else (
                "objective",
                "metric",
            )
        )
        s, name = _split(metric, spec)
        for sc in [s] if s is not None else plan_:
            known = metrics_of(sc)
            if name not in known:
                who = f"scenario {sc.name!r}" if sc.name else "the workload"
                raise _err(
                    f"objective metric {metric!r} is not reported by {who}{_hint(name, known)} "
                    f"(known: {', '.join(sorted(known))})",
                    at,
                )


__all__ = [
    "BASE_METRICS",
    "GOODPUT_METRICS",
    "check",
    "combine",
    "materialise_scenarios",
    "metrics_of",
    "objectives",
    "plan",
    "slo_bounds",
]
