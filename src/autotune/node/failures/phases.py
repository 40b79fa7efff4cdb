"""Which phase a failure happened in: its traceback's frames, the log's progress, its cause.

A rule may name the phase; else the frames around the failing line point to one (a profile run
or a graph capture wins over the forward pass it runs), else the furthest progress line the
log reached (:func:`phase_reached`), else what the cause implies (:data:`CAUSE_PHASE`). A few
families happen in one phase only, whatever the frames say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from autotune.models import Cause, Milestone, Phase
from autotune.node.failures.log import MILESTONE_HEAD, _compile
from autotune.node.failures.traces import _TRACEBACK, _trace_block
from autotune.node.families import decisive

RETOLD = 8  # lines after an exception where the traceback that re-tells it may start

# Prefixes that multi-process engines and loggers put before a message: see node/logparse.py.
_PHASE_MARKERS: tuple[tuple[Phase, re.Pattern[str]], ...] = (
    (
        Phase.GRAPH_CAPTURE,
        re.compile(
            r"capture_model|_capture_cudagraphs|capture_cudagraph|cuda_graph_runner|"
            r"CudaGraphRunner|init_cuda_graphs|capture_one_batch_size|capture_begin|capture_end|"
            r"[Cc]apture cuda graph|Capturing CUDA graph|[Cc]apturing cudagraphs|"
            r"CUDA graph capture|stream is capturing|cudaErrorStreamCapture"
        ),
    ),
    (
        Phase.MEMORY_POOL,
        re.compile(
            r"init_memory_pool|profile_max_num_token|determine_num_available_blocks|"
            r"determine_available_memory|_initialize_kv_caches|initialize_kv_cache|profile_run|"
            r"init_cache_with_memory_pool|memory_pool\.py|kv_cache_utils|raise_if_cache_size|"
            r"Memory profiling|GPU blocks:|for the cache blocks|stored in KV cache|paged KV cache|"
            r"max_total_num_tokens|mem_cache/|initialize_from_config|initialize_cache|"
            # (a warmup, not an argument named for it: "run(grid, warmup=False)")
            r"warmup\b(?!\s*=)|"
            r"_dummy_sampler_run"
        ),
    ),
    (
        Phase.LOAD,
        re.compile(
            r"load_model|load_weights|[Ll]oading safetensors|Loading checkpoint shards|"
            r"Load weight begin|Starting to load model|from_pretrained|init_process_group|"
            r"init_distributed_environment|init_device|initialize_model_parallel|"
            r"[Ii]nit torch distributed|_init_executor|init_worker|ModelRunner\(|TpModelWorker\(|"
            r"deserializ|GenerationSession|from_dir|load model begin|_create_c10d_store|"
            r"bootstrap\.cc|ncclSocketConnect|init_mscclpp|Connect from rank|get_model\(|"
            r"llama_model_load|Error when initializing model|Shard \d+ failed to start|"
            r"_create_weight|Loaded engine size|[Ee]rror loading (?:llama )?(?:server|model)"
        ),
    ),
    (
        Phase.BENCHMARK,
        re.compile(
            r"event_loop|run_batch|forward_batch|execute_model|step_async|engine_step|"
            r"run_busy_loop|_process_engine_step|_run_engine|\.generate\(|generate_inner|"
            r"greedy_search|multinomial|POST /|Prefill batch|Decode batch|#running-req|"
            r"get_model_worker_batch|process_batch_result|Epoch \d|trainer\.fit|"
            r"inner_training_loop|swap_blocks|begin_forward|all_reduce\(|SeqNum=\d{3,}|"
            r"forward_thread_func|output_handler|loop_for_f(?:orwar)?d|_forward_step|prefill_batch|"
            r"get_output_async|generate_token|forward(?:Sync|Async)\b|executor_loop|"
            # a request's span in a Rust server's tracing ("generate{parameters=...}:")
            r"\b\w*(?:generate|completions?|chat)\{|"
            # sampling the next tokens, a decode step: only requests being served run them
            r"\bin _?sample(?:_tokens?|_next\w*)?$|\bin _?decode_step\w*$"
        ),
    ),
)
_STARTUP = (Phase.LOAD, Phase.MEMORY_POOL, Phase.GRAPH_CAPTURE)
_RUNNING = (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
# Families that happen in one phase only, whatever the frames around them say.
_FAMILY_PHASE = {
    Cause.KV_POOL_OOM: Phase.MEMORY_POOL,
    Cause.CUDA_GRAPH_CAPTURE: Phase.GRAPH_CAPTURE,
}
# A pool that ran dry (exhausted, no free blocks left, no free space found in it) was filled
# by requests: the pool was sized at start and ran out while serving. A pool too small to
# start says so in sizing words ("not enough memory for the cache").
_RUN_DRY = re.compile(
    r"(?i:\bexhausted\b|\bno free\b|(?:find|found) (?:no |any )?free\b|\b(?:ran|runs) out of\b)"
)


def _family_phase(cause: Cause, text: str) -> Phase | None:
    """The one phase ``cause`` happens in, read from its line ``text``; None if it has none."""
    if cause == Cause.KV_POOL_OOM and _RUN_DRY.search(text):
        return Phase.BENCHMARK
    return _FAMILY_PHASE.get(cause)


# The phase a cause implies when the log shows nothing else.
CAUSE_PHASE: dict[Cause, Phase] = {
    Cause.KV_POOL_OOM: Phase.MEMORY_POOL,
    Cause.CUDA_GRAPH_CAPTURE: Phase.GRAPH_CAPTURE,
    Cause.CUDA_OOM: Phase.LOAD,
    Cause.HOST_OOM: Phase.LOAD,
    Cause.ARCH_UNSUPPORTED: Phase.LOAD,
    Cause.MODEL_UNSUPPORTED: Phase.LOAD,
    Cause.NCCL_ERROR: Phase.LOAD,
    Cause.STARTUP_TIMEOUT: Phase.LOAD,
    Cause.WATCHDOG_TIMEOUT: Phase.BENCHMARK,
    Cause.RUNTIME_CRASH: Phase.BENCHMARK,
    Cause.BENCHMARK_ERRORS: Phase.BENCHMARK,
    Cause.NODE_LOST: Phase.BENCHMARK,
    Cause.ASSERTION: Phase.BENCHMARK,  # an internal check: most fail while serving
    Cause.PORT_IN_USE: Phase.LOAD,  # the HTTP server or the ranks' store binds after loading
    Cause.GPU_NOT_CLEAN: Phase.LOAD,
}


def phase_in_block(stripped: Sequence[str], at: int) -> Phase | None:
    """The phase the frames of the traceback around index ``at`` point to, if any.

    Start-up frames win over serving frames: a profile run or a graph capture runs the model's
    forward, so "execute_model" under "profile_run" still means the memory pool was being sized.
    """
    block = list(_trace_block(stripped, at))
    # An exception re-printed at once by the loop that caught it ("Scheduler hit an exception:
    # Traceback ...") is the same event: that traceback's frames say where it ran.
    seen = 0
    for i in range(at + 1, len(stripped)):
        if _TRACEBACK in stripped[i]:
            block += _trace_block(stripped, i + 1) if i + 1 < len(stripped) else []
            break
        if stripped[i] != stripped[i - 1]:  # a line every rank wrote counts once
            seen += 1
        if seen >= RETOLD:
            break
    found = {phase for phase, regex in _PHASE_MARKERS if any(regex.search(x) for x in block)}
    order = list(Phase)
    if found & {Phase.MEMORY_POOL, Phase.GRAPH_CAPTURE}:
        return max(found & set(_STARTUP), key=order.index)
    if Phase.BENCHMARK in found:
        return Phase.BENCHMARK
    if Phase.LOAD in found:
        return Phase.LOAD
    return None


def _later(a: Phase, b: Phase | None) -> Phase:
    order = list(Phase)
    return a if b is None else max(a, b, key=order.index)


def _resolve_phase(
    rule_phase: Phase | None, reached: Phase, block: Phase | None, cause: Cause
) -> Phase:
    if rule_phase is not None:
        return rule_phase
    phase = _later(reached, block)
    if phase == Phase.READY and cause == Cause.PORT_IN_USE:
        # A server that could not bind its port never served: the lines that said it was ready
        # (a scheduler's, uvicorn's "startup complete") came before the listening socket.
        return Phase.LAUNCH
    if phase == Phase.READY:
        # A failure after the ready line happened while serving (the ready line is a moment,
        # not a phase anything runs in).
        return Phase.BENCHMARK
    if phase == Phase.LAUNCH and block is None:
        return CAUSE_PHASE.get(cause, Phase.LAUNCH)
    return phase


def phase_reached(lines: Iterable[str], milestones: Sequence[Milestone]) -> tuple[Phase, list[str]]:
    """The furthest phase the milestones show, and the labels reached in order."""
    order = list(Phase)
    reached = Phase.LAUNCH
    labels: list[str] = []
    compiled = [(m, _compile(m.pattern)) for m in milestones]
    for line in lines:
        head = line[:MILESTONE_HEAD]
        for milestone, regex in compiled:
            if milestone.label not in labels and regex.search(head):
                if milestone.phase == Phase.READY and decisive(line):
                    continue  # "ready" in words that say the start failed (a pool of 0)
                labels.append(milestone.label)
                if order.index(milestone.phase) > order.index(reached):
                    reached = milestone.phase
    return reached, labels
