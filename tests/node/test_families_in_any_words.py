"""Families read in any engine's words, from the misses of batches u to x (issue 51).

After batch x joined, the tuning parts of batches u, v, w and x became ordinary tuning data
(tests/data/crashlogs/MANIFEST.md). Each test here names a family the way at least two
engines or libraries word it; every line is written for the test, none is copied from the
corpus:

- **HCCL**, Ascend's collective library, fails as NCCL does: an operator wrapper naming the
  collective (``OPS function error: HcclAllGather``), HCCL's own error records, CANN's error
  code for a peer that never sent (``EI0006``), a collective task that timed out on the device;
- a **watchdog** that fires is a watchdog timeout in lower case too (SGLang's scheduler, an
  engine's step watchdog), also after the stack dump it asked for;
- a 404 for a path the server has no route for refuses no request it serves;
- a process that sees **no GPU** is a launch to fix (``invalid_argument``, its own hint);
- a compiled module **not defined** where it is used failed to import;
- a CUDA or HIP **runtime error** of no other family is a crash;
- a client's request whose **connection was refused**, and a **server error object** (5xx)
  answered to a request, are failed requests (``benchmark_errors``);
- a benchmark's **table of results** with nothing failing is a healthy run;
- a **KV cache that fills up** while serving (vLLM's preemption, llama.cpp's slots) is the
  pool's family.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of, cause_phase

from autotune.diagnosis import diagnose_text

# --- HCCL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM on Ascend: torch_npu's operator wrapper names the collective that failed
        [
            '[rank3]:   File "/opt/vllm/distributed/parallel_state.py", line 512, in all_gather',
            "[rank3]:     work = group.allgather([outs], [inp], opts)",
            "[rank3]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:297 "
            "OPS function error: HcclAllGather, error code is 7",
        ],
        # SGLang on Ascend: HCCL's own error record, a link to a peer never set up
        [
            "[2025-09-01 10:00:00 TP2] Init torch distributed begin.",
            "[ERROR] HCCL(5150,python3):2025-09-01-10:02:00.123.456 [hccl_socket_manager.cc:701] "
            "[5150][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[2] "
            "timeout[120]",
        ],
        # MindIE: CANN's error code for a peer that did not send its data in time
        [
            "2025-09-01 10:02:00 [mindie] model worker 1 init ...",
            "EI0006: [PID: 5150] 2025-09-01-10:04:00.000.001 Getting socket times out. Reason: "
            "rank 5 sent nothing before the connect timeout.",
        ],
        # the device's own report of a collective task that never finished
        [
            "The error from device(chipId:3, dieId:0), serial number is 12,",
            "hccl fftsplus task timeout occurred during task execution, stream_id:3, "
            "timeout=1800s.",
        ],
    ],
)
def test_hccl_the_collective_library_of_ascend_fails_as_nccl_does(lines: list[str]) -> None:
    assert cause_of(lines) == "nccl_error"


# --- watchdogs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dump", "line"),
    [
        # SGLang: py-spy's dump of the stuck scheduler, then its watchdog's verdict
        (
            [
                'Thread 4242 (idle): "MainThread"',
                "    recv_requests (managers/scheduler.py:1001)",
                "    event_loop_normal (managers/scheduler.py:870)",
            ],
            "[2026-02-01 09:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, "
            "self.soft=False)",
        ),
        # an engine that dumps its threads with faulthandler before its step watchdog gives up
        (
            [
                "Thread 0x00007f3a2b (most recent call first):",
                '  File "/opt/engine/worker.py", line 88 in wait_for_step',
                '  File "/opt/engine/worker.py", line 40 in run',
            ],
            "ERROR 02-01 09:00:00 [core.py:310] engine step watchdog timed out after 600 s",
        ),
    ],
)
def test_a_watchdog_that_fires_after_a_stack_dump_is_a_watchdog_timeout(
    dump: list[str], line: str
) -> None:
    """The dump alone reads as a hang; the watchdog's own line, in lower case too, says which:
    a watchdog gave up (not a start-up that never finished)."""
    assert cause_of(["[2026-02-01 08:50:00] Load weight end.", *dump, "", line]) == (
        "watchdog_timeout"
    )


# --- a path the server has no route for --------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM: a browser or a probe asks for paths it does not serve; the engine idles
        [
            'INFO:     10.0.0.7:50112 - "GET / HTTP/1.1" 404 Not Found',
            "INFO 03-01 10:00:05 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg "
            "generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs",
            'INFO:     10.0.0.7:50113 - "POST /api/generate HTTP/1.1" 404 Not Found',
        ],
        # SGLang: up and ready, then asked for a favicon
        [
            "[2025-03-01 10:00:00] The server is fired up and ready to roll!",
            '[2025-03-01 10:00:07] INFO:     127.0.0.1:41000 - "GET /favicon.ico HTTP/1.1" 404 '
            "Not Found",
        ],
    ],
)
def test_requests_for_paths_a_server_has_no_route_for_refuse_no_request_it_serves(
    lines: list[str],
) -> None:
    """A 404 says the path is not the server's, not that a request it serves was refused: the
    server is healthy. A request it refused (400) still failed."""
    assert cause_of(lines) == "ok"
    refused = [line.replace("404 Not Found", "400 Bad Request") for line in lines]
    assert cause_of(refused) == "benchmark_errors"


# --- no accelerator visible -------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM in a container started without a GPU: it finds no platform and stops there
        [
            "$ docker logs llm-decode-0",
            "INFO 04-02 08:00:01 [__init__.py:240] No platform detected, vLLM is running on "
            "UnspecifiedPlatform",
        ],
        # SGLang (PyTorch's words) on a node whose GPUs are hidden from the job
        [
            "[2025-04-02 08:00:03] server_args=ServerArgs(model_path='m', tp_size=1)",
            "Traceback (most recent call last):",
            '  File "/opt/sglang/srt/model_executor/model_runner.py", line 211, in __init__',
            "    torch.cuda.set_device(self.gpu_id)",
            "RuntimeError: No CUDA GPUs are available",
        ],
        # an engine on ROCm whose container lacks /dev/kfd
        ["RuntimeError: No HIP GPUs are available"],
        # llama.cpp's CUDA back-end with no device to take
        ["ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected"],
    ],
)
def test_a_process_that_sees_no_gpu_is_a_launch_to_fix(lines: list[str]) -> None:
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and failure.cause.value == "invalid_argument"
    assert "sees no GPU" in failure.hint


def test_no_platform_before_a_failed_import_of_the_cuda_build_is_the_import() -> None:
    lines = [
        "INFO 04-02 08:00:01 [__init__.py:240] No platform detected, vLLM is running on "
        "UnspecifiedPlatform",
        "WARNING 04-02 08:00:01 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')",
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/vllm", line 5, in <module>',
        "    from vllm.entrypoints.cli.main import main",
    ]
    assert cause_of(lines) == "import_error"


# --- a guarded import that failed earlier -------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "use"),
    [
        ("torch_npu", "x = torch_npu.npu_format_cast(w, 29)"),  # vLLM or SGLang on Ascend
        ("sgl_kernel", "sgl_kernel.rmsnorm(out, x, w, eps)"),  # SGLang's compiled kernels
        ("exllamav2_ext", "exllamav2_ext.make_q_matrix(w)"),  # ExLlamaV2's extension
    ],
)
def test_a_compiled_module_that_is_not_defined_where_it_is_used_failed_to_import(
    module: str, use: str
) -> None:
    """Engines import their compiled extensions and device plug-ins inside ``try`` and go on
    without them; the first use then raises NameError: the import failed."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/engine/layers/norm.py", line 88, in forward',
        f"    {use}",
        f"NameError: name '{module}' is not defined",
    ]
    assert cause_of(lines) == "import_error"
    plain = [*lines[:2], "    return x * scale", "NameError: name 'scale' is not defined"]
    assert cause_of(plain) != "import_error"


