"""Families read in any engine's words, from the misses of batch zb's tuning part (issue 51).

Batch zb (the fourteenth blind set) joined with its tuning part as rule data (MANIFEST.md).
Each test names a family the way at least two engines or libraries word it; every line is
written for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

# --- a request's token timings, then the operator's interrupt: a run served and stopped -----------


@pytest.mark.parametrize(
    "lines",
    [
        # llama.cpp's server: a request's timings, then Ctrl-C in the terminal and its totals
        [
            "slot print_timing: id  0 | task 12 | prompt eval time =      40.10 ms /    31 tokens",
            "slot print_timing: id  0 | task 12 |        eval time =    2001.50 ms /   400 tokens",
            "^C",
            "llama_perf_context_print:        load time =     512.00 ms",
        ],
        # Ollama's runner (llama.cpp's library inside it): its timings, then SIGINT noted
        [
            "llama_perf_context_print: prompt eval time =      88.00 ms /    64 tokens",
            "llama_perf_context_print:        eval time =    1500.00 ms /   199 runs",
            'time=2026-04-01T10:00:09.000Z level=INFO source=routes.go:1 msg="received SIGINT"',
        ],
    ],
)
def test_timed_tokens_then_an_interrupt_is_a_served_run(lines: list[str]) -> None:
    """An engine that timed tokens it generated for a request served it; an operator's
    interrupt after that is a run stopped on purpose, not a start-up that hung, though no
    line says the server was ready."""
    assert cause_of(lines) == "ok"


@pytest.mark.parametrize(
    "lines",
    [
        # timings alone, the excerpt stopping there: nothing says how the run ended
        ["llama_perf_context_print:        eval time =    1500.00 ms /   199 runs"],
        # an interrupt while the server still loads: no token was timed, so nothing was served
        ["llama_model_loader: loaded meta data with 30 key-value pairs", "^C"],
    ],
)
def test_timings_or_an_interrupt_alone_is_no_served_run(lines: list[str]) -> None:
    """Neither half alone proves a healthy run: a log that stops after timings may stop before
    the crash, and an operator may interrupt a start that hangs."""
    assert cause_of(lines) != "ok"


# --- a collective's watchdog named after what it found -------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang's ranks over NCCL: the communicators came up, then the watchdog's report
        [
            "node-0:77:900 [3] NCCL INFO ncclCommInitRankConfig comm 0x5 rank 3 nranks 8 - Init "
            "COMPLETE",
            "[rank3]:[E101 10:00:00.000000 ProcessGroupNCCL.cpp:2000] [PG ID 1 PG GUID 1 Rank 3]  "
            "failure detected by watchdog at work sequence id: 812 PG status: last enqueued "
            "work: 820, last completed work: 811",
        ],
        # a vLLM worker under Ray, the same process group's words behind Ray's prefix
        [
            "(RayWorkerWrapper pid=4242) INFO 01-01 10:00:00 [model_runner.py:1] Graph capturing "
            "finished in 12 secs",
            "(RayWorkerWrapper pid=4242) [rank1]:[E101 10:05:00.1 ProcessGroupNCCL.cpp:1900] "
            "[PG ID 0 PG GUID 0(default_pg) Rank 1]  failure detected by the watchdog at work "
            "sequence id: 9 PG status: last enqueued work: 9, last completed work: 8",
        ],
    ],
)
def test_a_failure_the_watchdog_detected_is_a_watchdog_timeout(lines: list[str]) -> None:
    """A process group's watchdog reports the collective it found not completed (a sequence id
    past the last completed work): the ranks stopped meeting, a hang, whatever NCCL printed
    while its communicators came up."""
    assert cause_of(lines) == "watchdog_timeout"


# --- a loader that warns memory is short, where the log stops -------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # Ollama: its scheduler refuses a model bigger than the machine's memory at WARN level
        [
            'time=2026-04-01T10:00:00.000Z level=INFO source=sched.go:1 msg="loading model"',
            'time=2026-04-01T10:00:01.000Z level=WARN source=server.go:9 msg="model request too '
            'large for system" requested="90.0 GiB" available="62.5 GiB"',
        ],
        # vLLM on CPU: weights the host cannot hold, warned and then nothing
        [
            "INFO 04-01 10:00:00 [cpu_worker.py:1] Loading model weights on CPU",
            "WARNING 04-01 10:00:05 [cpu_worker.py:9] Not enough CPU memory to hold the model: "
            "needs 70.00 GiB, only 31.20 GiB available",
        ],
    ],
)
def test_a_warning_that_host_memory_is_short_where_the_log_stops_is_host_oom(
    lines: list[str],
) -> None:
    """A loader that warns the machine's memory cannot hold the model, and is where the log
    stops, was stopped by it: host memory ran short, not a start that hung."""
    assert cause_of(lines) == "host_oom"


def test_a_memory_warning_the_server_got_past_is_no_failure() -> None:
    """The same warning followed by the server's ready line stopped nothing."""
    lines = [
        'time=2026-04-01T10:00:01.000Z level=WARN source=server.go:9 msg="model request too '
        'large for system" requested="90.0 GiB" available="62.5 GiB"',
        'time=2026-04-01T10:00:02.000Z level=INFO source=routes.go:1 msg="Listening on '
        '127.0.0.1:11434 (version 0.9.0)"',
        "INFO:     Application startup complete.",
    ]
    assert cause_of(lines) == "ok"


