"""A black-box inference server for checking the search end to end (never in bench/search).

Five settings, as flags and environment variables: ``--attention-backend`` (categorical),
``--max-batch`` (log-scaled int), ``--mem-fraction`` (float), ``BB_KERNEL_THREADS`` (log-scaled
int, environment) and ``BB_FUSION`` (bool, environment). Three crash regions, each logging the
kind of error a real server prints:

- flashinfer with ``--max-batch`` above 128: CUDA graph capture fails (illegal memory access);
- ``--mem-fraction`` above 0.88 with fusion on: ``torch.OutOfMemoryError``;
- trtllm with 1024 or more kernel threads: ``too many resources requested for launch``.

Otherwise it serves ``/health`` and ``/v1/completions`` (OpenAI SSE) at a rate that rewards
the edges of those regions; the optimum is about 3x the baseline (triton, 16, 0.7, 128, off).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import _http


def die(lines: list[str]) -> NoReturn:
    _http.crash('  File "/srv/blackbox/model_runner.py", line 412, in capture', *lines)


def best_over(truth: Callable[[dict[str, Any]], float | None], **levels: Iterable[Any]) -> float:
    """The best noise-free rate ``truth`` gives over every combination of ``levels`` (each
    setting's values to try; 0 where all crash): the black boxes' ``optimum``."""
    names = list(levels)
    return max(
        (truth(dict(zip(names, values, strict=True))) or 0.0)
        for values in itertools.product(*levels.values())
    )


def serve(
    name: str,
    parameters: list[dict[str, Any]],
    baseline: dict[str, Any],
    crash_of: Callable[[dict[str, Any]], list[str] | None],
    rate: Callable[[dict[str, Any]], float],
) -> NoReturn:
    """Read a configuration as the command engine passes it (each parameter's flag or
    environment variable; the baseline's value where it is not given), then ``start`` (the
    other black boxes' ``main``)."""
    p = argparse.ArgumentParser(description=f"{name}: a black-box inference server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    kinds: dict[str, Any] = {"int": int, "float": float, "categorical": str}
    for q in parameters:
        if "flag" in q and q["type"] == "bool":  # a bool flag is present or absent
            p.add_argument(q["flag"], dest=q["name"], action="store_true")
        elif "flag" in q:
            p.add_argument(
                q["flag"],
                dest=q["name"],
                type=kinds[q["type"]],
                choices=q.get("choices"),
                default=baseline[q["name"]],
            )
    a = p.parse_args()
    config = {}
    for q in parameters:
        if "flag" in q:
            config[q["name"]] = getattr(a, q["name"])
            continue
        raw = os.environ.get(q["env"])
        if raw is None:
            config[q["name"]] = baseline[q["name"]]
        else:
            config[q["name"]] = raw == "1" if q["type"] == "bool" else kinds[q["type"]](raw)
    start(name, config, crash_of, rate, a.host, a.port)


def start(
    name: str,
    config: dict[str, Any],
    crash_of: Callable[[dict[str, Any]], list[str] | None],
    rate: Callable[[dict[str, Any]], float],
    host: str,
    port: int,
) -> NoReturn:
    """Log ``config``, then die with its error lines or serve at its rate (the other black
    boxes' ``main``)."""
    print(f"{name}: {config}", flush=True)
    lines = crash_of(config)
    if lines is not None:
        die(lines)
    _http.serve(host, port, rate(config), f"{name} ready")


def crash_of(backend: str, batch: int, mem: float, threads: int, fusion: bool) -> list[str] | None:
    """The error lines a configuration dies with, or None when it serves."""
    if backend == "flashinfer" and batch > 128:
        return [
            "Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
    if mem > 0.88 and fusion:
        return [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 79.19 GiB of which 1.12 GiB is free."
        ]
    if backend == "trtllm" and threads >= 1024:
        return ["RuntimeError: CUDA error: too many resources requested for launch"]
    return None


def rate(backend: str, batch: int, mem: float, threads: int, fusion: bool) -> float:
    """Tokens per second of one configuration (noise-free)."""
    r = 100.0 * {"triton": 1.0, "flashinfer": 1.45, "trtllm": 1.3}[backend]
    r *= 1 + 0.15 * min(math.log2(batch / 16), 3)
    r *= 1 + 0.8 * (mem - 0.7)
    r *= 1 + 0.05 * math.log2(threads / 128)
    return r * (1.15 if fusion else 1.0)


def main() -> None:
    p = argparse.ArgumentParser(description="black-box inference server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument(
        "--attention-backend", choices=["triton", "flashinfer", "trtllm"], default="triton"
    )
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--mem-fraction", type=float, default=0.7)
    a = p.parse_args()
    threads = int(os.environ.get("BB_KERNEL_THREADS", "128"))
    fusion = os.environ.get("BB_FUSION", "0") == "1"
    print(
        f"blackbox: backend={a.attention_backend} batch={a.max_batch} mem={a.mem_fraction} "
        f"threads={threads} fusion={fusion}",
        flush=True,
    )
    args = (a.attention_backend, a.max_batch, a.mem_fraction, threads, fusion)
    lines = crash_of(*args)
    if lines is not None:
        die(lines)
    _http.serve(a.host, a.port, rate(*args), "blackbox ready")


if __name__ == "__main__":
    main()
