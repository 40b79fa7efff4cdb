"""Goodput: requests per second that meet every per-request bound, and SLO checks of a load.

Throughput counts every token; a service is judged by the requests its users found fast
enough. Goodput, as DistServe and vLLM's ``bench serve --goodput`` define it, counts only the
requests whose own TTFT, TPOT (and here also their largest inter-token gap and end-to-end
time) are within bounds, per second of the run. ``goodput_miss_pct`` (the share of the
requests sent that failed or missed a bound) lets an SLO say "at most 1% slow requests".

Times are compared in the seconds the server simulates when it is a time-scaled stand-in
(``scale``), as every other metric is reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from autotune.models import Goodput, Metrics
from autotune.node.bench import BenchResult, RequestRecord

GOODPUT_METRICS = ("goodput_req_s", "goodput_miss_pct")


def _request_ms(record: RequestRecord, scale: float) -> dict[str, float | None]:
    """One request's per-request quantities in milliseconds (None: not defined for it)."""
    ttft = record.ttft_s
    tpot = None
    if ttft is not None and record.output_tokens > 1:
        tpot = (record.e2e_s - ttft) / (record.output_tokens - 1)
    return {
        "ttft_ms": None if ttft is None else ttft * scale * 1000.0,
        "tpot_ms": None if tpot is None else tpot * scale * 1000.0,
        "itl_ms": max(record.itl_s) * scale * 1000.0 if record.itl_s else 0.0,
        "e2e_ms": record.e2e_s * scale * 1000.0,
    }


def good(record: RequestRecord, bounds: Goodput, scale: float = 1.0) -> bool:
    """Whether one request completed within every bound (a bound on an undefined quantity,
    such as the TPOT of a one-token answer, is met)."""
    if not record.ok:
        return False
    values = _request_ms(record, scale)
    for name, bound in bounds.bounds().items():
        value = values[name]
        if bound is not None and value is not None and value > bound:
            return False
    return True


def goodput_metrics(result: BenchResult, bounds: Goodput, scale: float = 1.0) -> dict[str, float]:
    """``goodput_req_s`` and ``goodput_miss_pct`` of one load run."""
    met = sum(1 for r in result.records if good(r, bounds, scale))
    sent = max(result.requested, len(result.records))
    duration = result.duration_s * scale
    return {
        "goodput_req_s": met / duration if duration > 0 else 0.0,
        "goodput_miss_pct": 100.0 * (sent - met) / sent if sent else 0.0,
    }


def with_extra(metrics: Metrics, extra: Mapping[str, float]) -> Metrics:
    """``metrics`` with more named values in ``extra``."""
    if not extra:
        return metrics
    return metrics.model_copy(update={"extra": {**metrics.extra, **extra}})


def slo_misses(flat: Mapping[str, float], slo: Mapping[str, float]) -> list[str]:
    """The SLO bounds a load missed (a metric it did not produce counts as missed)."""
    out = []
    for name, bound in slo.items():
        value = flat.get(name)
        if value is None or value > bound:
            out.append(name)
    return out


__all__ = ["GOODPUT_METRICS", "good", "goodput_metrics", "slo_misses", "with_extra"]
