"""The first fatal event and the words of other runtimes, with no rule or with the common rules.

Issue 51, third round: a failure is read from the event that started it (an allocation that
failed before the wrapper that then refused the model, a failed check before the abort it
causes, what a program printed just before it raised), and a family is named in the words of
runtimes the corpus has few of (Windows sockets, Docker, systemd, Level Zero and Vulkan, Go's
runtime, cuBLAS). Sentences here are written for the test in the style of those programs.
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text, rules_for
from autotune.models import Cause
from autotune.node.failures import diagnose_lines

TB = "Traceback (most recent call last):"


def _no_rules(lines: list[str]) -> str:
    found = diagnose_lines(lines, [])
    return "ok" if found is None else found.cause.value


def _common(lines: list[str]) -> str:
    found = diagnose_lines(lines, rules_for("common")[0])
    return "ok" if found is None else found.cause.value


WORDS: dict[str, list[list[str]]] = {
    "port_in_use": [
        ["OSError: [WinError 10048] Only one usage of each socket address is normally permitted"],
        [
            "docker: Error response from daemon: Bind for 0.0.0.0:9000 failed: port is already "
            "allocated."
        ],
    ],
    "host_oom": [
        ["load: failed to allocate CPU buffer of size 812345344", "error: model load failed"],
        ["Error: this model needs more system memory (31.2 GiB) than is available (15.0 GiB)"],
        ["srv.service: Main process exited, code=killed, status=9/KILL"],
        ["RuntimeError: level zero: UR_RESULT_ERROR_OUT_OF_HOST_MEMORY"],
    ],
    "cuda_oom": [
        ["RuntimeError: level zero: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"],
        ["vk: error: VK_ERROR_OUT_OF_DEVICE_MEMORY while creating the weights buffer"],
    ],
    "gpu_not_clean": [
        ["RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable"],
        ["RuntimeError: synStatus 26 [Generic failure]. Device acquire failed."],
    ],
    "runtime_crash": [
        ["panic: runtime error: index out of range [3] with length 3", "goroutine 12 [running]:"],
    ],
    "arch_unsupported": [
        ["cuBLAS error 7 at gemm.cu:88: the requested functionality is not supported"],
    ],
    "import_error": [
        ["AssertionError: Torch not compiled with CUDA enabled"],
        ["RuntimeError: operator fastvision::roi_align does not exist"],
    ],
    "invalid_argument": [
        ["ValueError: max_prefill_tokens (1024) is smaller than max_seq_len (8192)."],
        ["TypeError: Expected only one handler class in the service file, found 2"],
    ],
    "model_unsupported": [
        ["load: error loading model: tensor 'blk.0.ffn_gate.weight' not found"],
    ],
}


@pytest.mark.parametrize(
    ("family", "lines"), [(f, lines) for f, cases in WORDS.items() for lines in cases]
)
def test_a_family_in_another_runtimes_words(family: str, lines: list[str]) -> None:
    assert _no_rules(lines) == family


def test_a_check_that_fails_before_an_abort_is_the_cause() -> None:
    log = ["GGML_ASSERT: src/ops.c:912: ne0 % 32 == 0", "Aborted (core dumped)"]
    assert _no_rules(log) == "assertion"
    assert _common(log) == "assertion"
    # a kernel's own assert that names the crash in its line stays a crash
    kernel = [
        "ops.cu:40: gather: block: [3,0,0], thread: [7,0,0] Assertion `i < n` failed.",
        "RuntimeError: CUDA error: device-side assert triggered",
    ]
    assert _common(kernel) == "runtime_crash"


def test_an_allocation_that_failed_before_a_wrappers_error_is_the_cause() -> None:
    log = [
        "alloc_buffer: allocating 512.00 MiB on device 1: cudaMalloc failed: out of memory",
        "new_context: failed to allocate compute buffers",
        TB,
        '  File "/srv/app.py", line 9, in <module>',
        "    llm = Wrapper(path)",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Wrapper",
        "  Value error, Could not load the model from path: /m/x.gguf",
    ]
    assert _common(log) == "cuda_oom"
    # without the allocation the validation error is the argument it says it is
    assert _common(log[2:]) == "invalid_argument"


def test_what_a_program_printed_before_it_raised_is_read_as_its_error() -> None:
    log = [
        "source: local",
        "Please specify a served name for this checkpoint",
        TB,
        '  File "/opt/x/cli.py", line 40, in main',
        "    run(args)",
    ]
    assert _no_rules(log) == "invalid_argument"
    # a logger's info line before a cut traceback is progress, not the program's account
    info = ["INFO 01-01 10:00:00 loader.py:12] Please specify nothing", *log[2:]]
    assert _no_rules(info) != "invalid_argument"


def test_a_busy_gpu_is_an_infra_failure_with_a_hint() -> None:
    found = diagnose_text(
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
    )
    assert found.failure is not None
    assert found.failure.cause == Cause.GPU_NOT_CLEAN
    assert not found.failure.permanent
    assert "CUDA_VISIBLE_DEVICES" in found.failure.hint


@pytest.mark.parametrize(
    ("line", "engine", "flag"),
    [
        (
            "ValueError: the KV cache cannot hold one request; raise `gpu_memory_utilization` "
            "or lower `max_model_len`.",
            "vllm",
            "--gpu-memory-utilization",
        ),
        (
            "RuntimeError: no room for the KV cache with cache_max_entry_count=0.9",
            "lmdeploy",
            "--cache-max-entry-count",
        ),
        (
            "RuntimeError: the KV pool is empty; lower mem_fraction_static",
            "sglang",
            "--mem-fraction-static",
        ),
        (
            "Error: not enough memory for the KV cache of max_batch_total_tokens=64000",
            "tgi",
            "--max-batch-total-tokens",
        ),
        (
            "RuntimeError: KV cache of max_total_token_num=120000 does not fit",
            "lightllm",
            "--max_total_token_num",
        ),
    ],
)
def test_an_engines_settings_name_it_and_the_hint_names_its_flag(
    line: str, engine: str, flag: str
) -> None:
    found = diagnose_text(line)
    assert found.engine == engine
    assert found.failure is not None and found.failure.cause == Cause.KV_POOL_OOM
    assert flag in found.failure.hint


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (
            ['level=ERROR source=proc.go:12 msg="runner terminated" error="signal: killed"'],
            "host_oom",
        ),
        (
            ['level=ERROR source=proc.go:12 msg="ended" error="exit status 0xc0000005"'],
            "runtime_crash",
        ),
        (
            ["Error: llama runner process has terminated: exit status 0xc000001d"],
            "arch_unsupported",
        ),
        (["openai.APIConnectionError: Connection error."], "benchmark_errors"),
        (["httpx.ReadTimeout: timed out"], "benchmark_errors"),
        (
            ["RuntimeError: Could not run 'aten::foo' with arguments from the 'CUDA' backend"],
            "import_error",
        ),
        (
            ["ValueError: Quantization method xyz is not supported for models with float32"],
            "invalid_argument",
        ),
    ],
)
def test_exit_statuses_and_clients_in_their_own_words(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


def test_a_component_that_failed_and_exits_is_an_error_not_a_hang() -> None:
    log = ["srv  load_model: failed to load the weights file", "main: exiting due to a load error"]
    assert _no_rules(log) != "startup_timeout"


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/srv/engine/runner.py", line 80, in init_kv_cache',
        '  File "/srv/engine/executor.py", line 12, in __init__\n    self.cache = KVCacheManager(',
        '  File "/srv/engine/blocks.py", line 40, in allocate_paged_cache',
    ],
)
def test_a_traceback_cut_in_any_engines_cache_set_up_is_the_caches(frame: str) -> None:
    log = [TB, '  File "/srv/engine/main.py", line 5, in start', *frame.split("\n")]
    assert _no_rules(log) == "kv_pool_oom"


def test_a_cause_chain_below_an_error_is_read_with_it() -> None:
    log = [
        "Error: could not start the engine",
        "",
        "Caused by:",
        "    0: loading weights",
        '    1: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")',
    ]
    assert _no_rules(log) == "cuda_oom"
    assert _no_rules(["Error: Cannot find the weights file /m/x.safetensors"]) == "invalid_argument"


def test_an_operation_the_platform_cannot_do_is_the_hardwares() -> None:
    assert _no_rules(["RuntimeError: CUDA error: operation not supported"]) == "arch_unsupported"


@pytest.mark.parametrize(
    ("line", "family"),
    [
        ("NotImplementedError: Architecture 'BarForCausalLM' not supported", "model_unsupported"),
        ("ValueError: Unknown model type: bar9", "model_unsupported"),
        ("RuntimeError: this attention path requires an H100 or newer", "arch_unsupported"),
    ],
)
def test_model_and_hardware_refusals_in_other_words(line: str, family: str) -> None:
    assert _no_rules([line]) == family


@pytest.mark.parametrize(
    ("line", "family"),
    [
        (
            "ValueError: Unrecognized configuration class BazConfig for this kind of AutoModel",
            "model_unsupported",
        ),
        (
            "OSError: CUDA_HOME environment variable is not set; cannot build the kernels",
            "import_error",
        ),
        (
            "ValueError: this attention backend cannot run on Volta or Turing GPUs",
            "arch_unsupported",
        ),
    ],
)
def test_installation_model_and_generation_words(line: str, family: str) -> None:
    assert _no_rules([line]) == family


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (
            [
                "terminate called after throwing an instance of 'std::runtime_error'",
                "  what():  [X][ERROR] no enough cache entries for the batch",
            ],
            "kv_pool_oom",
        ),
        (["ValueError: Cannot get 12 free blocks from the pool"], "kv_pool_oom"),
        (["Check failed: (f) is false: Cannot find env function vm.builtin.foo"], "import_error"),
        (
            ["[Mon Jan 1 00:00:00 2025] Task in /d/a killed as a result of limit of /d/a"],
            "host_oom",
        ),
        (
            ["| llm     | 1       | UNAVAILABLE: Internal: No module named 'vllm'      |"],
            "import_error",
        ),
    ],
)
def test_words_of_the_held_out_families_of_batches_g_and_h(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (
            ["Error: Unsupported Transformers model class `FooHybridForCausalLM`."],
            "model_unsupported",
        ),
        (
            [
                "InternalError: Check failed: (h) is false: Failed to load dynamic shared "
                "library /x/model.so"
            ],
            "import_error",
        ),
        (["mlx5: host_unknown: got completion with error:"], "nccl_error"),
        (["Error: Cannot find the model lib that corresponds to `bar-q4`."], "invalid_argument"),
    ],
)
def test_words_of_the_families_batch_i_missed(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


def test_a_kill_after_the_program_went_on_is_the_fatal_event() -> None:
    log = [
        "/opt/x/libfoo_cpu.so: undefined symbol: fast_kernel_fp32",
        "INFO:Loading the model...",
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]",
        "Killed",
    ]
    assert _common(log) == "host_oom"
    # without the progress in between, the import failure stays the first fatal event
    assert _common([log[0], "Killed"]) == "import_error"


def test_a_warning_is_the_account_of_a_traceback_cut_before_its_exception() -> None:
    log = [
        "WARNING 01-01 00:00:00 [ops.py:20] Failed to import from fastlib._C with "
        "ImportError('libfoo.so.12: cannot open shared object file')",
        TB,
        '  File "/srv/bin/serve", line 7, in <module>',
        "    sys.exit(main())",
    ]
    assert _no_rules(log) == "import_error"


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (["llama-server  | error: invalid argument: 0.0.0.0"], "invalid_argument"),
        (["RuntimeError: CUDA error: invalid argument"], "runtime_crash"),
        (
            ["RuntimeError: weight model.layers.3.mlp.up_proj.qzeros does not exist"],
            "model_unsupported",
        ),
        (["NotImplementedError: sharded is not supported for AutoModel"], "model_unsupported"),
    ],
)
def test_words_of_the_families_batch_j_missed(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


def test_a_traceback_cut_on_its_raise_statement_is_read_from_that_statement() -> None:
    log = [
        "INFO 01-01 00:00:00 server.py:12] loading the model",
        TB,
        '  File "/srv/lib/engine/loader.py", line 88, in build',
        '    raise MemoryError("not enough host memory to stage the weights")',
    ]
    assert _no_rules(log) == "host_oom"


def test_vllm_route_list_is_a_ready_server() -> None:
    log = [
        "(APIServer pid=1) WARNING 05-30 22:45:56 [model.py:1454] Default sampling parameters "
        "have been overridden by the model's generation_config.json",
        "(APIServer pid=1) INFO 05-30 22:46:21 [api_server.py:617] Starting vLLM server on "
        "http://0.0.0.0:8000",
        "(APIServer pid=1) INFO 05-30 22:46:21 [launcher.py:37] Available routes are:",
        "(APIServer pid=1) INFO 05-30 22:46:21 [launcher.py:46] Route: /docs, Methods: HEAD, GET",
    ]
    assert _common(log) == "ok"


@pytest.mark.parametrize(
    ("line", "family"),
    [
        ("LLVM ERROR: 'sm_130' is not a recognized processor for this target", "arch_unsupported"),
        (
            "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.",
            "arch_unsupported",
        ),
        ("RuntimeError: CUDA error: cudaErrorUnsupportedPtxVersion", "arch_unsupported"),
        ("RuntimeError: CUDA driver error: operation not supported", "arch_unsupported"),
        ("Error: Your GPU does not support the required features", "arch_unsupported"),
        ("Your CPU does not support AVX2 instructions", "arch_unsupported"),
        ("RuntimeError: UR_RESULT_ERROR_UNSUPPORTED_FEATURE", "arch_unsupported"),
        ("RuntimeError: CUDA error: an illegal instruction was encountered", "runtime_crash"),
        (
            "ValueError: Unrecognized model in /m/x. Should have a `model_type` key in its config",
            "model_unsupported",
        ),
        (
            "llama_model_load: error loading model: unknown pre-tokenizer type: 'foo'",
            "model_unsupported",
        ),
        (
            "llama_model_load: error loading model: tensor 'blk.0.ffn_up.weight' has wrong shape",
            "model_unsupported",
        ),
        ("Error: this model is not supported by your version of Foo", "model_unsupported"),
        (
            "RuntimeError: CUDA error: operation failed due to a previous error during capture",
            "cuda_graph_capture",
        ),
        ("ERROR: Could not find a version that satisfies the requirement foo==9.9", "import_error"),
        ("OSError: You are trying to access a gated repo.", "invalid_argument"),
    ],
)
def test_family_words_from_the_engines_own_messages(line: str, family: str) -> None:
    """Wording taken from engines' and runtimes' messages, not from any log of the corpus."""
    assert _no_rules([line]) == family


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        # a file that cannot be opened, in "failed to" words
        (["gguf_init_from_file: failed to open GGUF file '/m/x.gguf'"], "invalid_argument"),
        (["error: failed to read engine file /models/rank0.engine"], "invalid_argument"),
        # a library or kernel file missing for the GPU it runs on
        (["Error: no TensileLibrary_lazy_gfx1031.dat file."], "arch_unsupported"),
        (["RuntimeError: missing kernel binaries for sm_61 in this build"], "arch_unsupported"),
        # a runtime or loader that cannot find a function it needs: a build for another runtime
        (["RuntimeError: the runtime cannot find vm_load_executable"], "import_error"),
        (["OSError: loader could not find symbol_table_v2 in libfoo.so"], "import_error"),
        # a call that does not fit its function's signature: the engine's own code, a crash
        (["TypeError: fwd() takes 7 positional arguments but 8 were given"], "runtime_crash"),
        (
            ["TypeError: forward() missing 1 required positional argument: 'positions'"],
            "runtime_crash",
        ),
        # a model config the loader cannot deserialise (serde's words, any Rust server)
        (["Error: missing field `num_attention_heads` at line 25 column 1"], "model_unsupported"),
        (["Error: invalid type: null, expected u32 at line 7 column 20"], "model_unsupported"),
        (
            [
                "thread 'main' panicked at src/main.rs:9:5:",
                'APIError { data: "unknown variant `llama9`, expected one of `llama` at line 3 '
                'column 20" }',
            ],
            "model_unsupported",
        ),
    ],
)
def test_words_of_the_families_batch_l_missed(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


def test_an_exception_with_no_message_is_read_from_the_lines_below_it() -> None:
    """TVM (and others) print the exception type alone, a banner, then the message."""
    log = [
        "SomeRuntimeError: ",
        "---------------------------------------------------------------",
        "An error occurred during the execution of the runtime.",
        "For more information, please see: https://example.org/errors.html",
        "---------------------------------------------------------------",
        "  Check failed: (f.defined()) is false: the runtime cannot find load_exec",
        "Stack trace:",
        '  File "/src/chat.cc", line 246',
    ]
    assert _no_rules(log) == "import_error"


def test_a_rust_server_built_on_candle_is_not_read_as_vllm() -> None:
    from autotune.node.logparse import detect_engine

    found = detect_engine("2025-07-26T09:30:09Z  INFO candle_vllm: parallel model: multithread!")
    assert found is not None and found[0] != "vllm"


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        # an assertion in any case: Rust's assert!, C's assert()
        (
            ["thread 'main' panicked at 'assertion failed: `(left == right)`', src/lib.rs:10:5"],
            "assertion",
        ),
        (["python3: /src/foo.cpp:42: void f(): assertion `n > 0' failed."], "assertion"),
        # two parts built for different versions: an ABI mismatch is an installation's
        (
            ["RuntimeError: PyTorch and torchvision were compiled with different CUDA versions."],
            "import_error",
        ),
        (
            ["The plan file is not compatible with this version of TensorRT, expecting 10.3"],
            "import_error",
        ),
        (["ImportError: /usr/lib/libfoo.so: version mismatch with libbar"], "import_error"),
        # a model path that holds no model
        (
            ["OSError: /models/foo does not appear to have a file named config.json."],
            "invalid_argument",
        ),
        # the driver, in other words
        (["RuntimeError: The NVIDIA driver on your system is too old."], "arch_unsupported"),
    ],
)
def test_assertion_version_path_and_driver_words(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        # a launcher's report that SIGKILL ended a rank: a kill
        (
            ["mpirun noticed that process rank 0 on node g1 exited on signal 9 (Killed)."],
            "host_oom",
        ),
        # a length over its maximum, a size that must divide another: settings
        (
            ["ValueError: The prompt (length 5000) is longer than the maximum model length."],
            "invalid_argument",
        ),
        (["ValueError: Tensor parallel size (3) must divide the heads (32)."], "invalid_argument"),
        # a status code's words (Triton, gRPC): a refused setting
        (
            ["E0101 00:00:00.0 1 m.cc:6] failed to load 'x': Invalid argument: bad dims in 'y'"],
            "invalid_argument",
        ),
        # a kernel image built for another GPU
        (["RuntimeError: Triton Error [CUDA]: device kernel image is invalid"], "arch_unsupported"),
        # an allocation of a device buffer that failed, sized or named
        (["llama_init: failed to initialize the context: failed to allocate buffers"], "cuda_oom"),
        (["ggml_vulkan: Device memory allocation of size 1073741824 failed."], "cuda_oom"),
        # an out-of-memory inside a collective is the memory's
        (["host:1:2 [0] NCCL WARN Cuda failure 'out of memory'"], "cuda_oom"),
        # a weights file whose tensors do not fit the architecture
        (
            ["llama_model_load: error loading model: wrong number of tensors; expected 2, got 1"],
            "model_unsupported",
        ),
        # a node given up for dead, a segfault by its short name
        (
            ["The node with id abc has been marked dead because the detector missed heartbeats."],
            "node_lost",
        ),
        (["!!!!!!! Segfault encountered !!!!!!!"], "runtime_crash"),
    ],
)
def test_kills_limits_statuses_buffers_and_crash_words(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


@pytest.mark.usefixtures("rules_alone")
def test_a_last_line_that_says_it_failed_is_evidence_not_a_hang() -> None:
    found = diagnose_lines(["INFO loading", "something went wrong: the frobnicator failed"], [])
    assert found is not None and found.cause.value != "startup_timeout"
    assert "frobnicator failed" in found.message


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (
            ["ValueError: ## Could not find model.layers.0.mlp.down_proj.* in model"],
            "model_unsupported",
        ),
        (["RuntimeError: Unsupported model: Qwen3NextForCausalLM"], "model_unsupported"),
        (
            ["builder.CUDAMismatchException: Installed CUDA version 12.1 does not match torch's"],
            "import_error",
        ),
        (["RuntimeError: PyTorch was compiled without CUDA support"], "import_error"),
        (["RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed."], "host_oom"),
        (["Container killed by the OOM killer"], "host_oom"),
        (["error: the argument '--port <PORT>' cannot be used multiple times"], "invalid_argument"),
        (["Error: Model path /data/m not found"], "invalid_argument"),
    ],
)
def test_weights_versions_kills_and_options_in_more_words(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


def test_a_traceback_cut_in_a_call_that_sets_up_the_kv_cache_is_the_caches() -> None:
    log = [
        TB,
        '  File "/x/server/models/causal_lm.py", line 10, in warmup',
        "    self.init_kv_cache(",
    ]
    assert _no_rules(log) == "kv_pool_oom"


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        (["RuntimeError: CUDA graphs can't be captured with this allocator"], "cuda_graph_capture"),
        (["Error capturing CUDA graph for batch size 8"], "cuda_graph_capture"),
        (["RuntimeError: HIP error: hipErrorStreamCaptureUnsupported"], "cuda_graph_capture"),
        (
            ["CUDA error: the legacy stream would depend on a capturing blocking stream"],
            "cuda_graph_capture",
        ),
        (
            ["RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:"],
            "model_unsupported",
        ),
        (["RuntimeError: Missing key(s) in state_dict: 'lm_head.weight'."], "model_unsupported"),
        (
            ["ValueError: The model's architecture is not supported by TurboMind"],
            "model_unsupported",
        ),
        (["RuntimeError: FlashInfer requires GPUs with sm75 or higher"], "arch_unsupported"),
        (["Error: GPU architecture gfx1103 is not supported"], "arch_unsupported"),
    ],
)
def test_capture_state_dict_and_gpu_words(lines: list[str], family: str) -> None:
    assert _no_rules(lines) == family


# Issue 51, GPU round: what real SGLang 0.5.17 logs taught (tests/data/gpu-crashlogs), in the
# shape of those logs and of other parsers', written for this test.


@pytest.mark.parametrize(
    ("lines", "refused", "accepts"),
    [
        (  # argparse: a value not among the choices
            [
                "usage: serve [-h] [--kv-dtype {auto,fp8}]",
                "serve: error: argument --kv-dtype: invalid choice: 'fp4' (choose from 'auto', "
                "'fp8')",
            ],
            "--kv-dtype 'fp4'",
            "'auto', 'fp8'",
        ),
        (  # argparse: a value of the wrong type, the flag given with its short form
            ["srv: error: argument --max-batch/-b: invalid int value: 'many'"],
            "--max-batch 'many'",
            "int",
        ),
        (  # click
            ["Error: Invalid value for '--quantize': 'q3' is not one of 'awq', 'gptq'."],
            "--quantize 'q3'",
            "'awq', 'gptq'",
        ),
        (  # pydantic: the field refused and what it must be
            [
                "pydantic_core._pydantic_core.ValidationError: 1 validation error for EngineArgs",
                "block_size",
                "  Input should be a multiple of 16 [type=value_error, input_value=10]",
            ],
            "block_size (--block-size)",
            "Input should be a multiple of 16",
        ),
    ],
)
def test_a_flag_a_parser_refused_is_named_in_the_hint(
    lines: list[str], refused: str, accepts: str
) -> None:
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and failure.cause == Cause.INVALID_ARGUMENT
    assert f"refused {refused}" in failure.hint, failure.hint
    assert accepts in failure.hint, failure.hint


def test_a_hint_names_no_flag_when_no_parser_named_one() -> None:
    failure = diagnose_text("ValueError: invalid literal for int() with base 10: 'auto'").failure
    assert failure is not None and failure.cause == Cause.INVALID_ARGUMENT
    assert "refused" not in failure.hint


IGNORED = "[2026-01-02 10:00:01] Ignore import error when loading pkg.models.x: No module named 'y'"


@pytest.mark.usefixtures("rules_alone")
def test_an_error_the_program_says_it_ignored_is_never_the_cause() -> None:
    stalled = [
        "[2026-01-02 10:00:00] Load weight begin. avail mem=70.00 GB",
        IGNORED,
        "[2026-01-02 10:00:02] Load weight end. elapsed=0.1 s",
    ]
    failure = diagnose_lines(stalled, rules_for("sglang")[0], milestones=rules_for("sglang")[1])
    assert failure is not None
    assert (failure.cause, failure.phase.value) == (Cause.STARTUP_TIMEOUT, "memory_pool")
    assert not any("Ignore import error" in line for line in failure.evidence)
    # Before a real exception it weighs nothing either: the exception says what failed.
    raised = [IGNORED, TB, '  File "x.py", line 1, in f', "ValueError: unknown thing"]
    assert _common(raised) != "import_error"


def test_sglangs_capture_milestones_read_its_old_and_new_words() -> None:
    from autotune.node.failures import phase_reached

    milestones = rules_for("sglang")[1]
    for begin in ("Capture cuda graph begin. This can take up to several minutes.",
                  "Capture target prefill CUDA graph begin. backend=breakable"):  # fmt: skip
        reached, labels = phase_reached(["Memory pool end. avail mem=9 GB", begin], milestones)
        assert reached.value == "graph_capture" and "graph_capture_begin" in labels
    _, labels = phase_reached(["Capture target decode CUDA graph end. elapsed=7 s"], milestones)
    assert labels == ["graph_captured"]


def test_a_rank_that_died_before_another_was_ready_is_the_first_fatal_event() -> None:
    log = [
        "[2026-01-02 10:00:00 DP0] Load weight begin. avail mem=70.00 GB",
        "[2026-01-02 10:00:01 DP0] Load weight end. elapsed=0.1 s",
        "[2026-01-02 10:00:02 DP0] Memory pool end. avail mem=9.00 GB",
        "[2026-01-02 10:00:03 DP1] Scheduler hit an exception: " + TB,
        '  File "/x/tp_worker.py", line 2, in __init__',
        "    self.model_runner = ModelRunner(",
        '  File "/x/model_runner.py", line 3, in __init__',
        "    torch.cuda.set_device(gpu_id)",
        "RuntimeError: CUDA error: invalid device ordinal",
        "[2026-01-02 10:01:00 DP0] max_total_num_tokens=1000, chunked_prefill_size=8192",
        "[2026-01-02 10:01:01 DP0] Scheduler hit an exception: " + TB,
        '  File "/x/connection.py", line 9, in send',
        "BrokenPipeError: [Errno 32] Broken pipe",
    ]
    failure = diagnose_lines(log, rules_for("sglang")[0], milestones=rules_for("sglang")[1])
    assert failure is not None
    assert (failure.cause, failure.phase.value) == (Cause.INVALID_ARGUMENT, "load")
    assert "invalid device ordinal" in failure.message


def test_a_server_that_could_not_bind_its_port_was_never_ready() -> None:
    log = [
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use",
        "INFO:     Waiting for application shutdown.",
    ]
    failure = diagnose_text("\n".join(log)).failure
    assert failure is not None
    assert (failure.cause, failure.phase.value) == (Cause.PORT_IN_USE, "launch")


def test_an_architecture_the_engine_has_not_registered_is_the_models() -> None:
    log = [
        IGNORED,
        "[2026-01-02 10:00:02] Scheduler hit an exception: " + TB,
        '  File "/x/model_loader/utils.py", line 7, in resolve_arch',
        "ValueError: Cannot find model module. 'BazForCausalLM' is not a registered model in "
        "the Transformers library and 'AutoModel' is not present in the config's 'auto_map'.",
    ]
    failure = diagnose_lines(log, rules_for("sglang")[0], milestones=rules_for("sglang")[1])
    assert failure is not None
    assert (failure.cause, failure.phase.value) == (Cause.MODEL_UNSUPPORTED, "load")
    assert "not a registered model" in failure.message
