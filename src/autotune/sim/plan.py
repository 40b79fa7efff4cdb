"""The start-up script of one launch: which lines SGLang would log, when, and where it dies.

``plan_startup`` is pure: it maps a launch (flags + NCCL environment + hardware profile) to a
list of timed log events and, for a configuration that fails, the crash at its real phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autotune.sim.args import Launch
from autotune.sim.logs import SRT, frame, scheduler_frames, traceback_text
from autotune.sim.model import (
    NcclNoAlgorithm,
    max_running_requests,
    memory_plan,
    nccl_choices,
    startup_seconds,
)
from autotune.sim.nccl import NcclEnvError
from autotune.sim.profiles import HardwareProfile

FAST_SCALE = 1.0 / 320.0  # realistic seconds -> fast seconds (a default launch takes ~1.5 s)
MIN_STEP_S = 0.02
GRAPH_ADVICE = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
# Attention backends built only for other architectures (major versions they run on).
BACKEND_ARCHS = {
    "fa3": (8, 9),
    "flashmla": (9,),
    "cutlass_mla": (10,),
    "trtllm_mla": (10,),
    "trtllm_mha": (10,),
    "fa4": (10,),
}
A2A_MODULES = {
    "deepep": "deep_ep",
    "mooncake": "mooncake",
    "mori": "mori",
    "ascend_fuseep": "sgl_kernel_npu",
}


@dataclass(frozen=True)
class Event:
    """One log event, emitted ``wait_s`` after the previous one."""

    wait_s: float
    text: str
    rank: str | None = "TP0"
    level: str = "info"
    raw: bool = False


@dataclass(frozen=True)
class Crash:
    """How the launch dies: the phase and the process's exit (``sigkill`` after SIGQUIT, or 1)."""

    phase: str
    error: str  # the final exception line, for tests and docs
    exit: str = "sigkill"


@dataclass
class StartupPlan:
    """The timed events up to readiness, and the crash that ends them early, if any."""

    events: list[Event] = field(default_factory=list)
    crash: Crash | None = None
    ready: bool = False

    def add(self, wait_s: float, text: str, **kw: object) -> None:
        self.events.append(Event(wait_s, text, **kw))  # type: ignore[arg-type]

    def fail(self, phase: str, tb: str, error: str, rank: str = "TP0") -> StartupPlan:
        self.add(0.0, f"Scheduler hit an exception: {tb}", rank=rank, level="error")
        self.crash = Crash(phase=phase, error=error)
        return self


def _gb(x: float) -> str:
    return f"{x:.2f} GB"


def _scheduler_failure(
    plan: StartupPlan,
    phase: str,
    frames: list[str],
    error: str,
    *,
    cause: tuple[list[str], str] | None = None,
    rank: str = "TP0",
) -> StartupPlan:
    tb = traceback_text(scheduler_frames() + frames, error, cause=cause)
    return plan.fail(phase, tb, error, rank=rank)


def _oom(alloc_gib: float, free_gib: float, total: float) -> str:
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {alloc_gib:.2f} GiB. "
        f"GPU 0 has a total capacity of {total:.2f} GiB of which {free_gib * 1024:.2f} MiB is "
        f"free. Including non-PyTorch memory, this process has {total - free_gib:.2f} GiB memory "
        "in use. Of the allocated memory "
        f"{total - free_gib - 0.9:.2f} GiB is allocated by PyTorch, and 0.31 GiB is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )


