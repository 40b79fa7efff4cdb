"""Drive the stand-in's scheduler through a workload in simulated time, with no clock at all.

Tests and ``bench/sim_shapes.py`` use it to show what each knob does to each traffic shape
(what the running server would serve, in simulated seconds) exactly and in milliseconds of
CPU: the server runs the same :class:`~autotune.sim.scheduler.Scheduler` against the wall
clock. Every figure here is simulated.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from autotune.sim.args import build_parser, to_launch
from autotune.sim.model import SimConfig, max_running_requests, memory_plan
from autotune.sim.nccl import parse_nccl_env
from autotune.sim.profiles import PCIE_BLACKWELL, HardwareProfile
from autotune.sim.radix import CHARS_PER_TOKEN
from autotune.sim.scheduler import Scheduler, SchedulerConfig, SimRequest

# One request to send: (prompt text, output tokens).
Prompt = tuple[str, int]


def scheduler_for(
    flags: list[str],
    prof: HardwareProfile = PCIE_BLACKWELL,
    *,
    seed: int = 0,
    jitter: float = 0.0,
    log: Callable[[str], None] | None = None,
) -> Scheduler:
    """A scheduler for a launch given as SGLang flags (``--tp-size 8`` is implied)."""
    ns = build_parser().parse_args(["--model-path", "m", "--tp-size", "8", *flags])
    cfg = to_launch(ns, {}, parse_nccl_env({})).config
    return Scheduler(cfg, prof, scheduler_config(cfg, prof), seed=seed, jitter=jitter, log=log)


def scheduler_config(cfg: SimConfig, prof: HardwareProfile) -> SchedulerConfig:
    """The scheduler's settings for a launch's model configuration."""
    return SchedulerConfig(
        pool_tokens=memory_plan(cfg, prof).max_total_num_tokens,
        max_running=max_running_requests(cfg, prof),
        chunk=cfg.chunked_prefill_size,
        max_prefill_tokens=cfg.max_prefill_tokens,
        policy=cfg.schedule_policy,
        radix_cache=cfg.radix_cache,
        mixed_chunk=cfg.mixed_chunk,
    )


WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def text_of(tokens: int, rng: random.Random) -> str:
    """Random words of about ``tokens`` tokens (the stand-in counts characters / 4)."""
    words: list[str] = []
    size = 0
    while size < tokens * CHARS_PER_TOKEN:
        word = rng.choice(WORDS) + str(rng.randrange(1000))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[: tokens * CHARS_PER_TOKEN]


def random_prompts(n: int, tokens: int, out: int, seed: int = 0) -> list[Prompt]:
    """``n`` prompts sharing nothing."""
    rng = random.Random(seed)
    return [(text_of(tokens, rng), out) for _ in range(n)]


def shared_prefix_prompts(
    groups: int, per_group: int, prefix: int, suffix: int, out: int, seed: int = 0
) -> list[Prompt]:
    """``groups`` system prompts of ``prefix`` tokens, each with ``per_group`` questions,
    interleaved (group 0, 1, ..., 0, 1, ...) as a RAG service's traffic arrives."""
    rng = random.Random(seed)
    heads = [text_of(prefix, rng) for _ in range(groups)]
    return [(heads[g] + text_of(suffix, rng), out) for _ in range(per_group) for g in range(groups)]


def _request(i: int, prompt: Prompt, arrival: float) -> SimRequest:
    text, out = prompt
    tokens = max(1, math.ceil(len(text) / CHARS_PER_TOKEN))
    return SimRequest(f"r{i}", text, tokens, out, arrival=arrival)


def _submit(sched: Scheduler, req: SimRequest) -> None:
    """Submit, or mark refused (never fits the KV pool): it ends with no token at arrival."""
    try:
        sched.submit(req)
    except ValueError:  # refused, as the server answers 400: counted in Result.refused
        req.finished_at = req.arrival


def drain(sched: Scheduler, now: float, pending: list[SimRequest]) -> float:
    """Run iterations until ``pending`` arrivals are all submitted and everything finished."""
    pending = sorted(pending, key=lambda r: r.arrival)
    i = 0
    while i < len(pending) or sched.busy():
        if not sched.busy():
            now = max(now, pending[i].arrival)
        while i < len(pending) and pending[i].arrival <= now:
            _submit(sched, pending[i])
            i += 1
        it = sched.plan(now)
        if it is None:
            continue
        now += it.duration
        sched.complete(it)
    return now


def run_open(sched: Scheduler, prompts: list[Prompt], rate: float, seed: int = 0) -> Result:
    """Send ``prompts`` at Poisson arrivals of ``rate`` requests per simulated second."""
    rng, t, reqs = random.Random(seed), 0.0, []
    for i, prompt in enumerate(prompts):
        reqs.append(_request(i, prompt, t))
        t += rng.expovariate(rate)
    end = drain(sched, 0.0, reqs)
    return Result.of(reqs, end, sched)


def run_closed(sched: Scheduler, prompts: list[Prompt], concurrency: int) -> Result:
    """Send ``prompts`` from ``concurrency`` clients, each sending its next when one ends."""
    reqs = [_request(i, p, 0.0) for i, p in enumerate(prompts)]
    now, sent, active = 0.0, 0, 0
    while True:
        while active < concurrency and sent < len(reqs):
            reqs[sent].arrival = now
            _submit(sched, reqs[sent])
            active += reqs[sent].finished_at is None
            sent += 1
        it = sched.plan(now) if sched.busy() else None
        if it is None:
            break
        now += it.duration
        before = sched.finished
        sched.complete(it)
        active -= sched.finished - before
    return Result.of(reqs, now, sched)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass(frozen=True)
class Result:
    """What a client would measure, in simulated seconds (figures are simulated)."""

    requests: int
    duration_s: float
    output_tok_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_s: float
    itl_p99_s: float
    hit_rate: float
    ttft_max_s: float
    refused: int
    reqs: tuple[SimRequest, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, reqs: list[SimRequest], end: float, sched: Scheduler) -> Result:
        ttft = [r.token_times[0] - r.arrival for r in reqs if r.token_times]
        itl = [b - a for r in reqs for a, b in zip(r.token_times, r.token_times[1:], strict=False)]
        itl = [x for x in itl if x > 0]  # speculative chunks arrive together
        start = min(r.arrival for r in reqs)
        tokens = sum(r.produced for r in reqs)
        return cls(
            requests=len(reqs),
            duration_s=end - start,
            output_tok_s=tokens / (end - start) if end > start else 0.0,
            ttft_p50_s=_pct(ttft, 0.5),
            ttft_p99_s=_pct(ttft, 0.99),
            itl_p50_s=_pct(itl, 0.5),
            itl_p99_s=_pct(itl, 0.99),
            hit_rate=sched.cache.hit_rate,
            ttft_max_s=max(ttft, default=0.0),
            refused=sum(1 for r in reqs if not r.token_times and r.max_new > 0),
            reqs=tuple(sorted(reqs, key=lambda r: r.arrival)),
        )
