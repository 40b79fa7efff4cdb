"""Hardware profiles of the stand-in server: the constants of the performance model.

``pcie-blackwell`` is the campaign's machine (8 RTX PRO 6000 Blackwell, SM120, PCIe Gen5, no
NVLink) serving Kimi-K2.5 INT4. Its constants are fitted so that the model reproduces the
article's figures (docs/simulator.md shows the fit). ``h200-nvlink`` is an 8x H200 SXM node with
NVLink, where the campaign's dead ends work. Select one with ``AUTOTUNE_SIM_PROFILE``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

PROFILE_ENV = "AUTOTUNE_SIM_PROFILE"
DEFAULT_PROFILE = "pcie-blackwell"


@dataclass(frozen=True)
class ProtoConstants:
    """One NCCL protocol on one interconnect (microseconds, bytes per microsecond).

    Attributes:
        hop_us: latency of one ring step at 512 threads.
        chan_us: per-channel, per-collective overhead (doorbells and flag polling).
        bw_per_channel: effective bytes/us one channel moves at 512 threads.
        payload: wire bytes per payload byte (LL sends a flag with every 4 data bytes).
        tuner_hop_factor: how NCCL's own tuner sees ``hop_us`` (below 1: it underestimates).
    """

    hop_us: float
    chan_us: float
    bw_per_channel: float
    payload: float
    tuner_hop_factor: float = 1.0


@dataclass(frozen=True)
class HardwareProfile:
    """Constants of one simulated machine and model (per GPU unless stated)."""

    name: str
    gpu_name: str
    capability: tuple[int, int]
    n_gpus: int
    total_mem_gb: float
    nvlink: bool
    # Model: Kimi-K2.5 INT4 (DeepSeek-V3 architecture, MLA attention).
    model_arch: str = "KimiK25ForConditionalGeneration"
    layers: int = 61
    allreduces_per_layer: int = 2
    hidden_bytes: int = 7168 * 2  # one token's hidden state in bf16
    kv_cell_bytes: int = 61 * 576 * 2  # MLA latent + rope per token, all layers
    weights_gb: float = 72.90
    context_gb: float = 0.9116  # CUDA context, torch, cuBLAS workspaces
    # Compute of one forward (ms): c1 * (1 + alpha * (tokens**0.6 - 1)).
    compute_ms_1: float = 3.5
    compute_alpha: float = 0.568
    prefill_ms_per_token: float = 0.045
    # Decode attention reads every running sequence's KV each step: ms per 1k context tokens
    # (70 KB of MLA latent per token at ~1.5 TB/s).
    decode_kv_ms_per_1k: float = 0.05
    graph_us_per_bs: float = 2.662  # replay overhead grows with the captured pool
    eager_ms: float = 8.5  # kernel-launch overhead of one forward without CUDA graphs
    # NCCL (ring over n_gpus).
    nccl_t0_us: float = 6.0
    nccl_default_channels: int = 16
    nccl_contention_channels: float = 8.0  # PCIe switch contention knee
    protos: dict[str, ProtoConstants] = field(default_factory=dict)
    default_protos: tuple[str, ...] = ("LL", "Simple")
    p2p_factor: dict[str, float] = field(default_factory=dict)
    # Other allreduce paths: None = not usable on this machine.
    custom_ar_us: tuple[float, float] | None = None  # (fixed us, bytes per us)
    custom_ar_pcie_forced: tuple[float, float] | None = None
    fusion_supported: bool = False
    symm_mem_supported: bool = False
    a2a_working: tuple[str, ...] = ()
    # Speculative drafting (ms per draft step at one token).
    draft_ms: float = 0.5
    spec_overhead_ms: float = 0.6
    # Memory (GB): graphs, activations, reserve behind the default --mem-fraction-static.
    graph_gb_base: float = 0.30
    graph_gb_per_bs: float = 0.011
    activation_gb_per_1k_prefill: float = 0.15
    capture_margin_gb: float = 0.5
    # Startup, realistic seconds.
    load_gb_per_s: float = 1.5
    graph_capture_s_base: float = 8.0
    graph_capture_s_per_bs: float = 0.11


_PCIE_P2P = {
    # NCCL_P2P_LEVEL on a PCIe machine: levels that forbid P2P send everything through
    # host shared memory; SYS/PHB allow P2P across the CPU root complex, which is slower here.
    "LOC": 1.30,
    "NVL": 1.30,
    "NVB": 1.30,
    "C2C": 1.30,
    "PIX": 1.12,
    "PXB": 1.0,
    "P2C": 1.0,
    "PXN": 1.0,
    "PHB": 1.03,
    "SYS": 1.08,
}

PCIE_BLACKWELL = HardwareProfile(
    name="pcie-blackwell",
    gpu_name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    capability=(12, 0),
    n_gpus=8,
    total_mem_gb=95.59,
    nvlink=False,
    protos={
        "LL": ProtoConstants(hop_us=2.2, chan_us=0.2, bw_per_channel=784.0, payload=2.0),
        # LL128 is off by default without NVLink; forced on PCIe it is neither fast nor cheap.
        "LL128": ProtoConstants(hop_us=3.2, chan_us=0.6, bw_per_channel=700.0, payload=1.07),
        "Simple": ProtoConstants(
            hop_us=12.9, chan_us=0.43, bw_per_channel=1272.0, payload=1.0, tuner_hop_factor=0.41
        ),
    },
    p2p_factor=_PCIE_P2P,
    custom_ar_pcie_forced=(150.0, 600.0),
)

H200_NVLINK = HardwareProfile(
    name="h200-nvlink",
    gpu_name="NVIDIA H200",
    capability=(9, 0),
    n_gpus=8,
    total_mem_gb=139.8,
    nvlink=True,
    compute_ms_1=1.45,
    prefill_ms_per_token=0.02,
    decode_kv_ms_per_1k=0.015,
    graph_us_per_bs=1.0,
    eager_ms=6.0,
    nccl_t0_us=5.0,
    nccl_contention_channels=64.0,
    protos={
        "LL": ProtoConstants(hop_us=0.55, chan_us=0.1, bw_per_channel=6000.0, payload=2.0),
        "LL128": ProtoConstants(hop_us=0.75, chan_us=0.1, bw_per_channel=12000.0, payload=1.07),
        "Simple": ProtoConstants(hop_us=2.2, chan_us=0.1, bw_per_channel=20000.0, payload=1.0),
    },
    default_protos=("LL", "LL128", "Simple"),
    p2p_factor={"LOC": 2.5, "PIX": 2.5, "PXB": 2.5, "P2C": 2.5, "PXN": 2.5, "PHB": 2.5, "SYS": 2.5},
    custom_ar_us=(7.0, 60000.0),
    fusion_supported=True,
    symm_mem_supported=True,
    a2a_working=("deepep", "flashinfer"),
    draft_ms=0.25,
    spec_overhead_ms=0.35,
    load_gb_per_s=4.0,
    graph_capture_s_base=5.0,
    graph_capture_s_per_bs=0.06,
)

PROFILES: dict[str, HardwareProfile] = {p.name: p for p in (PCIE_BLACKWELL, H200_NVLINK)}


def profile_from_env(env: dict[str, str] | None = None) -> HardwareProfile:
    """The profile named by ``AUTOTUNE_SIM_PROFILE`` (default ``pcie-blackwell``).

    Raises:
        KeyError: the name is not a known profile.
    """
    source = os.environ if env is None else env
    name = source.get(PROFILE_ENV, "").strip() or DEFAULT_PROFILE
    if name not in PROFILES:
        raise KeyError(f"{PROFILE_ENV}={name!r}: known profiles are {', '.join(sorted(PROFILES))}")
    return PROFILES[name]
