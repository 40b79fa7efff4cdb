"""The stand-in's scheduler and prefix cache, driven in simulated time (no clock, no server).

Each test runs one launch against two traffic shapes, or two launches against one shape,
and checks that the knob matters where SGLang's mechanism says it should, and only there.
All figures are simulated.
"""

from __future__ import annotations

import random

import pytest

from autotune.sim.chat import render
from autotune.sim.radix import BLOCK_TOKENS, PrefixCache, block_keys
from autotune.sim.replay import (
    drain,
    random_prompts,
    run_closed,
    run_open,
    scheduler_for,
    shared_prefix_prompts,
    text_of,
)
from autotune.sim.scheduler import SimRequest


def test_prefix_cache_matches_whole_prefixes_and_evicts_leaves_first() -> None:
    cache = PrefixCache()
    a = block_keys("x" * 64 * 4)  # 4 blocks
    b = block_keys("x" * 64 * 2 + "y" * 64 * 2)  # shares the first 2 blocks
    assert cache.match(a) == 0
    cache.insert_locked(a)
    assert cache.match(b) == 2 and cache.evictable_tokens == 0
    assert cache.evict(10**6) == 0  # locked blocks stay
    cache.unlock(a)
    assert cache.evictable_tokens == 4 * BLOCK_TOKENS
    assert cache.evict(BLOCK_TOKENS) == BLOCK_TOKENS
    assert cache.match(a) == 3  # the leaf went, the prefix stayed
    # A different text before a block changes every later key: no false sharing.
    assert block_keys("z" + "x" * 255)[1:] != a[1:]
    assert PrefixCache(enabled=False).match(a) == 0


def test_shared_prefix_traffic_gains_from_the_radix_cache_and_random_prompts_do_not() -> None:
    shared = shared_prefix_prompts(groups=4, per_group=8, prefix=2000, suffix=64, out=64)
    unique = random_prompts(32, tokens=2064, out=64)
    on = [run_closed(scheduler_for([]), p, 16) for p in (shared, unique)]
    off = [run_closed(scheduler_for(["--disable-radix-cache"]), p, 16) for p in (shared, unique)]
    # The first batch of each group misses (they are admitted together, as in SGLang).
    assert on[0].hit_rate > 0.7 and off[0].hit_rate == 0.0
    assert on[0].output_tok_s > 1.5 * off[0].output_tok_s
    assert on[0].ttft_p50_s < off[0].ttft_p50_s / 2
    # Random prompts share nothing: the cache changes nothing at all.
    assert on[1].hit_rate == 0.0
    assert on[1].output_tok_s == pytest.approx(off[1].output_tok_s, rel=1e-9)


