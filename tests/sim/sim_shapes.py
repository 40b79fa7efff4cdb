"""Traffic shapes and launches of the stand-in's scheduler, and the table row they make.

``tests/sim/test_sim_docs.py`` checks that docs/benchmarks.md holds the rows these compute;
``bench/sim_shapes.py`` prints the whole table.
"""

from __future__ import annotations

from autotune.sim.replay import Prompt, Result, random_prompts, shared_prefix_prompts


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