def _init_phase(
    plan: StartupPlan,
    launch: Launch,
    prof: HardwareProfile,
    nccl_error: NcclEnvError | None,
    secs: float,
) -> bool:
    """Distributed init (NCCL communicators, allreduce back-ends). Returns False on a crash."""
    cfg, ns = launch.config, launch.ns
    plan.add(secs * 0.2, "Init torch distributed begin.")
    gpus = ns.tp_size * ns.dp_size * ns.pp_size
    init_frames = [
        frame(
            f"{SRT}/model_executor/model_runner.py",
            611,
            "init_torch_distributed",
            "initialize_model_parallel(",
        ),
        frame(
            f"{SRT}/distributed/parallel_state.py",
            1488,
            "initialize_model_parallel",
            "_TP = init_model_parallel_group(",
        ),
        frame(
            f"{SRT}/distributed/parallel_state.py",
            280,
            "__init__",
            "self.pynccl_comm = PyNcclCommunicator(",
        ),
        frame(
            f"{SRT}/distributed/device_communicators/pynccl.py",
            99,
            "__init__",
            "self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        ),
        frame(
            f"{SRT}/distributed/device_communicators/pynccl_wrapper.py",
            392,
            "NCCL_CHECK",
            'raise RuntimeError(f"NCCL error: {error_str}")',
        ),
    ]
    if gpus > prof.n_gpus:
        _scheduler_failure(
            plan,
            "load",
            [
                frame(
                    f"{SRT}/model_executor/model_runner.py",
                    586,
                    "init_torch_distributed",
                    "torch.get_device_module(self.device).set_device(self.gpu_id)",
                )
            ],
            "RuntimeError: CUDA error: invalid device ordinal",
            rank=f"TP{prof.n_gpus}",
        )
        return False
    invalid = "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)"
    if nccl_error is not None:
        plan.add(secs * 0.3, f"sim-node:{4242}:{4242} [0] NCCL WARN {nccl_error.warn}", raw=True)
        _scheduler_failure(plan, "load", init_frames, invalid)
        return False
    for warn in cfg.nccl.warnings:
        plan.add(0.0, f"sim-node:{4242}:{4242} [0] NCCL WARN {warn}", raw=True)
    try:
        nccl_choices(cfg.nccl, prof)
    except NcclNoAlgorithm as exc:
        algo = ",".join(sorted(cfg.nccl.algos or ())) or "Ring"
        plan.add(
            secs * 0.3,
            f"sim-node:4242:4242 [0] NCCL WARN Error : {exc}. NCCL_ALGO was set to {algo}.",
            raw=True,
        )
        _scheduler_failure(
            plan,
            "load",
            init_frames[:-2]
            + [
                frame(
                    f"{SRT}/distributed/device_communicators/pynccl.py",
                    128,
                    "__init__",
                    "self.all_reduce(data)",
                ),
                init_frames[-1],
            ],
            invalid,
        )
        return False
    if not cfg.disable_custom_all_reduce and prof.custom_ar_us is None:
        if cfg.custom_ar_algo_env:
            plan.add(
                0.0,
                "Custom allreduce forced on PCIe "
                f"(SGLANG_CUSTOM_ALLREDUCE_ALGO={cfg.custom_ar_algo_env}).",
                level="warning",
            )
        else:
            plan.add(
                0.0,
                "Custom allreduce is disabled because it's not supported on more than two "
                "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True "
                "explicitly.",
                level="warning",
            )
    if cfg.torch_symm_mem and not prof.symm_mem_supported:
        # SGLang checks capability < 9, then indexes its table, which only knows 9 and 10.
        _scheduler_failure(
            plan,
            "load",
            init_frames[:2]
            + [
                frame(
                    f"{SRT}/distributed/parallel_state.py",
                    301,
                    "__init__",
                    "self.torch_symm_mem_comm = TorchSymmMemCommunicator(",
                ),
                frame(
                    f"{SRT}/distributed/device_communicators/torch_symm_mem.py",
                    71,
                    "__init__",
                    "not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
                ),
            ],
            f"KeyError: {prof.capability[0]}",
        )
        return False
    plan.add(secs * 0.8, "Init torch distributed ends. mem usage=0.91 GB")
    return True


def _load_phase(plan: StartupPlan, launch: Launch, prof: HardwareProfile, secs: float) -> bool:
    cfg, ns = launch.config, launch.ns
    mem = memory_plan(cfg, prof)
    plan.add(0.01, f"Load weight begin. avail mem={_gb(mem.avail_before_load_gb)}")
    load_frames = [
        frame(
            f"{SRT}/model_executor/model_runner.py", 742, "load_model", "self.model = get_model("
        ),
        frame(f"{SRT}/model_loader/loader.py", 583, "load_model", "model = _initialize_model("),
    ]
    if ns.quantization not in (None, "compressed-tensors"):
        _scheduler_failure(
            plan,
            "load",
            load_frames[:1]
            + [
                frame(
                    f"{SRT}/configs/model_config.py",
                    530,
                    "_verify_quantization",
                    "raise ValueError(",
                )
            ],
            "ValueError: Quantization method specified in the model config (compressed-tensors) "
            f"does not match the quantization method specified in the `quantization` argument "
            f"({ns.quantization}).",
        )
        return False
    per_gpu = prof.weights_gb * prof.n_gpus / max(ns.tp_size, 1)
    if per_gpu > mem.avail_before_load_gb:
        plan.add(
            secs * 0.6, "Loading safetensors checkpoint shards:  61% Completed", rank=None, raw=True
        )
        free = 0.37
        _scheduler_failure(
            plan,
            "load",
            load_frames
            + [
                frame(
                    "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py",
                    1355,
                    "convert",
                    "return t.to(",
                )
            ],
            _oom(1.75, free, prof.total_mem_gb),
        )
        return False
    backend = cfg.moe_a2a_backend
    if backend != "none" and backend not in prof.a2a_working:
        if backend == "flashinfer":
            # The campaign: an assertion in the A2A dispatcher, then an OOM on another rank.
            plan.add(
                secs * 0.4,
                "Loading safetensors checkpoint shards:  38% Completed",
                rank=None,
                raw=True,
            )
            _scheduler_failure(
                plan,
                "load",
                load_frames
                + [
                    frame(
                        f"{SRT}/layers/moe/token_dispatcher/flashinfer.py",
                        142,
                        "__init__",
                        "assert self.num_max_dispatch_tokens_per_rank * self.ep_size"
                        " <= self.workspace_tokens",
                    )
                ],
                "AssertionError",
                rank="TP3",
            )
            _scheduler_failure(
                plan,
                "load",
                load_frames
                + [
                    frame(
                        f"{SRT}/layers/moe/token_dispatcher/flashinfer.py",
                        118,
                        "__init__",
                        "self.workspace = torch.empty(",
                    )
                ],
                _oom(6.50, 2.11, prof.total_mem_gb),
            )
            return False
        module = A2A_MODULES.get(backend, backend)
        _scheduler_failure(
            plan,
            "load",
            load_frames[:1]
            + [
                frame(
                    f"{SRT}/layers/moe/token_dispatcher/__init__.py",
                    24,
                    "<module>",
                    f"import {module}",
                )
            ],
            f"ModuleNotFoundError: No module named '{module}'",
        )
        return False
    draft = mem.weights_gb - prof.weights_gb
    after_target = mem.avail_before_load_gb - prof.weights_gb
    plan.add(
        secs * (1.0 if not draft else 0.9),
        f"Load weight end. type={prof.model_arch}, dtype=torch.bfloat16, "
        f"avail mem={_gb(after_target)}, mem usage={_gb(prof.weights_gb)}.",
    )
    if draft and cfg.spec is not None:
        arch = {"EAGLE3": "LlamaForCausalLMEagle3", "STANDALONE": "DeepseekV3ForCausalLM"}.get(
            cfg.spec.algorithm, "LlamaForCausalLMEagle"
        )
        plan.add(0.01, f"Load weight begin. avail mem={_gb(after_target)}")
        plan.add(
            secs * 0.1,
            f"Load weight end. type={arch}, dtype=torch.bfloat16, "
            f"avail mem={_gb(mem.avail_after_load_gb)}, mem usage={_gb(draft)}.",
        )
    return True


def _pool_phase(plan: StartupPlan, launch: Launch, prof: HardwareProfile, secs: float) -> bool:
    cfg = launch.config
    mem = memory_plan(cfg, prof)
    kv_dtype = "torch.float8_e4m3fn" if cfg.kv_cache_dtype.startswith("fp8") else "torch.bfloat16"
    plan.add(secs * 0.3, f"Using KV cache dtype: {kv_dtype}")
    if mem.max_total_num_tokens <= 0:
        _scheduler_failure(
            plan,
            "memory_pool",
            [
                frame(
                    f"{SRT}/model_executor/model_runner.py",
                    365,
                    "initialize",
                    "self.init_memory_pool(",
                ),
                frame(
                    f"{SRT}/model_executor/model_runner_kv_cache_mixin.py",
                    412,
                    "init_memory_pool",
                    "raise RuntimeError(",
                ),
            ],
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={mem.mem_fraction_static}",
        )
        return False
    plan.add(
        secs * 0.6,
        f"KV Cache is allocated. #tokens: {mem.max_total_num_tokens}, KV size: {_gb(mem.kv_gb)}",
    )
    plan.add(secs * 0.1, f"Memory pool end. avail mem={_gb(mem.avail_after_pool_gb)}")
    return True


def _capture_failed(error: str) -> str:
    """SGLang wraps the capture's exception: the message without its type, then the advice."""
    message = error.split(": ", 1)[1]
    return f"Exception: Capture cuda graph failed: {message}\n{GRAPH_ADVICE}"


def _attention_error(launch: Launch, prof: HardwareProfile) -> str | None:
    backend = launch.config.attention_backend
    majors = BACKEND_ARCHS.get(backend or "")
    if majors is None or prof.capability[0] in majors:
        return None
    return NO_KERNEL


def _capture_phase(plan: StartupPlan, launch: Launch, prof: HardwareProfile, secs: float) -> bool:
    cfg = launch.config
    mem = memory_plan(cfg, prof)
    if cfg.attention_backend == "fa3" and prof.capability[0] not in (8, 9):
        _scheduler_failure(
            plan,
            "graph_capture",
            [
                frame(
                    f"{SRT}/model_executor/model_runner.py",
                    1702,
                    "init_attention_backend",
                    "self.attn_backend = self._get_attention_backend()",
                ),
                frame(
                    f"{SRT}/model_executor/model_runner.py",
                    1790,
                    "_get_attention_backend_from_str",
                    "assert (",
                ),
            ],
            "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use "
            "`--attention-backend flashinfer`.",
        )
        return False
    if not cfg.graphs:
        return True
    avail = mem.avail_after_pool_gb
    plan.add(
        0.01,
        f"Capture cuda graph begin. This can take up to several minutes. avail mem={_gb(avail)}",
    )
    capture_frames = [
        frame(
            f"{SRT}/model_executor/model_runner.py",
            1921,
            "init_device_graphs",
            "self.graph_runner = graph_runners[self.device](self)",
        ),
        frame(f"{SRT}/model_executor/cuda_graph_runner.py", 402, "__init__", "raise Exception("),
    ]
    inner = [frame(f"{SRT}/model_executor/cuda_graph_runner.py", 396, "__init__", "self.capture()")]
    bs = cfg.cuda_graph_max_bs
    if cfg.flashinfer_fusion and not prof.fusion_supported:
        # FlashInfer JIT-compiles its TRT-LLM comm module at the first fused allreduce.
        error = "RuntimeError: No supported CUDA architectures found for major versions [9, 10]."
        inner_fusion = inner + [
            frame(
                f"{SRT}/layers/flashinfer_comm_fusion.py",
                88,
                "ensure_workspace_initialized",
                "comm.trtllm_create_ipc_workspace_for_all_reduce_fusion(",
            ),
            frame(
                "/usr/local/lib/python3.12/dist-packages/flashinfer/jit/core.py",
                301,
                "gen_jit_spec",
                "raise RuntimeError(",
            ),
        ]
        plan.add(
            secs * 0.05, f"Capturing batches (bs={bs} avail_mem={_gb(avail)})", rank=None, raw=True
        )
        tb = traceback_text(
            scheduler_frames() + capture_frames,
            _capture_failed(error),
            cause=(inner_fusion, error),
        )
        plan.fail("graph_capture", tb, error)
        return False
    kernel_error = _attention_error(launch, prof)
    if kernel_error is not None:
        tb = traceback_text(
            scheduler_frames() + capture_frames,
            _capture_failed(kernel_error),
            cause=(inner, kernel_error),
        )
        plan.add(
            secs * 0.05, f"Capturing batches (bs={bs} avail_mem={_gb(avail)})", rank=None, raw=True
        )
        plan.fail("graph_capture", tb, kernel_error)
        return False
    if not mem.graph_fits:
        free = max(avail - mem.nccl_reserve_gb - mem.graph_gb * 0.6, 0.05)
        oom = _oom(mem.graph_gb * 0.4, free, prof.total_mem_gb)
        plan.add(
            secs * 0.6,
            f"Capturing batches (bs={max(1, bs // 4)} avail_mem={_gb(free)})",
            rank=None,
            raw=True,
        )
        tb = traceback_text(
            scheduler_frames() + capture_frames,
            _capture_failed(oom),
            cause=(inner, oom),
        )
        plan.fail("graph_capture", tb, "Exception: Capture cuda graph failed: CUDA out of memory")
        return False
    plan.add(
        secs,
        f"Capture cuda graph end. Time elapsed: {secs:.2f} s. "
        f"mem usage={_gb(mem.graph_gb)}. avail mem={_gb(avail - mem.graph_gb)}.",
    )
    return True


def plan_startup(
    launch: Launch,
    prof: HardwareProfile,
    *,
    scale: float = FAST_SCALE,
    nccl_error: NcclEnvError | None = None,
    port: int = 30000,
    pid: int = 0,
) -> StartupPlan:
    """The start-up of one launch, phase by phase, ending ready or crashed.

    Args:
        scale: seconds of this run per realistic second (``FAST_SCALE`` or 1.0).
        nccl_error: the NCCL environment failed to parse (fails NCCL init).
    """
    cfg = launch.config
    real = startup_seconds(cfg, prof)
    secs = {k: max(v * scale, MIN_STEP_S) if v else 0.0 for k, v in real.items()}
    plan = StartupPlan()
    if not _init_phase(plan, launch, prof, nccl_error, secs["init"]):
        return plan
    if not _load_phase(plan, launch, prof, secs["load"]):
        return plan
    if not _pool_phase(plan, launch, prof, secs["memory_pool"]):
        return plan
    if not _capture_phase(plan, launch, prof, secs["graph_capture"]):
        return plan
    mem = memory_plan(cfg, prof)
    plan.add(
        0.01,
        f"max_total_num_tokens={mem.max_total_num_tokens}, chunked_prefill_size="
        f"{cfg.chunked_prefill_size}, max_prefill_tokens={cfg.max_prefill_tokens}, "
        f"max_running_requests={max_running_requests(cfg, prof)}, "
        f"context_len={cfg.context_length}, "
        f"available_gpu_mem={_gb(mem.avail_after_pool_gb - mem.graph_gb)}",
    )
    host = launch.ns.host
    plan.add(secs["http"] * 0.5, f"INFO:     Started server process [{pid}]", rank=None)
    plan.add(0.0, "INFO:     Waiting for application startup.", rank=None)
    plan.add(0.0, "INFO:     Application startup complete.", rank=None)
    plan.add(
        0.0, f"INFO:     Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)", rank=None
    )
    if not launch.ns.skip_server_warmup:
        plan.add(
            secs["http"] * 0.5,
            'INFO:     127.0.0.1:41000 - "GET /get_model_info HTTP/1.1" 200 OK',
            rank=None,
        )
        plan.add(
            0.01,
            "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, cuda graph: False, input throughput (token/s): 0.00",
        )
        error = None
        if cfg.flashinfer_fusion and not prof.fusion_supported:
            error = (
                "RuntimeError: No supported CUDA architectures found for major versions [9, 10]."
            )
        elif _attention_error(launch, prof) is not None:
            error = NO_KERNEL
        if error is not None:  # only reached with --disable-cuda-graph: the first forward fails
            _scheduler_failure(
                plan,
                "warmup",
                [
                    frame(
                        f"{SRT}/managers/scheduler.py",
                        1022,
                        "event_loop_normal",
                        "result = self.run_batch(batch)",
                    )
                ],
                error,
            )
            return plan
        plan.add(
            secs["warmup"],
            'INFO:     127.0.0.1:41002 - "POST /generate HTTP/1.1" 200 OK',
            rank=None,
        )
    plan.add(0.0, "The server is fired up and ready to roll!", rank=None)
    plan.ready = True
    return plan
