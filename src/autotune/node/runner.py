"""``run_trial``: one configuration on this node, from launch to a clean GPU, as a TrialResult.

pre-check clean -> port -> launch -> ready -> warm up -> benchmark -> teardown -> classify.
A trial-level failure is a result, never an exception; only bugs raise.

The benchmark measures ``workload.windows`` windows on the same running server (relaunching
is what costs; a window is cheap), so every result carries its own within-launch spread:
``TrialResult.windows`` holds each window's ``Metrics.flat()`` in order and
``TrialResult.metrics`` their aggregate (median rates and latency statistics, summed counts).
Then the peak: a dedicated window at ``workload.peak_concurrency`` when it is above the
concurrency, otherwise the last window. ``TrialResult.peak`` says whether the configuration
survived it without failed requests; one that did not is no winner, though its windows stand.

Several scenarios (``TrialSpec.scenarios``) are measured one after another on the same
server, each with its own windows and peak, or a load sweep (``node/sweep.py``: load steps, or
the highest load within the scenario's SLO by bisection); ``node/scenarios.py`` names their
metrics and combines the objective. ``TrialResult.scenarios`` keeps each one's result.

Intermediate values for a pruner: ``run_trial(spec, on_window=f)`` calls ``f(index, flat)``
after each window, on the node, as it completes; ``True`` stops the trial (``pruned``). A
caller that cannot reach the node's thread (a remote executor) reads the same values, in
the same order, from ``TrialResult.windows`` when the result arrives.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune.models import (
    INFRA_CAUSES,
    Cause,
    Cleanup,
    Failure,
    Metrics,
    Outcome,
    PeakLoad,
    Phase,
    Scenario,
    ScenarioResult,
    SweepStep,
    Timings,
    TrialResult,
    TrialSpec,
)
from autotune.node import bench, gpu, scenarios, sweep
from autotune.node.failures import classify, first_match
from autotune.node.goodput import goodput_metrics, slo_misses, with_extra
from autotune.node.process import (
    LaunchFailed,
    NodeState,
    ServerProcess,
    free_port,
    port_is_free,
    wait_port_free,
)
from autotune.node.readiness import HealthPoller, LogWatcher, describe_progress, wait_ready

SETTLE_S = 0.3  # after a fatal line, time for the rest of the traceback to reach the log
EXPLAIN_S = 1.0  # after failed requests, time for the server's own death or error to show
METRICS_LINE = re.compile(r"AUTOTUNE_METRICS\s+(\{.*\})\s*$")
MAX_SERVER_INFO = 64_000  # characters of /get_server_info kept in the result

_TIMEOUT_HINT = (
    "The server did not become ready in time. Large models, CUDA graph capture and JIT "
    "compilation can take many minutes: raise limits.startup_s if the log shows steady "
    "progress; otherwise the log tail shows where it hung."
)
_CRASH_HINT = "The server stopped serving during the run; the evidence shows its last words."
_BENCH_HINT = (
    "Requests failed while the server stayed up. HTTP 4xx: the request does not fit this "
    "server (endpoint, model name, extra_body fields). Timeouts or resets: the server is "
    "overloaded at this concurrency or stalls."
)


def fill(value: str, host: str, port: int) -> str:
    """Replace the ``{host}``, ``{port}`` and ``{python}`` placeholders (nothing else: JSON
    braces stay). ``{python}`` is this node's interpreter, so servers run in autotune's env."""
    return (
        value.replace("{host}", host)
        .replace("{port}", str(port))
        .replace("{python}", sys.executable)
    )


def _job_metrics(lines: list[str]) -> dict[str, float] | str:
    """The last ``AUTOTUNE_METRICS {json}`` line as floats, or why it is unusable."""
    for line in reversed(lines):
        match = METRICS_LINE.search(line)
        if match is None:
            continue
        try:
            data = json.loads(match.group(1))
        except ValueError as exc:
            return f"AUTOTUNE_METRICS line is not JSON: {exc}"
        if not isinstance(data, dict):
            return "AUTOTUNE_METRICS must be a JSON object of name -> number"
        out: dict[str, float] = {}
        for key, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"AUTOTUNE_METRICS value {key!r} is not a number"
            if not math.isfinite(value):
                return f"AUTOTUNE_METRICS value {key!r} is not finite"
            out[str(key)] = float(value)
        return out
    return "the job exited 0 without printing an AUTOTUNE_METRICS line"


@dataclass
class _Verdict:
    """What went wrong (or not), decided before teardown, turned into a Failure after it."""

    kind: str  # ok, fatal, exited, timeout, health_lost, bench_errors, bench_timeout, job_*
    phase: Phase
    exit_code: int | None = None
    message: str = ""
    evidence: list[str] = field(default_factory=list)
    permanent: bool = True


WindowCallback = Callable[[int, dict[str, float]], bool]


class _Trial:
    def __init__(self, spec: TrialSpec, on_window: WindowCallback | None = None) -> None:
        self.spec = spec
        self.on_window = on_window
        self.windows: list[Metrics] = []
        self.peak: PeakLoad | None = None
        # Named or swept scenarios (node/scenarios.py): their results, the trial's windows
        # side by side (None: ``windows`` as they are), and why a sweep stopped the trial.
        self.scenarios: list[ScenarioResult] = []
        self.flat_windows: list[dict[str, float]] | None = None
        self.sweep_verdict: _Verdict | None = None
        self.steps_run = 0
        self.time_scale = 1.0  # a time-scaled stand-in's own clock; metrics are unscaled
        self.start = time.monotonic()
        self.node = socket.gethostname()
        self.log_path = Path(spec.log_dir) / f"trial-{spec.number:04d}-a{spec.attempt}.log"
        self.port: int | None = None
        self.times: dict[str, float | None] = {}
        self.argv: list[str] = []
        self.env: dict[str, str] = {}
        self.check_gpus = spec.gpus > 0 and not spec.simulated
        self.visible: str | None = None

    # -- results -----------------------------------------------------------------------

    def _result(
        self,
        outcome: Outcome,
        *,
        failure: Failure | None = None,
        metrics: Metrics | None = None,
        cleanup: Cleanup | None = None,
        milestones: list[str] | None = None,
        server_info: dict[str, Any] | None = None,
    ) -> TrialResult:
        timings = Timings(
            launch_to_ready_s=self.times.get("launch_to_ready_s"),
            warmup_s=self.times.get("warmup_s"),
            benchmark_s=self.times.get("benchmark_s"),
            teardown_s=self.times.get("teardown_s"),
            total_s=time.monotonic() - self.start,
            launched_at=self.times.get("launched_at"),
            ready_at=self.times.get("ready_at"),
            clean_at=self.times.get("clean_at"),
        )
        return TrialResult(
            study=self.spec.study,
            number=self.spec.number,
            outcome=outcome,
            metrics=metrics,
            failure=failure,
            timings=timings,
            cleanup=cleanup or Cleanup(),
            milestones=milestones or [],
            log_path=str(self.log_path) if self.log_path.exists() else None,
            node=self.node,
            port=self.port,
            simulated=self.spec.simulated,
            attempt=self.spec.attempt,
            server_info=server_info or {},
            windows=(
                self.flat_windows
                if self.flat_windows is not None
                else [w.flat() for w in self.windows]
            ),
            peak=self.peak,
            scenarios=self.scenarios,
            gpu=gpu.describe(self.spec.gpus, self.visible) if self.spec.gpus else "",
        )

    def _note(self, text: str) -> None:
        """What the benchmark is measuring now, beside the log where the phase is noted, for
        a progress view on the same host (a scenario, a load of a sweep)."""
        with contextlib.suppress(OSError):  # a read-only log folder: no progress note
            self.log_path.with_suffix(".phase").write_text(text)

    def _infra(self, cause: Cause, message: str, hint: str) -> TrialResult:
        failure = Failure(
            cause=cause, phase=Phase.LAUNCH, hint=hint, message=message, permanent=False
        )
        return self._result(Outcome.INFRA, failure=failure)

    # -- the flow ----------------------------------------------------------------------

    def run(self) -> TrialResult:
        spec = self.spec
        _check_patterns(spec)
        gpus = spec.gpus if self.check_gpus else 0
        self.visible = gpu.visible_devices(spec.env)
        why = NodeState().check(gpus, self.visible)
        if why is not None:
            return self._infra(
                Cause.GPU_NOT_CLEAN,
                why,
                "An earlier trial on this node did not come clean; the node is re-checked "
                "before every trial and used again once clean.",
            )
        before = gpu.snapshot(gpus, self.visible) if gpus else None
        if gpu.is_clean(before) is False:
            used = ", ".join(f"{u:.0f} MiB" for u in before or [])
            return self._infra(
                Cause.GPU_NOT_CLEAN,
                f"GPU memory in use before launch: {used}",
                "Another process holds GPU memory on this node (a leftover server?); "
                "check nvidia-smi.",
            )
        if spec.port == 0:
            self.port = free_port(spec.host)
        else:
            self.port = spec.port
            if not port_is_free(spec.host, spec.port):
                return self._infra(
                    Cause.PORT_IN_USE,
                    f"port {spec.port} on {spec.host} is in use before launch",
                    "Something else listens on this port; use port 0 to let the node pick one.",
                )
        self.argv = [fill(a, spec.host, self.port) for a in spec.argv]
        self.env = {k: fill(v, spec.host, self.port) for k, v in spec.env.items()}
        # Python servers block-buffer a redirected stdout: fatal lines would arrive late.
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        proc = ServerProcess(self.argv, full_env, self.log_path, spec.cwd)
        self.times["launched_at"] = time.time()
        try:
            proc.start()
        except LaunchFailed as exc:
            failure = Failure(
                cause=Cause.UNKNOWN,
                phase=Phase.LAUNCH,
                message=str(exc),
                hint="The command could not be started: check the executable and cwd.",
                evidence=[str(exc)],
            )
            return self._result(Outcome.CRASHED, failure=failure)
        wake = threading.Event()
        watcher = LogWatcher(
            self.log_path, proc.poll, spec.rules, spec.milestones, spec.ready_pattern, wake
        )
        watcher.start()
        health: HealthPoller | None = None
        metrics: Metrics | None = None
        info: dict[str, Any] | None = None
        try:
            if spec.mode == "job":
                verdict = self._job(watcher)
            else:
                url = f"http://{spec.host}:{self.port}"
                health = HealthPoller(url + spec.health_path, wake)
                health.start()
                verdict, metrics, info = self._server(watcher, health, url)
        finally:
            if health is not None:
                health.stop()
            cleanup = self._teardown(proc, before)
            watcher.stop()
        lines = watcher.lines()
        if verdict.kind == "ok" and spec.mode == "job":
            parsed = _job_metrics(lines)
            if isinstance(parsed, str):
                verdict = _Verdict("job_bad_metrics", watcher.phase, 0, parsed)
            else:
                metrics = Metrics(extra=parsed, duration_s=self.times.get("benchmark_s") or 0.0)
        if verdict.kind == "ok":
            return self._result(
                Outcome.OK,
                metrics=metrics,
                cleanup=cleanup,
                milestones=watcher.labels,
                server_info=info,
            )
        if verdict.kind == "pruned":
            return self._result(
                Outcome.PRUNED,
                metrics=bench.aggregate(self.windows),
                cleanup=cleanup,
                milestones=watcher.labels,
            )
        outcome, failure = self._failure(verdict, lines, watcher)
        return self._result(outcome, failure=failure, cleanup=cleanup, milestones=watcher.labels)

    def _job(self, watcher: LogWatcher) -> _Verdict:
        start = time.monotonic()
        deadline = start + self.spec.limits.benchmark_s
        while watcher.fatal is None and not watcher.exited.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                self.times["benchmark_s"] = time.monotonic() - start
                return _Verdict(
                    "bench_timeout",
                    watcher.phase,
                    message=f"the job did not finish within {self.spec.limits.benchmark_s:g} s",
                )
            watcher.wake.wait(min(left, 0.1))
            watcher.wake.clear()
        self.times["benchmark_s"] = time.monotonic() - start
        if watcher.fatal is not None:
            time.sleep(SETTLE_S)
            return _Verdict("fatal", watcher.fatal.phase, watcher.exit_code)
        if watcher.exit_code == 0:
            return _Verdict("ok", watcher.phase, 0)
        return _Verdict("exited", watcher.phase, watcher.exit_code)

    def _server(
        self, watcher: LogWatcher, health: HealthPoller, url: str
    ) -> tuple[_Verdict, Metrics | None, dict[str, Any] | None]:
        spec = self.spec
        ready = wait_ready(
            watcher,
            health,
            limit_s=spec.limits.startup_s,
            need_ready_line=spec.ready_pattern is not None,
        )
        if ready.state == "fatal":
            time.sleep(SETTLE_S)
            hit = watcher.fatal
            return (
                _Verdict("fatal", hit.phase if hit else watcher.phase, watcher.exit_code),
                None,
                None,
            )
        if ready.state == "exited":
            return _Verdict("exited", watcher.phase, watcher.exit_code), None, None
        if ready.state == "timeout":
            message = (
                f"not ready after {spec.limits.startup_s:g} s ({describe_progress(watcher)}; "
                f"health: {health.last_status})"
            )
            return _Verdict("timeout", watcher.phase, None, message), None, None
        self.times["launch_to_ready_s"] = ready.seconds
        self.times["ready_at"] = time.time()
        watcher.advance(Phase.READY)

        def abort() -> bool:
            return watcher.fatal is not None or watcher.exited.is_set() or health.lost.is_set()

        workload = spec.workload
        if workload.warmup_requests > 0:
            watcher.advance(Phase.WARMUP)
            start = time.monotonic()
            warm = bench.run_load(
                url,
                workload,
                kind="warmup",
                count=workload.warmup_requests,
                concurrency=min(workload.concurrency, workload.warmup_requests),
                abort=abort,
                limit_s=spec.limits.benchmark_s,
            )
            self.times["warmup_s"] = time.monotonic() - start
            verdict = self._check_load(warm, watcher, health, Phase.WARMUP)
            if verdict is not None:
                return verdict, None, None
        self.time_scale = bench.sim_time_scale(bench.fetch_server_info(url))
        watcher.advance(Phase.BENCHMARK)
        start = time.monotonic()
        try:
            verdict, metrics = self._benchmark(url, watcher, health, abort)
        finally:
            self.times["benchmark_s"] = time.monotonic() - start
        if verdict is not None:
            return verdict, None, None
        if self.peak is not None and self.peak.dedicated:
            extra = {**metrics.extra, "peak_failed_requests": float(self.peak.failed)}
            metrics = metrics.model_copy(update={"extra": extra})
        info = bench.fetch_server_info(url)
        if info is not None:
            accept = bench.accept_length(info)
            if accept is not None:
                metrics = metrics.model_copy(update={"accept_length": accept})
            if len(json.dumps(info, default=str)) > MAX_SERVER_INFO:
                info = {"truncated": True}
        return _Verdict("ok", Phase.BENCHMARK), metrics, info

    def _benchmark(
        self, url: str, watcher: LogWatcher, health: HealthPoller, abort: Callable[[], bool]
    ) -> tuple[_Verdict | None, Metrics]:
        """Measure every scenario in turn on this server; the trial's metrics when ok.

        Without named scenarios this is the workload's windows and peak, as always; the
        pruner sees windows only then (a window of one scenario says little of the trial).
        """
        spec = self.spec
        plan = spec.scenarios or [Scenario(workload=spec.workload)]
        implicit = len(plan) == 1 and not plan[0].name
        results: list[tuple[ScenarioResult, Metrics]] = []
        peaks: list[PeakLoad] = []
        for scenario in plan:
            swept: sweep.Found | None = None
            windows: list[Metrics] = self.windows if implicit else []
            if scenario.name:
                self._note(f"benchmarking {scenario.name}")
            if scenario.sweep is None:
                verdict, peak = self._windows(
                    url, watcher, health, abort, scenario, windows, prune=implicit
                )
                if peak is not None:
                    peaks.append(peak)
                    self.peak = peak  # kept when the trial ends here (a death at peak load)
                if verdict is not None:
                    return verdict, Metrics()
            else:
                swept = sweep.run(
                    scenario.sweep,
                    scenario.slo,
                    functools.partial(self._step, url, watcher, health, abort, scenario),
                )
                if swept.failed:
                    assert self.sweep_verdict is not None
                    return self.sweep_verdict, Metrics()
            results.append(scenarios.scenario_metrics(scenario, windows, swept))
        # The peak that matters is the one a configuration failed, if any.
        self.peak = next((p for p in peaks if not p.survived), peaks[-1] if peaks else None)
        if not implicit or plan[0].sweep is not None:
            self.scenarios = [r for r, _ in results]
        metrics, flat_windows = scenarios.trial_metrics(results, spec.combine)
        if not implicit:
            self.flat_windows = flat_windows
        return None, metrics

    def _step(
        self,
        url: str,
        watcher: LogWatcher,
        health: HealthPoller,
        abort: Callable[[], bool],
        scenario: Scenario,
        load: float,
    ) -> sweep.Measured | None:
        """One load of a sweep: a window at that concurrency (closed loop) or request rate
        (open loop); None when the server failed.

        Failed requests while the server stays up are a load it cannot serve (the step
        misses the SLO), not a crash.
        """
        assert scenario.sweep is not None
        base = scenario.workload
        if scenario.sweep.over == "rate":
            update: dict[str, Any] = {"rate": load}
        else:
            update = {"concurrency": int(load), "peak_concurrency": None}
        workload = bench.in_server_time(base.model_copy(update=update), self.time_scale)
        # Each probe its own prompts: a prefix cache warmed by one load does not flatter the next.
        self.steps_run += 1
        kind = f"{scenario.name or 'sweep'}:{scenario.sweep.over}={load:g}:{self.steps_run}"
        where = f"{scenario.name}: " if scenario.name else ""
        self._note(f"benchmarking {where}{scenario.sweep.over} {load:.3g}")
        result = bench.run_load(
            url, workload, kind=kind, abort=abort, limit_s=self.spec.limits.benchmark_s
        )
        verdict = self._check_load(result, watcher, health, Phase.BENCHMARK)
        if verdict is not None and verdict.kind not in ("bench_errors", "bench_timeout"):
            self.sweep_verdict = verdict
            return None
        metrics = bench.unscale(result.metrics(), self.time_scale)
        if scenario.goodput is not None:
            metrics = with_extra(
                metrics, goodput_metrics(result, scenario.goodput, self.time_scale)
            )
        flat = metrics.flat()
        served = result.state == "done" and result.failed == 0
        step = SweepStep(
            load=load,
            metrics=flat,
            meets_slo=served and not slo_misses(flat, scenario.slo),
            requested=result.requested,
            failed=result.requested - result.completed,
        )
        return sweep.Measured(step, metrics)

    def _windows(
        self,
        url: str,
        watcher: LogWatcher,
        health: HealthPoller,
        abort: Callable[[], bool],
        scenario: Scenario,
        windows: list[Metrics],
        *,
        prune: bool,
    ) -> tuple[_Verdict | None, PeakLoad | None]:
        """Measure ``workload.windows`` windows into ``windows``, then the peak; the verdict
        is None when the result is ok.

        A dedicated peak window that fails requests while the server stays up is not a
        failure of the trial: its windows stand and the peak's ``survived`` says False.
        """
        workload = bench.in_server_time(scenario.workload, self.time_scale)
        named = f"{scenario.name}:" if scenario.name else ""
        dedicated = workload.peak > workload.concurrency
        peak: PeakLoad | None = None
        # A floor in the stand-in's wall seconds (its rates run ``time_scale`` times faster).
        floor = {m: v * self.time_scale for m, v in self.spec.give_up_below.items()}
        for index in range(workload.windows):
            result = bench.run_load(
                url,
                workload,
                kind=named + _window_kind(index),
                abort=abort,
                limit_s=self.spec.limits.benchmark_s,
                # The first window alone decides the pruning (later ones join a median).
                give_up_below=floor if prune and index == 0 else None,
            )
            if result.state == "hopeless" and result.failed == 0:
                # It cannot reach the floor however it ends: pruned now, not after the window,
                # with the rate it streamed at (the requests it cut short count their tokens).
                cut = result.metrics().model_copy(
                    update={"output_tok_s": result.streamed_tokens / max(result.duration_s, 1e-9)}
                )
                windows.append(bench.unscale(cut, self.time_scale))
                if self.on_window is not None:
                    self.on_window(index, windows[-1].flat())
                metric = result.gave_up
                message = (
                    f"pruned in window {index}: {metric} could no longer reach "
                    f"{self.spec.give_up_below[metric]:,.1f} (stopped after "
                    f"{windows[-1].duration_s:.1f} s of the window)"
                )
                return _Verdict("pruned", Phase.BENCHMARK, message=message), peak
            verdict = self._check_load(result, watcher, health, Phase.BENCHMARK)
            last = index == workload.windows - 1
            if last and not dedicated:
                peak = _peak(result, workload.concurrency, dedicated=False, scale=self.time_scale)
            if verdict is not None:
                return verdict, peak
            metrics = bench.unscale(result.metrics(), self.time_scale)
            if scenario.goodput is not None:
                metrics = with_extra(
                    metrics, goodput_metrics(result, scenario.goodput, self.time_scale)
                )
            windows.append(metrics)
            if prune and self.on_window is not None and self.on_window(index, metrics.flat()):
                message = f"pruned after window {index}"
                return _Verdict("pruned", Phase.BENCHMARK, message=message), peak
        if not dedicated:
            return None, peak
        count = max(workload.num_requests, 2 * workload.peak)
        result = bench.run_load(
            url,
            workload,
            kind=named + "peak",
            count=count,
            concurrency=workload.peak,
            abort=abort,
            limit_s=self.spec.limits.benchmark_s,
        )
        peak = _peak(result, workload.peak, dedicated=True, scale=self.time_scale)
        verdict = self._check_load(result, watcher, health, Phase.BENCHMARK)
        if verdict is not None and verdict.kind in ("bench_errors", "bench_timeout"):
            return None, peak  # the server is up: the windows stand, the peak says it failed
        return verdict, peak

    def _check_load(
        self, result: bench.BenchResult, watcher: LogWatcher, health: HealthPoller, phase: Phase
    ) -> _Verdict | None:
        if result.state == "done" and result.failed == 0:
            return None
        # Failed requests are often the first sign of a dying server: give its death or its
        # error line a moment to show, so the cause is the server's and not "requests failed".
        deadline = time.monotonic() + EXPLAIN_S
        while watcher.fatal is None and not watcher.exited.is_set():
            if result.state == "aborted" and health.lost.is_set():
                break
            if time.monotonic() >= deadline:
                break
            watcher.wake.wait(0.05)
            watcher.wake.clear()
        if watcher.fatal is not None:
            time.sleep(SETTLE_S)
            return _Verdict("fatal", watcher.fatal.phase, watcher.exit_code)
        if watcher.exited.is_set():
            return _Verdict("exited", phase, watcher.exit_code)
        if health.lost.is_set():
            return _Verdict(
                "health_lost",
                phase,
                None,
                f"the server stopped answering {self.spec.health_path} ({health.last_status})",
            )
        errors = result.errors()
        if result.state == "timeout":
            return _Verdict(
                "bench_timeout",
                phase,
                None,
                f"{phase.value} did not finish within {self.spec.limits.benchmark_s:g} s "
                f"({result.completed} of {result.requested} requests completed)",
                errors,
            )
        first = errors[0] if errors else "unknown error"
        return _Verdict(
            "bench_errors",
            phase,
            None,
            f"{result.failed} of {result.requested} requests failed: {first}",
            errors,
            permanent=all(e.startswith("HTTP 4") for e in errors) and bool(errors),
        )

    def _teardown(self, proc: ServerProcess, before: list[float] | None) -> Cleanup:
        start = time.monotonic()
        report = proc.teardown(self.spec.limits.teardown_grace_s)
        port_free = True
        if self.port is not None:
            port_free = wait_port_free(self.spec.host, self.port, 3.0)
        gpu_clean, after = gpu.wait_released(
            before, self.spec.limits.gpu_release_s, visible=self.visible
        )
        self.times["teardown_s"] = time.monotonic() - start
        self.times["clean_at"] = time.time()
        if report.processes_left or gpu_clean is False:
            NodeState().mark(
                {
                    "study": self.spec.study,
                    "trial": self.spec.number,
                    "processes": report.left,
                    "gpu_before_mib": before,
                    "gpu_after_mib": after,
                }
            )
        return Cleanup(
            processes_left=report.processes_left,
            port_free=port_free,
            gpu_mem_before_mib=before,
            gpu_mem_after_mib=after,
            gpu_clean=gpu_clean,
            clean=report.processes_left == 0 and port_free and gpu_clean is not False,
        )

    def _failure(
        self, verdict: _Verdict, lines: list[str], watcher: LogWatcher
    ) -> tuple[Outcome, Failure]:
        spec = self.spec
        if verdict.kind in ("timeout", "bench_errors", "bench_timeout", "job_bad_metrics"):
            cause = {
                "timeout": Cause.STARTUP_TIMEOUT,
                "bench_errors": Cause.BENCHMARK_ERRORS,
                "bench_timeout": Cause.BENCHMARK_ERRORS,
                "job_bad_metrics": Cause.UNKNOWN,
            }[verdict.kind]
            hint = _TIMEOUT_HINT if verdict.kind == "timeout" else _BENCH_HINT
            if verdict.kind == "job_bad_metrics":
                hint = "A job must print `AUTOTUNE_METRICS {json}` (name -> number) and exit 0."
            tail = lines[-40:]
            evidence = verdict.evidence or tail[-8:]
            message = verdict.message
            found = first_match(lines, spec.rules) if verdict.kind == "timeout" else None
            if found is not None:
                # A non-fatal rule matched (e.g. an assertion in a thread): say so.
                rule, hits = found
                evidence = [lines[i] for i in hits[:5]]
                message += f"; log shows {rule.cause.value}: {lines[hits[0]].strip()[:160]}"
            failure = Failure(
                cause=cause,
                phase=verdict.phase,
                hint=hint,
                evidence=evidence,
                permanent=verdict.permanent if verdict.kind == "bench_errors" else True,
                exit_code=verdict.exit_code,
                log_tail=tail,
                message=message,
            )
            timeout = verdict.kind in ("timeout", "bench_timeout")
            return (Outcome.TIMEOUT if timeout else Outcome.CRASHED), failure
        failure = classify(
            lines,
            spec.rules,
            phase=verdict.phase,
            exit_code=verdict.exit_code,
            argv=self.argv,
            env=self.env,
            engine=spec.engine,
            milestones=spec.milestones,
            flags=spec.flags,
        )
        running = verdict.phase in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
        if failure.cause == Cause.UNKNOWN and (running or verdict.kind == "health_lost"):
            # After readiness, a death no rule explains is a runtime crash.
            message = verdict.message or failure.message
            if verdict.kind == "exited" and verdict.exit_code is not None:
                message = f"exited with code {verdict.exit_code} during {verdict.phase.value}"
                if failure.message and not failure.message.startswith("exited"):
                    message += f": {failure.message}"
            failure = failure.model_copy(
                update={"cause": Cause.RUNTIME_CRASH, "hint": _CRASH_HINT, "message": message}
            )
        if failure.cause in INFRA_CAUSES:
            return Outcome.INFRA, failure.model_copy(update={"permanent": False})
        return Outcome.CRASHED, failure


def _window_kind(index: int) -> str:
    """Prompt set of window ``index``: each window its own, so a prefix cache warmed by one
    window does not flatter the next (window 0 keeps the historical ``bench`` set)."""
    return "bench" if index == 0 else f"bench-{index}"


def _peak(
    result: bench.BenchResult, concurrency: int, *, dedicated: bool, scale: float
) -> PeakLoad:
    survived = result.state == "done" and result.failed == 0
    return PeakLoad(
        concurrency=concurrency,
        dedicated=dedicated,
        survived=survived,
        requested=result.requested,
        completed=result.completed,
        failed=result.requested - result.completed,
        errors=result.errors(),
        metrics=bench.unscale(result.metrics(), scale).flat() if result.completed else {},
    )


def _check_patterns(spec: TrialSpec) -> None:
    """Compile every regex before anything is launched, so a bad one cannot leak a server.

    Raises:
        ValueError: a rule, milestone or ready pattern is not a valid regex (a driver bug:
            space-file rules are validated when the space is loaded).
    """
    patterns = [(f"rule {r.id!r}", r.pattern) for r in spec.rules]
    patterns += [(f"milestone {m.label!r}", m.pattern) for m in spec.milestones]
    if spec.ready_pattern is not None:
        patterns.append(("ready_pattern", spec.ready_pattern))
    for name, pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{name}: not a valid regular expression: {exc}") from None


def run_trial(spec: TrialSpec, on_window: WindowCallback | None = None) -> TrialResult:
    """Run one trial on this node and say how it ended.

    Launches ``spec.argv`` in its own process group, waits for readiness, warms up,
    benchmarks in ``workload.windows`` windows (then the peak window), tears everything down
    (proving the node clean) and classifies any failure.

    Args:
        spec: the trial, built by the driver.
        on_window: called in this thread after each measured window with its index (from 0)
            and its ``Metrics.flat()``; returning True stops the trial: outcome ``pruned``,
            the windows so far kept, no peak window. It must not raise.

    Returns:
        The result; trial-level failures (crash, timeout, dirty node) are outcomes, not
        exceptions.

    Raises:
        ValueError: a pattern in the spec is not a valid regex (nothing is launched).
    """
    return _Trial(spec, on_window).run()
