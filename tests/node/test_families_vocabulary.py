"""The family of a failure from its words, frames and activity, with no rule at all.

Rules match sentences an engine is known to print; `node/families.py` scores each family from
the vocabulary any engine uses (the exception's type and message, the first error lines, the
frames of a traceback cut before its exception, the progress just before it). These cases are
classified with an **empty rule list**: every sentence here is one no rule was written for,
made up in the style of a real engine, so a family must be recognised by what it is.
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text
from autotune.models import Cause, Phase
from autotune.node.failures import diagnose_lines
from autotune.node.families import Focus, decisive, fatal_sign, name_family

TB = "Traceback (most recent call last):"


def _no_rules(lines: list[str]) -> str:
    found = diagnose_lines(lines, [])
    return "ok" if found is None else found.cause.value


# family -> logs in words no rule holds (written for this test, in engines' styles)
UNSEEN: dict[str, list[list[str]]] = {
    "kv_pool_oom": [
        ["[W1] ERROR engine.py:88] RuntimeError: the KV cache pool leaves no room: 0 blocks"],
        ["Error: cannot fit 32768 tokens in the paged KV cache (only 9120 tokens available)"],
    ],
    "cuda_oom": [
        ["[srv] E 12:00:01 torch.OutOfMemoryError: allocator says no (GPU 0)"],
        ["FATAL  worker 3: unable to allocate 2.1 GiB on device 0"],
    ],
    "host_oom": [
        ["Loading weights: 43%|████▎     | 3/7 [00:09<00:12,  3.1s/it]Killed"],
        ["RuntimeError: DefaultCPUAllocator: not enough RAM to stage the weights"],
    ],
    "arch_unsupported": [
        ["RuntimeError: this fused kernel requires sm_90+, found sm_86"],
        ["[jit] ERROR: ptxas fatal   : Unknown option 'sm_121a'"],
        ["Error: TensorRT engine was built for an incompatible device; rebuild it on this GPU"],
    ],
    "model_unsupported": [
        ["ValueError: Unsupported architectures: ['GrokFooForCausalLM']"],
        ["error: model type `qwen9_moe` is not recognized by this build"],
    ],
    "import_error": [
        ["ModuleNotFoundError: the kernels package is missing"],
        ["[worker] ERROR  /opt/x/_ops.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"],
        [TB, '  File "/srv/app.py", line 3, in <module>', "    from fastkern import gemm"],
    ],
    "invalid_argument": [
        ["serve.py: error: unrecognized arguments: --max-seqs 8"],
        ["pydantic_core.ValidationError: 2 validation errors for EngineSettings"],
        ["ERROR  config: --tp 3 must be divisible into 32 heads"],
        ["OSError: No such file or directory: '/models/llama-70b/config.json'"],
    ],
    "port_in_use": [["ERROR  http: failed to bind 0.0.0.0:8000 (Address already in use)"]],
    "nccl_error": [
        ["RuntimeError: NCCL error in: group.cpp:73, unhandled system error (peer lost)"],
        ["[rank1] ERROR  c10d ProcessGroup: Connection reset by peer while all-reducing"],
    ],
    "watchdog_timeout": [
        ["[E] Watchdog caught a stuck step after 600000 ms on rank 2"],
        ["RuntimeError: rendezvous timed out: only 3 of 4 workers joined the store"],
    ],
    "startup_timeout": [
        ["ERROR: engine did not become ready: health check timed out after 1800 s"],
    ],
    "cuda_graph_capture": [
        ["RuntimeError: operation not permitted when stream is capturing (cudaErrorStreamCapture)"],
        [TB, '  File "/x/runner.py", line 9, in init_cuda_graphs', "    self.graphs = capture()"],
    ],
    "assertion": [["src/kv.c:91: LLAMA_ASSERT(n_tokens <= n_ctx) failed"]],
    "runtime_crash": [
        ["Uvicorn running on http://0.0.0.0:8000", "Signal (11) received.", " 0# 0x55 in srv"],
        ["Application startup complete.", "CUDA error: an illegal memory access happened here"],
    ],
}


@pytest.mark.parametrize(
    ("family", "lines"),
    [(family, lines) for family, cases in UNSEEN.items() for lines in cases],
    ids=[f"{family}-{n}" for family, cases in UNSEEN.items() for n in range(len(cases))],
)
def test_a_family_is_named_from_its_words_with_no_rule(family: str, lines: list[str]) -> None:
    assert _no_rules(lines) == family


@pytest.mark.usefixtures("rules_alone")
def test_the_exception_type_names_a_family_its_message_does_not() -> None:
    assert _no_rules(["ModuleNotFoundError: nothing useful here"]) == "import_error"
    assert _no_rules(["AssertionError"]) == "assertion"
    # a type that says nothing leaves the message to speak: nothing here, so unknown
    assert _no_rules(["RuntimeError: the frobnicator went sideways"]) == "unknown"


def test_an_assertion_yields_to_a_specific_family_only_when_decisive() -> None:
    # a check about a file that is not there is the configuration's
    assert _no_rules(["Assertion failed: Error opening engine file: /e/rank0.engine"]) == (
        "invalid_argument"
    )
    # a check with a value in it stays an assertion (with the bundled rules too)
    assert _no_rules(["AssertionError: topk must be 1"]) == "assertion"
    found = diagnose_text("AssertionError: topk must be 1").failure
    assert found is not None and found.cause == Cause.ASSERTION


def test_a_generic_rule_gives_way_to_the_family_its_words_name() -> None:
    # `common.assertion` matches; the words name a missing file: the configuration's
    found = diagnose_text("[TRT] Assertion failed: Error opening engine file: /x.engine").failure
    assert found is not None
    assert (found.cause, found.rule) == (Cause.INVALID_ARGUMENT, "common.assertion")


def test_a_cut_traceback_is_read_by_its_frames_and_the_activity_before_it() -> None:
    nccl = [
        "INFO 01-01 00:00:00 utils.py:1] Found nccl from library libnccl.so.2",
        "INFO 01-01 00:00:00 pynccl.py:1] vLLM is using nccl==2.21.5",
        "(Worker pid=9) ERROR 01-01 00:00:01 x.py:1] Exception in worker while processing "
        "method init_device.",
        f"(Worker pid=9) ERROR 01-01 00:00:01 x.py:1] {TB}",
        '(Worker pid=9) ERROR 01-01 00:00:01 x.py:1]   File "/w.py", line 2, in _run',
    ]
    assert _no_rules(nccl) == "nccl_error"
    # the KV cache was sized, then a traceback with no exception: the pool's check failed
    kv = ["INFO engine.py:1] # GPU blocks: 12, # CPU blocks: 512", TB, '  File "a.py", line 1']
    assert _no_rules(kv) == "kv_pool_oom"
    # cut in the model registry's lookup
    registry = [TB, '  File "/r.py", line 5, in resolve', "    cls = resolve_model_cls(arch)"]
    assert _no_rules(registry) == "model_unsupported"


def test_timeout_words_are_read_by_where_the_log_stopped() -> None:
    assert _no_rules(["TimeoutError: no answer in 300 s"]) == "startup_timeout"
    served = ["Application startup complete.", "TimeoutError: no answer in 300 s"]
    assert _no_rules(served) == "watchdog_timeout"


def test_a_crash_signal_after_ready_is_never_healthy() -> None:
    lines = ["I0310 1 http_server.cc:1] Started HTTPService at :8000", "Signal (11) received."]
    found = diagnose_lines(lines, [])
    assert found is not None and found.cause == Cause.RUNTIME_CRASH
    assert found.phase in (Phase.READY, Phase.BENCHMARK)
    assert fatal_sign("Signal (11) received.") and not fatal_sign("Signals are handled")


def test_advice_at_info_level_is_not_a_failure() -> None:
    healthy = [
        "INFO 01-01 model_runner.py:1] If out-of-memory error occurs during cudagraph capture, "
        "consider decreasing `gpu_memory_utilization` or switching to eager mode.",
        "INFO:     Application startup complete.",
    ]
    assert _no_rules(healthy) == "ok"
    assert decisive("torch.OutOfMemoryError: CUDA out of memory")
    assert not decisive("INFO: loading shard 3 of 7")


def test_a_start_that_stops_without_error_is_a_hang() -> None:
    lines = ["INFO api_server.py:1] server version 9.9", "Using model weights format ['*.bin']"]
    found = diagnose_lines(lines, [])
    assert found is not None and found.cause == Cause.STARTUP_TIMEOUT
    assert "Using model weights format" in found.message


def test_a_verdict_needs_enough_evidence() -> None:
    weak = [Focus(0, "nccl is mentioned in passing", 0.3, "context")]
    assert name_family(weak, running=False) is None
    strong = [Focus(0, "No module named 'x'", 1.0)]
    verdict = name_family(strong, running=False)
    assert verdict is not None and verdict.cause == Cause.IMPORT_ERROR and verdict.at == 0


def test_a_crash_names_the_specific_family_its_message_gives() -> None:
    # a panic or an uncaught C++ exception is a crash; the line after it says why
    oom = [
        "Serving on http://0.0.0.0:1234.",
        "thread 'worker' panicked at src/engine.rs:88:5:",
        "step failed: DriverError(CUDA_ERROR_OUT_OF_MEMORY)",
    ]
    assert _no_rules(oom) == "cuda_oom"
    mpi = ["terminate called after throwing an instance of 'std::runtime_error'"]
    mpi.append("  what():  [X][ERROR] MPI error in comm split (code 6)")
    assert _no_rules(mpi) == "nccl_error"
    # a crash that names no other family stays a crash
    plain = ["Application startup complete.", "Segmentation fault (core dumped)"]
    assert _no_rules(plain) == "runtime_crash"
    # a kernel's own assert is a crash in GPU code, not an engine's failed check
    kernel = ["Ready.", "x.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0]"]
    assert _no_rules(kernel) == "runtime_crash"


def test_an_exit_status_that_is_a_signal_names_its_family() -> None:
    # 132 = 128 + SIGILL: the build needs an instruction this CPU lacks
    assert _no_rules(["Error loading model.", "(Exit code: 132). Try again."]) == (
        "arch_unsupported"
    )
    served = ["Application startup complete.", "worker exited with code 139"]
    assert _no_rules(served) == "runtime_crash"  # 128 + SIGSEGV


def test_a_message_is_read_whole() -> None:
    # a console logger wrapped the message over indented lines
    wrapped = [
        "ERROR    2024-01-01 00:00:00,000 emb ERROR: CUDA      handler.py:574",
        "         out of memory. Tried to allocate 3.88 GiB. GPU 0",
        "         has a total capacity of 44.42 GiB",
    ]
    assert _no_rules(wrapped) == "cuda_oom"
    # a message raised as a tuple of strings
    joined = [
        "RuntimeError: ('Kernel is not supported for ', 'the current GPU. Min capability: 80')"
    ]
    assert _no_rules(joined) == "arch_unsupported"


@pytest.mark.usefixtures("rules_alone")
def test_a_registry_miss_and_a_missing_library_are_named() -> None:
    registry = ['  File "/x/utils.py", line 159, in get', "    return MAP[arch]"]
    assert _no_rules([*registry, "KeyError: 'FooBarForCausalLM'"]) == "model_unsupported"
    # a KeyError on a weight's name is not a model class: nothing decisive
    assert _no_rules(["KeyError: 'layers.0.attn.weight'"]) == "unknown"
    lib = ['E0101 1 loader.cc:1] "failed to load: unable to find backend library for x"']
    assert _no_rules(lib) == "import_error"


def test_a_warning_speaks_when_the_error_names_nothing() -> None:
    lines = [
        "WARN launcher: Could not import fast kernels: No module named 'kern_ops'",
        "NotImplementedError: Sharded Foo requires the fast kernels.",
    ]
    assert _no_rules(lines) == "import_error"
    # but an error that names its own family is not overruled by an earlier warning
    lines[1] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert _no_rules(lines) == "cuda_oom"


def test_an_out_of_memory_in_the_caches_frames_is_the_caches() -> None:
    lines = [
        TB,
        '  File "/srv/engine/cache.py", line 92, in create_state_tensors',
        "    v = torch.zeros(shape, device=device)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.",
    ]
    found = diagnose_text("\n".join(lines)).failure  # `common.cuda_oom` matches; frames refine
    assert found is not None
    assert (found.cause, found.phase) == (Cause.KV_POOL_OOM, Phase.MEMORY_POOL)
    # the same error raised while serving a batch is a plain out-of-memory
    lines[1] = '  File "/srv/engine/runner.py", line 92, in forward_batch'
    found = diagnose_text("\n".join(lines)).failure
    assert found is not None and found.cause == Cause.CUDA_OOM


def test_two_ranks_writing_one_message_read_as_one() -> None:
    """A wrapped message whose family is deep in its continuation, written by two ranks at
    once: the copies of each line must not cut the message short."""
    lines = [
        "ValueError: The checkpoint you are trying to load has a layout this build cannot read.",
        *[
            f"    Checked: {name}"
            for name in ("config.json", "generation_config.json", "tokenizer.json", "index")
        ],
        "    Model architectures ['FooBarForCausalLM'] are not supported for now.",
        "    See the documentation for the list of models.",
    ]
    assert _no_rules(lines) == "model_unsupported"
    ranks = [f"[rank{r}]: {line}" for line in lines for r in (0, 1)]
    assert _no_rules(ranks) == "model_unsupported"


def test_a_traceback_cut_in_a_capture_function_is_the_captures() -> None:
    lines = [
        "INFO 01-01 10:00:01 [runner.py:20] Memory profiling done",
        "ERROR 01-01 10:00:02 [engine.py:30] Worker failed while starting",
        TB,
        '  File "/srv/engine/runner.py", line 80, in setup',
        "    self.capture_graphs(batch_sizes)",
        '  File "/srv/engine/runner.py", line 96, in capture_graphs',
        "    graph.replay()",
    ]
    found = diagnose_lines(lines, [])
    assert found is not None
    assert (found.cause, found.phase) == (Cause.CUDA_GRAPH_CAPTURE, Phase.GRAPH_CAPTURE)


@pytest.mark.usefixtures("rules_alone")
def test_a_failure_stated_in_words_is_an_error_not_a_cut_log() -> None:
    """A short log that ends in an error without an error word (or with a library's numbered
    error) failed there; it did not stop before the server was ready."""
    assert _no_rules(["srv: couldn't bind the listening socket, host 0.0.0.0, port 9000"]) == (
        "port_in_use"
    )
    assert _no_rules(["loader: error 'weights format not supported by this build'"]) == (
        "model_unsupported"
    )
    assert _no_rules(["cfg: could not parse the batching parameter"]) == "invalid_argument"
    # an error with no family is unknown, with its line as evidence, not a start-up timeout
    found = diagnose_lines(["fooBLAS error 7 at kernels.cu:120: the operation went wrong"], [])
    assert found is not None and found.cause == Cause.UNKNOWN
    assert "fooBLAS error 7" in found.message
    # a progress line that says it could not do something is not an error when logged as info
    assert _no_rules(["INFO: could not find a tokenizer cache, building it"]) != "unknown"


def test_a_health_check_that_gives_up_is_a_start_up_timeout() -> None:
    lines = ["ERROR supervisor: the health check failed after 120s, giving up"]
    assert _no_rules(lines) == "startup_timeout"


def test_a_java_loggers_prefix_is_dress() -> None:
    lines = [
        "2024-01-01 10:00:00,001 [INFO ] W-1-model_1.0-stdout org.example.serve.Worker - " + line
        for line in (
            TB,
            '  File "/srv/loader.py", line 3, in load',
            "    import fast_kernels",
            "ModuleNotFoundError: No module named 'fast_kernels'",
        )
    ]
    found = diagnose_lines(lines, [])
    assert found is not None and found.cause == Cause.IMPORT_ERROR
    assert found.message.startswith("ModuleNotFoundError")


def test_an_assertion_that_refuses_a_pair_of_settings_stays_an_assertion() -> None:
    """The engine's check of a combination is the pair's fault (a study must not condemn one
    value for it); an assertion that a file opens is a wrong argument."""
    pair = [
        '  File "/srv/engine/server_args.py", line 10, in check_overlap',
        "AssertionError: Overlap scheduling is not supported with draft_algorithm=LOOKUP",
    ]
    assert _no_rules(pair) == "assertion"
    assert diagnose_text("\n".join(pair)).failure.cause == Cause.ASSERTION  # type: ignore[union-attr]
    path = ["Assertion failed: Error opening engine file: /models/missing/rank0.engine"]
    assert diagnose_text("\n".join(path)).failure.cause == Cause.INVALID_ARGUMENT  # type: ignore[union-attr]
