"""Families read in any engine's words, from the misses of batch zd's tuning part (issue 51).

Batch zd (the sixteenth blind set) joined with its tuning part as rule data (MANIFEST.md).
Each test names a family the way at least two engines or runtimes word it; every line is
written for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

# --- a cache that does not fit, said as a budget -------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # an engine that plans its KV pages and expert slots within a budget of GPU memory
        [
            "INFO  planning the KV cache for 4096 tokens",
            "AssertionError: cache budget too small: the plan needs 1200000000 B > budget "
            "800000000 B (raise the memory ratio)",
        ],
        # a runtime that sizes the cache before it starts serving
        [
            "ERROR: KV cache budget of 512 MiB is too small for one sequence of 32768 tokens",
        ],
    ],
)
def test_a_cache_budget_too_small_is_the_kv_pool(lines: list[str]) -> None:
    assert cause_of(lines, exit_code=1) == "kv_pool_oom"


# --- a runtime that refuses an operation on a stream being captured: graph capture -------------


@pytest.mark.parametrize(
    "lines",
    [
        # an NPU runtime's call that returns an error code, no level and no exception after it
        [
            "INFO: capturing graphs for 8 batch sizes",
            "aclrtSynchronizeStream: ErrCode=107027, desc=[stream is captured]",
            "aclrtMemcpy: ErrCode=107030, desc=[the current capture mode does not support this "
            "operation]",
        ],
        # a GPU runtime's exception in other words
        [
            "INFO: capturing graphs for 8 batch sizes",
            "RuntimeError: synchronizing a captured stream is not allowed",
        ],
    ],
)
def test_an_operation_refused_on_a_captured_stream_is_the_capture(lines: list[str]) -> None:
    assert cause_of(lines) == "cuda_graph_capture"


# --- a benchmark client's own failure: the benchmark's, not the server's -------------------------


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/work/llmperf/token_benchmark_ray.py", line 120, in get_latencies',
        '  File "/opt/llmperf/src/llmperf/utils.py", line 40, in summarize',
    ],
)
def test_a_crash_in_a_benchmark_client_is_a_benchmark_error(frame: str) -> None:
    """No request reached the server and the client divided by zero: llmperf's script failed."""
    lines = [
        "Traceback (most recent call last):",
        frame,
        "    summary = collect(results)",
        '  File "/work/llmperf/metrics.py", line 12, in collect',
        "    throughput = tokens / latency",
        "ZeroDivisionError: division by zero",
    ]
    assert cause_of(lines, exit_code=1) == "benchmark_errors"
