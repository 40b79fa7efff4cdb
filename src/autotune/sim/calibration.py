"""The model's calibration points against the campaign article, computed (not typed in).

``python -m autotune.sim.calibration`` prints the markdown table in docs/simulator.md; a test
checks that the document shows what the model computes.
"""

from __future__ import annotations

import dataclasses
import itertools

from autotune.sim.model import (
    SimConfig,
    SpecConfig,
    allreduce_us,
    compute_ms,
    memory_plan,
    nccl_allreduce,
    stream_tok_s,
    verify_ms,
)
from autotune.sim.nccl import NcclConfig
from autotune.sim.profiles import PCIE_BLACKWELL, HardwareProfile

BASE = SimConfig()
EAGLE = dataclasses.replace(BASE, spec=SpecConfig("EAGLE3", 2, 1, 3))
SMALL_NCCL = NcclConfig(min_channels=1, max_channels=2, buffsize=131072, nthreads=64)


def _best_eagle(prof: HardwareProfile) -> tuple[float, str]:
    best, label = 0.0, ""
    for bs, ch, th, steps in itertools.product((128, 512), (None, 4, 6, 8), (256, 512), (2, 3, 4)):
        nccl = NcclConfig(protos=frozenset({"LL"}), max_channels=ch, nthreads=th)
        cfg = dataclasses.replace(
            BASE, cuda_graph_max_bs=bs, nccl=nccl, spec=SpecConfig("EAGLE3", steps, 1, steps + 1)
        )
        value = stream_tok_s(cfg, prof)
        if value > best:
            best = value
            label = (
                f"EAGLE-3 steps {steps}, max-bs {bs}, NCCL_PROTO=LL, "
                f"NCCL_MAX_NCHANNELS={ch or 'default'}, NCCL_NTHREADS={th}"
            )
    return best, label


def calibration_rows(prof: HardwareProfile = PCIE_BLACKWELL) -> list[tuple[str, str, str]]:
    """(quantity, the article's figure, the model's figure) for the campaign machine."""
    v3 = 3 * prof.hidden_bytes
    n_ar = prof.layers * prof.allreduces_per_layer
    ar_verify = allreduce_us(v3, EAGLE, prof)
    verify = verify_ms(EAGLE, prof)
    small = memory_plan(dataclasses.replace(BASE, nccl=SMALL_NCCL), prof)
    base_mem = memory_plan(BASE, prof)
    eagle_best, eagle_label = _best_eagle(prof)
    ll_tuned = min(
        nccl_allreduce(
            v3, NcclConfig(protos=frozenset({"LL"}), max_channels=ch, nthreads=th), prof
        )[0]
        for ch, th in itertools.product((2, 4, 6, 8, 12, 16), (128, 256, 512))
    )
    best_base = max(
        stream_tok_s(dataclasses.replace(BASE, cuda_graph_max_bs=bs, nccl=n), prof)
        for bs in (128, 512)
        for n in (
            NcclConfig(max_channels=ch, nthreads=th) for ch in (None, 4, 8) for th in (256, 512)
        )
    )
    tok = {
        "512": stream_tok_s(BASE, prof),
        "128": stream_tok_s(dataclasses.replace(BASE, cuda_graph_max_bs=128), prof),
        "eagle": stream_tok_s(EAGLE, prof),
        "custom": stream_tok_s(dataclasses.replace(BASE, custom_ar_algo_env="1stage"), prof),
    }
    few = "1-2 channels/128 KB/64 threads"
    return [
        ("baseline decode, --cuda-graph-max-bs 512", "82 tok/s", f"{tok['512']:.1f} tok/s"),
        ("baseline decode, --cuda-graph-max-bs 128", "89.5 tok/s", f"{tok['128']:.1f} tok/s"),
        ("EAGLE-3 (steps 2, topk 1, 3 draft tokens)", "60 tok/s", f"{tok['eagle']:.1f} tok/s"),
        ("verify pass", "~30 ms", f"{verify:.1f} ms"),
        ("allreduce time in the verify pass", "~24 ms", f"{n_ar * ar_verify / 1000:.1f} ms"),
        ("compute in the verify pass", "5-8 ms", f"{compute_ms(3, EAGLE, prof):.1f} ms"),
        ("one 42 KB allreduce (NCCL default: Simple)", "150-300 us", f"{ar_verify:.0f} us"),
        ("custom allreduce forced over PCIe", "38 tok/s", f"{tok['custom']:.1f} tok/s"),
        (
            "avail mem after weights, default NCCL",
            "21.71 GB",
            f"{base_mem.avail_after_load_gb:.2f} GB",
        ),
        (f"avail mem after weights, {few}", "21.78 GB", f"{small.avail_after_load_gb:.2f} GB"),
        (f"KV pool with {few}", "Not enough memory", f"{small.max_total_num_tokens} tokens"),
        (
            "42 KB allreduce, NCCL_PROTO=LL, best channels/threads",
            "~80-100 us",
            f"{ll_tuned:.0f} us",
        ),
        (
            "best baseline over max-bs x channels x threads",
            "(model only)",
            f"{best_base:.1f} tok/s",
        ),
        (f"best EAGLE-3 ({eagle_label})", "beats the baseline", f"{eagle_best:.1f} tok/s"),
    ]


def markdown_table(prof: HardwareProfile = PCIE_BLACKWELL) -> str:
    """The calibration rows as a markdown table."""
    lines = ["| quantity | article | model |", "| --- | --- | --- |"]
    lines += [f"| {q} | {a} | {m} |" for q, a, m in calibration_rows(prof)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
