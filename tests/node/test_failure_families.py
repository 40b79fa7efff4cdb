"""Families, not sentences: each cause recognised in several engines' words, and the structure
of a log (its dress, its levels, its ranks, where it stops) read before any rule.

The lines are written like each engine writes them (not copied from the corpus, which has
its own test): a family must hold for an engine whose sentence no rule was written from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from node_helpers import crash_argv

from autotune.diagnosis import diagnose_text
from autotune.models import Cause, Phase
from autotune.node.failures import classify, diagnose_lines
from autotune.node.logparse import detect_engine, parse_log
from autotune.node.runner import run_trial
from autotune.rules import engine_hints, load_rules

TRACE = ["Traceback (most recent call last):", '  File "/srv/x.py", line 1, in main', "    run()"]


def _cause(lines: list[str]) -> str:
    found = diagnose_text("\n".join(lines)).failure
    return "ok" if found is None else found.cause.value


# family -> lines from different engines that mean it
FAMILIES: dict[str, list[list[str]]] = {
    "kv_pool_oom": [
        [
            "ValueError: To serve at least one request with the models's max seq len (32768), "
            "(4.0 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(2.1 GiB)."
        ],
        [
            "2024-01-01T00:00:00Z ERROR warmup{max_input_length=1024}: text_generation_launcher: "
            "Not enough memory to handle 8192 total tokens with 4096 prefill tokens."
        ],
        ["llama_kv_cache_init: failed to allocate buffer for kv cache"],
        ["RuntimeError: KV cache needs 12.5 GiB but only 3.2 GiB is available"],
        ["[TRT-LLM] [E] Executor creation failed due to insufficient GPU memory."],
    ],
    "cuda_oom": [
        ["RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"],
        ["thread 'main' panicked: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")"],
        [
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: "
            "cudaMalloc failed: out of memory"
        ],
        ["RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/allocator.h:231"],
        ["torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB"],
        ["exception=RuntimeError('Triton Error [CUDA]: out of memory')>"],
    ],
    "arch_unsupported": [
        ["ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"],
        [
            'Error: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled '
            'with an unsupported toolchain.")'
        ],
        ["RuntimeError: HIP error: invalid device function"],
        ["nvcc fatal   : Unsupported gpu architecture 'compute_120'"],
        [
            "ERROR shard-manager: text_generation_launcher: Shard process was signaled to shutdown "
            "with signal 4 rank=0"
        ],
        ["./run.sh: line 9:  1234 Illegal instruction (core dumped) ./server -m x.gguf"],
        ["RuntimeError: FlashAttention only supports Ampere GPUs or newer."],
        [
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
            "capability: 89. Current capability: 80."
        ],
    ],
    "model_unsupported": [
        ["llama_model_load: error loading model architecture: unknown model architecture: 'x9'"],
        ["ValueError: Unsupported model type phi-msft"],
        ["Error: unsupported architecture: MistralForCausalLM (exit: exit status 1)"],
        ["ValueError: Model architectures ['FooForCausalLM'] are not supported for now."],
        ["ValueError: Model architectures ['X'] failed to be inspected. Please check the logs."],
        ["Error: Could not start backend: cannot find tensor model.embed_tokens.weight"],
    ],
    "assertion": [
        ["AssertionError: the prefix cache lost a page"],
        ["/src/llama.cpp/ggml/src/ggml.c:1800: GGML_ASSERT(n_dims <= 4) failed"],
    ],
    "import_error": [
        [
            "/usr/bin/python: Error while finding module specification for 'vllm.entrypoints."
            "openai.api_server' (ModuleNotFoundError: No module named 'vllm')"
        ],
        ["ImportError: /x/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9Set"],
        ["OSError: libcudart.so.12: cannot open shared object file: No such file or directory"],
        ["importlib.metadata.PackageNotFoundError: No package metadata was found for flashinfer"],
    ],
    "invalid_argument": [
        ["vllm: error: unrecognized arguments: --omni"],
        ["usage: launch_server.py [-h] --model-path MODEL_PATH [--host HOST] [--port PORT]"],
        ["api_server.py: error: argument --tensor-parallel-size/-tp: invalid int value: 'x'"],
        ["error: the following required arguments were not provided:", "  --model-id <ID>"],
        ["error: unexpected argument '--max-input-lenght' found", "", "Usage: x [OPTIONS]"],
        ["pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"],
        ["ValueError: `num_heads` must be divisible by `num_shards` (got 71 and 2)"],
    ],
    "nccl_error": [
        ["host: Test NCCL failure common.cu:959 'internal error - please report this issue'"],
        ["RuntimeError: HCCL function error: hcclCommInitRootInfoConfig(...), error code is 1"],
        ["[TensorRT-LLM][ERROR] Assertion failed: Failed: MPI error /x/mpiUtils.cpp:211 '6'"],
        ["RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO)"],
    ],
    "host_oom": [
        ["scalellm  | ./entrypoint.sh: line 28:     7 Killed    /app/bin/server", "exited 137"],
        ["Out of memory: Killed process 4242 (python3) total-vm:77280388kB"],
        ["Process finished with exit code 137 (interrupted by signal 9:SIGKILL)"],
    ],
    "port_in_use": [
        ["OSError: [Errno 98] Address already in use"],
        [
            "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 "
            "(errno: 98 - Address already in use)."
        ],
    ],
    "watchdog_timeout": [
        [
            "[rank0]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=5) ran for 600020 milliseconds "
            "before timing out."
        ],
        ["[2025-08-02 19:24:30 TP3] Watchdog timeout (self.watchdog_timeout=300)"],
    ],
    "cuda_graph_capture": [
        [
            "[2025-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to minutes.",
            "[2025-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            "RuntimeError: CUDA error: out of memory",
        ],
    ],
    "runtime_crash": [
        [
            "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: "
            "block: [0,0,0], thread: [0,0,0] Assertion `` failed."
        ],
        ["CRITICAL 11-05 12:03:03 launcher.py:99] MQLLMEngine is already dead, terminating"],
    ],
}


@pytest.mark.parametrize(
    ("family", "lines"),
    [(family, lines) for family, cases in FAMILIES.items() for lines in cases],
    ids=[f"{family}-{n}" for family, cases in FAMILIES.items() for n in range(len(cases))],
)
def test_a_family_in_many_engines_words(family: str, lines: list[str]) -> None:
    assert _cause(lines) == family


@pytest.mark.parametrize(
    "lines",
    [
        [*TRACE, "KeyError: 'rope_theta'"],  # a traceback
        ["ERROR 01-01 12:00:00 [core.py:1] something went wrong"],  # an ERROR line
        ["[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB"],  # stops in start-up
        ["WARNING 01-01 12:00:00 [x.py:1] deprecated flag"],  # no ready line at all
        ["svc-1  | FATAL: cannot start"],
    ],
)
def test_a_failed_run_is_never_ok(lines: list[str]) -> None:
    assert _cause(lines) != "ok"


def test_exit_status_and_signal_make_a_failure() -> None:
    ready = ["INFO:     Application startup complete."]
    assert diagnose_lines(ready, load_rules("common")) is None
    assert diagnose_lines(ready, load_rules("common"), exit_code=1) is not None
    # A SIGKILL nothing in the log explains is the host's OOM killer (docs/failures.md).
    killed = diagnose_lines(["Load weight begin"], load_rules("common"), exit_code=-9)
    assert killed is not None and killed.cause == Cause.HOST_OOM


def test_an_error_before_a_successful_start_is_not_the_cause() -> None:
    lines = [
        "WARNING 01-01 12:00:00 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ImportError('x.so: undefined symbol: y')",
        "ERROR 01-01 12:00:01 [x.py:1] optional plug-in failed to load",
        "INFO:     Application startup complete.",
        'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
    assert _cause(lines) == "ok"


def test_a_warning_is_never_the_cause_when_an_error_follows() -> None:
    lines = [
        "WARNING 01-01 12:00:00 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")",
        *TRACE,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    assert _cause(lines) == "cuda_oom"


@pytest.mark.usefixtures("rules_alone")
def test_the_first_fatal_event_not_the_last_echo() -> None:
    lines = [
        "(EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [core.py:1] EngineCore failed to start.",
        *["(EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [core.py:1] " + t for t in TRACE],
        "(EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [core.py:1] KeyError: 'odd_field'",
        *["(APIServer pid=2) " + t for t in TRACE],
        "(APIServer pid=2) RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and failure.message == "KeyError: 'odd_field'"
    assert failure.engine == "vllm"


def test_interleaved_ranks_are_read_apart() -> None:
    ranks = []
    for line in [*TRACE, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4 GiB"]:
        ranks += [f"[rank0]: {line}", f"[rank1]: {line}"]
    records = parse_log(ranks)
    assert {r.source for r in records} == {"rank0", "rank1"}
    assert _cause(ranks) == "cuda_oom"


def test_a_traceback_cut_before_its_exception_is_read_by_its_frames() -> None:
    capture = [
        *TRACE,
        '  File "/sglang/srt/model_executor/model_runner.py", line 9, in init_cuda_graphs',
        "    self.cuda_graph_runner = CudaGraphRunner(self)",
    ]
    kv = [
        "(Worker_TP0 pid=9) ERROR 02-07 18:18:59 [multiproc_executor.py:824]   File "
        '"/vllm/v1/worker/worker_base.py", line 320, in initialize_from_config',
    ]
    assert _cause(capture) == "cuda_graph_capture"
    assert _cause(kv) == "kv_pool_oom"


def test_a_log_that_stops_in_start_up_is_a_hang_or_a_capture() -> None:
    hang = ["Loading safetensors checkpoint shards: 100% Completed | 163/163"]
    capture = [
        "INFO 01-01 12:00:00 [x.py:1] Loading model weights took 14.9 GB",
        "Capturing CUDA graph shapes:   0%|",
    ]
    assert _cause(hang) == "startup_timeout"
    assert _cause(capture) == "cuda_graph_capture"


def test_dresses_are_taken_off() -> None:
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    for dressed in (
        f"vllm-1  | {line}",
        f"Aug 17 18:42:18 node vllm[8052]: {line}",
        f"\x1b[31m{line}\x1b[0m",
        json.dumps({"log": line + "\n", "stream": "stderr"}),
        f"2024-01-01T00:00:00.000Z ERROR {line}",
        f"> {line}",
        f"ERROR 2024-01-01T00:00:00.123456789Z {line}",
        json.dumps({"level": 50, "time": 1700000000000, "pid": 7, "msg": line + "\n"}),
        json.dumps(
            {"timestamp": "2024-01-01T00:00:00Z", "level": "ERROR", "fields": {"message": line}},
        ),
        f"time=2024-01-01T00:00:00.000Z level=ERROR source=server.go:12 {line}",
        f"2024-01-01T00:00:00Z ERROR 08-07 07:04:32 [core.py:588] {line}",
    ):
        assert parse_log([dressed])[0].text == line, dressed


def test_a_structured_loggers_level_is_read() -> None:
    pino = json.dumps({"level": 50, "msg": "time=x level=INFO source=a.go:1 msg=waiting"})
    tracing = json.dumps({"level": "ERROR", "fields": {"message": "Could not start backend"}})
    assert [r.level for r in parse_log([pino, tracing])] == ["info", "error"]


def test_an_exception_retold_by_the_serving_loop_is_a_runtime_crash() -> None:
    lines = [
        "ValueError: pool accounting went wrong: free=3 used=9",
        "",
        "[2025-01-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/s/scheduler.py", line 9, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/s/scheduler.py", line 99, in event_loop_overlap',
        "    batch = self.get_next_batch_to_run()",
    ]
    found = diagnose_text("\n".join(lines)).failure
    assert found is not None
    assert (found.cause, found.phase) == (Cause.RUNTIME_CRASH, Phase.BENCHMARK)


def test_a_failed_import_warning_is_the_cause_only_where_the_log_stops() -> None:
    warned = (
        "WARNING 01-01 00:00:00 _custom_ops.py:1] Failed to import from vllm._C with "
        "ImportError('/x/_C.abi3.so: undefined symbol: _ZN3c10')"
    )
    assert _cause([warned]) == "import_error"
    went_on = [warned, "INFO 01-01 00:00:01 api_server.py:1] vLLM API server version 0.5.0"]
    assert _cause(went_on) != "import_error"


def test_a_flattened_log_is_split_at_its_worker_prefixes() -> None:
    line = (
        'File "x.py", line 2, in forward (VllmWorkerProcess pid=27) ERROR 07-03 19:33:28 '
        "[multiproc_worker_utils.py:238] q = self.split(x) (VllmWorkerProcess pid=27) ERROR "
        "07-03 19:33:28 [multiproc_worker_utils.py:238] RuntimeError: NPU out of memory."
    )
    assert [r.text for r in parse_log([line])][-1] == "RuntimeError: NPU out of memory."
    assert _cause([line]) == "cuda_oom"


def test_sizes_are_parsed_into_the_message() -> None:
    lines = [
        "ValueError: To serve at least one request with the models's max seq len (32768), "
        "(4.0 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(2.1 GiB)."
    ]
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and "needs 4.0 GiB" in failure.message
    assert "available 2.1 GiB" in failure.message


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("[2025-01-01 10:00:00 TP0] Load weight begin", "sglang"),
        ("(EngineCore_DP0 pid=1) INFO x", "vllm"),
        ("2023-01-01T00:00:00Z ERROR text_generation_launcher: Shard 0 failed", "tgi"),
        ("[TensorRT-LLM][ERROR] Assertion failed", "trtllm"),
        ("llama_model_load: error loading model", "llama.cpp"),
        ("ollama  | llama_model_load: error", "ollama"),
        ("thread 'main' panicked at mistralrs-core/src/x.rs", "mistral.rs"),
        ("RuntimeError: NPU out of memory (vllm_ascend/worker.py)", "vllm-ascend"),
    ],
)
def test_the_engine_is_named(text: str, engine: str) -> None:
    found = detect_engine(text)
    assert found is not None and found[0] == engine


@pytest.mark.parametrize(
    ("lines", "flag"),
    [
        (
            [
                "[2026-01-01 10:00:05 TP0] RuntimeError: Not enough memory. Please try to increase "
                "--mem-fraction-static."
            ],
            "--mem-fraction-static",
        ),
        (
            [
                "(EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [core.py:1] ValueError: No available "
                "memory for the cache blocks."
            ],
            "--gpu-memory-utilization",
        ),
        (
            [
                "2024-01-01T00:00:00Z ERROR text_generation_launcher: Not enough memory to handle "
                "4096 prefill tokens."
            ],
            "--max-batch-prefill-tokens",
        ),
        (
            [
                "[TRT-LLM] [E] Executor creation failed due to insufficient GPU memory.",
                "[TensorRT-LLM][INFO] x",
            ],
            "--kv_cache_free_gpu_memory_fraction",
        ),
        (
            ["RuntimeError: [TM][ERROR] CUDA runtime error: out of memory lmdeploy/x.cu:1"],
            "--cache-max-entry-count",
        ),
        (
            [
                "llama_model_loader: loaded",
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating "
                "9.00 MiB on device 0: cudaMalloc failed: out of memory",
            ],
            "--n-gpu-layers",
        ),
        (
            [
                "lightllm: self.value_buffer = torch.empty((size,))",
                "torch.cuda.OutOfMemoryError: CUDA out of memory.",
            ],
            "--max_total_token_num",
        ),
        (
            ['mistralrs-server: Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")'],
            "--pa-gpu-mem-usage",
        ),
    ],
)
def test_the_hint_names_that_engines_knob(lines: list[str], flag: str) -> None:
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and flag in failure.hint, (failure.engine, failure.hint)


def test_a_crash_after_ready_that_no_rule_names_is_a_runtime_crash() -> None:
    lines = [
        "[2026-01-01 10:00:09] The server is fired up and ready to roll!",
        "[2026-01-01 10:01:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 1, in event_loop_overlap',
        "ZeroDivisionError: division by zero",
    ]
    failure = classify(lines, load_rules("sglang"), phase=Phase.LOAD, exit_code=-9, argv=[], env={})
    assert (failure.cause, failure.phase) == (Cause.RUNTIME_CRASH, Phase.BENCHMARK)


@pytest.mark.parametrize(
    "scenario", ["kv_pool_oom", "graph_capture", "unknown_traceback", "argparse"]
)
def test_a_trial_and_diagnose_give_one_answer(make_spec: Any, scenario: str) -> None:
    """Deliverable 5: a crash in a trial gets the answer `autotune diagnose` gives its log."""
    result = run_trial(make_spec(crash_argv(scenario)))
    trial = result.failure
    assert trial is not None and result.log_path is not None
    text = Path(result.log_path).read_text(encoding="utf-8")
    found = diagnose_text(text, engine="sglang", exit_code=trial.exit_code).failure
    assert found is not None
    keys = ("cause", "phase", "rule", "message", "evidence", "hint", "engine")
    assert {k: getattr(found, k) for k in keys} == {k: getattr(trial, k) for k in keys}


TGI = "2024-01-01T00:00:00.000000Z ERROR text_generation_launcher: "
TRT = "[TensorRT-LLM][ERROR] "
# rule file, hint key, phase key, log -> the hint shown is that one
HINT_CASES: list[tuple[str, str, str, list[str]]] = [
    ("tgi", "kv_pool_oom", "default", [TGI + "Not enough memory to handle 4096 prefill tokens."]),
    (
        "tgi",
        "cuda_oom",
        "default",
        [
            "2024-01-01T00:00:00.000000Z ERROR batch{batch_size=1}:prefill:prefill{id=9 size=1}: "
            "text_generation_client: router/client/src/lib.rs:33: Server error: CUDA out of memory."
        ],
    ),
    (
        "tgi",
        "cuda_oom",
        "load",
        [TGI + "Shard 0 failed to start", "torch.cuda.OutOfMemoryError: CUDA out of memory."],
    ),
    ("tgi", "arch_unsupported", "default", [TGI + "no kernel image is available for execution"]),
    ("tgi", "model_unsupported", "default", [TGI + "ValueError: Unsupported model type xlm"]),
    ("tgi", "invalid_argument", "default", [TGI + "x: error: unexpected argument '--x' found"]),
    ("tgi", "nccl_error", "default", [TGI + "RuntimeError: NCCL error: unhandled system error"]),
    ("trtllm", "kv_pool_oom", "default", [TRT + "maxTokensInPagedKvCache must be large enough"]),
    ("trtllm", "cuda_oom", "default", [TRT + "CUDA runtime error in cudaMalloc: out of memory"]),
    (
        "trtllm",
        "arch_unsupported",
        "default",
        ["[TRT] [E] 6: The engine plan file is generated on an incompatible device (TensorRT-LLM)"],
    ),
    ("trtllm", "assertion", "default", [TRT + "Assertion failed: d == a + length"]),
    ("trtllm", "nccl_error", "default", [TRT + "Assertion failed: Failed: MPI error"]),
    (
        "lmdeploy",
        "kv_pool_oom",
        "default",
        ["lmdeploy: RuntimeError: Not enough memory to allocate KV cache"],
    ),
    (
        "lmdeploy",
        "cuda_oom",
        "default",
        ["RuntimeError: [TM][ERROR] CUDA runtime error: out of memory lmdeploy/x.cu:1"],
    ),
    ("llamacpp", "kv_pool_oom", "default", ["llama_kv_cache_init: failed to allocate buffer"]),
    (
        "llamacpp",
        "cuda_oom",
        "default",
        [
            "llama_model_loader: x",
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9 MiB "
            "on device 0: cudaMalloc failed: out of memory",
        ],
    ),
    (
        "llamacpp",
        "model_unsupported",
        "default",
        ["llama_model_load: error loading model: unknown model architecture: 'x'"],
    ),
    (
        "llamacpp",
        "arch_unsupported",
        "default",
        ["llama_model_loader: x", "CUDA error: no kernel image is available for execution"],
    ),
    (
        "lightllm",
        "kv_pool_oom",
        "default",
        [
            "lightllm/common/mem_manager.py: self.value_buffer = torch.empty(x)",
            "torch.cuda.OutOfMemoryError: CUDA out of memory.",
        ],
    ),
    (
        "lightllm",
        "cuda_oom",
        "default",
        [
            "lightllm/server/router/model_infer/model_rpc.py",
            "torch.cuda.OutOfMemoryError: CUDA out of memory.",
        ],
    ),
    (
        "mistralrs",
        "kv_pool_oom",
        "default",
        ["mistralrs-core: Error: Not enough memory for the KV cache"],
    ),
    (
        "mistralrs",
        "cuda_oom",
        "default",
        ['mistralrs-server: Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")'],
    ),
    (
        "mistralrs",
        "arch_unsupported",
        "default",
        ['mistralrs-server: Error: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "x")'],
    ),
]
HINT_FILES = ("tgi", "trtllm", "lmdeploy", "llamacpp", "lightllm", "mistralrs")


@pytest.mark.parametrize(
    ("family", "key", "phase_key", "lines"),
    HINT_CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in HINT_CASES],
)
def test_an_engine_files_hint_is_shown_for_its_log(
    family: str, key: str, phase_key: str, lines: list[str]
) -> None:
    found = diagnose_text("\n".join(lines))
    assert found.rules_from == family
    failure = found.failure
    assert failure is not None and failure.cause.value == key, failure
    default, by_phase = engine_hints(family)[key]
    want = default if phase_key == "default" else dict(by_phase)[Phase(phase_key)]
    assert failure.hint == want


def test_every_engine_file_hint_has_a_case() -> None:
    covered = {(c[0], c[1], c[2]) for c in HINT_CASES}
    for family in HINT_FILES:
        for key, (default, by_phase) in engine_hints(family).items():
            keys = (["default"] if default is not None else []) + [p.value for p, _ in by_phase]
            for phase_key in keys:
                assert (family, key, phase_key) in covered, (family, key, phase_key)


def test_a_wrapped_line_is_joined_inside_its_dress() -> None:
    first = (
        "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, "
        "mCudaSt"
    )
    second = "ream->get()): out of memory (/app/tensorrt_llm/runtime/tllmBuffers.h:112)"
    for dress in ("", "svc-1  | ", "2025-01-01T00:00:00.000Z "):
        assert _cause([dress + first, dress + second]) == "cuda_oom", dress
    # a new message from the same container is not a continuation
    assert _cause(["svc-1  | " + first, "svc-1  | ERROR 01-01 12:00:00 [x.py:1] " + second]) != (
        "ok"
    )


def test_a_hang_while_serving_is_not_healthy() -> None:
    metrics = (
        "INFO 01-01 12:00:{s:02d} [loggers.py:1] Avg prompt throughput: 0.0 tokens/s, Avg "
        "generation throughput: {g} tokens/s, Running: 4 reqs, Waiting: 0 reqs"
    )
    ready = ["INFO:     Application startup complete."]
    moving = [metrics.format(s=s, g="512.3") for s in (1, 11, 21)]
    stuck = [metrics.format(s=s, g="0.0") for s in (31, 41, 51)]
    assert _cause([*ready, *moving]) == "ok"
    assert _cause([*ready, *moving, *stuck]) == "watchdog_timeout"
