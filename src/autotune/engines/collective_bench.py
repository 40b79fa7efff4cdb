"""All-reduce latency benchmark, run under ``torch.distributed.run`` (one process per GPU).

One all-reduce timed between barriers measures the harness (barrier, event record, launch
latency) as much as the collective: on two NVLink H200s (2026-11-30) it read 63 us at 42 KB
where 1000 calls back to back read 43 us and 100 calls in a CUDA graph 15 us. So, as
nccl-tests does, a sample here is ``--iters`` all-reduces back to back timed together (CUDA
events around the loop, or around the replay of a CUDA graph holding them with ``--mode
graph``; ``perf_counter`` on a CPU), divided by ``--iters``; ``--samples`` samples per size,
each the slowest rank's (a collective is as slow as its slowest member). A 16-byte
all-reduce, timed the same way, is the harness's own floor.

``--allreduce`` picks the implementation: ``nccl`` (``torch.distributed.all_reduce`` on the
process group: NCCL on GPUs, gloo on a CPU), or PyTorch's symmetric-memory all-reduce,
``symm_mem_one_shot`` / ``symm_mem_two_shot`` (CUDA only; multicast always off). Rank 0
prints one line::

    AUTOTUNE_METRICS {"allreduce_42k_p50_us": ..., "allreduce_42k_p99_us": ..., ...}

``latency_p50_us``/``latency_p99_us`` repeat the first (primary) size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

METRICS_PREFIX = "AUTOTUNE_METRICS "
IMPLEMENTATIONS = ("nccl", "symm_mem_one_shot", "symm_mem_two_shot")
# NVLink SHARP / multicast stays off on the lent machines, whoever launches this.
NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2}
_DTYPES = {"bf16": 2, "fp16": 2, "fp32": 4}
# Message sizes are rounded to this many bytes (symmetric memory needs 4-byte alignment).
_ALIGN = 16


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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes", type=size_list, default="42K", help="comma-separated message sizes, e.g. 42K,1M"
    )
    parser.add_argument("--dtype", default="bf16", choices=sorted(_DTYPES))
    parser.add_argument("--iters", type=int, default=200, help="all-reduces per sample")
    parser.add_argument("--samples", type=int, default=20, help="samples per size")
    parser.add_argument("--warmup", type=int, default=20, help="untimed all-reduces per size")
    parser.add_argument("--mode", choices=["eager", "graph"], default="eager")
    parser.add_argument("--allreduce", choices=IMPLEMENTATIONS, default="nccl")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    return parser.parse_args(argv)


def _usage_error(args: argparse.Namespace, cuda: bool) -> str | None:
    if args.iters < 1 or args.samples < 1 or args.warmup < 0:
        return "need --iters >= 1, --samples >= 1 and --warmup >= 0"
    if not cuda and args.allreduce != "nccl":
        return (
            f"--allreduce {args.allreduce} needs CUDA GPUs (torch symmetric memory); this "
            "machine has none: use --allreduce nccl on a CPU"
        )
    if not cuda and args.mode == "graph":
        return "--mode graph needs CUDA GPUs (a captured CUDA graph); use --mode eager on a CPU"
    return None


class _Runner:
    """One implementation on one buffer size: ``op()`` all-reduces ``buf`` once."""

    def __init__(self, impl: str, numel: int, dtype: Any, device: Any) -> None:
        import torch
        import torch.distributed as dist

        self.dist, self.torch = dist, torch
        self.impl = impl
        if impl == "nccl":
            self.buf = torch.zeros(numel, dtype=dtype, device=device)
            self.out = self.buf
            self.op: Callable[[], object] = lambda: dist.all_reduce(self.buf)
            return
        import torch.distributed._symmetric_memory as symm_mem

        group = dist.group.WORLD
        assert group is not None
        name = group.group_name
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated (no longer needed) in newer torch
                symm_mem.enable_symm_mem_for_group(name)
        self.buf = symm_mem.empty(numel, dtype=dtype, device=device).zero_()
        symm_mem.rendezvous(self.buf, name)
        ops = torch.ops.symm_mem
        if impl == "symm_mem_one_shot":
            self.out = torch.zeros_like(self.buf)
            self.op = lambda: ops.one_shot_all_reduce_out(self.buf, "sum", name, self.out)
        else:
            self.out = self.buf
            self.op = lambda: ops.two_shot_all_reduce_(self.buf, "sum", name)

    def correct(self, world: int, sync: Callable[[], None]) -> bool:
        """One all-reduce of ones must give ``world`` everywhere."""
        self.buf.fill_(1)
        sync()
        self.dist.barrier()
        self.op()
        sync()
        ok = bool((self.out == world).all())
        self.dist.barrier()  # every peer has read this buffer before it changes
        self.buf.zero_()  # sums of zeros stay finite however many times they run
        self.out.zero_()
        return ok


def _samples(
    runner: _Runner, args: argparse.Namespace, cuda: bool, sync: Callable[[], None]
) -> list[float]:
    """Microseconds per all-reduce, one value per sample (this rank's)."""
    torch, dist = runner.torch, runner.dist
    graph = None
    if args.mode == "graph":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):  # NCCL needs eager calls on the capture stream first
                runner.op()
        torch.cuda.current_stream().wait_stream(stream)
        sync()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(args.iters):
                runner.op()
        sync()
    out: list[float] = []
    for _ in range(args.samples):
        dist.barrier()
        sync()
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(args.iters):
                    runner.op()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) * 1000.0 / args.iters)  # ms -> us
        else:
            t0 = time.perf_counter()
            for _ in range(args.iters):
                runner.op()
            out.append((time.perf_counter() - t0) * 1e6 / args.iters)
    return out


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    os.environ.update(NO_MULTICAST)  # before torch and NCCL read them
    labels = [label for label, _ in args.sizes]

    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() and args.backend != "gloo"
    problem = _usage_error(args, cuda)
    if problem is not None:
        print(f"collective_bench: error: {problem}", file=sys.stderr, flush=True)
        return 2
    backend = args.backend if args.backend != "auto" else ("nccl" if cuda else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    def measure(numel: int) -> list[float] | None:
        runner = _Runner(args.allreduce, numel, dtype, device)
        for _ in range(args.warmup):
            runner.op()
        # Correctness once: a broken transport must not pass as fast.
        if not runner.correct(world, sync):
            return None
        mine = _samples(runner, args, cuda, sync)
        # Per sample, the slowest rank's time is the collective's.
        times = torch.tensor(mine, dtype=torch.float64, device=device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        return [float(x) for x in times.cpu().tolist()]

    metrics: dict[str, Any] = {"world_size": world, "iters_per_sample": args.iters}
    what = f"{world} ranks, {backend}, {args.allreduce}, {args.mode}, {args.iters} per sample"
    try:
        # The floor is the smallest message every implementation takes: the symmetric-memory
        # kernels refuse sizes that are not a multiple of 4 bytes (seen on the H200).
        floor_numel = max(1, _ALIGN // _DTYPES[args.dtype])
        floor = measure(floor_numel)
        if floor is None:
            print("collective_bench: wrong all_reduce result at the floor size", file=sys.stderr)
            return 1
        metrics["floor_p50_us"] = percentile(floor, 50)
        metrics["floor_p99_us"] = percentile(floor, 99)
        for label, nbytes in args.sizes:
            numel = max(_ALIGN, nbytes - nbytes % _ALIGN) // _DTYPES[args.dtype]
            worst = measure(numel)
            if worst is None:
                print(f"collective_bench: wrong all_reduce result at {label}", file=sys.stderr)
                return 1
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
                    f"all_reduce {label} ({numel} x {args.dtype}; {what}): p50 {p50:.1f} us, "
                    f"p99 {metrics[f'{key}_p99_us']:.1f} us (floor {metrics['floor_p50_us']:.1f})",
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
