"""Mechanisms every engine shares, read by what they are (issue 51, fifteenth round).

Written from the mechanisms that failed on the tuning part of batch t (the sixth blind set,
tests/data/crashlogs/MANIFEST.md), each case in the shape such logs take, not copied from
the corpus:

- a cache pool that has **run dry** says so in more words than "out of memory": it is
  *exhausted*, has *no free* blocks or slots, the engine *fails to find free* space in it or
  *runs out of* it, and a pool may hold *pages* as well as blocks (`pages from the page
  pool`): each is the KV pool too small (`kv_pool_oom`), in any engine; a pool of another
  kind (connections, threads) or retries that are exhausted are not, nor a hint that memory
  might be running out; a pool that ran dry was filled by requests: its phase is serving
  (`benchmark`), not the pool's sizing at start (`memory_pool`);
- a failure that **names the request it ended** (`request 17`, `session 3`) happened while
  the server served, even when the excerpt shows no ready line and the next request is
  answered: no failure before the first answer that is the server's start-up noise;
- a traceback cut before its exception whose **deepest code line makes a new tensor**
  (`buf = torch.empty(...)`, `torch.zeros(...)`) was allocating device memory when it failed,
  as one cut in the allocator's frames was (`cuda_oom`); a traceback that ends in its exception
  says why whatever its deepest line;
- a **journal stamp in a CJK locale** (`5月 17 09:12:03 host app[812]:`) is a dress like the
  English one (`May 17 ...`).
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of, cause_phase

SERVING = [
    "INFO 03-02 10:00:01 engine started, listening on http://0.0.0.0:9000",
    "INFO 03-02 10:00:05 batch: 6 running, 2 waiting",
]


def test_a_cache_pool_that_ran_dry_is_the_kv_pool_in_any_words() -> None:
    for words in (
        "ERROR sched: paged KV cache exhausted while admitting request 41",
        "ERROR sched: no free blocks left in the kv cache for sequence 9",
        "decode: unable to find free space in the KV cache for 512 tokens, request 3 dropped",
        "RuntimeError: the engine ran out of KV cache blocks while scheduling",
        "[E] OutOfPages: cannot allocate 12 pages from the page pool (3 free)",
    ):
        assert cause_of([*SERVING, words]) == "kv_pool_oom", words


def test_a_pool_that_ran_dry_ran_dry_while_serving() -> None:
    """A pool runs dry when requests fill it; one too small to start says so in sizing words."""
    dry = "[E] scheduler: KV cache exhausted, 0 of 4096 blocks free"
    for log in ([dry], [*SERVING, dry]):
        assert cause_phase(log) == ("kv_pool_oom", "benchmark"), log
    sizing = [
        "INFO 03-02 09:59:40 model weights take 13.5 GiB",
        "ValueError: not enough memory left for the KV cache blocks (need 2.0 GiB, 0.4 free)",
    ]
    assert cause_phase(sizing) == ("kv_pool_oom", "memory_pool")


@pytest.mark.usefixtures("rules_alone")
def test_a_pool_of_another_kind_running_dry_is_not_the_kv_pool() -> None:
    for words in (
        "ERROR db: connection pool exhausted, 30 waiters",
        "ERROR probe: retries exhausted for http://10.0.0.4:9000/health",
        "ERROR executor: no free threads in the worker pool",
    ):
        assert cause_of([*SERVING, words]) != "kv_pool_oom", words
    # a hint about what might be short is no fact that it is
    hint = (
        "error: failed to load model 'm.gguf', try reducing --n-gpu-layers if you're running"
        " out of VRAM"
    )
    assert cause_of(["loading model from m.gguf", hint]) not in {"kv_pool_oom", "cuda_oom"}


def test_a_failure_that_names_its_request_failed_while_serving() -> None:
    answered = 'INFO:     10.1.1.1:5000 - "POST /generate HTTP/1.1" 200 OK'
    log = [
        "2025-01-02 10:00:00 INFO worker: request 17 received (prompt 900 tokens)",
        "2025-01-02 10:00:01 ERROR worker: request 17 finished with an error",
        answered,
    ]
    assert cause_of(log) != "ok"
    # an error before the first answer that names no request is start-up noise, as before
    noise = [
        "2025-01-02 10:00:00 INFO worker: loading model m-7b",
        "2025-01-02 10:00:01 ERROR worker: optional plugin 'vision' failed to load",
        answered,
    ]
    assert cause_of(noise) == "ok"


def test_a_journal_stamp_in_a_cjk_locale_is_a_dress() -> None:
    for lines in (
        [
            "2025-01-02 10:00:00,001 - app - INFO - engine.py:40 - loading weights",
            "2025-01-02 10:00:01,337 - app - ERROR - engine.py:12 - worker 2 died",
        ],
        ["INFO:     Uvicorn running on http://0.0.0.0:8000", "ERROR:    Exception in ASGI app"],
    ):
        plain = cause_phase(lines)
        for month in ("5月", "12月", "May"):
            dressed = [f"{month} 17 09:12:03 gpu-host app[812]: {line}" for line in lines]
            assert cause_phase(dressed) == plain, (month, lines)


CUT_AT_A_NEW_TENSOR = [
    "INFO 03-02 09:59:40 [loader.py:12] Loading weights took 12.10 seconds",
    "ERROR 03-02 10:00:01 [worker.py:88] Worker failed: Traceback (most recent call last):",
    '  File "/srv/engine/worker.py", line 80, in profile',
    "    self.model.warm(batch)",
    '  File "/srv/engine/layers/moe.py", line 412, in warm',
    "    scratch = torch.empty((tokens * experts, hidden), dtype=dtype, device=dev)",
]


def test_a_traceback_cut_at_a_new_tensor_was_allocating() -> None:
    assert cause_of(CUT_AT_A_NEW_TENSOR) == "cuda_oom"
    zeros = [*CUT_AT_A_NEW_TENSOR[:-1], "    out = torch.zeros(n, d, device='cuda')"]
    assert cause_of(zeros) == "cuda_oom"
    # ended by its exception, the exception says what failed
    ended = [*CUT_AT_A_NEW_TENSOR, "TypeError: empty() received an invalid combination of args"]
    assert cause_of(ended) != "cuda_oom"
    # cut at another line, it says nothing of memory
    other = [*CUT_AT_A_NEW_TENSOR[:-1], "    scores = self.router(hidden_states)"]
    assert cause_of(other) != "cuda_oom"
