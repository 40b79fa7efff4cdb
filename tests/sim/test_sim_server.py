"""The stand-in server's HTTP API with a real httpx client: readiness, streaming, throughput."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from tests.sim.conftest import Running

from autotune.models import Workload
from autotune.node.bench import make_prompts, request_body, run_load


def _sse(response: httpx.Response) -> list[tuple[float, Any]]:
    """(arrival time, decoded payload) of each SSE event, ``[DONE]`` as the string."""
    events: list[tuple[float, Any]] = []
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        data = line[len("data: ") :]
        events.append((time.monotonic(), data if data == "[DONE]" else json.loads(data)))
    return events


def _stream(server: Running, path: str, body: dict[str, Any]) -> list[tuple[float, Any]]:
    with httpx.stream("POST", f"{server.url}{path}", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return _sse(response)


def test_health_is_503_while_starting_then_200(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim()
    codes = server.health_codes
    assert 503 in codes and codes[-1] == 200 and 200 not in codes[:-1]
    log = server.log()
    order = [
        "Load weight begin",
        "Load weight end",
        "Memory pool end",
        "Capture cuda graph begin",
        "Capture cuda graph end",
        "max_total_num_tokens=",
        "The server is fired up and ready to roll!",
    ]
    positions = [log.index(m) for m in order]
    assert positions == sorted(positions)
    assert log.count("SIMULATED") == 1


def test_generate_and_completions_honour_the_token_count_exactly(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim()
    events = _stream(
        server,
        "/generate",
        {
            "text": "a prompt of some length",
            "stream": True,
            "sampling_params": {"max_new_tokens": 17, "temperature": 0, "ignore_eos": True},
        },
    )
    assert events[-1][1] == "[DONE]"
    metas = [e[1]["meta_info"] for e in events[:-1]]
    assert [m["completion_tokens"] for m in metas] == list(range(1, 18))  # cumulative
    assert metas[-1]["finish_reason"]["type"] == "length"
    assert events[-2][1]["text"].startswith(events[0][1]["text"])  # /generate text is cumulative

    body = {"model": "m", "prompt": "hi", "max_tokens": 9, "stream": True, "ignore_eos": True}
    events = _stream(server, "/v1/completions", body)
    chunks = [e[1] for e in events[:-1]]
    texts = [c["choices"][0]["text"] for c in chunks if c["choices"]]
    assert len(texts) == 9 and all(texts)
    assert all(c["choices"] and c["usage"] is None for c in chunks)  # counts only when asked
    asked = {**body, "stream_options": {"include_usage": True}}
    chunks = [e[1] for e in _stream(server, "/v1/completions", asked)[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 9

    body = httpx.post(
        f"{server.url}/v1/completions", json={"prompt": "hi", "max_tokens": 5}, timeout=30
    ).json()
    assert (
        body["usage"]["completion_tokens"] == 5 and body["choices"][0]["finish_reason"] == "length"
    )
    body = httpx.post(
        f"{server.url}/generate",
        json={"text": "hi", "sampling_params": {"max_new_tokens": 4}},
        timeout=30,
    ).json()
    assert body["meta_info"]["completion_tokens"] == 4
    models = httpx.get(f"{server.url}/v1/models", timeout=5).json()
    assert models["data"][0]["id"] == "/models/Kimi-K2.5"


def test_speculative_server_streams_accepted_tokens_and_reports_accept_length(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim(
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/d",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "8",
        NCCL_PROTO="LL",
    )
    assert "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1" in server.log()
    events = _stream(
        server,
        "/generate",
        {"text": "x", "stream": True, "sampling_params": {"max_new_tokens": 50}},
    )
    counts = [e[1]["meta_info"]["completion_tokens"] for e in events[:-1]]
    steps = [b - a for a, b in zip([0, *counts], counts, strict=False)]
    assert counts[-1] == 50 and max(steps) > 1 and max(steps) <= 4
    info = server.info()
    accept = info["avg_spec_accept_length"]
    assert accept == info["internal_states"][0]["avg_spec_accept_length"]  # type: ignore[index]
    assert 1.0 < float(accept) <= 4.0  # type: ignore[arg-type]
    assert info["speculative_num_draft_tokens"] == 4 and info["max_running_requests"] == 48


def test_load_generator_counts_speculative_tokens_on_the_openai_endpoint(launch_sim) -> None:  # type: ignore[no-untyped-def]
    # A speculative server's chunks carry several tokens; on /v1/completions only the usage
    # the load generator asks for counts them (SGLang sends it only when asked).
    server = launch_sim(
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
    )  # fmt: skip
    workload = Workload(endpoint="/v1/completions", num_requests=4, concurrency=2, output_len=40)
    prompts = make_prompts(workload, 4)
    result = run_load(server.url, workload, prompts, concurrency=2)
    assert result.metrics().output_tokens == 4 * 40
    body = request_body(workload, prompts[0])
    del body["stream_options"]
    chunks = [e[1] for e in _stream(server, "/v1/completions", body)[:-1]]
    assert len(chunks) < 40 and all(c["usage"] is None for c in chunks)  # a chunk count undercounts


def test_measured_baseline_throughput_matches_the_model(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim()
    modelled = float(server.info()["simulation"]["modelled"]["stream_tok_s"])  # type: ignore[index]
    assert 70.0 < modelled < 95.0  # the campaign's 82 tok/s with a few percent of launch noise
    events = _stream(
        server,
        "/v1/completions",
        {"model": "m", "prompt": "p" * 256, "max_tokens": 60, "stream": True, "ignore_eos": True},
    )
    times = [t for t, e in events[:-1] if e["choices"]]
    # The server keeps an absolute schedule, but this process reads the chunks late when the
    # machine is loaded: a line through the arrival times, robust to a few late ones (Theil-Sen),
    # not the first and last arrivals alone (one late end moved that by 10% at load 10).
    from scipy.stats import theilslopes

    measured = 1.0 / theilslopes(times).slope
    assert abs(measured - modelled) / modelled < 0.10


def test_concurrent_streams_raise_aggregate_throughput(launch_sim) -> None:  # type: ignore[no-untyped-def]
    import concurrent.futures

    server = launch_sim()

    def one(_: int) -> float:
        start = time.monotonic()
        body = {"text": "x", "sampling_params": {"max_new_tokens": 30}}
        assert (
            httpx.post(f"{server.url}/generate", json=body, timeout=30).json()["meta_info"][
                "completion_tokens"
            ]
            == 30
        )
        return time.monotonic() - start

    single = 30 / one(0)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(8)))
    aggregate = 8 * 30 / (time.monotonic() - start)
    assert single < aggregate < 8 * single


def test_a_verify_yaml_style_launch_gets_ready(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim(
        "--trust-remote-code", "--cuda-graph-max-bs", "128", "--mem-fraction-static", "0.6",
        "--disable-custom-all-reduce", "--moe-a2a-backend", "none",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
        "--speculative-num-draft-tokens", "6",
        NCCL_MIN_NCHANNELS="2", NCCL_MAX_NCHANNELS="8", NCCL_BUFFSIZE="1048576",
        NCCL_NTHREADS="256", NCCL_PROTO="LL128",
    )  # fmt: skip
    info = server.info()
    assert info["speculative_eagle_topk"] == 2 and info["speculative_num_draft_tokens"] == 6
    nccl = info["simulation"]["modelled"]["nccl_allreduce"]  # type: ignore[index]
    assert nccl["verify"]["proto"] == "LL128"


def test_chat_turns_that_resend_history_hit_the_prefix_cache(launch_sim) -> None:  # type: ignore[no-untyped-def]
    from autotune.sim.chat import render

    server = launch_sim(
        "--enable-cache-report", "--enable-metrics", AUTOTUNE_SIM_TIME_SCALE="20"
    )  # fmt: skip
    history = [
        {"role": "system", "content": "You answer questions about GPUs. " * 40},
        {"role": "user", "content": "What is NCCL?"},
    ]
    body = {
        "model": "m",
        "messages": history,
        "max_tokens": 12,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = [e[1] for e in _stream(server, "/v1/chat/completions", body)[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"]["content"] for c in chunks[1:] if c["choices"]]
    assert len(deltas) == 12 and all(deltas)
    usage = chunks[-1]["usage"]
    prompt_tokens = -(-len(render(history)) // 4)  # role markup counts
    assert usage["prompt_tokens"] == prompt_tokens > len(history[0]["content"]) // 4
    assert usage["completion_tokens"] == 12 and usage["prompt_tokens_details"]["cached_tokens"] == 0

    history += [
        {"role": "assistant", "content": "".join(deltas)},
        {"role": "user", "content": "And RCCL?"},
    ]
    reply = httpx.post(
        f"{server.url}/v1/chat/completions",
        json={"model": "m", "messages": history, "max_tokens": 5},
        timeout=30,
    ).json()
    assert reply["object"] == "chat.completion"
    assert reply["usage"]["completion_tokens"] == 5
    cached = reply["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= prompt_tokens - 16  # the whole first turn, to the last full block
    metrics = httpx.get(f"{server.url}/metrics", timeout=5).text
    assert "SIMULATED" in metrics
    label = '{model_name="/models/Kimi-K2.5"}'
    assert f"sglang:cached_tokens_total{label} {float(cached)}" in metrics
    assert "# TYPE sglang:cache_hit_rate gauge" in metrics
    assert f"#cached-token: {cached}, " in server.log()
    bad = httpx.post(f"{server.url}/v1/chat/completions", json={"messages": []}, timeout=5)
    assert bad.status_code == 400 and "messages" in bad.json()["message"]


def test_an_idle_server_burns_no_cpu(launch_sim) -> None:  # type: ignore[no-untyped-def]
    import os

    server = launch_sim()
    body = {"text": "x", "sampling_params": {"max_new_tokens": 3}}
    assert httpx.post(f"{server.url}/generate", json=body, timeout=30).status_code == 200
    assert httpx.get(f"{server.url}/metrics", timeout=5).status_code == 404  # no --enable-metrics
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu_s() -> float:
        with open(f"/proc/{server.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    before = cpu_s()
    time.sleep(1.0)
    # The scheduler thread waits on a condition; only the 50 ms stop/HTTP polls remain.
    assert cpu_s() - before < 0.1


def test_requests_beyond_max_running_requests_queue_on_the_server(launch_sim) -> None:  # type: ignore[no-untyped-def]
    import concurrent.futures

    server = launch_sim("--max-running-requests", "2", AUTOTUNE_SIM_TIME_SCALE="20")

    # One client for all: a client each would spread the arrivals over its set-up time,
    # longer than a request takes at this scale, and nothing would queue.
    client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=8))

    def one(i: int) -> int:
        body = {"text": f"request {i} " * 30, "sampling_params": {"max_new_tokens": 200}}
        reply = client.post(f"{server.url}/generate", json=body).json()
        return int(reply["meta_info"]["completion_tokens"])

    with client, concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(one, range(6))) == [200] * 6
    lines = [
        x for x in server.log().splitlines() if "Prefill batch, " in x or "Decode batch, " in x
    ]
    queued = [int(x.rsplit("#queue-req: ", 1)[1].split(",")[0]) for x in lines]
    running = [int(x.split("#running-req: ")[1].split(",")[0]) for x in lines if "Decode" in x]
    assert max(queued) >= 2 and running and max(running) <= 2
    sched = server.info()["simulation"]["scheduler"]  # type: ignore[index]
    assert sched["max_running_requests"] == 2 and sched["num_queue_reqs"] == 0
    assert sched["generation_tokens_total"] >= 1200
    # How late the scheduler thread woke, for a reader to judge the time scale (no bound
    # asserted: it depends on the machine's load).
    assert 0.0 <= sched["lag_ms_p50"] <= sched["lag_ms_p99"] <= sched["lag_ms_max"]
