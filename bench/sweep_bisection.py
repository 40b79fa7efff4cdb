"""How close the SLO bisection gets to the true highest rate, and at what cost (SIMULATED).

For each launch of the stand-in SGLang server, the chat shape of search_spaces/chat-slo.yaml
(300-token prompts, 200-token answers, Poisson arrivals) is measured at many rates to find
the true highest rate within the SLO (p99 TTFT <= 1 s, p99 ITL <= 300 ms, no failed
request), then autotune's own sweep code (``autotune.node.sweep``) searches it twice: by
bisection (``mode: max_under_slo``, 7 probes, tolerance 0.1) and by a geometric step sweep
(factor 2). Each load is one run of the stand-in's scheduler in simulated time
(``autotune.sim.replay``), so every figure is exact, reproducible and simulated.

    .venv/bin/python bench/sweep_bisection.py
    .venv/bin/python bench/sweep_bisection.py --requests 64   # quicker
"""

from __future__ import annotations

import argparse
import time

from autotune.models import Metrics, Sweep, SweepStep
from autotune.node import sweep
from autotune.node.sweep import Measured
from autotune.sim.replay import random_prompts, run_open, scheduler_for

SLO_TTFT_S, SLO_ITL_S = 1.0, 0.3
LOW, HIGH = 0.25, 8.0
LAUNCHES = {
    "default": [],
    "--enable-mixed-chunk": ["--enable-mixed-chunk"],
    "--enable-mixed-chunk --chunked-prefill-size 2048": [
        "--enable-mixed-chunk",
        "--chunked-prefill-size",
        "2048",
    ],
    "--max-running-requests 16": ["--max-running-requests", "16"],
    "--max-running-requests 64": ["--max-running-requests", "64"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=128, help="requests per load")
    args = parser.parse_args()
    prompts = random_prompts(args.requests, tokens=300, out=200, seed=1)
    started = time.process_time()
    print(
        f"SIMULATED (autotune.sim, pcie-blackwell, Kimi-K2.5 INT4 TP8): chat 300/200, "
        f"{args.requests} requests a load, SLO p99 TTFT <= {SLO_TTFT_S * 1000:.0f} ms and "
        f"p99 ITL <= {SLO_ITL_S * 1000:.0f} ms, rates {LOW:g}..{HIGH:g} req/s\n"
    )
    print(
        "| launch | true highest rate (grid of 41) | bisection: rate (probes) | "
        "steps x2: rate (probes) |"
    )
    print("| --- | ---: | ---: | ---: |")
    for name, flags in LAUNCHES.items():

        def measure(rate: float, flags: list[str] = flags) -> Measured:
            r = run_open(scheduler_for(flags), prompts, rate, seed=0)
            ok = r.ttft_p99_s <= SLO_TTFT_S and r.itl_p99_s <= SLO_ITL_S and r.refused == 0
            step = SweepStep(load=rate, metrics={"output_tok_s": r.output_tok_s}, meets_slo=ok)
            return Measured(step, Metrics(output_tok_s=r.output_tok_s))

        grid = [LOW * 2 ** (i / 8) for i in range(41)]  # 0.25 .. 8 in 2^(1/8) steps
        passed = [measure(g).step.meets_slo for g in grid]
        truth = max((g for g, ok in zip(grid, passed, strict=True) if ok), default=0.0)
        # Monotone: every rate below the highest one within the SLO is within it too (what
        # a bisection assumes).
        monotone = all(ok for g, ok in zip(grid, passed, strict=True) if g <= truth)
        slo = {"ttft_p99_ms": SLO_TTFT_S * 1000}
        bisect = sweep.run(
            Sweep(over="rate", mode="max_under_slo", low=LOW, high=HIGH, probes=7), slo, measure
        )
        steps = sweep.run(Sweep(over="rate", low=LOW, high=HIGH, factor=2), slo, measure)
        print(
            f"| `{name}` | {truth:.3g}{'' if monotone else ' (not monotone)'} | "
            f"{bisect.max_load:.3g} ({len(bisect.measured)}) | "
            f"{steps.max_load:.3g} ({len(steps.measured)}) |",
            flush=True,
        )
    print(f"\n({time.process_time() - started:.1f} s of CPU)")


if __name__ == "__main__":
    main()
