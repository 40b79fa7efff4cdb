"""All-reduce latency benchmark, run under ``torch.distributed.run`` (one process per GPU).

For each message size it times ``all_reduce`` (CUDA events on GPUs, ``perf_counter`` with
a synchronize otherwise), takes the slowest rank per iteration (a collective is as slow as
its slowest member), and rank 0 prints one line::

    AUTOTUNE_METRICS {"allreduce_42k_p50_us": ..., "allreduce_42k_p99_us": ..., ...}

``latency_p50_us``/``latency_p99_us`` repeat the first (primary) size. The backend is NCCL
when CUDA is available, else gloo, so the same job runs on a CPU-only machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from typing import Any

METRICS_PREFIX = "AUTOTUNE_METRICS "
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2}
_DTYPES = {"bf16": 2, "fp16": 2, "fp32": 4}


def parse_size(text: str) -> int:
    """``42K`` -> 43008 bytes; ``1M`` -> 1048576; ``512`` -> 512."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; write e.g. 42K, 1M or 4096")
    return int(match.group(1)) * _UNITS[unit]


def size_label(text: str) -> str:
    """The metric-name form of a size: ``42K`` -> ``42k``."""
    return re.sub(r"[^0-9a-z]", "", text.lower().removesuffix("b") or text.lower())


def size_list(text: str) -> list[tuple[str, int]]:
    """``"42K,1M"`` -> ``[("42K", 43008), ("1M", 1048576)]`` (an argparse type)."""
    labels = [s.strip() for s in text.split(",") if s.strip()]
    if not labels:
        raise argparse.ArgumentTypeError("give at least one size, e.g. 42K")
    return [(label, parse_size(label)) for label in labels]


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=size_list, default="42K", help="comma-separated message sizes, e.g. 42K,1M"
    )
    parser.add_argument("--dtype", default="bf16", choices=sorted(_DTYPES))
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    labels = [label for label, _ in args.sizes]
    sizes = [nbytes for _, nbytes in args.sizes]
    if args.iters < 1 or args.warmup < 0:
        print("collective_bench: need --iters >= 1 and --warmup >= 0", file=sys.stderr)
        return 2

    import torch
    import torch.distributed as dist

    use_cuda = torch.cuda.is_available() and args.backend != "gloo"
    backend = args.backend if args.backend != "auto" else ("nccl" if use_cuda else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]

    def sync() -> None:
        if use_cuda:
            torch.cuda.synchronize(device)

    metrics: dict[str, Any] = {"world_size": world}
    try:
        for label, nbytes in zip(labels, sizes, strict=True):
            numel = max(1, nbytes // _DTYPES[args.dtype])
            buf = torch.ones(numel, dtype=dtype, device=device)
            for _ in range(args.warmup):
                dist.all_reduce(buf)
            # Correctness once: a broken transport must not pass as fast.
            buf.fill_(1)
            dist.all_reduce(buf)
            sync()
            if not bool((buf == world).all()):
                print(f"collective_bench: wrong all_reduce result at {label}", file=sys.stderr)
                return 1
            samples: list[float] = []
            for _ in range(args.iters):
                dist.barrier()
                sync()
                if use_cuda:
                    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                    start.record()
                    dist.all_reduce(buf)
                    end.record()
                    end.synchronize()
                    samples.append(start.elapsed_time(end) * 1000.0)  # ms -> us
                else:
                    t0 = time.perf_counter()
                    dist.all_reduce(buf)
                    sync()
                    samples.append((time.perf_counter() - t0) * 1e6)
            # Per iteration, the slowest rank's time is the collective's latency.
            times = torch.tensor(samples, dtype=torch.float64, device=device)
            dist.all_reduce(times, op=dist.ReduceOp.MAX)
            worst = times.cpu().tolist()
            key = f"allreduce_{size_label(label)}"
            p50 = percentile(worst, 50)
            metrics[f"{key}_p50_us"] = p50
            metrics[f"{key}_p99_us"] = percentile(worst, 99)
            metrics[f"{key}_mean_us"] = sum(worst) / len(worst)
            # Bus bandwidth as nccl-tests defines it for all_reduce: 2(n-1)/n x size / time.
            metrics[f"{key}_busbw_gbps"] = (
                (numel * _DTYPES[args.dtype]) / (p50 * 1e-6) * (2 * (world - 1) / world) / 1e9
            )
            if rank == 0:
                print(
                    f"all_reduce {label} ({numel} x {args.dtype}, {world} ranks, {backend}): "
                    f"p50 {p50:.1f} us, p99 {metrics[f'{key}_p99_us']:.1f} us",
                    flush=True,
                )
        primary = f"allreduce_{size_label(labels[0])}"
        metrics["latency_p50_us"] = metrics[f"{primary}_p50_us"]
        metrics["latency_p99_us"] = metrics[f"{primary}_p99_us"]
        if rank == 0:
            print(METRICS_PREFIX + json.dumps(metrics, sort_keys=True), flush=True)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
