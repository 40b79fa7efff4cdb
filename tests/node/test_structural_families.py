"""Families read from the structure every engine shares, not from one engine's sentences.

Each case is written for this test in the shape real logs take (no line is copied from the
corpus), and is classified as ``autotune diagnose`` does (engine guessed, rules of that engine,
then the family scoring of ``node/families.py``):

- a **report** of a device's properties (llama.cpp's and Ollama's ``Device 0: ..., compute
  capability 8.6``, printed before every CUDA error) is not a refusal of the GPU: the error
  after it says what failed;
- a **crash report** written by a signal handler or the kernel (OpenMPI's and UCX's ``Signal
  code:`` / ``Failing at address:``, ``amdgpu`` page faults, ``NVRM: Xid``) is a failure line,
  a crash, wherever the log stops;
- an **exit status** names its family by what it means: 127 a program or library that is not
  there, 128 + a signal the signal's family, Windows NTSTATUS codes by their meaning;
- a **model status table** that shows the model ``READY`` (Triton) means the server came up:
  a crash after it is a crash while serving.
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text
from autotune.models import Cause, Phase


def _read(lines: list[str], exit_code: int | None = None) -> tuple[str, str]:
    failure = diagnose_text("\n".join(lines), exit_code=exit_code).failure
    assert failure is not None
    return failure.cause.value, failure.phase.value


DEVICE_REPORT = [
    "ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no",
    "ggml_cuda_init: found 2 CUDA devices:",
    "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
    "  Device 1: NVIDIA GeForce RTX 3060, compute capability 8.6, VMM: yes",
]


@pytest.mark.parametrize(
    ("error", "family"),
    [
        (
            [
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9120.50 MiB on device 1: "
                "cudaMalloc failed: out of memory",
                "llama_model_load: error loading model: unable to allocate CUDA1 buffer",
            ],
            Cause.CUDA_OOM,
        ),
        (
            [
                "CUDA error: all CUDA-capable devices are busy or unavailable",
                "  current device: 1, in function ggml_cuda_set_device at ggml-cuda.cu:88",
            ],
            Cause.GPU_NOT_CLEAN,
        ),
        (
            [
                "CUDA error: an illegal memory access was encountered",
                "  current device: 0, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2",
            ],
            Cause.RUNTIME_CRASH,
        ),
    ],
)
def test_a_device_report_is_not_a_refusal_of_the_gpu(error: list[str], family: Cause) -> None:
    cause, _ = _read([*DEVICE_REPORT, *error])
    assert cause == family.value


@pytest.mark.parametrize(
    "refusal",
    [
        "RuntimeError: GPUs with compute capability below 8.0 are not supported by this kernel",
        "ValueError: this model needs compute capability >= 8.9 (found 8.6)",
        "  Device 0: Tesla K80, compute capability 3.7 -- not supported by this build",
    ],
)
def test_a_refusal_in_compute_capability_words_is_still_the_gpus(refusal: str) -> None:
    cause, _ = _read([*DEVICE_REPORT[:2], refusal])
    assert cause == Cause.ARCH_UNSUPPORTED.value


@pytest.mark.parametrize(
    "report",
    [
        [
            "[host-7:04211] *** Process received signal ***",
            "[host-7:04211] Signal: Segmentation fault (11)",
            "[host-7:04211] Signal code: Address not mapped (1)",
            "[host-7:04211] Failing at address: 0x28",
        ],
        ["Signal code: Invalid permissions (2)", "Failing at address: 0x7f31c0000000"],
        [
            "[Mon Jan  6 10:02:11 2025] amdgpu 0000:83:00.0: amdgpu: [gfxhub] page fault "
            "(src_id:0 ring:40 vmid:8 pasid:32771)",
            "[Mon Jan  6 10:02:11 2025] amdgpu 0000:83:00.0: amdgpu: "
            "VM_L2_PROTECTION_FAULT_STATUS:0x00800932",
        ],
        [
            "kernel: NVRM: Xid (PCI:0000:41:00): 13, pid=9911, name=python3, Graphics "
            "Exception: ESR 0x504224=0x80000 0x504228=0x0"
        ],
    ],
)
def test_a_crash_report_is_a_crash_wherever_the_log_stops(report: list[str]) -> None:
    cause, _ = _read(["INFO 01-06 10:01:55 Loading model weights took 14.2 GiB", *report])
    assert cause == Cause.RUNTIME_CRASH.value


@pytest.mark.parametrize(
    ("line", "family"),
    [
        ("Error: llama runner process has terminated: exit status 127", Cause.IMPORT_ERROR),
        ("/opt/app/start.sh: line 9: tritonserver: command not found", Cause.IMPORT_ERROR),
        ("worker exited with exit code 134", Cause.RUNTIME_CRASH),
        ("error: the server process exited with status 135", Cause.RUNTIME_CRASH),
        ("llama runner process has terminated: exit status 0xc0000135", Cause.IMPORT_ERROR),
    ],
)
def test_an_exit_status_names_its_family_by_what_it_means(line: str, family: Cause) -> None:
    cause, _ = _read(['time=2025-01-06T10:01:55Z level=INFO msg="starting runner"', line])
    assert cause == family.value


def test_a_model_table_showing_ready_means_the_server_came_up() -> None:
    lines = [
        "I0106 10:01:50.101 1 model_lifecycle.cc:835] successfully loaded 'ensemble'",
        "I0106 10:01:50.102 1 server.cc:677]",
        "+----------------+---------+--------+",
        "| Model          | Version | Status |",
        "+----------------+---------+--------+",
        "| ensemble       | 1       | READY  |",
        "| tensorrt_llm   | 1       | READY  |",
        "+----------------+---------+--------+",
        "Signal (11) received.",
        " 0# 0x000055d1c2a8f3a5 in tritonserver",
    ]
    cause, phase = _read(lines)
    assert (cause, phase) == (Cause.RUNTIME_CRASH.value, Phase.BENCHMARK.value)


def test_a_table_showing_a_model_unavailable_is_not_ready() -> None:
    lines = [
        "| Model        | Version | Status                                  |",
        "| tensorrt_llm | 1       | UNAVAILABLE: Internal: unable to load   |",
        "error: creating server: Internal - failed to load all models",
    ]
    _, phase = _read(lines)
    assert phase != Phase.BENCHMARK.value


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    "lines",
    [
        ["INFO 01-06 10:01:55 loading weights", "Exception: this build has no fused MoE kernel"],
        [
            "[2025-01-06 10:01:55 TP0] Load weight begin. avail mem=70.1 GB",
            "Exception: Unsupported quantization method fp4_x for this model",
        ],
        ["Exception('scheduler hit an unrecoverable state')"],
    ],
)
def test_a_bare_exception_line_is_the_failure_not_a_hang(lines: list[str]) -> None:
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None
    assert failure.cause != Cause.STARTUP_TIMEOUT
    assert any("Exception" in line for line in failure.evidence)


# Native stack dumps, as each runtime prints them when a process dies in native code; the
# message that would say why is cut off (the excerpt stops in the dump).
NATIVE_DUMPS = {
    "tvm": [
        "Stack trace:",
        "  0: tvm::runtime::Module::LoadFromFile(std::string const&)",
        "  1: main",
    ],
    "ucx": [
        "==== backtrace (tid:   8812) ====",
        " 0 0x0000000000042520 __sigaction()  ???:0",
        " 1 0x00000000010d475f createInferRuntime_INTERNAL()  ???:0",
    ],
    "boost": [" 0# 0x000055d1c2a8f3a5 in tritonserver", " 1# 0x00007f0a4b2e2520 in /lib/libc.so.6"],
    "go": [
        "goroutine 24 [running]:",
        "github.com/ollama/ollama/runner.(*Server).loadModel(0xc000037d40, {0x1e, 0x0})",
        "\tgithub.com/ollama/ollama/runner/runner.go:851 +0x375",
    ],
    "rust": ["stack backtrace:", "   0: rust_begin_unwind", "   1: core::panicking::panic_fmt"],
    "gdb": [
        "#0  0x00007f3e9c8e89fc in pthread_kill () from /lib/x86_64-linux-gnu/libc.so.6",
        "#1  0x00007f3e9c894476 in raise () from /lib/x86_64-linux-gnu/libc.so.6",
    ],
    "windows": [
        "Unhandled exception caught in c10/util/AbortHandler.h",
        "00007FFE12AE1DE400007FFE12AC2070 torch_python.dll!THPGenerator_initDefaultGenerator",
    ],
}


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize("runtime", sorted(NATIVE_DUMPS))
def test_a_log_that_stops_in_a_native_stack_dump_is_no_hang(runtime: str) -> None:
    dump = NATIVE_DUMPS[runtime]
    failure = diagnose_text("\n".join(["INFO 01-06 10:01:55 loading the model", *dump])).failure
    assert failure is not None
    assert failure.cause != Cause.STARTUP_TIMEOUT, failure.message
    assert any(line.strip() in {d.strip() for d in dump} for line in failure.evidence)


@pytest.mark.parametrize("runtime", sorted(NATIVE_DUMPS))
def test_a_native_stack_dump_after_ready_is_a_crash_while_serving(runtime: str) -> None:
    ready = [
        "INFO:     Application startup complete.",
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        'INFO:     10.0.0.7:5512 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
    cause, phase = _read([*ready, *NATIVE_DUMPS[runtime]])
    assert (cause, phase) == (Cause.RUNTIME_CRASH.value, Phase.BENCHMARK.value)


# Status and error-code vocabularies (CUDA runtime and driver, cuDNN, cuBLAS, HIP, Vulkan,
# SYCL / Level Zero, errno, HTTP and gRPC statuses): the family is in the code's meaning, the
# same whichever library or engine reports it.
STATUS_CODES = [
    ("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", Cause.CUDA_OOM),
    (
        "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)",
        Cause.CUDA_OOM,
    ),
    ("ze_result: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY in zeMemAllocDevice", Cause.CUDA_OOM),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", Cause.RUNTIME_CRASH),
    ("RuntimeError: HIP error: hipErrorIllegalAddress", Cause.RUNTIME_CRASH),
    ("vk::Queue::submit: ErrorDeviceLost", Cause.RUNTIME_CRASH),
    (
        "RuntimeError: Native API failed. Native API returns: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
        Cause.RUNTIME_CRASH,
    ),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH", Cause.ARCH_UNSUPPORTED),
    ("RuntimeError: CUDA driver error: CUDA_ERROR_STUB_LIBRARY", Cause.IMPORT_ERROR),
    (
        "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver "
        "combination",
        Cause.IMPORT_ERROR,
    ),
    ("RuntimeError: Found no NVIDIA driver on your system.", Cause.IMPORT_ERROR),
    ("RuntimeError: CUDA error: invalid device ordinal", Cause.INVALID_ARGUMENT),
    (
        "PermissionError: [Errno 13] Permission denied: '/models/m/config.json'",
        Cause.INVALID_ARGUMENT,
    ),
    (
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/api/models/org/model",
        Cause.INVALID_ARGUMENT,
    ),
    (
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with: "
        'status = StatusCode.UNAVAILABLE details = "failed to connect to all addresses">',
        Cause.BENCHMARK_ERRORS,
    ),
    (
        "openai.InternalServerError: Error code: 500 - {'message': 'Internal Server Error'}",
        Cause.BENCHMARK_ERRORS,
    ),
    (
        "aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed",
        Cause.BENCHMARK_ERRORS,
    ),
    ("Failed requests:                         412", Cause.BENCHMARK_ERRORS),
]


@pytest.mark.parametrize(("line", "family"), STATUS_CODES)
def test_a_status_code_names_its_family_by_its_meaning(line: str, family: Cause) -> None:
    cause, _ = _read(["INFO 01-06 10:01:55 loading the model", line])
    assert cause == family.value


def test_a_benchmark_that_lost_no_request_is_not_an_error() -> None:
    lines = [
        "============ Serving Benchmark Result ============",
        "Successful requests:                     1000",
        "Failed requests:                         0",
        "Benchmark duration (s):                  23.73",
    ]
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is None or failure.cause != Cause.BENCHMARK_ERRORS


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("line", "family"),
    [
        # an exception class named for what failed, not "...Error"
        ("[rank0]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:", None),
        # a C++ runtime's report of an uncaught exception (libc++, as libstdc++'s "terminate
        # called after throwing"), its message naming the family
        (
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
            "CUDA error: out of memory",
            Cause.CUDA_OOM,
        ),
        (
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
            "unable to load model",
            None,
        ),
        # a canonical status code (absl, gRPC, XLA) opening the line
        ("INTERNAL: Mosaic failed to compile TPU kernel: unexpected layout", None),
        ("FAILED_PRECONDITION: the compiled program needs 3 devices, 2 are attached", None),
        # the hub could not be reached and the file is not cached: the model given cannot load
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
            "couldn't find it in the cached files",
            Cause.INVALID_ARGUMENT,
        ),
    ],
)
def test_a_failure_in_a_runtimes_own_words_is_no_hang(line: str, family: Cause | None) -> None:
    failure = diagnose_text("\n".join(["INFO 01-06 10:01:55 loading the model", line])).failure
    assert failure is not None
    assert failure.cause != Cause.STARTUP_TIMEOUT, failure.message
    if family is not None:
        assert failure.cause == family


@pytest.mark.parametrize(
    "line",
    [
        "/root/.triton/llvm/llvm+mlir-17.0.0-x86_64/include/llvm/Support/Casting.h:566: "
        "decltype(auto) llvm::cast(const From&) [with To = mlir::triton::gpu::BlockedEncodingAttr;"
        ' From = mlir::Attribute]: Assertion `isa<To>(Val) && "cast<Ty>() argument of '
        "incompatible type!\"' failed.",
        "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.cp.async.cg.shared.global.16",
    ],
)
def test_a_kernel_compiler_that_cannot_lower_for_the_gpu_is_the_gpus(line: str) -> None:
    """A check that fails inside the kernel compiler (Triton's MLIR and LLVM) is the compiler
    refusing this GPU, not a check of the engine's: its hint is another kernel backend."""
    cause, _ = _read(["INFO 01-06 10:01:55 compiling kernels", line])
    assert cause == Cause.ARCH_UNSUPPORTED.value


@pytest.mark.parametrize(
    "lines",
    [
        [
            'time=2025-01-06T10:01:50Z level=INFO source=server.go:405 msg="starting llama server"',
            'time=2025-01-06T10:01:53Z level=INFO source=server.go:619 msg="llama runner started '
            'in 3.02 seconds"',
        ],
        [
            "INFO 01-06 10:01:50 [gpu_model_runner.py:1] Model loading took 14.3 GiB",
            "INFO 01-06 10:01:55 [api_server.py:1024] Starting vLLM API server 0 on "
            "http://0.0.0.0:8000",
        ],
        [
            "I0106 10:01:51.2 1 grpc_server.cc:2451] Started GRPCInferenceService at 0.0.0.0:8001",
        ],
    ],
)
def test_a_start_that_ends_on_a_ready_line_in_other_words_is_healthy(lines: list[str]) -> None:
    assert diagnose_text("\n".join(lines)).failure is None


def test_a_server_that_answered_requests_was_serving_whatever_it_answered() -> None:
    """An access-log line with any status (a 500 too) proves the server was up: a traceback
    cut after it is a crash while serving, not a start-up failure."""
    lines = [
        'INFO:     10.0.0.9:5512 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        'INFO:     10.0.0.9:5514 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "(EngineCore_DP0 pid=279) Process EngineCore_DP0:",
        "(EngineCore_DP0 pid=279) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=279)   File "/srv/engine/core.py", line 712, in run_engine_core',
        "(EngineCore_DP0 pid=279)     raise e",
    ]
    assert _read(lines) == (Cause.RUNTIME_CRASH.value, Phase.BENCHMARK.value)


@pytest.mark.parametrize(
    "line",
    [
        "[ERROR] The requested model does not fit in the available VRAM: need 18.3 GiB, have 15.7",
        "Error: model requires more memory than is available on the GPU",
        "NotEnoughMemoryError: cannot place the weights on device 0",
        "InsufficientMemoryException: the accelerator has 2 GiB left",
    ],
)
def test_a_device_memory_shortage_in_any_words_is_an_out_of_memory(line: str) -> None:
    cause, _ = _read(["INFO 01-06 10:01:55 loading the model", line])
    assert cause == Cause.CUDA_OOM.value


def test_a_host_memory_shortage_stays_the_hosts() -> None:
    line = "Error: model requires more system memory (17.4 GiB) than is available (9.1 GiB)"
    cause, _ = _read(["INFO 01-06 10:01:55 loading the model", line])
    assert cause == Cause.HOST_OOM.value


@pytest.mark.parametrize(
    "line",
    [
        "Error: unknown flag: --num-ctx",  # Go's flag parsers (cobra, pflag)
        "ERROR: Could not consume arg: --tp-size",  # python-fire
        'error while handling argument "--ctx-size": stoi',  # llama.cpp's own parser
        "ValueError: invalid literal for int() with base 10: 'auto'",
        "error: model file not found: /models/x.gguf",
    ],
)
def test_a_command_line_refused_by_any_parser_is_an_invalid_argument(line: str) -> None:
    cause, _ = _read([line])
    assert cause == Cause.INVALID_ARGUMENT.value


def test_torchs_c10_log_prefix_without_a_stamp_gives_the_level() -> None:
    """PyTorch's C++ log prefix comes with or without a stamp: "[E1206 18:44:12.7 x.cpp:1]",
    "[E socket.cpp:472]", "[W ProcessGroupNCCL.cpp:1]"; the letter is the level either way."""
    from autotune.node.logparse import parse_log

    lines = [
        "[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [pair.cc:144] no error",
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500.",
        "[I ProcessGroupNCCL.cpp:2000] [PG 0 Rank 0] ProcessGroupNCCL initialization options",
    ]
    assert [r.level for r in parse_log(lines)] == ["error", "warning", "info"]


@pytest.mark.parametrize(
    "line",
    [
        "[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [pair.cc:144] no error",
        "RuntimeError: CUDA error: peer access is not supported between these two devices",
        "custom_all_reduce.cuh:120: P2P is not supported between the GPUs of this node",
        "[UCX ERROR] ibv_create_qp(RC) failed: Cannot allocate memory",
    ],
)
def test_a_transport_between_ranks_that_fails_is_a_collectives_error(line: str) -> None:
    """Gloo's mesh, peer-to-peer access and RDMA verbs carry the ranks' traffic: their failure
    is the collectives' (NCCL_P2P_DISABLE, --disable-custom-all-reduce, the IB settings), even
    in memory words (RDMA's locked-memory limit)."""
    cause, _ = _read(["INFO 01-06 10:01:55 init distributed", line])
    assert cause == Cause.NCCL_ERROR.value


@pytest.mark.parametrize(
    "lines",
    [
        ["RuntimeError: Insufficient blocks in the block pool: requested 512, free 0"],
        ["AssertionError: num_gpu_blocks must be > 0"],
        # a line an engine prints when its pool is sized, here sized at nothing: not "ready"
        ["[2025-01-06 10:01:55 TP0] max_total_num_tokens=0, please increase mem-fraction-static"],
    ],
)
def test_a_cache_sized_at_nothing_is_the_kv_pools_whatever_says_it(lines: list[str]) -> None:
    cause, _ = _read(lines)
    assert cause == Cause.KV_POOL_OOM.value


def test_a_pool_sized_normally_is_still_ready() -> None:
    line = (
        "[2025-01-06 10:01:55 TP0] max_total_num_tokens=491520, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=0, context_len=32768"
    )
    assert diagnose_text(line).failure is None


@pytest.mark.parametrize(
    "line",
    [
        "Exception: Model arch Qwen3ForCausalLM not supported in this version of the server",
        "ValueError: Model Qwen3-Coder not supported",
        "ValueError: GGUF model with architecture qwen3moe is not supported yet.",
    ],
)
def test_a_model_refused_in_any_words_is_the_models(line: str) -> None:
    cause, _ = _read(["INFO 01-06 10:01:55 loading the model", line])
    assert cause == Cause.MODEL_UNSUPPORTED.value


def test_a_gpu_architecture_refused_stays_the_gpus() -> None:
    line = "RuntimeError: model kernels for architecture sm_61 are not supported"
    cause, _ = _read(["INFO 01-06 10:01:55 loading the model", line])
    assert cause == Cause.ARCH_UNSUPPORTED.value


@pytest.mark.parametrize(
    ("frames", "family"),
    [
        (
            [
                '  File "/work/bench/backend_request_func.py", line 121, in '
                "async_request_openai_completions",
                "    async with session.post(url=api_url, json=payload) as response:",
                '  File "/venv/lib/python3.12/site-packages/aiohttp/client.py", line 1510, in '
                "__aenter__",
                "    self._resp = await self._coro",
            ],
            Cause.BENCHMARK_ERRORS,
        ),
        (
            [
                '  File "/venv/lib/python3.12/site-packages/triton/compiler/compiler.py", line '
                "300, in compile",
                "    next_module = compile_ir(module, metadata)",
                '  File "/venv/lib/python3.12/site-packages/triton/backends/nvidia/compiler.py", '
                "line 390, in make_cubin",
                "    raise RuntimeError(f'{error}\\n'",
            ],
            Cause.ARCH_UNSUPPORTED,
        ),
    ],
)
def test_a_traceback_cut_in_a_clients_or_a_compilers_frames_is_theirs(
    frames: list[str], family: Cause
) -> None:
    """A traceback cut before its exception, in the frames of a benchmark client's request or
    of a kernel compiler's build for this GPU: where it stopped says whose failure it is."""
    lines = ["INFO 01-06 10:01:55 starting", "Traceback (most recent call last):", *frames]
    cause, _ = _read(lines)
    assert cause == family.value