# --- a CUDA or HIP runtime error that is neither memory nor a missing kernel ---------------------


@pytest.mark.parametrize(
    ("frames", "error"),
    [
        # LMDeploy's TurboMind: its own prefix before the runtime's words, raised in its
        # allocator's source (an invalid argument there is no out-of-memory)
        (
            [
                '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner',
                "    self.run()",
                '  File "/usr/lib/python3.10/threading.py", line 953, in run',
                "    self._target(*self._args, **self._kwargs)",
                '  File "/opt/lmdeploy/turbomind/turbomind.py", line 520, in _forward_thread',
                "    output = self.model_insts[device_id].forward(",
            ],
            "RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument "
            "/opt/lmdeploy/src/turbomind/utils/allocator.h:250 ",
        ),
        # PyTorch (vLLM, SGLang) raising the runtime's error in a sampler
        (
            ['  File "/opt/vllm/model_executor/layers/sampler.py", line 300, in forward'],
            "RuntimeError: CUDA error: invalid configuration argument",
        ),
        # the same on ROCm
        (
            ['  File "/opt/sglang/srt/layers/sampler.py", line 120, in forward'],
            "RuntimeError: HIP error: invalid argument",
        ),
    ],
)
def test_a_cuda_runtime_error_of_no_other_family_is_a_crash(frames: list[str], error: str) -> None:
    assert cause_of(["Traceback (most recent call last):", *frames, error]) == "runtime_crash"


