"""Mechanisms every engine shares, read by what they are (issue 51, thirteenth round).

Written from the mechanisms that failed on the tuning part of batch r (the fourth blind set,
tests/data/crashlogs/MANIFEST.md), each case in the shape such logs take, not copied from
the corpus:

- a server's own **access log** answering a request with a 5xx status failed while serving:
  a crash when nothing more is answered, the requests' failure (`benchmark_errors`) when the
  server goes on answering;
- a server whose access log **refuses every request** (4xx statuses, none answered 2xx) served
  no request: its clients' requests failed (`benchmark_errors`), never a healthy run;
- a **state word** (`is empty`, `is 0`) tells of the KV cache only in the clause where the cache
  is its subject: "the queue is empty, clear the KV cache" is housekeeping, not a pool too small;
- a **notebook's traceback** (IPython's: the exception's name beside its header, `Cell In[3]`
  and `File /path:86` frames, `---> 86 code` lines among numbered context lines) is read as a
  Python traceback, so a cut one is read by its frames as any other;
- a **benchmark's report** that measured its run (throughputs, latencies) with no count of
  failed requests above 0 and no fewer successes than requests asked is a healthy run, whether
  or not the client prints a failed count at all;
- a **thread dump taken by a watchdog** (the dumping thread, first in the dump, runs a function
  named for a watchdog) is that watchdog giving up: `watchdog_timeout`; a watchdog thread that
  merely sleeps further down an operator's dump says nothing;
- a phase's name passed as a **keyword argument** (`warmup=False`) in a frame's code line is no
  mark of that phase;
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_phase

SERVING = [
    "INFO:     Started server process [4242]",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://0.0.0.0:9000 (Press CTRL+C to quit)",
    'INFO:     10.1.2.3:40112 - "GET /v1/models HTTP/1.1" 200 OK',
]


@pytest.mark.parametrize(
    "answer",
    [
        'INFO:     10.1.2.3:40118 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        '10.1.2.3 - - [02/Mar/2025:09:15:02 +0000] "POST /generate HTTP/1.1" 503 212 "-" "curl"',
        '[GIN] 2025/03/02 - 09:15:02 | 500 |  2.118s |  10.1.2.3 | POST     "/api/chat"',
    ],
)
def test_a_servers_own_5xx_answer_is_a_failure_while_serving(answer: str) -> None:
    assert cause_phase([*SERVING, answer]) == ("runtime_crash", "benchmark")
    # and in an excerpt that shows nothing before it: a failure, never `ok` (gin's record says
    # no more than that: Ollama loads a model on the first request, so it places no phase)
    alone = cause_phase([answer, "DEBUG 03-02 09:15:02 freed the request's cache blocks"])
    assert alone is not None
    if "GIN" not in answer:
        assert alone == ("runtime_crash", "benchmark")


@pytest.mark.parametrize("status", ["500 Internal Server Error", "503 Service Unavailable"])
def test_a_5xx_answer_before_more_answers_is_the_requests_failure(status: str) -> None:
    failed = f'INFO:     10.1.2.3:40118 - "POST /v1/completions HTTP/1.1" {status}'
    ok = 'INFO:     10.1.2.3:40120 - "POST /v1/completions HTTP/1.1" 200 OK'
    assert cause_phase([*SERVING, failed, ok, ok]) == ("benchmark_errors", "benchmark")


def test_answers_with_2xx_statuses_only_stay_healthy() -> None:
    ok = 'INFO:     10.1.2.3:40118 - "POST /v1/completions HTTP/1.1" 200 OK'
    assert cause_phase([*SERVING, ok, ok]) is None


@pytest.mark.parametrize(
    "housekeeping",
    [
        "slot 3 released; the waiting queue is empty, clear the KV cache",
        "INFO batch is empty, resetting kv cache statistics",
        "request list is 0 long, freeing the paged KV cache blocks",
    ],
)
def test_a_state_word_of_another_subject_is_no_kv_pool_failure(housekeeping: str) -> None:
    assert cause_phase([*SERVING, housekeeping, *SERVING[-1:]]) is None


@pytest.mark.parametrize(
    "short",
    [
        "ERROR the KV cache pool is empty after the weights were loaded",
        "ERROR engine: available kv cache blocks is 0, cannot start",
    ],
)
def test_the_kv_cache_said_to_be_empty_is_still_the_pools(short: str) -> None:
    assert cause_phase([SERVING[0], short])[0] == "kv_pool_oom"  # type: ignore[index]


IPYTHON_8 = [
    "---------------------------------------------------------------------------",
    "OSError                                   Traceback (most recent call last)",
    "Cell In[2], line 3",
    "      1 import os",
    "      2 os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    "----> 3 import fastserve",
    "",
    "File /opt/env/lib/python3.11/site-packages/fastserve/__init__.py:41",
    "     38 from .config import EngineConfig",
    "   (...)",
    "---> 41 _load_native_kernels()",
]
IPYTHON_7 = [
    "OSError                                   Traceback (most recent call last)",
    "<ipython-input-4-0f2c9a7d1b2e> in <module>",
    "----> 1 import fastserve",
    "",
    "/opt/env/lib/python3.8/site-packages/fastserve/__init__.py in <module>",
    "     40 ",
    "---> 41 _load_native_kernels()",
]


@pytest.mark.parametrize("cell", [IPYTHON_8, IPYTHON_7])
def test_a_notebooks_traceback_cut_in_an_import_is_an_import_failure(cell: list[str]) -> None:
    assert cause_phase(cell) == ("import_error", "launch")


def test_a_notebooks_traceback_is_read_to_its_exception() -> None:
    cell = [
        "OutOfMemoryError                          Traceback (most recent call last)",
        "Cell In[7], line 1",
        "----> 1 outputs = llm.generate(prompts, params)",
        "",
        "File /opt/env/lib/python3.11/site-packages/fastserve/engine.py:212, in Engine.generate"
        "(self, prompts, params)",
        "    210 batch = self._schedule(prompts)",
        "--> 212 return self._run(batch)",
        "",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 1.10 GiB is free.",
    ]
    assert cause_phase(cell) == ("cuda_oom", "benchmark")


def test_a_phase_named_as_a_keyword_argument_is_no_mark_of_that_phase() -> None:
    cut = [
        "[2025-03-02 09:20:11 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/srv/llm/managers/scheduler.py", line 880, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        '  File "/srv/llm/managers/scheduler.py", line 402, in event_loop_normal',
        "    result = self.step(batch)",
        '  File "/srv/llm/kernels/launch.py", line 57, in launch',
        "    return self.kernel.run(grid=grid, warmup=False, stream=stream, *args)",
    ]
    assert cause_phase(cut) == ("runtime_crash", "benchmark")
    # while a frame that runs the warmup still marks it
    warm = [*cut[:3], '  File "/srv/llm/server.py", line 90, in warmup', "    self.step(batch)"]
    assert cause_phase(warm)[1] == "memory_pool"  # type: ignore[index]


REPORT = [
    "================ Load Test Report ================",
    "Traffic request rate:                    16.0",
    "Successful requests:                     240",
    "Benchmark duration (s):                  19.84",
    "Output token throughput (tok/s):         3120.55",
    "------------------ Time per Token ------------------",
    "Mean TPOT (ms):                          14.20",
    "P99 TPOT (ms):                           31.07",
]


def test_a_benchmark_report_that_measured_its_run_and_counts_no_failure_is_healthy() -> None:
    assert cause_phase(REPORT) is None
    # a report that counts failures, or fewer successes than asked, is still the client's error
    lost = [*REPORT[:3], "Failed requests:                         7", *REPORT[3:]]
    assert cause_phase(lost) == ("benchmark_errors", "benchmark")
    for told in (
        "Namespace(backend='openai', num_prompts=300, request_rate=16.0)",
        "$ python -m loadtest.serve --backend openai --num-prompts 300 --request-rate 16",
        "Number of requests:                      300",
    ):
        assert cause_phase([told, *REPORT]) == ("benchmark_errors", "benchmark"), told
    # and one that stops at its count, before measuring anything, still counts answers: the
    # server was up and served (issue-51-za; this test pinned the opposite before)
    assert cause_phase(REPORT[:3]) is None


REFUSED = [
    'INFO:     10.1.2.3:40120 - "POST /v1/chat/completions HTTP/1.1" 401 Unauthorized',
    'INFO:     10.1.2.3:40122 - "POST /v1/chat/completions HTTP/1.1" 422 Unprocessable Entity',
    'INFO:     10.1.2.4:40188 - "POST /v1/completions HTTP/1.1" 400 Bad Request',
]


def test_a_server_that_refuses_every_request_served_none() -> None:
    assert cause_phase(REFUSED) == ("benchmark_errors", "benchmark")
    assert cause_phase([*SERVING[:3], *REFUSED]) == ("benchmark_errors", "benchmark")
    # some requests answered: the refused ones are single clients' mistakes, the run is healthy
    answered = 'INFO:     10.1.2.5:40190 - "POST /v1/completions HTTP/1.1" 200 OK'
    assert cause_phase([*SERVING[:3], *REFUSED, answered]) is None


OTHER_THREADS = [
    "",
    "Thread 0x00007f12bb000700 (most recent call first):",
    '  File "/usr/lib/python3.11/threading.py", line 331 in wait',
    '  File "/opt/env/lib/python3.11/site-packages/tqdm/_monitor.py", line 60 in run',
    "",
    "Thread 0x00007f12bc400700 (most recent call first):",
    '  File "/opt/env/lib/python3.11/multiprocessing/connection.py", line 430 in _recv_bytes',
]
WATCHDOG = [
    '  File "/srv/eng/managers/scheduler.py", line 1500 in watchdog_loop',
    '  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner',
]


def test_a_thread_dump_taken_by_a_watchdog_is_the_watchdog_giving_up() -> None:
    current = ["Current thread 0x00007f11aa7fe700 (most recent call first):", *WATCHDOG]
    assert cause_phase([*current, *OTHER_THREADS]) == ("watchdog_timeout", "benchmark")
    # an excerpt that begins inside the dumping thread's stack
    assert cause_phase([*WATCHDOG, *OTHER_THREADS]) == ("watchdog_timeout", "benchmark")
    # a watchdog thread asleep further down a dump someone else asked for says nothing new
    asleep = [*OTHER_THREADS[1:], "", "Thread 0x00007f11aa7fe700 (most recent call first):"]
    assert cause_phase([*asleep, *WATCHDOG]) == ("startup_timeout", "load")
