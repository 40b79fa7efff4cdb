"""A second black-box server, with other shapes than ``blackbox.py`` (never in bench/search,
never used to choose the search defaults: reported once, with the final defaults).

Six settings: ``--scheduler`` (categorical), ``--chunked-prefill`` (log-scaled int),
``--max-running`` (log-scaled int) as flags; ``BB2_KV_DTYPE`` (categorical), ``BB2_STREAMS``
(int) and ``BB2_OVERLAP`` (bool) as environment variables. Its shapes:

- the prefill chunk has an interior optimum (2048 alone; lower where running is high);
- ``--max-running`` rises to a crash edge that depends on a categorical value: with the
  ``auto`` KV cache above 192 it runs out of memory, ``fp8`` (5% slower) reaches 512;
- a product threshold: log2(chunk) + log2(max running) > 19 crashes in prefill;
- a categorical x bool crash: the ``dfs-weight`` scheduler with overlap on asserts;
- ``BB2_STREAMS`` has an interior optimum at 3.

The optimum (about 2.9x the baseline) lies on the product threshold with the fp8 cache,
the chunk inside its range, three streams and ``dfs-weight`` without overlap.
"""

from __future__ import annotations

import math
from typing import Any

import blackbox

PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "scheduler",
        "type": "categorical",
        "choices": ["fcfs", "lpm", "dfs-weight"],
        "flag": "--scheduler",
    },
    {
        "name": "chunk",
        "type": "int",
        "low": 256,
        "high": 16384,
        "log": True,
        "flag": "--chunked-prefill",
    },
    {
        "name": "running",
        "type": "int",
        "low": 16,
        "high": 512,
        "log": True,
        "flag": "--max-running",
    },
    {"name": "kv", "type": "categorical", "choices": ["auto", "fp8"], "env": "BB2_KV_DTYPE"},
    {"name": "streams", "type": "int", "low": 1, "high": 8, "env": "BB2_STREAMS"},
    {"name": "overlap", "type": "bool", "env": "BB2_OVERLAP"},
]
BASELINE: dict[str, Any] = {
    "scheduler": "fcfs",
    "chunk": 8192,
    "running": 32,
    "kv": "auto",
    "streams": 1,
    "overlap": False,
}


def crash_of(c: dict[str, Any]) -> list[str] | None:
    """The error lines a configuration dies with, or None when it serves."""
    if c["kv"] == "auto" and c["running"] > 192:
        return [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a "
            "total capacity of 79.19 GiB of which 2.01 GiB is free."
        ]
    if math.log2(c["chunk"]) + math.log2(c["running"]) > 19:
        return [
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ]
    if c["scheduler"] == "dfs-weight" and c["overlap"]:
        return ["AssertionError: the overlap scheduler does not support the dfs-weight policy"]
    return None


def rate(c: dict[str, Any]) -> float:
    """Tokens per second of one configuration that serves (noise-free)."""
    r = 100.0 * {"fcfs": 1.0, "lpm": 1.25, "dfs-weight": 1.4}[c["scheduler"]]
    r *= 1 + 0.3 * math.exp(-0.5 * ((math.log2(c["chunk"]) - 11) / 1.2) ** 2)
    r *= 1 + 0.2 * math.log2(c["running"] / 32)
    r *= 0.95 if c["kv"] == "fp8" else 1.0
    s = c["streams"]
    r *= 1 + 0.12 * s - 0.02 * s * s
    return r * (1.1 if c["overlap"] else 1.0)


def truth(c: dict[str, Any]) -> float | None:
    """The noise-free rate, or None where the configuration crashes."""
    return None if crash_of(c) is not None else rate(c)


def optimum() -> float:
    """The best noise-free rate over a fine grid (65 log-levels of chunk and running, every
    value of the rest; the product edge's own values added)."""
    chunks = {round(256 * 64 ** (i / 64)) for i in range(65)}
    runs = {round(16 * 32 ** (i / 64)) for i in range(65)} | {192}
    chunks |= {2 ** (19 - math.log2(r)) // 1 for r in runs if 256 <= 2 ** (19 - math.log2(r))}
    return blackbox.best_over(
        truth,
        scheduler=("fcfs", "lpm", "dfs-weight"),
        chunk=[int(c) for c in chunks],
        running=runs,
        kv=("auto", "fp8"),
        streams=range(1, 9),
        overlap=(False, True),
    )


def main() -> None:
    blackbox.serve("blackbox2", PARAMETERS, BASELINE, crash_of, rate)


if __name__ == "__main__":
    main()