@pytest.mark.parametrize(
    ("error", "want"),
    [
        ("RuntimeError: CUDA error: out of memory", "cuda_oom"),
        ("RuntimeError: CUDA error: no kernel image is available", "arch_unsupported"),
        ("RuntimeError: HIP error: invalid device function", "arch_unsupported"),
    ],
)
def test_a_cuda_runtime_error_that_names_its_family_keeps_it(error: str, want: str) -> None:
    assert cause_of(["Traceback (most recent call last):", error]) == want


# --- a client's request that could not reach the server -------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # a Python load generator (aiohttp's many-address error under OSError)
        "loadgen.client.issuer - ERROR - Error in request 7f3e2a: OSError('Multiple exceptions: "
        "[Errno 111] Connection refused, [Errno 99] Cannot assign requested address')",
        # a Go load generator
        '2025/05/02 11:00:00 ERROR request 42 failed: Post "http://127.0.0.1:8000/v1/completions"'
        ": dial tcp 127.0.0.1:8000: connect: connection refused",
    ],
)
def test_a_request_refused_its_connection_is_the_clients_failure_not_a_port(line: str) -> None:
    """A client that cannot connect lost its requests (the server is down or elsewhere); the
    words of a socket error are no server that failed to bind its port."""
    assert cause_of([line]) == "benchmark_errors"


# --- a server error answered to a request ---------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM's answer in a stream a client printed
        [
            'data: {"error": {"message": "the engine core died while serving", "type": '
            '"InternalServerError", "param": null, "code": 500}}',
            "data: [DONE]",
        ],
        # SGLang's flat error object, in the stream a client printed
        [
            "$ curl -sN localhost:30000/v1/chat/completions -d @req.json",
            'data: {"object": "error", "message": "scheduler is not responding", "type": '
            '"ServiceUnavailableError", "param": null, "code": 503}',
        ],
    ],
)
def test_a_server_error_object_answered_to_a_request_is_a_failed_request(
    lines: list[str],
) -> None:
    assert cause_of(lines) == "benchmark_errors"


# --- a benchmark's table of results ---------------------------------------------------------

LLAMA_BENCH = [
    "| model                  |       size |     params | backend | ngl |  test |           t/s |",
    "| ---------------------- | ---------: | ---------: | ------- | --: | ----: | ------------: |",
    "| qwen2 7B Q4_K - Medium |   4.36 GiB |     7.62 B | CUDA    |  99 | pp512 | 3012.55 ± 9.1 |",
    "|   512 |    128 |    4 |   2560 |    0.412 |  4970.87 |    4.105 |   124.72 |",
    "|  1024 |    128 |    8 |   9216 |    1.380 |  5936.23 |    6.871 |   149.03 |",
]
GENAI_PERF = [
    "                                 NIM LLM Metrics",
    "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┓",
    "┃                 Statistic ┃      avg ┃      min ┃      max ┃",
    "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━┩",
    "│  Time to first token (ms) │    41.07 │    22.90 │    88.12 │",
    "│      Request latency (ms) │ 1,602.44 │ 1,211.09 │ 2,019.30 │",
    "│ Output token throughput per request (tokens/sec) │ 61.20 │ 50.11 │ 70.04 │",
    "└───────────────────────────┴──────────┴──────────┴──────────┘",
]


@pytest.mark.parametrize("table", [LLAMA_BENCH, GENAI_PERF])
def test_a_benchmarks_table_of_results_is_a_measured_healthy_run(table: list[str]) -> None:
    """llama.cpp's bench tables and genai-perf's box-drawn one: figures measured, no failure.
    The rows of figures between box lines are no frames of a Rich traceback."""
    assert cause_of(table) == "ok"
    crashed = [*table, "Traceback (most recent call last):", "RuntimeError: CUDA error: x"]
    assert cause_of(crashed) != "ok"


