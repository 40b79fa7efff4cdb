"""The performance and memory model of the stand-in server: pure functions, no I/O.

Time of one forward pass over ``tokens`` tokens (docs/simulator.md has the equations)::

    forward = compute(tokens) + L * A * allreduce(tokens * hidden_bytes) + launch_overhead

with L = 61 layers and A = 2 allreduces per layer (122 per forward). ``allreduce`` follows
the path SGLang would take (custom allreduce, FlashInfer fusion, torch symmetric memory or
NCCL); NCCL is modelled per protocol and algorithm from the NCCL environment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from autotune.sim.nccl import NcclConfig
from autotune.sim.profiles import HardwareProfile, ProtoConstants

LAUNCH_ALGOS = ("Ring", "Tree")  # the algorithms a single-node allreduce can use here
SPEC_BASE_ACCEPT = {"EAGLE3": 0.60, "EAGLE": 0.52, "NEXTN": 0.62, "STANDALONE": 0.55, "NGRAM": 0.30}
TOPK_GAIN_EXPONENT = 0.35


class NcclNoAlgorithm(RuntimeError):
    """NCCL finds no algorithm/protocol for AllReduce among those allowed (ncclInvalidUsage)."""


@dataclass(frozen=True)
class SpecConfig:
    """Speculative decoding after SGLang's argument checks (all fields resolved)."""

    algorithm: str
    num_steps: int
    topk: int
    num_draft_tokens: int


@dataclass(frozen=True)
class SimConfig:
    """Everything the model reads from one launch (flags + environment)."""

    tp: int = 8
    cuda_graph_max_bs: int = 512
    graphs: bool = True
    mem_fraction_static: float | None = None  # None: SGLang's default for the machine
    max_running_requests: int | None = None
    chunked_prefill_size: int = 8192
    max_prefill_tokens: int = 16384
    max_total_tokens: int | None = None  # caps the KV pool (SGLang's --max-total-tokens)
    schedule_policy: str = "fcfs"
    radix_cache: bool = True
    mixed_chunk: bool = False
    attention_backend: str | None = None
    flashinfer_fusion: bool = False
    disable_custom_all_reduce: bool = False
    torch_symm_mem: bool = False
    moe_a2a_backend: str = "none"
    spec: SpecConfig | None = None
    kv_cache_dtype: str = "auto"
    load_format: str = "auto"
    context_length: int = 262144
    custom_ar_algo_env: str | None = None  # SGLANG_CUSTOM_ALLREDUCE_ALGO (forces the kernel)
    nccl: NcclConfig = field(default_factory=NcclConfig)


# ---------------------------------------------------------------- allreduce


def _proto_time(
    nbytes: float,
    proto: ProtoConstants,
    name: str,
    algo: str,
    nccl: NcclConfig,
    prof: HardwareProfile,
    *,
    tuner: bool = False,
) -> float:
    n = prof.n_gpus
    nch = nccl.channels(prof.nccl_default_channels)
    tau = nccl.nthreads / 512.0
    steps = 2 * (n - 1)
    hop = proto.hop_us * (0.55 + 0.45 * tau)
    if tuner:
        hop *= proto.tuner_hop_factor
    if algo == "Tree":
        hop *= 1.15  # a single-node tree is a chain: same hop count, heavier steps
    data = (2.0 if algo == "Tree" else 2.0 * (n - 1) / n) * nbytes * proto.payload
    bandwidth = proto.bw_per_channel * nch * tau**0.35
    if name != "Simple":
        # LL-family flag polling contends on the PCIe switch beyond a few channels.
        bandwidth /= 1.0 + (nch / prof.nccl_contention_channels) ** 2
    time = prof.nccl_t0_us + steps * hop + proto.chan_us * nch + data / bandwidth
    if name == "Simple":
        # Simple pipelines through NCCL_BUFFSIZE/8-byte slots: more slots, more round trips.
        slot = nccl.buffsize / 8
        per_step = nbytes / n / nch
        time += max(0, math.ceil(per_step / slot) - 1) * hop
    if not tuner and nccl.p2p_level is not None:
        time *= prof.p2p_factor.get(nccl.p2p_level, 1.0)
    return float(time)


