"""The running stand-in's shared state: noise, the scheduler thread and what the server reports.

One thread runs the scheduler (``scheduler.py``) against the wall clock: it plans an
iteration, sleeps until the iteration's end (simulated seconds / time scale, on absolute
deadlines so a late wake-up never drifts), then hands each request its tokens through a
queue its HTTP thread blocks on. With nothing to do it waits on a condition variable, so an
idle server burns no CPU. The fixed-rate mode (``AUTOTUNE_SIM_FIXED_RATE``) bypasses the
scheduler: its truth must not depend on load.
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from typing import Any

from autotune.sim.args import Launch
from autotune.sim.logs import SRT, SglangLog, frame, traceback_text
from autotune.sim.model import (
    allreduce_path,
    expected_accept_length,
    max_running_requests,
    memory_plan,
    nccl_allreduce,
    prefill_ms,
    spec_cycle_ms,
    stream_tok_s,
    token_interval_ms,
    verify_ms,
)
from autotune.sim.profiles import HardwareProfile
from autotune.sim.replay import scheduler_config
from autotune.sim.scheduler import VOCAB, Scheduler, SimRequest
from autotune.sim.settings import SimSettings

NOISE_CLAMP = 2.5  # a launch factor stays within exp(+-2.5 sigma)


class Stream:
    """One request's token stream: iterate for the token lists of each step (blocking)."""

    def __init__(self, state: SimState, req: SimRequest) -> None:
        self.state, self.req = state, req
        self.queue: queue.SimpleQueue[tuple[list[str], bool]] = queue.SimpleQueue()
        req.sink = lambda tokens, done: self.queue.put((tokens, done))
        self.done = False

    @property
    def cached_tokens(self) -> int:
        return self.req.cached

    def __iter__(self) -> Iterator[list[str]]:
        try:
            while not self.done:
                tokens, self.done = self.queue.get()
                if tokens:
                    yield tokens
        finally:
            self.state.close(self)


