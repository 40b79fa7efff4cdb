"""Several traffic shapes on one running server, and the one value the study optimises.

A trial measures each scenario of its spec in turn on the server it launched (a chat load at
a rate, then a long-context load at a concurrency, ...). Each scenario's metrics are kept
under its name (``chat.ttft_p99_ms``); the objective metric(s) named in ``Combine`` are also
given unprefixed, combined over the scenarios: a weighted sum or mean, or the worst scenario.
Counts (requests, tokens, seconds) are summed, and ``output_tok_s``/``request_s`` are the
totals over all scenarios unless they are themselves an objective. The implicit scenario of a
space with one ``workload:`` has no name: its metrics stay as they always were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autotune.models import Combine, Metrics, Scenario, ScenarioResult
from autotune.node import bench
from autotune.node.sweep import Found


def scenario_metrics(
    scenario: Scenario, windows: Sequence[Metrics], swept: Found | None
) -> tuple[ScenarioResult, Metrics]:
    """One scenario's result (unprefixed) and the metrics that stand for it.

    A swept scenario stands for the load that answers the sweep (the highest meeting every
    SLO) and reports that load as ``max_<over>_under_slo`` when it has an SLO.
    """
    if swept is None:
        metrics = bench.aggregate(windows) if windows else Metrics()
        return (
            ScenarioResult(
                name=scenario.name, metrics=metrics.flat(), windows=[w.flat() for w in windows]
            ),
            metrics,
        )
    assert scenario.sweep is not None
    metrics = swept.best.metrics if swept.best is not None else Metrics()
    if scenario.slo:
        extra = {**metrics.extra, scenario.sweep.metric: swept.max_load}
        metrics = metrics.model_copy(update={"extra": extra})
    result = ScenarioResult(
        name=scenario.name,
        metrics=metrics.flat(),
        over=scenario.sweep.over,
        steps=[m.step for m in swept.measured],
    )
    return result, metrics


def combined(values: Mapping[str, float], combine: Combine, direction: str) -> float:
    """One value from each scenario's ``values`` (name -> value)."""
    if combine.how == "worst":
        return min(values.values()) if direction == "maximize" else max(values.values())
    weights = {name: combine.weights.get(name, 1.0) for name in values}
    total = sum(weights[name] * value for name, value in values.items())
    if combine.how == "weighted_sum":
        return total
    return total / sum(weights.values())


def _objectives(flats: Mapping[str, Mapping[str, float]], combine: Combine) -> dict[str, float]:
    """The combined objective metric(s), for those every scenario measured."""
    out: dict[str, float] = {}
    for metric, direction in combine.metrics.items():
        values = {name: flat[metric] for name, flat in flats.items() if metric in flat}
        if values and len(values) == len(flats):
            out[metric] = combined(values, combine, direction)
    return out


def trial_metrics(
    results: Sequence[tuple[ScenarioResult, Metrics]], combine: Combine | None
) -> tuple[Metrics, list[dict[str, float]]]:
    """The trial's metrics and windows from its scenarios' (in the order they ran)."""
    if len(results) == 1 and not results[0][0].name:  # the implicit scenario: as before
        only, metrics = results[0]
        return metrics, only.windows
    combine = combine or Combine()
    flats = {r.name: r.metrics for r, _ in results}
    extra: dict[str, float] = {}
    for r, _ in results:
        extra.update({f"{r.name}.{k}": v for k, v in r.metrics.items()})
    goal = _objectives(flats, combine)
    parts = [m for _, m in results]
    tokens = sum(m.output_tokens for m in parts)
    done = sum(m.completed for m in parts)
    seconds = sum(m.duration_s for m in parts)
    total = Metrics(
        output_tok_s=goal.pop("output_tok_s", tokens / seconds if seconds > 0 else 0.0),
        request_s=goal.pop("request_s", done / seconds if seconds > 0 else 0.0),
        completed=done,
        failed=sum(m.failed for m in parts),
        output_tokens=tokens,
        duration_s=seconds,
        extra={**extra, **goal},
    )
    return total, _windows([r for r, _ in results], combine)


def _windows(results: Sequence[ScenarioResult], combine: Combine) -> list[dict[str, float]]:
    """Window ``i`` of every scenario side by side, with the objective combined over them;
    empty when a scenario swept or the scenarios measured different numbers of windows."""
    counts = {len(r.windows) for r in results}
    if any(r.steps for r in results) or len(counts) != 1 or counts == {0}:
        return []
    out = []
    for i in range(counts.pop()):
        flats = {r.name: r.windows[i] for r in results}
        window = {f"{name}.{k}": v for name, flat in flats.items() for k, v in flat.items()}
        window.update(_objectives(flats, combine))
        window["duration_s"] = sum(f.get("duration_s", 0.0) for f in flats.values())
        out.append(window)
    return out


__all__ = ["combined", "scenario_metrics", "trial_metrics"]
