"""Several scenarios on one server: per-scenario metrics and the combined objective."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from node_helpers import server_argv

from autotune.models import (
    Combine,
    Goodput,
    Metrics,
    Outcome,
    Scenario,
    ScenarioResult,
    Sweep,
    TrialSpec,
    Workload,
)
from autotune.node import run_trial
from autotune.node.scenarios import combined, scenario_metrics, trial_metrics

SpecMaker = Callable[..., TrialSpec]


def _window(tok_s: float, ttft: float = 0.0) -> Metrics:
    return Metrics(
        output_tok_s=tok_s,
        completed=4,
        output_tokens=int(tok_s),
        duration_s=1.0,
        extra={"goodput_req_s": tok_s / 10, "ttft_p99_ms": ttft},
    )


def _result(name: str, windows: list[Metrics]) -> tuple[ScenarioResult, Metrics]:
    return scenario_metrics(Scenario(name=name, workload=Workload()), windows, None)


@pytest.mark.parametrize(
    ("how", "direction", "expected"),
    [
        ("weighted_mean", "maximize", (3 * 100 + 1 * 40) / 4),
        ("weighted_sum", "maximize", 3 * 100 + 1 * 40),
        ("worst", "maximize", 40),
        ("worst", "minimize", 100),
    ],
)
def test_combined(how: str, direction: str, expected: float) -> None:
    spec = Combine(how=how, weights={"chat": 3, "long": 1} if how != "worst" else {})  # type: ignore[arg-type]
    assert combined({"chat": 100.0, "long": 40.0}, spec, direction) == pytest.approx(expected)


def test_each_scenario_is_kept_under_its_name_and_the_objective_is_combined() -> None:
    results = [
        _result("chat", [_window(100, 50), _window(120, 60)]),
        _result("long", [_window(40, 900), _window(30, 800)]),
    ]
    combine = Combine(how="worst", metrics={"goodput_req_s": "maximize"})
    metrics, windows = trial_metrics(results, combine)
    flat = metrics.flat()
    assert flat["chat.output_tok_s"] == 110.0 and flat["long.output_tok_s"] == 35.0
    assert flat["chat.ttft_p99_ms"] == 55.0
    assert flat["goodput_req_s"] == pytest.approx(3.5)  # the worst scenario's
    # Not an objective: output_tok_s is the total over both scenarios.
    assert flat["output_tok_s"] == pytest.approx((220 + 70) / 4.0)
    assert flat["completed"] == 16
    # Windows side by side, the objective combined per window.
    assert [w["goodput_req_s"] for w in windows] == pytest.approx([4.0, 3.0])
    assert windows[0]["chat.output_tok_s"] == 100.0 and windows[1]["long.output_tok_s"] == 30.0


def test_an_objective_on_throughput_replaces_the_total() -> None:
    results = [_result("a", [_window(100)]), _result("b", [_window(50)])]
    metrics, _ = trial_metrics(results, Combine(metrics={"output_tok_s": "maximize"}))
    assert metrics.output_tok_s == metrics.flat()["output_tok_s"] == 75.0


def test_the_implicit_scenario_is_what_it_always_was() -> None:
    windows = [_window(100), _window(120), _window(90)]
    metrics, flat_windows = trial_metrics([_result("", windows)], None)
    assert metrics.output_tok_s == 100.0 and "." not in "".join(metrics.flat())
    assert flat_windows == [w.flat() for w in windows]


def test_scenarios_run_one_after_another_on_one_server(make_spec: SpecMaker) -> None:
    # chat at a request rate (open loop), long at a concurrency (closed loop)
    chat = Workload(rate=40, num_requests=4, output_len=8, warmup_requests=0, windows=2)
    long = Workload(concurrency=1, num_requests=2, output_len=24, warmup_requests=0, windows=2)
    spec = make_spec(
        server_argv("--usage"),
        scenarios=[
            Scenario(name="chat", workload=chat, goodput=Goodput(ttft_ms=10_000)),
            Scenario(name="long", workload=long, goodput=Goodput(ttft_ms=10_000)),
        ],
        combine=Combine(how="worst", metrics={"goodput_req_s": "maximize"}),
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    assert [s.name for s in result.scenarios] == ["chat", "long"]
    flat = result.metrics.flat() if result.metrics else {}
    assert flat["chat.completed"] == 8 and flat["long.completed"] == 4
    assert flat["goodput_req_s"] == min(flat["chat.goodput_req_s"], flat["long.goodput_req_s"])
    assert len(result.windows) == 2 and "long.output_tok_s" in result.windows[1]
    log = open(result.log_path or "").read()
    assert log.count("fired up and ready to roll") == 1  # one launch for both scenarios


def test_bisection_finds_the_server_capacity_without_relaunching(make_spec: SpecMaker) -> None:
    # The server answers 503 past 6 requests in flight: 6 is the highest clean concurrency.
    workload = Workload(concurrency=1, num_requests=14, output_len=8, warmup_requests=0)
    plan = Sweep(mode="max_under_slo", low=1, high=32, probes=8, tolerance=0.01)
    spec = make_spec(
        server_argv("--reject-above", "6", "--rate", "200"),
        scenarios=[Scenario(workload=workload, slo={"failed": 0.5}, sweep=plan)],
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    assert result.metrics is not None
    assert result.metrics.flat()["max_concurrency_under_slo"] == 6
    steps = result.scenarios[0].steps
    assert [s.load for s in steps][:2] == [1, 32] and len(steps) <= 8
    assert all(s.meets_slo == (s.load <= 6) for s in steps)
    assert result.metrics.completed == 14  # the metrics of the answer: concurrency 6
    # The progress note beside the log says which load ran last.
    note = Path(result.log_path or "").with_suffix(".phase").read_text()
    assert note == f"benchmarking concurrency {steps[-1].load:.3g}"
    log = open(result.log_path or "").read()
    assert log.count("fired up and ready to roll") == 1


def test_a_rate_sweep_steps_an_open_loop_on_one_server(make_spec: SpecMaker) -> None:
    # 503 past 4 requests in flight; each answer takes ~160 ms: 5 req/s fits, 100 does not.
    workload = Workload(num_requests=6, output_len=16, warmup_requests=0)
    plan = Sweep(over="rate", values=[100, 5])
    spec = make_spec(
        server_argv("--reject-above", "4", "--rate", "100"),
        scenarios=[Scenario(name="chat", workload=workload, slo={"failed": 0.5}, sweep=plan)],
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    steps = result.scenarios[0].steps
    assert [(s.load, s.meets_slo) for s in steps] == [(5, True), (100, False)]
    assert result.metrics is not None
    assert result.metrics.flat()["chat.max_rate_under_slo"] == 5
