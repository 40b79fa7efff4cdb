"""The stand-in's continuous-batching scheduler, in simulated time and without a clock.

Why knobs matter for one traffic shape and not another comes from here: each iteration is
one forward pass whose cost the model gives (prefill tokens are dear, a decode step costs
little more for a bigger batch), and the scheduler decides what goes into it, as SGLang's
does:

- prefill first: an iteration that admits waiting requests runs their prefill and the
  running requests do not decode in it (``--enable-mixed-chunk`` lets them decode in the
  same forward); a prompt longer than ``--chunked-prefill-size`` is prefilled one chunk per
  iteration (``-1``: in one forward);
- admission stops at ``--max-running-requests``, at the prefill token budget
  (``--max-prefill-tokens``) and when the KV pool (sized by ``--mem-fraction-static``) has
  no room for the prompt and its output, even after evicting the prefix cache; beyond that
  requests wait in the queue (``#queue-req``);
- the waiting queue is ordered by ``--schedule-policy`` (``lpm``: longest cached prefix
  first, and a request whose uncached prefix another one in the same batch computes waits a
  round to hit the cache); cached prefix tokens (``radix.PrefixCache``, off with
  ``--disable-radix-cache``) are not prefilled again.

The server drives one :class:`Scheduler` with a wall clock (``server.py``); tests and the
bench drive it with ``replay.py`` in simulated time only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from autotune.sim.model import (
    SimConfig,
    accept_depth,
    accept_probability,
    decode_step_ms,
    forward_ms,
    spec_cycle_ms,
)
from autotune.sim.profiles import HardwareProfile
from autotune.sim.radix import BLOCK_TOKENS, PrefixCache, block_keys

IN_BATCH_BLOCKS = 2  # 32 tokens: SGLang's in-batch prefix-caching thresholds
DECODE_LOG_INTERVAL = 40  # SGLang's --decode-log-interval default: one line per 40 decodes
VOCAB = (
    "the model runs on eight GPUs and every layer waits for an allreduce across the bus while "
    "tokens stream out one by one to the client that measures them"
).split()
# Token callback: (new token texts, finished). Called from the scheduler's thread.
Sink = Callable[[list[str], bool], None]


@dataclass(eq=False)
class SimRequest:
    """One request as the scheduler sees it (times in simulated seconds)."""

    rid: str
    prompt: str | list[int]
    prompt_tokens: int
    max_new: int
    arrival: float = 0.0
    sink: Sink | None = None
    keys: list[int] = field(default_factory=list)
    cached: int = 0  # prompt tokens found in the prefix cache at admission
    prefilled: int = 0  # prompt tokens computed (cached ones included)
    produced: int = 0
    output: list[str] = field(default_factory=list)
    held: list[int] = field(default_factory=list)  # cache blocks this request locks
    private: int = 0  # pool tokens reserved outside the cache (rest of prompt + output)
    token_times: list[float] = field(default_factory=list)  # one entry per token produced
    finished_at: float | None = None

    def __post_init__(self) -> None:
        if not self.keys:
            self.keys = block_keys(self.prompt)


@dataclass(frozen=True)
class SchedulerConfig:
    """What the scheduler reads from the launch (SGLang's flag names in the comments)."""

    pool_tokens: int  # max_total_num_tokens
    max_running: int  # --max-running-requests
    chunk: int = 8192  # --chunked-prefill-size; <= 0: no chunking
    max_prefill_tokens: int = 16384  # --max-prefill-tokens
    policy: str = "fcfs"  # --schedule-policy
    radix_cache: bool = True  # not --disable-radix-cache
    mixed_chunk: bool = False  # --enable-mixed-chunk


@dataclass
class Iteration:
    """One planned forward: who prefills how many tokens, who decodes, and its duration."""

    start: float
    duration: float
    prefill: list[tuple[SimRequest, int]]
    decode: list[SimRequest]
    new_seqs: int = 0
    new_tokens: int = 0
    cached_tokens: int = 0


class Scheduler:
    """SGLang-style continuous batching over the performance model.

    Args:
        cfg, prof: the launch's model configuration and hardware profile.
        sched: the scheduler's own settings.
        factor: noise factor on iteration time at a simulated time (1.0: none).
        seed: seeds the per-iteration jitter, speculative acceptance and token texts.
        log: receives SGLang's "Prefill batch" / "Decode batch" lines (None: not logged).
    """

    def __init__(
        self,
        cfg: SimConfig,
        prof: HardwareProfile,
        sched: SchedulerConfig,
        *,
        factor: Callable[[float], float] | None = None,
        seed: int = 0,
        jitter: float = 0.03,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg, self.prof, self.sched = cfg, prof, sched
        self.factor = factor or (lambda _t: 1.0)
        self.rng = random.Random(seed)
        self.jitter = jitter
        self.log = log
        self.cache = PrefixCache(enabled=sched.radix_cache)
        self.waiting: list[SimRequest] = []
        self.chunked: SimRequest | None = None  # a prompt part-way through chunked prefill
        self.running: list[SimRequest] = []  # decoding
        self.decode_iters = 0
        self.generated = 0  # tokens since the last decode log line
        self.last_log_t = 0.0
        self.total_generated = 0
        self.finished = 0  # requests ended (finished or aborted)
        self.spec_tokens = 0
        self.spec_cycles = 0
        self.last_gen_tok_s = 0.0
        self.last_prefill_t = 0.0
        self.last_hit_rate = 0.0  # of the last prefill batch (SGLang's cache_hit_rate gauge)

    # ---- state

    def submit(self, req: SimRequest) -> None:
        """Queue a request.

        Raises:
            ValueError: prompt and output cannot fit the KV pool even alone (SGLang refuses
                such a request instead of queueing it forever).
        """
        if req.prompt_tokens + req.max_new > self.sched.pool_tokens:
            raise ValueError(
                f"Requested token count exceeds the KV pool: {req.prompt_tokens} input + "
                f"{req.max_new} output > max_total_num_tokens={self.sched.pool_tokens}"
            )
        self.waiting.append(req)

    def abort(self, req: SimRequest, t: float) -> None:
        """The client left: drop the request wherever it is (SGLang aborts it too)."""
        if req.finished_at is not None:
            return
        if req in self.waiting:
            self.waiting.remove(req)
            req.finished_at = t
            return
        if self.chunked is req:
            self.chunked = None
        req.max_new = req.produced
        self._finish(req, t, keep_output=False)

    def busy(self) -> bool:
        return bool(self.waiting or self.running or self.chunked)

    @property
    def private_tokens(self) -> int:
        reqs = self.running + ([self.chunked] if self.chunked else [])
        return sum(r.private for r in reqs)

    @property
    def used_tokens(self) -> int:
        """Pool tokens in use: reservations of running requests and the whole prefix cache."""
        return self.private_tokens + self.cache.tokens

    def token_usage(self) -> float:
        """SGLang's "token usage": the share of the pool running requests hold."""
        held = self.private_tokens + self.cache.tokens - self.cache.evictable_tokens
        return held / max(self.sched.pool_tokens, 1)

    # ---- planning

    def _ordered_waiting(self) -> list[SimRequest]:
        policy = self.sched.policy
        if policy in ("lpm", "dfs-weight") and self.cache.enabled and len(self.waiting) <= 128:
            # SGLang falls back to fcfs beyond 128 waiting requests (matching is costly).
            return sorted(self.waiting, key=lambda r: -self.cache.match(r.keys))
        if policy == "lof":
            return sorted(self.waiting, key=lambda r: -r.max_new)
        if policy == "random":
            order = list(self.waiting)
            self.rng.shuffle(order)
            return order
        return list(self.waiting)  # fcfs, priority (all equal here)

    def _fits(self, need: int) -> bool:
        """Room in the pool for ``need`` tokens, evicting cached prefixes only if that suffices."""
        free = self.sched.pool_tokens - self.used_tokens
        if free >= need:
            return True
        if free + self.cache.evictable_tokens < need:
            return False
        self.cache.evict(need - free)
        return True

    def _admit(self, budget: int, room: int) -> list[tuple[SimRequest, int]]:
        """New requests for this prefill, in policy order, within the budgets and the pool."""
        pieces: list[tuple[SimRequest, int]] = []
        slots = self.sched.max_running - len(self.running) - (1 if self.chunked else 0)
        in_batch: set[int] = set()  # blocks this prefill is about to compute
        lpm = self.sched.policy in ("lpm", "dfs-weight") and self.cache.enabled
        for req in self._ordered_waiting():
            if slots <= 0 or room <= 0:
                break
            hit = min(self.cache.match(req.keys), (req.prompt_tokens - 1) // BLOCK_TOKENS)
            fresh = req.keys[hit : hit + IN_BATCH_BLOCKS]
            if lpm and len(fresh) == IN_BATCH_BLOCKS and all(k in in_batch for k in fresh):
                # SGLang's in-batch prefix check: a request whose uncached prefix another one
                # in this batch computes waits one round and then hits the cache.
                continue
            extend = req.prompt_tokens - hit * BLOCK_TOKENS
            if pieces and extend > budget:
                break  # the first request may exceed the budget alone, as in SGLang
            held = req.keys[:hit]
            self.cache.lock(held)
            if not self._fits(extend + req.max_new):
                self.cache.unlock(held)
                break
            req.held, req.cached, req.prefilled = held, hit * BLOCK_TOKENS, hit * BLOCK_TOKENS
            req.private = extend + req.max_new
            self.cache.record(req.cached, req.prompt_tokens)
            self.waiting.remove(req)
            if lpm:
                in_batch.update(req.keys[hit:])
            slots -= 1
            n = min(extend, room)
            pieces.append((req, n))
            budget -= extend
            room -= n
            if n < extend:
                self.chunked = req
                break
        return pieces

    def plan(self, now: float) -> Iteration | None:
        """The next iteration starting at ``now`` (None: nothing to do)."""
        chunk = self.sched.chunk if self.sched.chunk > 0 else 1 << 62
        room, budget = chunk, self.sched.max_prefill_tokens
        pieces: list[tuple[SimRequest, int]] = []
        if self.chunked is not None:
            req = self.chunked
            n = min(req.prompt_tokens - req.prefilled, room)
            pieces.append((req, n))
            room -= n
            budget -= n
            if req.prefilled + n >= req.prompt_tokens:
                self.chunked = None
        if self.chunked is None:
            pieces += self._admit(budget, room)
        decode = list(self.running)
        if pieces and not (self.sched.mixed_chunk and self.cfg.spec is None):
            decode = []  # prefill first: the running requests wait for this forward
        if not pieces and not decode:
            return None
        new_tokens = sum(n for _, n in pieces)
        it = Iteration(now, 0.0, pieces, decode, new_tokens=new_tokens)
        it.new_seqs = len(pieces)
        it.cached_tokens = sum(r.cached for r, n in pieces if r.prefilled == r.cached)
        it.duration = self._duration(it) / 1000.0
        if pieces:
            total = it.new_tokens + it.cached_tokens
            self.last_hit_rate = it.cached_tokens / total if total else 0.0
            self._log_prefill(it)
        return it

    def _duration(self, it: Iteration) -> float:
        """Milliseconds of one iteration, noise included."""
        cfg, prof = self.cfg, self.prof
        p, b = it.new_tokens, len(it.decode)
        context = sum(r.prompt_tokens + r.produced for r in it.decode)
        kv_read = prof.decode_kv_ms_per_1k * context / 1000.0
        ms = 0.0
        if p and b:  # a mixed forward: the chunk and one token of each running request
            ms = forward_ms(p + b, cfg, prof, is_captured=False) + prof.prefill_ms_per_token * p
        elif p:
            ms = forward_ms(p, cfg, prof, is_captured=False) + prof.prefill_ms_per_token * p
        elif cfg.spec is not None:
            ms = spec_cycle_ms(b, cfg, prof)
        else:
            ms = decode_step_ms(b, cfg, prof)
        ms += kv_read
        jitter = self.rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else 1.0
        return ms * self.factor(it.start) * jitter

    # ---- completion

    def complete(self, it: Iteration) -> None:
        """Apply an iteration at its end: prefills finish, tokens go out, requests end."""
        end = it.start + it.duration
        for req, n in it.prefill:
            if req.finished_at is not None:  # aborted while its prefill ran
                continue
            req.prefilled += n
            if req.prefilled < req.prompt_tokens:
                continue
            new = req.keys[len(req.held) :]
            self.cache.insert_locked(new)
            if self.cache.enabled:
                req.held = req.keys[:]
                req.private -= len(new) * BLOCK_TOKENS
            self.running.append(req)
            self._emit(req, 1, end)  # the prefill forward samples the first token
        if it.decode:
            self.decode_iters += 1
            for req in it.decode:
                if req.finished_at is not None:
                    continue
                n = 1
                if self.cfg.spec is not None:
                    n = self._sample_accept()
                    self.spec_tokens += n
                    self.spec_cycles += 1
                self._emit(req, n, end)
            if self.decode_iters % DECODE_LOG_INTERVAL == 0:
                self._log_decode(end, len(it.decode))

    def _emit(self, req: SimRequest, n: int, t: float) -> None:
        n = min(n, req.max_new - req.produced)
        tokens = [" " + self.rng.choice(VOCAB) for _ in range(n)]
        req.produced += n
        req.output += tokens
        req.token_times += [t] * n
        self.generated += n
        self.total_generated += n
        done = req.produced >= req.max_new
        if done:
            self._finish(req, t)
        if req.sink is not None:
            req.sink(tokens, done)

    def _finish(self, req: SimRequest, t: float, keep_output: bool = True) -> None:
        if req in self.running:
            self.running.remove(req)
        req.finished_at = t
        self.finished += 1
        req.private = 0
        out: list[int] = []
        if keep_output and self.cache.enabled and isinstance(req.prompt, str):
            # SGLang caches the whole sequence: a next turn that resends it hits.
            out = block_keys(req.prompt + "".join(req.output))[len(req.keys) :]
            if out and self._fits(len(out) * BLOCK_TOKENS):
                self.cache.lock(out)
            else:
                out = []
        self.cache.unlock(req.held + out)

    def _sample_accept(self) -> int:
        spec = self.cfg.spec
        assert spec is not None
        p, n = accept_probability(spec), 1
        for _ in range(accept_depth(spec)):
            if self.rng.random() >= p:
                break
            n += 1
        return n

    # ---- SGLang's log lines

    def _log_prefill(self, it: Iteration) -> None:
        gap = it.start - self.last_prefill_t
        self.last_prefill_t = it.start
        if self.log is None:
            return
        tok_s = it.new_tokens / gap if gap > 0 else 0.0
        self.log(
            f"Prefill batch, #new-seq: {it.new_seqs}, #new-token: {it.new_tokens}, "
            f"#cached-token: {it.cached_tokens}, token usage: {self.token_usage():.2f}, "
            f"#running-req: {len(self.running)}, #queue-req: {len(self.waiting)}, "
            f"cuda graph: False, input throughput (token/s): {tok_s:.2f}"
        )

    def _log_decode(self, t: float, batch: int) -> None:
        gap = t - self.last_log_t
        self.last_gen_tok_s = self.generated / gap if gap > 0 else 0.0
        self.last_log_t, self.generated = t, 0
        if self.log is None:
            return
        spec = ""
        if self.cfg.spec is not None and self.spec_cycles:
            spec = f"accept len: {self.spec_tokens / self.spec_cycles:.2f}, "
        graphs = self.cfg.graphs and batch <= self.cfg.cuda_graph_max_bs
        self.log(
            f"Decode batch, #running-req: {batch}, #token: {self.used_tokens}, "
            f"token usage: {self.token_usage():.2f}, {spec}cuda graph: {graphs}, "
            f"gen throughput (token/s): {self.last_gen_tok_s:.2f}, "
            f"#queue-req: {len(self.waiting)}"
        )
