"""Every engine hint is right for the log it is shown for, and names that engine's knob.

One case per hint (engine, key, phase): a real log from the corpus where the engine has one,
else lines written like the engine writes them. The case checks that the log is classified
with the cause (and phase) the hint is keyed by, that the hint shown is that one, and that it
names the flag or variable to change; a completeness test fails when a hint has no case.
Flags named in an engine's hints must exist in that engine's flag tables.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autotune.engines.flagtable import available_versions, load_table
from autotune.models import Cause, Phase
from autotune.node.failures import classify
from autotune.node.failures.hints import engine_advice
from autotune.rules import engine_hints, load_rules

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "crashlogs"

SG = "[2026-01-01 10:00:05 TP0] "
VL = "(VllmWorker rank=0 pid=12) ERROR 01-01 12:00:00 [multiproc_executor.py:527] "


def _corpus(log_id: str) -> list[str]:
    return (CORPUS / f"{log_id}.log").read_text(encoding="utf-8").splitlines()


def _frames(prefix: str, *frames: str) -> list[str]:
    out = [prefix + "Traceback (most recent call last):"]
    for name in frames:
        out += [prefix + f'  File "/x/{name}.py", line 1, in {name}', prefix + f"    {name}()"]
    return out


# engine, hint key, phase key ("default" or a phase), log, phase passed in, cause, phase, text
CASES: list[tuple[str, str, str, list[str], Phase, Cause, Phase, str]] = [
    (
        "sglang",
        "kv_pool_oom",
        "default",
        [SG + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."],
        Phase.LOAD,
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "LOWER what takes memory before the pool",
    ),
    (
        "sglang",
        "common.kv_pool_alloc_oom",
        "default",
        _frames(SG, "init_memory_pool", "memory_pool")
        + [SG + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"],
        Phase.LOAD,
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "LOWER --mem-fraction-static",
    ),
    (
        "sglang",
        "cuda_graph_capture",
        "default",
        _corpus("sglang-001"),
        Phase.LAUNCH,
        Cause.CUDA_GRAPH_CAPTURE,
        Phase.GRAPH_CAPTURE,
        "--cuda-graph-max-bs",
    ),
    (
        "sglang",
        "common.runtime_kv_oom",
        "default",
        [SG + "Prefill out of memory. Try to lower your batch size."],
        Phase.BENCHMARK,
        Cause.KV_POOL_OOM,
        Phase.BENCHMARK,
        "--max-running-requests",
    ),
    (
        "sglang",
        "cuda_oom",
        "default",
        [SG + "torch.OutOfMemoryError: CUDA out of memory."],
        Phase.WARMUP,
        Cause.CUDA_OOM,
        Phase.WARMUP,
        "LOWER --mem-fraction-static",
    ),
    (
        "sglang",
        "cuda_oom",
        "load",
        _frames(SG, "load_model", "load_weights")
        + [SG + "torch.OutOfMemoryError: CUDA out of memory."],
        Phase.LAUNCH,
        Cause.CUDA_OOM,
        Phase.LOAD,
        "--tp-size",
    ),
    (
        "sglang",
        "cuda_oom",
        "benchmark",
        _corpus("sglang-006"),
        Phase.LAUNCH,
        Cause.CUDA_OOM,
        Phase.BENCHMARK,
        "--max-running-requests",
    ),
    (
        "sglang",
        "host_oom",
        "default",
        [SG + "Load weight begin. avail mem=70.00 GB", "Killed"],
        Phase.LOAD,
        Cause.HOST_OOM,
        Phase.LOAD,
        "--hicache-ratio",
    ),
    (
        "sglang",
        "arch_unsupported",
        "default",
        [SG + "RuntimeError: CUDA error: no kernel image is available for execution on the device"],
        Phase.LOAD,
        Cause.ARCH_UNSUPPORTED,
        Phase.LOAD,
        "--attention-backend",
    ),
    (
        "sglang",
        "import_error",
        "default",
        _corpus("sglang-018"),
        Phase.LAUNCH,
        Cause.IMPORT_ERROR,
        Phase.LAUNCH,
        "sgl-kernel",
    ),
    (
        "sglang",
        "model_unsupported",
        "default",
        [SG + "ValueError: Unsupported architectures: Foo3ForCausalLM. Supported list: ['A']"],
        Phase.LOAD,
        Cause.MODEL_UNSUPPORTED,
        Phase.LOAD,
        "--trust-remote-code",
    ),
    (
        "sglang",
        "invalid_argument",
        "default",
        _corpus("sglang-009"),
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "sglang.launch_server --help",
    ),
    (
        "sglang",
        "watchdog_timeout",
        "default",
        _corpus("sglang-013"),
        Phase.BENCHMARK,
        Cause.WATCHDOG_TIMEOUT,
        Phase.BENCHMARK,
        "--watchdog-timeout",
    ),
    (
        "sglang",
        "startup_timeout",
        "default",
        _corpus("sglang-022"),
        Phase.LOAD,
        Cause.STARTUP_TIMEOUT,
        Phase.LOAD,
        "--disable-cuda-graph",
    ),
    (
        "sglang",
        "nccl_error",
        "default",
        [SG + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)"],
        Phase.LOAD,
        Cause.NCCL_ERROR,
        Phase.LOAD,
        "--disable-custom-all-reduce",
    ),
    (
        "sglang",
        "runtime_crash",
        "default",
        [SG + "RuntimeError: CUDA error: an illegal memory access was encountered"],
        Phase.BENCHMARK,
        Cause.RUNTIME_CRASH,
        Phase.BENCHMARK,
        "--attention-backend",
    ),
    (
        "vllm",
        "kv_pool_oom",
        "default",
        _corpus("vllm-001"),
        Phase.LAUNCH,
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "--gpu-memory-utilization",
    ),
    (
        "vllm",
        "common.kv_pool_alloc_oom",
        "default",
        _frames(VL, "initialize_kv_cache", "_allocate_kv_cache")
        + [VL + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB"],
        Phase.LAUNCH,
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "Lower --gpu-memory-utilization",
    ),
    (
        "vllm",
        "cuda_graph_capture",
        "default",
        _corpus("vllm-010"),
        Phase.LAUNCH,
        Cause.CUDA_GRAPH_CAPTURE,
        Phase.GRAPH_CAPTURE,
        "--enforce-eager",
    ),
    (
        "vllm",
        "cuda_oom",
        "default",
        [VL + "torch.OutOfMemoryError: CUDA out of memory."],
        Phase.WARMUP,
        Cause.CUDA_OOM,
        Phase.WARMUP,
        "--max-num-seqs",
    ),
    (
        "vllm",
        "cuda_oom",
        "load",
        _corpus("vllm-013"),
        Phase.LAUNCH,
        Cause.CUDA_OOM,
        Phase.LOAD,
        "--tensor-parallel-size",
    ),
    (
        "vllm",
        "cuda_oom",
        "memory_pool",
        _frames(VL, "determine_available_memory", "profile_run", "_dummy_run")
        + [VL + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB"],
        Phase.LOAD,
        Cause.CUDA_OOM,
        Phase.MEMORY_POOL,
        "--max-num-batched-tokens",
    ),
    (
        "vllm",
        "cuda_oom",
        "benchmark",
        _frames(VL, "run_busy_loop", "execute_model")
        + [VL + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
        Phase.READY,
        Cause.CUDA_OOM,
        Phase.BENCHMARK,
        "--max-num-seqs",
    ),
    (
        "vllm",
        "host_oom",
        "default",
        ["Loading safetensors checkpoint shards:  40% Completed | 2/5", "Killed"],
        Phase.LOAD,
        Cause.HOST_OOM,
        Phase.LOAD,
        "--swap-space",
    ),
    (
        "vllm",
        "arch_unsupported",
        "default",
        _corpus("vllm-021"),
        Phase.LAUNCH,
        Cause.ARCH_UNSUPPORTED,
        Phase.LOAD,
        "--dtype half",
    ),
    (
        "vllm",
        "import_error",
        "default",
        _corpus("vllm-009"),
        Phase.LAUNCH,
        Cause.IMPORT_ERROR,
        Phase.LAUNCH,
        "vLLM wheel",
    ),
    (
        "vllm",
        "model_unsupported",
        "default",
        _corpus("vllm-008"),  # (vllm-007's refused architecture is in the printed list)
        Phase.LAUNCH,
        Cause.MODEL_UNSUPPORTED,
        Phase.LOAD,
        "--trust-remote-code",
    ),
    (
        "vllm",
        "invalid_argument",
        "default",
        _corpus("vllm-026"),
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "--tensor-parallel-size",
    ),
    (
        "vllm",
        "watchdog_timeout",
        "default",
        _corpus("vllm-042"),
        Phase.BENCHMARK,
        Cause.WATCHDOG_TIMEOUT,
        Phase.BENCHMARK,
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS",
    ),
    (
        "vllm",
        "startup_timeout",
        "default",
        _corpus("vllm-012"),
        Phase.LOAD,
        Cause.STARTUP_TIMEOUT,
        Phase.LOAD,
        "VLLM_ENGINE_READY_TIMEOUT_S",
    ),
    (
        "vllm",
        "nccl_error",
        "default",
        [VL + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO)"],
        Phase.LOAD,
        Cause.NCCL_ERROR,
        Phase.LOAD,
        "--disable-custom-all-reduce",
    ),
    (
        "vllm",
        "runtime_crash",
        "default",
        _corpus("vllm-039"),
        Phase.BENCHMARK,
        Cause.RUNTIME_CRASH,
        Phase.BENCHMARK,
        "--attention-backend",
    ),
    (
        "transformers",
        "kv_pool_oom",
        "default",
        ["MemoryError: Memory footprint 99999999999 is more than available memory 1000"],
        Phase.LOAD,
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "--cb-num-blocks",
    ),
    (
        "transformers",
        "cuda_oom",
        "default",
        ["torch.OutOfMemoryError: CUDA out of memory."],
        Phase.BENCHMARK,
        Cause.CUDA_OOM,
        Phase.BENCHMARK,
        "--cb-num-blocks",
    ),
    (
        "transformers",
        "host_oom",
        "default",
        ["RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"],
        Phase.MEMORY_POOL,
        Cause.HOST_OOM,
        Phase.MEMORY_POOL,
        "--cb-num-blocks",
    ),
    (
        "transformers",
        "import_error",
        "default",
        ["ModuleNotFoundError: No module named 'kernels'"],
        Phase.LOAD,
        Cause.IMPORT_ERROR,
        Phase.LOAD,
        "--attn-implementation sdpa",
    ),
    (
        "transformers",
        "model_unsupported",
        "default",
        _corpus("transformers-002"),
        Phase.LAUNCH,
        Cause.MODEL_UNSUPPORTED,
        Phase.LOAD,
        "--trust-remote-code",
    ),
    (
        "transformers",
        "invalid_argument",
        "default",
        ["Error: No such option: --cb-blocks (Possible options: --cb-block-size)"],
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "transformers serve --help",
    ),
    (
        "transformers",
        "runtime_crash",
        "default",
        _corpus("transformers-006"),
        Phase.BENCHMARK,
        Cause.RUNTIME_CRASH,
        Phase.BENCHMARK,
        "--dtype",
    ),
    # the parallel layout, an attention backend, a quantization method: in each engine's flags
    (
        "sglang",
        "common.more_ranks_than_gpus",
        "default",
        [SG + "ValueError: world size (4) is larger than the number of available GPUs (2)"],
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "--tp-size",
    ),
    (
        "vllm",
        "common.more_ranks_than_gpus",
        "default",
        [VL + "AssertionError: DP adjusted local rank 1 is out of bounds for 1 devices."],
        Phase.LOAD,
        Cause.INVALID_ARGUMENT,
        Phase.LOAD,
        "--data-parallel-size",
    ),
    (
        "sglang",
        "common.attention_backend_unfit",
        "default",
        [SG + "ValueError: No valid attention backend found for cuda with page_size=7"],
        Phase.LOAD,
        Cause.INVALID_ARGUMENT,
        Phase.LOAD,
        "--page-size",
    ),
    (
        "vllm",
        "common.attention_backend_unfit",
        "default",
        [
            VL + "ValueError: Selected backend FLASH_ATTN is not valid for this configuration. "
            "Reason: ['dtype not supported']"
        ],
        Phase.LOAD,
        Cause.INVALID_ARGUMENT,
        Phase.LOAD,
        "--attention-backend",
    ),
    (
        "sglang",
        "common.quantization_method",
        "default",
        [SG + "ValueError: Cannot find the config file for gptq"],
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "--quantization",
    ),
    (
        "vllm",
        "common.quantization_method",
        "default",
        [VL + "ValueError: Unknown quantization method: foo8"],
        Phase.LAUNCH,
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "--quantization",
    ),
]


def _expected_hint(engine: str, key: str, phase_key: str) -> str:
    default, by_phase = engine_hints(engine)[key]
    if phase_key == "default":
        assert default is not None
        return default
    return dict(by_phase)[Phase(phase_key)]


@pytest.mark.parametrize(
    ("engine", "key", "phase_key", "lines", "reached", "cause", "phase", "text"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES],
)
def test_hint_is_right_for_its_log(
    engine: str,
    key: str,
    phase_key: str,
    lines: list[str],
    reached: Phase,
    cause: Cause,
    phase: Phase,
    text: str,
) -> None:
    failure = classify(lines, load_rules(engine), phase=reached, exit_code=1, argv=[], env={})
    assert (failure.cause, failure.phase) == (cause, phase), failure.message
    if key.startswith("common."):
        assert failure.rule == key
    # An engine's own remedy in its message, when it states one, comes first.
    advice = engine_advice(failure.message)
    lead = f"The engine says: {advice} " if advice else ""
    assert failure.hint == lead + _expected_hint(engine, key, phase_key)
    assert text in failure.hint


def test_every_hint_has_a_case() -> None:
    covered = {(c[0], c[1], c[2]) for c in CASES}
    for engine in ("sglang", "vllm", "transformers"):
        for key, (default, by_phase) in engine_hints(engine).items():
            keys = (["default"] if default is not None else []) + [p.value for p, _ in by_phase]
            for phase_key in keys:
                assert (engine, key, phase_key) in covered, (engine, key, phase_key)


@pytest.mark.parametrize("engine", ["sglang", "vllm", "transformers"])
def test_hints_name_flags_the_engine_has(engine: str) -> None:
    known: set[str] = set()
    for version in available_versions(engine):
        table = load_table(engine, version)
        assert table is not None
        known |= table.names()
    texts = [r.hint for r in load_rules(engine) if not r.id.startswith("common.")]
    for default, by_phase in engine_hints(engine).values():
        texts += [default or ""] + [h for _, h in by_phase]
    named = {f for text in texts for f in re.findall(r"--[a-z][a-z0-9-]+", text)} - {"--help"}
    assert named and named <= known, sorted(named - known)


def test_kv_pool_allocation_is_not_explained_as_outside_the_pool() -> None:
    # The fixed bug: a failure allocating the pool itself got "an allocation outside the KV
    # pool" (the generic CUDA OOM hint).
    lines = _frames(SG, "init_memory_pool", "memory_pool") + [
        SG + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"
    ]
    for engine in ("sglang", "command"):
        failure = classify(
            lines, load_rules(engine), phase=Phase.LOAD, exit_code=-9, argv=[], env={}
        )
        assert (failure.cause, failure.phase) == (Cause.KV_POOL_OOM, Phase.MEMORY_POOL)
        assert "outside the KV pool" not in failure.hint


def test_the_command_engine_gets_every_family() -> None:
    # A command-engine study running SGLang: 14 of 14 KV-pool crashes came back unknown.
    lines = [SG + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."]
    failure = classify(
        lines, load_rules("command"), phase=Phase.LOAD, exit_code=-9, argv=[], env={}
    )
    assert (failure.cause, failure.rule) == (Cause.KV_POOL_OOM, "common.kv_pool_oom")
    assert "--mem-fraction-static" in failure.hint and "--gpu-memory-utilization" in failure.hint


def test_a_cuda_oom_named_by_its_family_gets_the_allocation_hint_not_the_kv_caches() -> None:
    # No rule's sentence: the family scoring names it cuda_oom. Its hint is the one of the
    # rule named after the cause (common.cuda_oom), not the hint of the KV cache running out
    # while serving (common.runtime_kv_oom, of cause kv_pool_oom since issue 51).
    from autotune.diagnosis import diagnose_text

    log = (
        "INFO starting server\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "RuntimeError: GPU memory exhausted while allocating 2.00 GiB for the activations\n"
    )
    failure = diagnose_text(log).failure
    assert failure is not None and failure.cause is Cause.CUDA_OOM and failure.rule is None
    assert failure.hint.startswith("A CUDA allocation failed"), failure.hint
