"""The load generator against the fixture server, the fixed-rate stand-in, and canned raw
responses for its edge cases."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import pytest

from autotune.models import PIECES_COUNTED, Workload
from autotune.node import bench

Start = Callable[..., str]
Canned = Callable[[Callable[[int], bytes]], str]


def _ordered(stats: object) -> bool:
    return stats.p50 <= stats.p90 <= stats.p99  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("endpoint", "flags"),
    [
        ("/v1/completions", ()),
        ("/v1/completions", ("--usage", "--chunk", "4")),
        ("/generate", ("--chunk", "3")),
    ],
)
def test_token_counts_and_stats(
    fixture_server: Start, endpoint: str, flags: tuple[str, ...]
) -> None:
    url = fixture_server("--rate", "500", *flags)
    workload = Workload(endpoint=endpoint, num_requests=10, concurrency=4, output_len=12)
    result = bench.run_load(url, workload, bench.make_prompts(workload, 10), concurrency=4)
    metrics = result.metrics()
    assert (metrics.completed, metrics.failed) == (10, 0)
    assert metrics.output_tokens == 10 * 12
    for stats in (metrics.ttft_ms, metrics.itl_ms, metrics.e2e_ms, metrics.tpot_ms):
        assert stats is not None and _ordered(stats)
    assert metrics.ttft_ms is not None and metrics.e2e_ms is not None
    assert metrics.ttft_ms.p50 < metrics.e2e_ms.p50
    assert metrics.output_tok_s == pytest.approx(metrics.output_tokens / metrics.duration_s)
    assert metrics.request_s == pytest.approx(10 / metrics.duration_s)


def test_requests_without_a_server_count_are_told(fixture_server: Start) -> None:
    workload = Workload(num_requests=4, concurrency=4, output_len=12)
    prompts = bench.make_prompts(workload, 4)
    # Pieces of 3 tokens and no usage: the count reads 4 per request, and says why.
    bare = bench.run_load(fixture_server("--chunk", "3"), workload, prompts, concurrency=4)
    assert bare.metrics().output_tokens == 4 * 4
    assert bare.metrics().extra[PIECES_COUNTED] == 100.0
    counted = bench.run_load(
        fixture_server("--chunk", "3", "--usage"), workload, prompts, concurrency=4
    ).metrics()
    assert counted.output_tokens == 4 * 12 and PIECES_COUNTED not in counted.extra


def test_token_rate_shapes_itl(fixture_server: Start) -> None:
    url = fixture_server("--rate", "100")  # a chunk every 10 ms
    workload = Workload(num_requests=2, concurrency=2, output_len=10)
    metrics = bench.run_load(
        url, workload, bench.make_prompts(workload, 2), concurrency=2
    ).metrics()
    assert metrics.itl_ms is not None and 8.0 <= metrics.itl_ms.p50 <= 40.0


def test_without_done_marker_still_completes(fixture_server: Start) -> None:
    url = fixture_server("--no-done", "--usage")
    workload = Workload(num_requests=3, concurrency=3, output_len=5)
    metrics = bench.run_load(
        url, workload, bench.make_prompts(workload, 3), concurrency=3
    ).metrics()
    assert (metrics.completed, metrics.output_tokens) == (3, 15)


def test_abort_stops_the_run(fixture_server: Start) -> None:
    url = fixture_server("--rate", "20")  # 100 tokens: 5 s per request
    workload = Workload(num_requests=4, concurrency=4, output_len=100)
    flag = threading.Event()
    threading.Timer(0.3, flag.set).start()
    start = time.monotonic()
    result = bench.run_load(
        url, workload, bench.make_prompts(workload, 4), concurrency=4, abort=flag.is_set
    )
    assert time.monotonic() - start < 1.5
    assert result.state == "aborted" and result.completed == 0


def test_a_cut_window_counts_every_planned_request(fixture_server: Start) -> None:
    url = fixture_server("--rate", "20")  # 100 tokens: 5 s per request
    workload = Workload(num_requests=3, concurrency=1, output_len=100)
    result = bench.run_load(url, workload, limit_s=0.2)
    assert result.state == "timeout" and len(result.records) == 0
    assert result.requested == 3  # one started, three planned


def test_prompts_are_deterministic_and_sized() -> None:
    workload = Workload(prompt_len=50, seed=3)
    first = bench.make_prompts(workload, 5)
    assert first == bench.make_prompts(workload, 5)
    assert first != bench.make_prompts(Workload(prompt_len=50, seed=4), 5)
    assert bench.make_prompts(workload, 2, kind="warmup") != first[:2]
    assert all(len(p.split()) == 50 for p in first)
    assert len(set(first)) == 5


def test_request_bodies() -> None:
    chat = bench.request_body(Workload(model="m", output_len=7, extra_body={"top_k": 1}), "hi")
    assert chat == {
        "model": "m",
        "prompt": "hi",
        "max_tokens": 7,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "top_k": 1,
    }
    assert "ignore_eos" not in chat
    native = bench.request_body(Workload(endpoint="/generate", output_len=7), "hi")
    assert native["sampling_params"] == {"temperature": 0, "max_new_tokens": 7, "ignore_eos": True}
    assert native["text"] == "hi" and native["stream"] is True


def _sse(*objs: object, done: bool = True) -> bytes:
    body = "".join(f"data: {json.dumps(o)}\n\n" for o in objs)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def _reply(status: int, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


def _run(canned: Canned, respond: Callable[[int], bytes], n: int = 3) -> bench.BenchResult:
    url = canned(respond)
    load = Workload(num_requests=n, concurrency=2)
    return bench.run_load(url, load, bench.make_prompts(load, n), concurrency=2)


def test_422_counts_as_failed_and_zero_completed_does_not_divide(canned: Canned) -> None:
    body = b'{"detail": "Unexpected fields: ignore_eos"}'
    result = _run(canned, lambda i: _reply(422, body))
    metrics = result.metrics()
    assert (metrics.completed, metrics.failed) == (0, 3)
    assert metrics.output_tok_s == 0.0 and metrics.request_s == 0.0
    assert metrics.ttft_ms is None and metrics.itl_ms is None and metrics.tpot_ms is None
    assert result.errors() == ['HTTP 422: {"detail": "Unexpected fields: ignore_eos"}']


def test_zero_duration_does_not_divide() -> None:
    metrics = bench.BenchResult(records=[], duration_s=0.0).metrics()
    assert (metrics.output_tok_s, metrics.request_s, metrics.completed) == (0.0, 0.0, 0)


def test_usage_beats_chunk_count(canned: Canned) -> None:
    body = _sse(
        {"choices": [{"text": "ab"}]},
        {"choices": [{"text": "cd"}]},
        {"choices": [], "usage": {"completion_tokens": 5}},
    )
    metrics = _run(canned, lambda i: _reply(200, body), n=2).metrics()
    assert metrics.output_tokens == 10 and metrics.completed == 2


def test_error_in_stream_and_empty_response_fail(canned: Canned) -> None:
    def respond(i: int) -> bytes:
        if i % 2:
            return _reply(200, _sse({"error": "CB worker is dead"}, done=False))
        return _reply(200, _sse({"choices": [{"text": ""}]}))

    result = _run(canned, respond, n=6)
    assert result.completed == 0 and result.failed == 6
    assert sorted(result.errors()) == [
        "error in stream: CB worker is dead",
        "the response had no output tokens",
    ]


def test_broken_stream_is_an_error(canned: Canned) -> None:
    # Chunked framing cut off mid-body: the server died while streaming.
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    result = _run(canned, lambda i: head + b"40\r\ndata: {", n=2)
    assert result.failed == 2 and result.errors()[0].startswith("RemoteProtocolError")


def test_refused_connection_is_an_error() -> None:
    load = Workload(num_requests=2, concurrency=2)
    result = bench.run_load("http://127.0.0.1:9", load, bench.make_prompts(load, 2), concurrency=2)
    assert result.failed == 2 and result.errors()[0].startswith("ConnectError")


def test_client_reads_a_fixed_rate_server_truly(fixed_rate_sim: Callable[..., str]) -> None:
    # The stand-in streams 40 tokens at 50 tok/s after 100 ms, whatever the load: the truth
    # is known. Tolerances are loose (a shared CI machine); bench/loadgen.py holds the tight
    # figures. A reading can only fall below the truth (the server keeps absolute deadlines).
    url = fixed_rate_sim(rate=50, ttft_ms=100)
    load = Workload(num_requests=16, concurrency=8, output_len=40, model="m")
    metrics = bench.run_load(url, load, bench.make_prompts(load, 16), concurrency=8).metrics()
    truth = 8 * 40 / (0.1 + 39 / 50)
    assert metrics.completed == 16
    assert 0.85 * truth < metrics.output_tok_s < 1.02 * truth
    assert metrics.itl_ms is not None and 18.0 < metrics.itl_ms.p50 < 22.0
    assert metrics.ttft_ms is not None and 100.0 <= metrics.ttft_ms.p50 < 250.0


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ({"avg_spec_accept_length": 3.2}, 3.2),
        ({"internal_states": [{"memory_usage": {}, "avg_spec_accept_length": 1.75}]}, 1.75),
        ({"internal_states": [{"x": 1}]}, None),
        ({"avg_spec_accept_length": True}, None),
        ([], None),
    ],
)
def test_accept_length(info: object, expected: float | None) -> None:
    assert bench.accept_length(info) == expected


def test_percentile_is_numpys_linear_percentile() -> None:
    import random

    import numpy as np

    rng = random.Random(0)
    for n in (2, 3, 7, 100):
        values = [rng.expovariate(1.0) for _ in range(n)]
        for q in (1, 50, 90, 99):
            assert bench.percentile(values, q) == pytest.approx(np.percentile(values, q))
    with pytest.raises(ValueError, match="1 to 99"):
        bench.percentile([1.0, 2.0], 100)


def test_percentile_interpolates() -> None:
    assert bench.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert bench.percentile([5.0], 99) == 5.0
    with pytest.raises(ValueError):
        bench.percentile([], 50)
    stats = bench.stats_ms([0.001 * i for i in range(1, 101)])
    assert (
        stats is not None
        and stats.p99 == pytest.approx(99.01)
        and stats.mean == pytest.approx(50.5)
    )


def test_fetch_server_info_ignores_errors(fixture_server: Start) -> None:
    assert bench.fetch_server_info("http://127.0.0.1:9") is None
    url = fixture_server()
    assert bench.fetch_server_info(url) is None  # 404 without --accept-length
