"""The stand-in server's command line: SGLang 0.5.9's flags, parsed the way SGLang parses them.

The flags the model reads are declared here with SGLang's types and choices; every other flag
in the engine's flag table (``engines/flags/sglang-0.5.9.json``) is accepted and ignored, so a
space that passes the tuner's preflight also launches here. Unknown flags, wrong types and
bad choices end in argparse's ``error:`` line and exit code 2, as with SGLang.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from autotune.sim.model import SimConfig, SpecConfig
from autotune.sim.nccl import NcclConfig

FLAG_TABLE = "sglang-0.5.9.json"
SPEC_ALGOS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]
A2A_BACKENDS = ["none", "deepep", "mooncake", "mori", "ascend_fuseep", "flashinfer"]
ATTENTION_BACKENDS = [
    "triton",
    "torch_native",
    "flex_attention",
    "nsa",
    "cutlass_mla",
    "fa3",
    "fa4",
    "flashinfer",
    "flashmla",
    "trtllm_mla",
    "trtllm_mha",
    "dual_chunk_flash_attn",
    "aiter",
    "wave",
    "intel_amx",
    "ascend",
    "intel_xpu",
]
LOAD_FORMATS = [
    "auto",
    "pt",
    "safetensors",
    "npcache",
    "dummy",
    "sharded_state",
    "gguf",
    "bitsandbytes",
    "layered",
    "flash_rl",
    "remote",
    "remote_instance",
    "fastsafetensors",
    "private",
]
QUANTIZATIONS = [
    "awq",
    "fp8",
    "gptq",
    "marlin",
    "gptq_marlin",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "modelopt",
    "modelopt_fp4",
    "petit_nvfp4",
    "w8a8_int8",
    "w8a8_fp8",
    "moe_wna16",
    "qoq",
    "w4afp8",
    "mxfp4",
    "auto-round",
    "compressed-tensors",
    "modelslim",
    "quark_int4fp8_moe",
]
KV_DTYPES = ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"]


def _core(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--model-path", "--model", type=str, required=True, help="The model weights path.")
    add("--host", type=str, default="127.0.0.1", help="The host of the HTTP server.")
    add("--port", type=int, default=30000, help="The port of the HTTP server.")
    add("--tp-size", "--tensor-parallel-size", type=int, default=1, dest="tp_size")
    add("--dp-size", "--data-parallel-size", type=int, default=1, dest="dp_size")
    add("--pp-size", "--pipeline-parallel-size", type=int, default=1, dest="pp_size")
    add("--ep-size", "--expert-parallel-size", type=int, default=1, dest="ep_size")
    add("--trust-remote-code", action="store_true")
    add("--cuda-graph-max-bs", type=int, default=None)
    add("--cuda-graph-bs", type=int, nargs="+", default=None)
    add("--disable-cuda-graph", action="store_true")
    add("--mem-fraction-static", type=float, default=None)
    add("--max-running-requests", type=int, default=None)
    add("--chunked-prefill-size", type=int, default=None)
    add("--max-prefill-tokens", type=int, default=16384)
    add("--max-total-tokens", type=int, default=None)
    add("--disable-radix-cache", action="store_true")
    add("--enable-mixed-chunk", action="store_true")
    add("--enable-cache-report", action="store_true")
    add("--enable-metrics", action="store_true")
    add(
        "--schedule-policy",
        type=str,
        default="fcfs",
        choices=["lpm", "random", "fcfs", "dfs-weight", "lof", "priority"],
    )
    add("--attention-backend", type=str, default=None, choices=ATTENTION_BACKENDS)
    add("--enable-flashinfer-allreduce-fusion", action="store_true")
    add("--disable-custom-all-reduce", action="store_true")
    add("--enable-torch-symm-mem", action="store_true")
    add("--moe-a2a-backend", type=str, default="none", choices=A2A_BACKENDS)
    add("--speculative-algorithm", type=str, default=None, choices=SPEC_ALGOS)
    add("--speculative-draft-model-path", "--speculative-draft-model", type=str, default=None)
    add("--speculative-num-steps", type=int, default=None)
    add("--speculative-eagle-topk", type=int, default=None)
    add("--speculative-num-draft-tokens", type=int, default=None)
    add("--load-format", type=str, default="auto", choices=LOAD_FORMATS)
    add("--log-level", type=str, default="info")
    add("--quantization", type=str, default=None, choices=QUANTIZATIONS)
    add("--kv-cache-dtype", type=str, default="auto", choices=KV_DTYPES)
    add("--context-length", type=int, default=None)
    add("--served-model-name", type=str, default=None)
    add("--random-seed", type=int, default=None)
    add("--enable-dp-attention", action="store_true")
    add("--skip-server-warmup", action="store_true")


_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float}


def _table_flags() -> dict[str, Any]:
    try:
        text = resources.files("autotune.engines").joinpath("flags", FLAG_TABLE).read_text()
        flags: dict[str, Any] = json.loads(text)["flags"]
    except (OSError, ValueError, KeyError, ModuleNotFoundError):
        return {}  # the table is optional: the core flags above are what the model reads
    return flags


def _extras(parser: argparse.ArgumentParser) -> None:
    """Accept (and ignore) the rest of SGLang's flags, with their types and choices."""
    known = set(parser._option_string_actions)
    for name, spec in _table_flags().items():
        info = {"type": spec} if isinstance(spec, str) else dict(spec)
        names = [name, *info.get("aliases", [])]
        if any(n in known for n in names):
            continue
        kind = info.get("type", "str")
        kwargs: dict[str, Any] = {"default": None, "help": argparse.SUPPRESS}
        if kind == "store_true":
            kwargs = {"action": "store_true", "help": argparse.SUPPRESS}
        elif kind == "list":
            kwargs["nargs"] = "+"
        else:
            kwargs["type"] = _TYPES.get(kind, str)
            if "choices" in info:
                kwargs["choices"] = info["choices"]
        parser.add_argument(*names, **kwargs)
        known.update(names)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (``allow_abbrev`` left on, as in SGLang)."""
    parser = argparse.ArgumentParser(
        prog="python -m autotune.sim",
        description="autotune.sim: a SIMULATED SGLang server (figures are modelled, not measured).",
    )
    _core(parser)
    _extras(parser)
    return parser


@dataclass(frozen=True)
class Launch:
    """One parsed launch: the model's config plus what the server itself needs."""

    ns: argparse.Namespace
    config: SimConfig
    warnings: tuple[str, ...] = ()
    main_warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def model_path(self) -> str:
        return str(self.ns.model_path)

    @property
    def served_name(self) -> str:
        return str(self.ns.served_model_name or self.ns.model_path)