# --- an accelerator's compute core that faulted while running a kernel ---------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM-Ascend: the stream's synchronisation fails, then the runtime names the fault
        [
            "(EngineCore_DP0 pid=900) RuntimeError: NPU function error: "
            "c10_npu::acl::AclrtSynchronizeDevice(), error code is 507035",
            "(EngineCore_DP0 pid=900) [Error]: The vector core execution is abnormal.",
        ],
        # SGLang on Ascend NPUs: the device's report of an AI core exception, under a rank
        [
            "[2026-04-01 10:00:00 TP2] Decode batch, #running-req: 4, #token: 2048",
            "[rank2]: EZ9999: Inner Error! The error from device(chipId:2, dieId:0), serial "
            "number is 7, there is an aicore error exception, core id is 12",
        ],
    ],
)
def test_a_compute_core_that_faulted_is_a_runtime_crash(lines: list[str]) -> None:
    """A kernel that faulted on the accelerator's vector or AI core is a crash of the kernel,
    not a memory shortage or a bad setting, in whichever engine ran it."""
    assert cause_of(lines) == "runtime_crash"


def test_a_cores_count_is_no_fault() -> None:
    """The runtime's inventory of its cores in a healthy start says nothing of a fault."""
    lines = [
        "INFO 04-01 10:00:00 [platform.py:1] aicore num: 24, vector core num: 48",
        "INFO:     Application startup complete.",
    ]
    assert cause_of(lines) == "ok"


# --- a daemon that listens before it has loaded any model -----------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # Ollama started by hand: its API's address, then the GPU discovery, and nothing more
        [
            'time=2026-04-01T10:00:00.000Z level=INFO source=routes.go:1 msg="Listening on '
            '127.0.0.1:11434 (version 0.9.0)"',
            'time=2026-04-01T10:00:00.100Z level=INFO source=gpu.go:1 msg="looking for '
            'compatible GPUs"',
        ],
        # the same daemon under systemd, read from the journal
        [
            "Apr 01 10:00:00 host ollama[4242]: time=2026-04-01T10:00:00.000Z level=INFO "
            'source=routes.go:1 msg="Listening on [::]:11434 (version 0.9.0)"',
            "Apr 01 10:00:00 host ollama[4242]: time=2026-04-01T10:00:00.200Z level=INFO "
            'source=payload.go:1 msg="extracting embedded files"',
        ],
    ],
)
def test_a_daemon_listening_with_no_model_loaded_is_not_ready(lines: list[str]) -> None:
    """A daemon's bare address is said before any model is loaded: a log that ends there never
    served, so it is no healthy run (issue 51 item 1: a log without the ready line gets a
    cause)."""
    assert cause_of(lines) != "ok"


def test_a_daemon_whose_model_runner_started_is_ready() -> None:
    """The same daemon once its model runner is up is ready, and healthy when nothing fails."""
    lines = [
        'time=2026-04-01T10:00:00.000Z level=INFO source=routes.go:1 msg="Listening on '
        '127.0.0.1:11434 (version 0.9.0)"',
        'time=2026-04-01T10:00:09.000Z level=INFO source=server.go:1 msg="llama runner started '
        'in 3.02 seconds"',
    ]
    assert cause_of(lines) == "ok"
