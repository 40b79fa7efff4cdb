"""Measurement windows on one running server, the per-window callback and the peak window."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from node_helpers import PY, server_argv
from pydantic import ValidationError

from autotune.models import (
    MEMORY_CAUSES,
    Cause,
    Metrics,
    Outcome,
    Phase,
    Stats,
    TrialSpec,
    Workload,
)
from autotune.node import run_trial
from autotune.node.bench import aggregate

SpecMaker = Callable[..., TrialSpec]


def _stats(x: float) -> Stats:
    return Stats(mean=x, p50=x, p90=x + 1, p99=x + 2)


def test_aggregate_takes_medians_and_sums_counts() -> None:
    windows = [
        Metrics(
            output_tok_s=r,
            request_s=r / 10,
            ttft_ms=_stats(t),
            completed=8,
            failed=0,
            output_tokens=128,
            duration_s=2.0,
            extra={"x": r},
        )
        for r, t in ((100.0, 50.0), (300.0, 10.0), (110.0, 40.0))
    ]
    out = aggregate(windows)
    assert out.output_tok_s == 110.0 and out.request_s == 11.0
    assert out.ttft_ms == _stats(40.0)
    assert (out.completed, out.output_tokens, out.duration_s) == (24, 384, 6.0)
    assert out.extra == {"x": 110.0}
    assert out.itl_ms is None
    with pytest.raises(ValueError):
        aggregate([])


def test_windows_run_on_one_server(make_spec: SpecMaker) -> None:
    seen: list[tuple[int, float]] = []

    def on_window(index: int, flat: dict[str, float]) -> bool:
        seen.append((index, flat["output_tok_s"]))
        return False

    spec = make_spec(server_argv("--usage"), workload={"windows": 3, "num_requests": 6})
    result = run_trial(spec, on_window=on_window)
    assert result.outcome == Outcome.OK, result.failure
    assert len(result.windows) == 3
    assert [i for i, _ in seen] == [0, 1, 2]
    assert [v for _, v in seen] == [w["output_tok_s"] for w in result.windows]
    assert all(w["completed"] == 6 for w in result.windows)
    metrics = result.metrics
    assert metrics is not None and metrics.completed == 18
    rates = sorted(w["output_tok_s"] for w in result.windows)
    assert metrics.output_tok_s == rates[1]
    log = open(result.log_path or "").read()
    assert log.count("fired up and ready to roll") == 1  # one launch for all windows
    # The workload's own concurrency is its peak: the last window was the peak window.
    assert result.peak is not None
    assert (result.peak.dedicated, result.peak.survived, result.peak.concurrency) == (
        False,
        True,
        4,
    )


def test_callback_prunes(make_spec: SpecMaker) -> None:
    spec = make_spec(server_argv(), workload={"windows": 4, "num_requests": 4})
    result = run_trial(spec, on_window=lambda index, flat: index == 1)
    assert result.outcome == Outcome.PRUNED
    assert len(result.windows) == 2 and result.peak is None
    assert result.metrics is not None and result.metrics.completed == 8
    assert result.cleanup.clean


def test_peak_window_failures_refuse_a_winner(make_spec: SpecMaker) -> None:
    # Fine at 4 in flight, 503 above 6: the measured windows stand, the peak says no.
    spec = make_spec(
        server_argv("--reject-above", "6", "--rate", "50"),
        workload={"windows": 2, "num_requests": 8, "concurrency": 4, "peak_concurrency": 12},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    assert len(result.windows) == 2 and all(w["failed"] == 0 for w in result.windows)
    peak = result.peak
    assert peak is not None and peak.dedicated and not peak.survived
    assert peak.concurrency == 12 and peak.requested == 24
    assert peak.failed > 0 and peak.errors[0].startswith("HTTP 503")
    assert result.metrics is not None
    assert result.metrics.extra["peak_failed_requests"] == peak.failed


def test_peak_window_survived(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--reject-above", "20"),
        workload={"windows": 1, "num_requests": 4, "concurrency": 2, "peak_concurrency": 8},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    assert result.peak is not None and result.peak.survived and result.peak.failed == 0
    assert result.peak.metrics["completed"] == 16
    assert result.metrics is not None and result.metrics.extra["peak_failed_requests"] == 0


def test_death_at_peak_is_a_crash_with_windows_kept(make_spec: SpecMaker) -> None:
    # Dies on its 9th request: the measured window (4 requests + 1 warm-up) passes, the peak
    # window kills it, and the cause is the server's.
    spec = make_spec(
        server_argv("--die-after", "8", "--rate", "100"),
        workload={"windows": 1, "num_requests": 4, "concurrency": 2, "peak_concurrency": 8},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.CRASHED
    assert result.failure is not None and result.failure.cause == Cause.RUNTIME_CRASH
    assert len(result.windows) == 1
    assert result.peak is not None and not result.peak.survived


def test_workload_validates_windows_and_peak() -> None:
    with pytest.raises(ValidationError, match="peak_concurrency 2 is below concurrency 8"):
        Workload(concurrency=8, peak_concurrency=2)
    with pytest.raises(ValidationError):
        Workload(windows=0)
    assert Workload().windows == 3
    assert Workload(concurrency=8).peak == 8
    assert Workload(concurrency=8, peak_concurrency=32).peak == 32


def _sim_argv() -> list[str]:
    return [PY, "-m", "autotune.sim", "--model-path", "/models/m", "--tp-size", "8",
            "--host", "{host}", "--port", "{port}"]  # fmt: skip


SIM_ENV = {"AUTOTUNE_SIM_STARTUP": "0.001", "AUTOTUNE_SIM_SEED": "1", "PYTHONUNBUFFERED": "1"}


def test_time_scaled_stand_in_reports_simulated_seconds(make_spec: SpecMaker) -> None:
    # 40 tokens at 20 tok/s after 100 ms: 2.05 simulated seconds a request, 0.51 s of wall
    # time at scale 4; two waves of two: 39 tok/s of simulated truth (the client's own
    # overhead is scaled up too, hence the loose lower bound).
    env = {**SIM_ENV, "AUTOTUNE_SIM_FIXED_RATE": "20", "AUTOTUNE_SIM_FIXED_TTFT_MS": "100",
           "AUTOTUNE_SIM_TIME_SCALE": "4"}  # fmt: skip
    spec = make_spec(
        _sim_argv(),
        env=env,
        simulated=True,
        workload={"concurrency": 2, "num_requests": 4, "output_len": 40},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    metrics = result.metrics
    assert metrics is not None and metrics.itl_ms is not None and metrics.ttft_ms is not None
    truth = 4 * 40 / (2 * 2.05)
    assert 0.6 * truth < metrics.output_tok_s < 1.05 * truth  # unscaled: 10x that
    assert 40.0 < metrics.itl_ms.p50 < 60.0
    assert metrics.ttft_ms.p50 >= 100.0
    assert result.simulated


def test_stand_in_that_runs_out_of_memory_at_peak(make_spec: SpecMaker) -> None:
    env = {**SIM_ENV, "AUTOTUNE_SIM_OOM_ABOVE": "4", "AUTOTUNE_SIM_TIME_SCALE": "10"}
    spec = make_spec(
        _sim_argv(),
        env=env,
        workload={"windows": 2, "concurrency": 2, "num_requests": 4, "peak_concurrency": 8},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.CRASHED
    failure = result.failure
    # SGLang's pool running out while serving: the KV cache, a memory failure for steering
    assert failure is not None and failure.cause == Cause.KV_POOL_OOM
    assert failure.cause in MEMORY_CAUSES and failure.phase == Phase.BENCHMARK
    assert "Decode out of memory" in " ".join(failure.evidence)
    assert len(result.windows) == 2  # it started fine: the measured windows are kept
    assert result.peak is not None and result.peak.dedicated and not result.peak.survived
    assert result.cleanup.processes_left == 0