def resolve_spec(ns: argparse.Namespace, warnings: list[str]) -> SpecConfig | None:
    """SGLang's speculative-argument handling (asserts and adjustments included).

    Raises:
        AssertionError: ``--speculative-num-steps`` unset while topk or draft tokens are set.
    """
    algo = ns.speculative_algorithm
    if algo is None:
        return None
    if algo == "NGRAM":
        draft = ns.speculative_num_draft_tokens or 8
        return SpecConfig("NGRAM", num_steps=draft - 1, topk=1, num_draft_tokens=draft)
    steps, topk, draft = (
        ns.speculative_num_steps,
        ns.speculative_eagle_topk,
        ns.speculative_num_draft_tokens,
    )
    if steps is None:
        assert topk is None and draft is None
        steps, topk, draft = 3, 1, 4
    topk = 1 if topk is None else topk
    draft = steps + 1 if draft is None else draft
    if topk == 1 and draft != steps + 1:
        warnings.append(
            "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
            "speculative_eagle_topk == 1"
        )
        draft = steps + 1
    if ns.attention_backend == "trtllm_mha" and topk > 1:
        raise ValueError("trtllm_mha backend only supports topk = 1 for speculative decoding.")
    return SpecConfig(algo, num_steps=steps, topk=topk, num_draft_tokens=draft)


def to_launch(ns: argparse.Namespace, env: dict[str, str], nccl: NcclConfig) -> Launch:
    """Turn parsed flags and the environment into a :class:`Launch` (SGLang's post-init checks).

    Raises:
        AssertionError, ValueError: as SGLang's ServerArgs does, in the main process.
    """
    warnings: list[str] = []
    spec = resolve_spec(ns, warnings)
    max_running = ns.max_running_requests
    if spec is not None and spec.algorithm != "NGRAM" and max_running is None:
        warnings.append("Max running requests is reset to 48 for speculative decoding.")
        max_running = 48
    if ns.moe_a2a_backend != "none" and ns.ep_size != ns.tp_size:
        warnings.append(
            f"EP size is reset to {ns.tp_size} (the TP size) for --moe-a2a-backend "
            f"{ns.moe_a2a_backend}."
        )
        ns.ep_size = ns.tp_size
    max_bs = ns.cuda_graph_max_bs
    if ns.cuda_graph_bs:
        max_bs = max(ns.cuda_graph_bs)
    graphs = not ns.disable_cuda_graph
    chunked = 8192 if ns.chunked_prefill_size is None else ns.chunked_prefill_size
    fusion = ns.enable_flashinfer_allreduce_fusion
    config = SimConfig(
        tp=ns.tp_size,
        cuda_graph_max_bs=max_bs if max_bs is not None else 512,
        graphs=graphs,
        mem_fraction_static=ns.mem_fraction_static,
        max_running_requests=max_running,
        chunked_prefill_size=chunked,
        max_prefill_tokens=ns.max_prefill_tokens,
        max_total_tokens=ns.max_total_tokens,
        schedule_policy=ns.schedule_policy,
        radix_cache=not ns.disable_radix_cache,
        mixed_chunk=ns.enable_mixed_chunk,
        attention_backend=ns.attention_backend,
        flashinfer_fusion=fusion,
        disable_custom_all_reduce=ns.disable_custom_all_reduce,
        torch_symm_mem=ns.enable_torch_symm_mem,
        moe_a2a_backend=ns.moe_a2a_backend,
        spec=spec,
        kv_cache_dtype=ns.kv_cache_dtype,
        load_format=ns.load_format,
        context_length=ns.context_length or 262144,
        custom_ar_algo_env=env.get("SGLANG_CUSTOM_ALLREDUCE_ALGO") or None,
        nccl=nccl,
    )
    return Launch(ns=ns, config=config, warnings=tuple(warnings))
