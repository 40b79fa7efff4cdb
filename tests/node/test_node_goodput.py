"""Goodput: requests per second within every per-request bound (DistServe, vLLM --goodput)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from autotune.models import Goodput
from autotune.node.bench import BenchResult, RequestRecord
from autotune.node.goodput import good, goodput_metrics, slo_misses


def _req(ttft: float, gaps: list[float], ok: bool = True) -> RequestRecord:
    return RequestRecord(
        ok=ok, ttft_s=ttft, e2e_s=ttft + sum(gaps), output_tokens=len(gaps) + 1, itl_s=gaps
    )


def test_a_request_counts_when_it_meets_every_bound() -> None:
    bounds = Goodput(ttft_ms=100, tpot_ms=20)
    assert good(_req(0.05, [0.01, 0.01]), bounds)
    assert not good(_req(0.2, [0.01, 0.01]), bounds)  # TTFT too slow
    assert not good(_req(0.05, [0.03, 0.03]), bounds)  # TPOT too slow
    assert not good(_req(0.05, [0.01], ok=False), bounds)  # failed


def test_itl_bound_is_the_largest_gap() -> None:
    smooth, stall = _req(0.01, [0.02] * 10), _req(0.01, [0.005] * 9 + [0.2])
    bounds = Goodput(itl_ms=50)
    assert good(smooth, bounds) and not good(stall, bounds)
    assert good(stall, Goodput(tpot_ms=50))  # its mean gap is small


def test_goodput_is_per_second_of_the_run_in_simulated_time() -> None:
    records = [_req(0.05, [0.01]), _req(0.05, [0.01]), _req(0.3, [0.01]), _req(0.0, [], ok=False)]
    result = BenchResult(records, duration_s=2.0, requested=4)
    out = goodput_metrics(result, Goodput(ttft_ms=100))
    assert out == {"goodput_req_s": 1.0, "goodput_miss_pct": 50.0}
    # A stand-in running 10x faster: its 50 ms are 500 simulated ms, its 2 s are 20.
    out = goodput_metrics(result, Goodput(ttft_ms=100), scale=10.0)
    assert out == {"goodput_req_s": 0.0, "goodput_miss_pct": 100.0}
    out = goodput_metrics(result, Goodput(ttft_ms=1000), scale=10.0)
    assert out["goodput_req_s"] == pytest.approx(2 / 20)  # the 300 ms one took 3 s


def test_goodput_needs_a_bound() -> None:
    with pytest.raises(ValidationError, match="at least one bound"):
        Goodput()


def test_slo_misses_names_the_bounds_exceeded_and_missing_metrics() -> None:
    assert slo_misses({"a": 1.0, "b": 5.0}, {"a": 2.0, "b": 4.0, "c": 1.0}) == ["b", "c"]