def nccl_choices(nccl: NcclConfig, prof: HardwareProfile) -> list[tuple[str, str]]:
    """(algorithm, protocol) pairs NCCL may use for AllReduce here.

    Raises:
        NcclNoAlgorithm: the NCCL_ALGO/NCCL_PROTO restrictions leave nothing.
    """
    algos = [a for a in LAUNCH_ALGOS if nccl.algos is None or a in nccl.algos]
    protos = [
        p for p in prof.protos if (p in nccl.protos if nccl.protos else p in prof.default_protos)
    ]
    if not algos or not protos:
        raise NcclNoAlgorithm(
            "no algorithm/protocol available for function AllReduce with datatype ncclBfloat16"
        )
    return [(a, p) for a in algos for p in protos]


def nccl_allreduce(
    nbytes: float, nccl: NcclConfig, prof: HardwareProfile
) -> tuple[float, str, str]:
    """Latency (us) of one NCCL allreduce of ``nbytes``, with the algorithm and protocol used.

    NCCL's tuner picks the pair its own cost model rates fastest; on PCIe that model
    underestimates Simple's per-step latency, so it leaves LL too early (the campaign's 42 KB
    verify allreduces ran at ~200 us).
    """
    choices = nccl_choices(nccl, prof)
    algo, proto = min(
        choices,
        key=lambda ap: _proto_time(
            nbytes, prof.protos[ap[1]], ap[1], ap[0], nccl, prof, tuner=True
        ),
    )
    return _proto_time(nbytes, prof.protos[proto], proto, algo, nccl, prof), algo, proto


def allreduce_path(cfg: SimConfig, prof: HardwareProfile) -> str:
    """Which allreduce implementation serves small TP allreduces: custom, fusion, symm_mem, nccl."""
    if cfg.flashinfer_fusion and prof.fusion_supported:
        return "fusion"
    if not cfg.disable_custom_all_reduce:
        if prof.custom_ar_us is not None:
            return "custom"
        if cfg.custom_ar_algo_env and prof.custom_ar_pcie_forced is not None:
            return "custom_pcie"
    if cfg.torch_symm_mem and prof.symm_mem_supported:
        return "symm_mem"
    return "nccl"


def allreduce_us(nbytes: float, cfg: SimConfig, prof: HardwareProfile) -> float:
    """Latency (us) of one TP allreduce of ``nbytes`` on the path SGLang takes."""
    path = allreduce_path(cfg, prof)
    small = nbytes <= 8 * 1024 * 1024
    if path in ("custom", "fusion") and small and prof.custom_ar_us is not None:
        fixed, bw = prof.custom_ar_us
        base = fixed + nbytes / bw
        return base * (0.8 if path == "fusion" else 1.0)
    if path == "custom_pcie" and small and prof.custom_ar_pcie_forced is not None:
        # All-to-all pushes from 8 GPUs saturate the shared PCIe fabric.
        fixed, bw = prof.custom_ar_pcie_forced
        return fixed + nbytes / bw
    if path == "symm_mem" and small:
        return 9.0 + nbytes / 40000.0
    return nccl_allreduce(nbytes, cfg.nccl, prof)[0]


# ---------------------------------------------------------------- forward passes