def _long_prompt_mix() -> list[tuple[str, int]]:
    """Chat turns with long outputs, and every fourth request a 12k-token document."""
    chats = random_prompts(24, tokens=200, out=200, seed=1)
    docs = random_prompts(8, tokens=12000, out=16, seed=2)
    return [docs[i // 4] if i % 4 == 3 else chats[i - i // 4] for i in range(32)]


def test_chunked_prefill_smooths_itl_under_long_prompts_when_decodes_ride_along() -> None:
    mix = _long_prompt_mix()

    def run(*flags: str) -> tuple[float, float]:
        result = run_open(scheduler_for(list(flags)), mix, rate=1.0)
        long_ttft = [r.token_times[0] - r.arrival for r in result.reqs if r.prompt_tokens > 10000]
        return result.itl_p99_s, sum(long_ttft) / len(long_ttft)

    itl_whole, ttft_whole = run("--enable-mixed-chunk", "--chunked-prefill-size", "-1")
    itl_chunked, ttft_chunked = run("--enable-mixed-chunk", "--chunked-prefill-size", "2048")
    assert itl_chunked < itl_whole / 2  # a 12k prefill no longer stalls every decode at once
    assert ttft_chunked > ttft_whole  # the document pays for its six chunks
    # Prefill first (SGLang's default): chunks run back to back and decodes still stall.
    itl_plain, _ = run("--chunked-prefill-size", "2048")
    assert itl_plain > itl_whole / 2


def test_long_prompts_cost_ttft_and_long_outputs_cost_decode_time() -> None:
    short = run_closed(scheduler_for([]), random_prompts(4, tokens=200, out=64), 1)
    long_in = run_closed(scheduler_for([]), random_prompts(4, tokens=8000, out=64), 1)
    long_out = run_closed(scheduler_for([]), random_prompts(4, tokens=200, out=512), 1)
    assert long_in.ttft_p50_s > 10 * short.ttft_p50_s
    assert long_in.itl_p50_s == pytest.approx(short.itl_p50_s, rel=0.05)  # KV reads only
    assert long_out.ttft_p50_s == pytest.approx(short.ttft_p50_s, rel=0.01)
    assert long_out.duration_s > 5 * short.duration_s


def test_open_loop_above_capacity_grows_the_queue_and_ttft_without_bound() -> None:
    lines: list[str] = []
    prompts = random_prompts(240, tokens=500, out=200)
    below = run_open(scheduler_for([]), prompts[:120], rate=1.0)
    above_sched = scheduler_for([], log=lines.append)
    above = run_open(above_sched, prompts, rate=12.0)
    reqs = above.reqs
    first = [r.token_times[0] - r.arrival for r in reqs[:40]]
    last = [r.token_times[0] - r.arrival for r in reqs[-40:]]
    assert max(first) < min(last) / 2  # waiting grows over the run
    assert above.ttft_p99_s > 10 * below.ttft_p99_s
    queues = [int(x.rsplit("#queue-req: ", 1)[1].split(",")[0]) for x in lines if "#queue" in x]
    assert max(queues) > 50
    assert any(line.startswith("Decode batch, #running-req: ") for line in lines)


def test_max_running_requests_caps_the_batch_and_queues_the_rest() -> None:
    lines: list[str] = []
    sched = scheduler_for(["--max-running-requests", "4"], log=lines.append)
    capped = run_closed(sched, random_prompts(16, tokens=100, out=200), 16)
    free = run_closed(scheduler_for([]), random_prompts(16, tokens=100, out=200), 16)
    running = [int(x.split("#running-req: ")[1].split(",")[0]) for x in lines if "Decode" in x]
    assert max(running) == 4
    assert any("#queue-req: 12" in line for line in lines)
    assert capped.output_tok_s < free.output_tok_s
    assert capped.ttft_p99_s > 3 * free.ttft_p99_s


def test_lpm_keeps_the_hit_rate_where_fcfs_thrashes_a_small_pool() -> None:
    traffic = shared_prefix_prompts(groups=16, per_group=8, prefix=1024, suffix=64, out=32)

    def run(policy: str, pool: int) -> float:
        flags = ["--schedule-policy", policy, "--max-total-tokens", str(pool)]
        return run_open(scheduler_for(flags), traffic, rate=20.0).hit_rate

    assert run("lpm", 8000) > run("fcfs", 8000) + 0.3
    # With room for every group the policy hardly matters.
    assert run("lpm", 40000) == pytest.approx(run("fcfs", 40000), abs=0.05)


def test_lpm_holds_back_requests_whose_prefix_the_same_batch_computes() -> None:
    burst = shared_prefix_prompts(groups=4, per_group=8, prefix=2000, suffix=64, out=64)
    fcfs = run_closed(scheduler_for([]), burst, 16)
    lpm = run_closed(scheduler_for(["--schedule-policy", "lpm"]), burst, 16)
    # fcfs prefills each group's prefix four times in the first batch; lpm once.
    assert lpm.hit_rate > fcfs.hit_rate + 0.05
    assert lpm.output_tok_s > fcfs.output_tok_s


def test_a_small_kv_pool_from_mem_fraction_static_evicts_the_groups() -> None:
    traffic = shared_prefix_prompts(groups=16, per_group=6, prefix=1024, suffix=64, out=32)
    small = scheduler_for(["--mem-fraction-static", "0.03"])
    big = scheduler_for(["--mem-fraction-static", "0.5"])
    assert small.sched.pool_tokens < 16 * 1024 < big.sched.pool_tokens
    assert run_open(small, traffic, 20.0).hit_rate < run_open(big, traffic, 20.0).hit_rate - 0.2


def test_a_multi_turn_chat_that_resends_its_history_hits_the_cache() -> None:
    sched = scheduler_for([])
    history = [{"role": "system", "content": text_of(500, random.Random(3))}]
    cached = []
    for turn in range(3):
        history.append({"role": "user", "content": f"question {turn}: " + "why " * 20})
        prompt = render(history)
        req = SimRequest(f"t{turn}", prompt, len(prompt) // 4, 40)
        drain(sched, 0.0, [req])
        cached.append(req.cached)
        history.append({"role": "assistant", "content": "".join(req.output)})
    assert cached[0] == 0
    assert cached[1] >= len(render(history[:2])) // 4 - BLOCK_TOKENS  # turn 1 prompt
    assert cached[2] > cached[1] + 40  # ...and turn 2's reply too


def test_a_request_larger_than_the_pool_is_refused_not_queued_forever() -> None:
    sched = scheduler_for(["--max-total-tokens", "1000"])
    with pytest.raises(ValueError, match="max_total_num_tokens=1000"):
        sched.submit(SimRequest("big", "x" * 4000, 1000, 10))


def test_disabling_chunked_prefill_reserves_activations_for_a_whole_prefill_batch() -> None:
    chunked = scheduler_for(["--chunked-prefill-size", "8192"]).sched.pool_tokens
    whole = scheduler_for(["--chunked-prefill-size", "-1"]).sched.pool_tokens
    assert whole < chunked  # the default fraction leaves room for 16384-token activations