class SimState:
    """Shared state of the running server: readiness, noise, the scheduler and its thread."""

    def __init__(
        self,
        launch: Launch,
        prof: HardwareProfile,
        seed: int,
        log: SglangLog,
        settings: SimSettings | None = None,
    ) -> None:
        self.launch, self.prof, self.log, self.seed = launch, prof, log, seed
        self.settings = settings or SimSettings()
        self.cfg = launch.config
        rng = random.Random(seed)
        sigma = self.settings.launch_sigma
        bound = math.exp(NOISE_CLAMP * sigma)
        self.noise = min(max(math.exp(rng.gauss(0.0, sigma)), 1 / bound), bound)
        self.phase = "starting"  # -> serving (HTTP up) -> ready (warm-up passed)
        self.lock = threading.Condition()
        self.inflight = 0  # requests received and not finished (queued ones included)
        self.t0 = time.monotonic()
        self.scheduler = Scheduler(
            self.cfg,
            prof,
            scheduler_config(self.cfg, prof),
            factor=self.step_factor,
            seed=seed,
            log=lambda message: log.line(message, rank="TP0"),
        )
        self.prompt_tokens_total = 0
        self._thread: threading.Thread | None = None
        # How late the scheduler thread woke for its recent iterations (simulated ms): near
        # the ITL, the machine cannot keep this time scale and tokens go out in bursts.
        self.lag_ms: deque[float] = deque(maxlen=2048)

    # ---- the model, at the current batch (simulated seconds)

    def window_factor(self, sim_now: float | None = None) -> float:
        """The within-launch factor at a simulated time (now by default)."""
        sigma = self.settings.window_sigma
        if sigma <= 0:
            return 1.0
        if sim_now is None:
            sim_now = self.sim_now()
        epoch = int(sim_now // self.settings.window_period_s)
        bound = math.exp(NOISE_CLAMP * sigma)
        draw = math.exp(random.Random(f"{self.seed}:window{epoch}").gauss(0.0, sigma))
        return min(max(draw, 1 / bound), bound)

    def step_factor(self, sim_t: float) -> float:
        """Launch and window noise on one iteration starting at ``sim_t``."""
        return self.noise * self.window_factor(sim_t)

    def sim_now(self) -> float:
        return (time.monotonic() - self.t0) * self.settings.time_scale

    def interval_s(self, batch: int) -> float:
        if self.settings.fixed_rate is not None:
            return 1.0 / self.settings.fixed_rate
        ms = token_interval_ms(batch, self.cfg, self.prof)
        return ms * self.noise * self.window_factor() / 1000.0

    def cycle_s(self, batch: int) -> float:
        return (
            spec_cycle_ms(batch, self.cfg, self.prof) * self.noise * self.window_factor() / 1000.0
        )

    def ttft_s(self, prompt_tokens: int) -> float:
        if self.settings.fixed_rate is not None:
            return self.settings.fixed_ttft_ms / 1000.0
        ms = prefill_ms(prompt_tokens, self.cfg, self.prof)
        return ms * self.noise * self.window_factor() / 1000.0

    def accept_length(self) -> float:
        with self.lock:
            sched = self.scheduler
            if sched.spec_cycles:
                return sched.spec_tokens / sched.spec_cycles
        assert self.cfg.spec is not None
        return expected_accept_length(self.cfg.spec)

    # ---- requests

    def open(
        self, prompt: str | list[int], prompt_tokens: int, max_new: int, rid: str
    ) -> Stream | Iterator[list[str]]:
        """Start a request: a :class:`Stream` of its tokens (fixed rate: a plain generator).

        Raises:
            ValueError: the request can never fit the KV pool (answered 400).
        """
        oom = self.settings.oom_above
        with self.lock:
            self.inflight += 1
            over = oom is not None and self.inflight > oom
        if over:
            self._die_of_oom()
        if self.settings.fixed_rate is not None:
            return self._fixed_rate(max_new, rid)
        req = SimRequest(rid, prompt, prompt_tokens, max(max_new, 0), arrival=self.sim_now())
        stream = Stream(self, req)
        with self.lock:
            try:
                self.scheduler.submit(req)
            except ValueError:
                self.inflight -= 1
                raise
            self.prompt_tokens_total += prompt_tokens
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
                self._thread.start()
            self.lock.notify()
        return stream

    def close(self, stream: Stream) -> None:
        """The handler is done with a stream: abort it if it has not finished (client left)."""
        with self.lock:
            self.inflight -= 1
            if not stream.done:
                self.scheduler.abort(stream.req, self.sim_now())

    def _fixed_rate(self, max_new: int, rid: str) -> Iterator[list[str]]:
        """A stream whose truth is known: first token after a fixed TTFT, then a fixed rate."""
        rng = random.Random(f"{self.seed}:{rid}")
        scale = self.settings.time_scale
        try:
            deadline = time.monotonic() + self.ttft_s(0) / scale
            for _ in range(max_new):
                _sleep_until(deadline)
                yield [" " + rng.choice(VOCAB)]
                deadline += self.interval_s(1) / scale
        finally:
            with self.lock:
                self.inflight -= 1

    def _loop(self) -> None:
        """The scheduler thread; a bug in it ends the server as a scheduler failure does in
        SGLang (traceback, then SIGKILL), never with streams left hanging."""
        try:
            self._iterate()
        except BaseException:
            self.log.line(
                "Scheduler hit an exception: " + traceback.format_exc().rstrip(),
                rank="TP0",
                level="error",
            )
            self.log.sigquit_and_die()
            raise  # not reached: SIGKILL ends the process

    def _iterate(self) -> None:
        """Plan, sleep to the iteration's end, complete; wait on the condition when idle."""
        scale = self.settings.time_scale
        last_end: float | None = None
        while True:
            with self.lock:
                while not self.scheduler.busy():
                    last_end = None
                    self.lock.wait()
                # Back to back while busy (absolute schedule); from now after an idle spell.
                start = self.sim_now() if last_end is None else last_end
                it = self.scheduler.plan(start)
                if it is None:  # nothing admissible yet: wait for a change
                    self.lock.wait(0.05)
                    last_end = None
                    continue
            deadline = self.t0 + (start + it.duration) / scale
            _sleep_until(deadline)
            with self.lock:
                self.lag_ms.append(max(time.monotonic() - deadline, 0.0) * scale * 1000.0)
                self.scheduler.complete(it)
            last_end = start + it.duration

    def _die_of_oom(self) -> None:
        """SGLang's runtime KV exhaustion: the scheduler raises, the parent SIGKILLs itself."""
        sched = f"{SRT}/managers/scheduler.py"
        frames = [
            frame(sched, 2950, "run_scheduler_process", "scheduler.event_loop_overlap()"),
            frame(sched, 1012, "event_loop_overlap", "batch = self.get_next_batch_to_run()"),
            frame(sched, 1820, "update_running_batch", "raise RuntimeError("),
        ]
        self.log.line(
            "Scheduler hit an exception: "
            + traceback_text(
                frames, "RuntimeError: Decode out of memory. Try to lower your batch size."
            ),
            rank="TP0",
            level="error",
        )
        self.log.sigquit_and_die()

    # ---- what the server reports

    def load(self) -> dict[str, Any]:
        """The scheduler's state now (the figures behind ``/metrics``), all simulated."""
        with self.lock:
            s = self.scheduler
            return {
                "num_running_reqs": len(s.running) + (1 if s.chunked else 0),
                "num_queue_reqs": len(s.waiting),
                "num_used_tokens": s.used_tokens,
                "token_usage": round(s.token_usage(), 4),
                "cache_hit_rate": round(s.cache.hit_rate, 4),
                "last_prefill_cache_hit_rate": round(s.last_hit_rate, 4),
                "cached_tokens_total": s.cache.hit_tokens,
                "prompt_tokens_total": self.prompt_tokens_total,
                "generation_tokens_total": s.total_generated,
                "gen_throughput": round(s.last_gen_tok_s, 2),
                "evictable_tokens": s.cache.evictable_tokens,
                **_lag_stats(self.lag_ms),
            }

    def metrics_text(self) -> str:
        """Prometheus text with SGLang's metric names (``--enable-metrics``)."""
        load = self.load()
        label = f'{{model_name="{self.launch.served_name}"}}'
        gauges = {
            "num_running_reqs": "The number of running requests.",
            "num_queue_reqs": "The number of requests in the waiting queue.",
            "num_used_tokens": "The number of used tokens.",
            "token_usage": "The token usage.",
            "cache_hit_rate": "The prefix cache hit rate of the last prefill batch.",
            "gen_throughput": "The generation throughput (token/s).",
        }
        counters = {
            "prompt_tokens_total": "Number of prefill tokens processed.",
            "generation_tokens_total": "Number of generation tokens processed.",
            "cached_tokens_total": "Number of cached prompt tokens.",
        }
        lines = ["# autotune.sim: SIMULATED SGLang server, figures are modelled, not measured"]
        for name, help_text in gauges.items():
            value = load["last_prefill_cache_hit_rate" if name == "cache_hit_rate" else name]
            lines += [
                f"# HELP sglang:{name} {help_text}",
                f"# TYPE sglang:{name} gauge",
                f"sglang:{name}{label} {float(value)}",
            ]
        for name, help_text in counters.items():
            lines += [
                f"# HELP sglang:{name} {help_text}",
                f"# TYPE sglang:{name} counter",
                f"sglang:{name}{label} {float(load[name])}",
            ]
        return "\n".join(lines) + "\n"

    def server_info(self) -> dict[str, Any]:
        cfg, prof = self.cfg, self.prof
        mem = memory_plan(cfg, prof)
        nccl = {}
        for name, tokens in (
            ("decode", 1),
            ("verify", cfg.spec.num_draft_tokens if cfg.spec else 1),
        ):
            us, algo, proto = nccl_allreduce(tokens * prof.hidden_bytes, cfg.nccl, prof)
            nccl[name] = {
                "bytes": tokens * prof.hidden_bytes,
                "us": round(us, 1),
                "algo": algo,
                "proto": proto,
            }
        modelled: dict[str, Any] = {
            "stream_tok_s": round(stream_tok_s(cfg, prof) / self.noise, 3),
            "stream_tok_s_noiseless": round(stream_tok_s(cfg, prof), 3),
            "allreduce_path": allreduce_path(cfg, prof),
            "nccl_allreduce": nccl,
            "max_total_num_tokens": mem.max_total_num_tokens,
        }
        load = self.load()
        state: dict[str, Any] = {
            "memory_usage": {"weight": mem.weights_gb, "kvcache": round(mem.kv_gb, 2)},
            "cache_hit_rate": load["cache_hit_rate"],
        }
        info: dict[str, Any] = {k: v for k, v in vars(self.launch.ns).items()}
        if cfg.spec is not None:
            accept = round(self.accept_length(), 4)
            info["avg_spec_accept_length"] = accept
            state["avg_spec_accept_length"] = accept
            modelled["expected_accept_length"] = round(expected_accept_length(cfg.spec), 4)
            modelled["verify_ms"] = round(verify_ms(cfg, prof) * self.noise, 3)
            info.update(
                speculative_num_steps=cfg.spec.num_steps,
                speculative_eagle_topk=cfg.spec.topk,
                speculative_num_draft_tokens=cfg.spec.num_draft_tokens,
            )
        sched = self.scheduler.sched
        info.update(
            simulated=True,
            version="0.5.9 (autotune.sim)",
            max_total_num_tokens=mem.max_total_num_tokens,
            max_running_requests=max_running_requests(cfg, prof),
            mem_fraction_static=mem.mem_fraction_static,
            internal_states=[state],
            simulation={
                "profile": prof.name,
                "gpu": prof.gpu_name,
                "noise_factor": round(self.noise, 5),
                "modelled": modelled,
                "scheduler": {
                    "pool_tokens": sched.pool_tokens,
                    "max_running_requests": sched.max_running,
                    "chunked_prefill_size": sched.chunk,
                    "max_prefill_tokens": sched.max_prefill_tokens,
                    "schedule_policy": sched.policy,
                    "radix_cache": sched.radix_cache,
                    "mixed_chunk": sched.mixed_chunk,
                    **load,
                },
                "time_scale": self.settings.time_scale,
                "launch_noise_sigma": self.settings.launch_sigma,
                "window_noise_sigma": self.settings.window_sigma,
                "flags_ignored": self.settings.flags_ignored,
                "fixed_rate_tok_s": self.settings.fixed_rate,
                "fixed_ttft_ms": self.settings.fixed_ttft_ms
                if self.settings.fixed_rate is not None
                else None,
            },
        )
        return info


def _lag_stats(lags: deque[float]) -> dict[str, float]:
    ordered = sorted(lags)
    if not ordered:
        return {"lag_ms_p50": 0.0, "lag_ms_p99": 0.0, "lag_ms_max": 0.0}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "lag_ms_p50": round(at(0.5), 2),
        "lag_ms_p99": round(at(0.99), 2),
        "lag_ms_max": round(ordered[-1], 2),
    }


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)