def compute_ms(tokens: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """GPU compute of one forward over ``tokens`` tokens (MoE: more tokens, more experts read)."""
    base = prof.compute_ms_1 * (1.0 + prof.compute_alpha * (max(tokens, 1) ** 0.6 - 1.0))
    if cfg.attention_backend == "triton":
        base *= 1.04
    if cfg.flashinfer_fusion and prof.fusion_supported:
        base *= 0.97  # the fused residual-add + RMSNorm kernels disappear
    return float(base)


def captured(tokens_per_seq: int, batch: int, cfg: SimConfig) -> bool:
    """Whether a decode/verify batch replays a CUDA graph."""
    return cfg.graphs and batch <= cfg.cuda_graph_max_bs and tokens_per_seq * batch <= 8192


def launch_overhead_ms(is_captured: bool, cfg: SimConfig, prof: HardwareProfile) -> float:
    """Per-forward overhead: graph replay (grows with the captured pool) or eager launches."""
    if is_captured:
        return prof.graph_us_per_bs * cfg.cuda_graph_max_bs / 1000.0
    return prof.eager_ms


def forward_ms(tokens: int, cfg: SimConfig, prof: HardwareProfile, *, is_captured: bool) -> float:
    """One target-model forward over ``tokens`` tokens (decode, verify or prefill chunk)."""
    n_ar = prof.layers * prof.allreduces_per_layer
    ar = allreduce_us(tokens * prof.hidden_bytes, cfg, prof) / 1000.0
    return compute_ms(tokens, cfg, prof) + n_ar * ar + launch_overhead_ms(is_captured, cfg, prof)


def decode_step_ms(batch: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """One decode step of ``batch`` sequences (one new token each)."""
    return forward_ms(batch, cfg, prof, is_captured=captured(1, batch, cfg))


def prefill_ms(prompt_tokens: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """Prefill of one prompt (eager, chunked by --chunked-prefill-size)."""
    chunk = cfg.chunked_prefill_size if cfg.chunked_prefill_size > 0 else prompt_tokens
    total, left = 0.0, max(prompt_tokens, 1)
    while left > 0:
        n = min(left, max(chunk, 1))
        total += forward_ms(n, cfg, prof, is_captured=False) + prof.prefill_ms_per_token * n
        left -= n
    return total


# ---------------------------------------------------------------- speculative decoding


def accept_probability(spec: SpecConfig) -> float:
    """Per-position acceptance probability; a wider tree (topk) raises it, with diminishing gain."""
    base = SPEC_BASE_ACCEPT.get(spec.algorithm, 0.5)
    depth = max(spec.num_steps, 1)
    width = min(max((spec.num_draft_tokens - 1) / depth, 1.0), float(max(spec.topk, 1)))
    return float(1.0 - (1.0 - base) * width ** (-TOPK_GAIN_EXPONENT))


def accept_depth(spec: SpecConfig) -> int:
    """How many draft positions one verify can accept."""
    return max(0, min(spec.num_steps, spec.num_draft_tokens - 1))


def expected_accept_length(spec: SpecConfig) -> float:
    """Expected tokens per verify (the accepted drafts plus the verify's own token)."""
    p = accept_probability(spec)
    return 1.0 + sum(p**i for i in range(1, accept_depth(spec) + 1))


def draft_step_ms(batch: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """One draft step for ``batch`` sequences (topk candidates each)."""
    spec = cfg.spec
    assert spec is not None
    if spec.algorithm == "NGRAM":
        return 0.05  # a CPU-side n-gram lookup, no GPU forward
    tokens = batch * max(spec.topk, 1)
    layers = 4 if spec.algorithm == "STANDALONE" else 1
    compute = prof.draft_ms * layers * (1.0 + 0.3 * (tokens**0.6 - 1.0))
    ar = allreduce_us(tokens * prof.hidden_bytes, cfg, prof) / 1000.0
    return float(compute + 2 * layers * ar)


def spec_cycle_ms(batch: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """One draft-then-verify cycle for ``batch`` sequences."""
    spec = cfg.spec
    assert spec is not None
    steps = spec.num_draft_tokens - 1 if spec.algorithm == "NGRAM" else spec.num_steps
    draft = steps * draft_step_ms(batch, cfg, prof)
    d = spec.num_draft_tokens
    verify = forward_ms(batch * d, cfg, prof, is_captured=captured(d, batch, cfg))
    return draft + verify + prof.spec_overhead_ms


def verify_ms(cfg: SimConfig, prof: HardwareProfile, batch: int = 1) -> float:
    """The verify forward alone (the campaign's bottleneck)."""
    assert cfg.spec is not None
    d = cfg.spec.num_draft_tokens
    return forward_ms(batch * d, cfg, prof, is_captured=captured(d, batch, cfg))


# ---------------------------------------------------------------- throughput


def token_interval_ms(batch: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """Mean time per generated token of one stream when ``batch`` streams decode together."""
    if cfg.spec is None:
        return decode_step_ms(batch, cfg, prof)
    return spec_cycle_ms(batch, cfg, prof) / expected_accept_length(cfg.spec)


def stream_tok_s(cfg: SimConfig, prof: HardwareProfile, batch: int = 1) -> float:
    """Decode tokens/s of one stream (the article's figures are ``batch=1``)."""
    return 1000.0 / token_interval_ms(batch, cfg, prof)


def aggregate_tok_s(concurrency: int, cfg: SimConfig, prof: HardwareProfile) -> float:
    """Decode tokens/s of all streams together at a concurrency (sub-linear in it)."""
    batch = max(1, min(concurrency, max_running_requests(cfg, prof)))
    return batch * stream_tok_s(cfg, prof, batch)


# ---------------------------------------------------------------- memory


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory after each startup phase (GB, as SGLang prints them)."""

    total_gb: float
    mem_fraction_static: float
    avail_before_load_gb: float
    weights_gb: float
    avail_after_load_gb: float
    nccl_reserve_gb: float  # the modelled NCCL/graph interaction (docs/simulator.md)
    kv_gb: float
    max_total_num_tokens: int
    avail_after_pool_gb: float
    graph_gb: float
    graph_need_gb: float
    graph_fits: bool


def nccl_buffer_gb(nccl: NcclConfig, prof: HardwareProfile) -> float:
    """NCCL's own buffers: per channel, NCCL_BUFFSIZE for Simple plus 384 KiB for LL/LL128."""
    nch = nccl.channels(prof.nccl_default_channels)
    return nch * (nccl.buffsize + 384 * 1024) / 2**30


def _ramp(x: float, full: float, none: float) -> float:
    """1 at or below ``full``, 0 at or above ``none``, linear in log2 between."""
    if x <= full:
        return 1.0
    if x >= none:
        return 0.0
    return (math.log2(none) - math.log2(x)) / (math.log2(none) - math.log2(full))


def starved_staging(nccl: NcclConfig, prof: HardwareProfile) -> float:
    """0..1: how starved NCCL's staging is (few channels, small buffers, few threads together)."""
    nch = nccl.channels(prof.nccl_default_channels)
    return (
        _ramp(nch, 2, 4)
        * _ramp(nccl.buffsize, 256 * 1024, 1024 * 1024)
        * _ramp(nccl.nthreads, 64, 256)
    )


def graph_gb(cfg: SimConfig, prof: HardwareProfile) -> float:
    """Memory CUDA graphs take, growing with --cuda-graph-max-bs (more for speculative)."""
    if not cfg.graphs:
        return 0.0
    base = prof.graph_gb_base + prof.graph_gb_per_bs * cfg.cuda_graph_max_bs
    return base * (1.3 if cfg.spec is not None else 1.0)


def draft_weights_gb(cfg: SimConfig) -> float:
    """Per-GPU weights of the draft model."""
    if cfg.spec is None or cfg.spec.algorithm == "NGRAM":
        return 0.0
    return 2.2 if cfg.spec.algorithm == "STANDALONE" else 0.45


def _graph_need_gb(cfg: SimConfig, prof: HardwareProfile) -> float:
    # The largest prefill forward sizes the activations: one chunk, or without chunking a
    # whole --max-prefill-tokens batch (or more: one long prompt may exceed it).
    chunk = cfg.chunked_prefill_size if cfg.chunked_prefill_size > 0 else cfg.max_prefill_tokens
    activations = prof.activation_gb_per_1k_prefill * max(chunk, 2048) / 1024
    return graph_gb(cfg, prof) + activations + prof.capture_margin_gb


def _avail_after_load_gb(cfg: SimConfig, prof: HardwareProfile) -> tuple[float, float]:
    before = prof.total_mem_gb - prof.context_gb - nccl_buffer_gb(cfg.nccl, prof)
    return before, before - prof.weights_gb - draft_weights_gb(cfg)


def default_mem_fraction(cfg: SimConfig, prof: HardwareProfile) -> float:
    """The default --mem-fraction-static: what leaves room for graphs, activations and 1.5 GB."""
    after = _avail_after_load_gb(cfg, prof)[1]
    return round(min(max(1.0 - (_graph_need_gb(cfg, prof) + 1.5) / after, 0.3), 0.9), 3)


def memory_plan(cfg: SimConfig, prof: HardwareProfile) -> MemoryPlan:
    """Size the KV pool and check that graph capture fits in what is left.

    ``kv = mem_fraction_static * avail_after_load - nccl_reserve``: the fraction applies to the
    memory left after the weights (a modelling choice, docs/simulator.md: the campaign ran at
    0.55 with 21.7 GB free, which SGLang's own formula would refuse). SGLang raises
    "Not enough memory" when the pool comes out empty.
    """
    f = cfg.mem_fraction_static
    if f is None:
        f = default_mem_fraction(cfg, prof)
    before, after = _avail_after_load_gb(cfg, prof)
    graphs = graph_gb(cfg, prof)
    # Starved NCCL staging splits every captured collective into many more steps; the graph
    # reserve taken at pool sizing grows with it (a modelling choice, docs/simulator.md).
    starved = starved_staging(cfg.nccl, prof)
    reserve = 30.0 * starved**2 * max(graphs, prof.graph_gb_base * 3)
    kv = f * after - reserve
    cell = prof.kv_cell_bytes * (0.5 if cfg.kv_cache_dtype.startswith("fp8") else 1.0)
    if cfg.spec is not None and cfg.spec.algorithm != "NGRAM":
        cell *= 1.0 + 1.0 / prof.layers  # the draft model's own KV layer
    tokens = int(kv * 2**30 / cell) if kv > 0 else 0
    if cfg.max_total_tokens is not None and tokens > 0:
        tokens = min(tokens, max(cfg.max_total_tokens, 1))
    after_pool = after - max(kv, 0.0)
    need = _graph_need_gb(cfg, prof)
    return MemoryPlan(
        total_gb=prof.total_mem_gb,
        mem_fraction_static=f,
        avail_before_load_gb=before,
        weights_gb=prof.weights_gb + draft_weights_gb(cfg),
        avail_after_load_gb=after,
        nccl_reserve_gb=reserve,
        kv_gb=kv,
        max_total_num_tokens=tokens,
        avail_after_pool_gb=after_pool,
        graph_gb=graphs,
        graph_need_gb=need,
        graph_fits=need <= after_pool - reserve,
    )


def max_running_requests(cfg: SimConfig, prof: HardwareProfile) -> int:
    """The scheduler's cap on running requests (SGLang: 48 under EAGLE unless set)."""
    if cfg.max_running_requests is not None:
        return max(1, cfg.max_running_requests)
    if cfg.spec is not None and cfg.spec.algorithm != "NGRAM":
        return 48
    tokens = memory_plan(cfg, prof).max_total_num_tokens
    return max(1, min(4096, tokens // 2))


# ---------------------------------------------------------------- startup


def startup_seconds(cfg: SimConfig, prof: HardwareProfile) -> dict[str, float]:
    """Realistic duration of each startup phase (seconds)."""
    weights_total = (prof.weights_gb + draft_weights_gb(cfg)) * prof.n_gpus
    load = 20.0 if cfg.load_format == "dummy" else weights_total / prof.load_gb_per_s
    capture = 0.0
    if cfg.graphs:
        capture = prof.graph_capture_s_base + prof.graph_capture_s_per_bs * cfg.cuda_graph_max_bs
        capture *= 1.6 if cfg.spec is not None else 1.0
    return {
        "init": 6.0 + 0.5 * cfg.tp,
        "load": load,
        "memory_pool": 4.0,
        "graph_capture": capture,
        "http": 2.0,
        "warmup": 3.0,
    }