def test_a_box_drawn_traceback_is_still_a_traceback() -> None:
    rich = [
        "╭──────────────── Traceback (most recent call last) ────────────────╮",
        "│ /opt/engine/cli.py:42 in main                                      │",
        "│   41 │   args = parse_args()                                       │",
        "│ ❱ 42 │   serve(args, 8000, 4)                                      │",
        "╰────────────────────────────────────────────────────────────────────╯",
        "RuntimeError: the engine failed to start",
    ]
    assert cause_of(rich) != "ok"
    assert cause_of(rich[:5]) != "ok"  # cut before its exception: still a failure


# --- a KV cache that fills up while serving ----------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # vLLM preempting a sequence
        "WARNING 05-02 12:00:00 scheduler.py:1590] Sequence group 88 is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
        # llama.cpp's server finding no room for a batch
        "W decode: failed to find a memory slot for batch of size 256",
        "srv  update_slots: failed to find free space in the KV cache, retrying with smaller "
        "batch size, i = 0, n_batch = 256, ret = 1",
    ],
)
def test_a_kv_cache_that_fills_up_while_serving_is_the_pools_family(line: str) -> None:
    assert cause_phase([line, line]) == ("kv_pool_oom", "benchmark")


def test_a_kv_cache_full_is_a_warning_a_ready_server_goes_on_after() -> None:
    preempted = (
        "WARNING 05-02 12:00:00 scheduler.py:1590] Sequence group 88 is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space."
    )
    ready = "INFO:     Application startup complete."
    assert cause_of([ready, preempted]) == "ok"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert cause_of([preempted, "Traceback (most recent call last):", oom]) == "cuda_oom"


# --- the flags a refused setting's message names lead its hint (node/failures/hints.py named_flags)
FLAGS = {
    "--max-model-len": (),
    "--max-num-seqs": (),
    "--speculative-config": (),
    "--attention-backend": ("FLASH_ATTN", "TRITON_ATTN"),
    "--model": (),
    "--port": (),
    "--block-size": (),
    "--dtype": (),
    "--kv-cache-dtype": ("fp8_e4m3",),
}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # a setting's own name, in a validation message or a key=value list
        ("User-specified max_model_len (100000) is greater than the derived", ["--max-model-len"]),
        ("Selector(head_size=128, block_size=7, kv_cache_dtype=auto)",
         ["--block-size", "--kv-cache-dtype"]),
        # a config class: SGLang's and vLLM's argument groups take JSON under that name
        ("1 validation error for SpeculativeConfig: num_speculative_tokens",
         ["--speculative-config"]),
        # two words of a flag's name, and a value only that flag takes
        ("Unknown attention backend: 'NOSUCH'. Valid options are: FLASH_ATTN",
         ["--attention-backend"]),
        ("kv cache dtype fp8_e4m3 needs compute capability 8.9", ["--kv-cache-dtype"]),
        # one word names nothing (every message says "model" or "port"), nor a flag not known
        ("The model failed to bind its port", []),
        ("max_position_embeddings=8192 in the model's config", []),
    ],
)  # fmt: skip
def test_a_message_names_the_flags_of_the_settings_it_speaks_of(
    text: str, named: list[str]
) -> None:
    from autotune.node.failures.hints import named_flags

    assert named_flags(text, FLAGS) == named


def test_at_most_three_flags_are_named_in_the_order_said() -> None:
    from autotune.node.failures.hints import named_flags

    text = "max_num_seqs and max_model_len and block_size and kv_cache_dtype are wrong"
    assert named_flags(text, FLAGS) == ["--max-num-seqs", "--max-model-len", "--block-size"]


def test_a_validation_error_lists_every_field_it_refused() -> None:
    from autotune.diagnosis import diagnose_text

    log = "\n".join(
        [
            "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 2 validation errors"
            " for SchedulerConfig",
            "(APIServer pid=1) max_num_batched_tokens",
            "(APIServer pid=1)   Input should be greater than or equal to 1 [type=greater_than]",
            "(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2.12/v/x",
            "(APIServer pid=1) max_num_seqs",
            "(APIServer pid=1)   Input should be greater than or equal to 1 [type=greater_than]",
            "(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2.12/v/x",
        ]
    )
    failure = diagnose_text(log, engine="vllm", exit_code=1).failure
    assert failure is not None and failure.cause.value == "invalid_argument"
    assert "--max-num-batched-tokens" in failure.hint and "--max-num-seqs" in failure.hint
