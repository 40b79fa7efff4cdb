"""Which knob matters for which traffic shape, on the stand-in SGLang server (SIMULATED).

Runs the stand-in's scheduler (``autotune.sim.replay``: the same code the server runs,
driven in simulated time, so the figures are exact and take seconds of CPU) for each
traffic shape under each launch, and prints a markdown table of simulated output tok/s,
TTFT, ITL and prefix-cache hit rate. Every figure is modelled, not measured.

    .venv/bin/python bench/sim_shapes.py            # the table in docs/benchmarks.md
    .venv/bin/python bench/sim_shapes.py --quick    # fewer requests
"""

from __future__ import annotations

import argparse
import time

from autotune.sim.replay import (
    Prompt,
    Result,
    random_prompts,
    run_open,
    scheduler_for,
    shared_prefix_prompts,
)


def shapes(n: int) -> dict[str, tuple[list[Prompt], float]]:
    """Traffic shapes: (prompts, Poisson rate in requests per simulated second)."""
    chats = random_prompts(n, tokens=300, out=200, seed=1)
    docs = random_prompts(max(1, n // 4), tokens=12000, out=64, seed=2)
    mix = [docs[i // 4] if i % 4 == 3 else chats[i] for i in range(n)]
    rag = shared_prefix_prompts(16, max(1, n // 16), prefix=2000, suffix=100, out=64, seed=3)
    return {
        "chat 300/200 @ 3 req/s": (chats, 3.0),
        "chat 300/200 @ 8 req/s (overload)": (chats, 8.0),
        "long-prompt mix (1/4 12k) @ 1 req/s": (mix, 1.0),
        "RAG 16 groups x 2k prefix @ 6 req/s": (rag, 6.0),
    }


KNOBS: dict[str, list[str]] = {
    "default": [],
    "--disable-radix-cache": ["--disable-radix-cache"],
    "--enable-mixed-chunk": ["--enable-mixed-chunk"],
    "--enable-mixed-chunk --chunked-prefill-size 2048": [
        "--enable-mixed-chunk",
        "--chunked-prefill-size",
        "2048",
    ],
    "--enable-mixed-chunk --chunked-prefill-size -1": [
        "--enable-mixed-chunk",
        "--chunked-prefill-size",
        "-1",
    ],
    "--max-running-requests 8": ["--max-running-requests", "8"],
    "--mem-fraction-static 0.03": ["--mem-fraction-static", "0.03"],
    "--mem-fraction-static 0.03 --schedule-policy lpm": [
        "--mem-fraction-static",
        "0.03",
        "--schedule-policy",
        "lpm",
    ],
}


def row(shape: str, knob: str, r: Result) -> str:
    return (
        f"| {shape} | `{knob}` | {r.output_tok_s:.0f} | {r.ttft_p50_s * 1000:.0f} | "
        f"{r.ttft_p99_s * 1000:.0f} | {r.itl_p50_s * 1000:.1f} | {r.itl_p99_s * 1000:.0f} | "
        f"{r.hit_rate:.2f} | {r.refused} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 requests a shape, not 256")
    parser.add_argument("--seed", type=int, default=0, help="seed of the arrival times")
    args = parser.parse_args()
    n = 64 if args.quick else 256
    started = time.process_time()
    print("SIMULATED (autotune.sim, pcie-blackwell profile, Kimi-K2.5 INT4 TP8):", end=" ")
    print(f"{n} requests a shape, Poisson arrivals, seed {args.seed}\n")
    print(
        "| shape | launch | output tok/s | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) "
        "| ITL p99 (ms) | cache hit rate | refused |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for shape, (prompts, rate) in shapes(n).items():
        for knob, flags in KNOBS.items():
            result = run_open(scheduler_for(flags), prompts, rate, seed=args.seed)
            print(row(shape, knob, result), flush=True)
    print(f"\n({time.process_time() - started:.1f} s of CPU)")


if __name__ == "__main__":
    main()
